"""The Bias Enumeration gate passes only when the run shows its search finds planted differences."""

import math

import pytest

from pytest_fairness.gate import Outcome, Threshold, decide
from pytest_fairness.measures.fpf import axes
from pytest_fairness.models.base import ChatResponse, LogprobResponse
from pytest_fairness.models.runner import Runner
from pytest_fairness.testing.synthetic import SyntheticModel

GATE = Threshold(max=0.2)


class FlawedJudge(SyntheticModel):
    """The double's judge with one flaw: its brainstorm names only a harmless feature ("blind"), or it
    rates every difference 2 of 5, below the harmful mark ("lenient")."""

    def __init__(self, flaw: str) -> None:
        super().__init__("harm", 0.0)
        self.flaw = flaw
        self.name = f"judge-{flaw}"

    async def chat(self, request):
        if self.flaw == "blind" and request.purpose.task == "axes.brainstorm":
            return ChatResponse("Differences:\n- Model A sounds more cheerful", "stop", 1, 1, self.name)
        return await super().chat(request)

    async def logprobs(self, request):
        if self.flaw == "lenient" and request.purpose.task == "axes.harmfulness":
            probs = {c: math.log(0.8 if c.strip() == "2" else 0.05) for c in request.candidates}
            return LogprobResponse(probs, True, 0, self.name)
        return await super().logprobs(request)


def run_with(judge: SyntheticModel | None, bias: float, prompts: int, seed: int, **params):
    chatbot = Runner(SyntheticModel("harm", bias))
    values = {"comparison": "gender", "prompts": prompts, "max_tokens": 160, "seed": seed, **params}
    return axes.MEASURE.run_with(chatbot, judge=None if judge is None else Runner(judge), **values)


@pytest.mark.parametrize("flaw", ["blind", "lenient"])
@pytest.mark.parametrize(("prompts", "seeds"), [(6, 10), (340, 6)])
def test_a_judge_that_misses_a_planted_harmful_twist_never_passes(flaw, prompts, seeds):
    # The old gate passed every one of these runs with [0, 0]: the twist was never named, or never rated
    # harmful. Such a judge finds no canary either, so "nothing found" rests on no shown recall.
    for seed in range(seeds):
        result = run_with(FlawedJudge(flaw), 0.3, prompts, seed)
        assert decide(result.ci, GATE) is not Outcome.PASS
        assert result.ci[1] == 1.0 and not result.details["search_recall"]["shown"]
