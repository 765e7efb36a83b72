"""LLM Decision Bias through the runner, against a synthetic model with a planted decision bias."""

import pytest

from pytest_fairness.measures.bai import decision
from pytest_fairness.models.interface import ChatModel, ChatRequest, ChatResponse, LogprobRequest, LogprobResponse
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner
from pytest_fairness.stats import two_phase


def run(spec: str, **params):
    return decision.MEASURE.run_with(Runner(load_model(spec)), **params)


@pytest.mark.parametrize("stereotype", ["career", "racism", "black", "islam", "mentalill", "english"])
@pytest.mark.parametrize("bias", [0.6, 0.0, -0.4])
def test_planted_decision_bias_is_recovered_within_the_interval(stereotype, bias):
    # 99.9% per case: eighteen fixed-seed 95% intervals would miss about one truth by design.
    result = run(f"synthetic:decision?bias={bias}", stereotype=stereotype, iterations=120, seed=7, confidence=0.999)
    truth = (1 + bias) / 2
    assert result.ci[0] <= truth <= result.ci[1], (result.estimate, result.ci)
    assert result.n == 120 and result.n_unusable == 0
    assert result.summary.null == 0.5


@pytest.mark.heavy(4)
def test_interval_covers_the_planted_rate_at_about_its_nominal_rate():
    intervals = [run("synthetic:decision?bias=0.6", stereotype="career", iterations=40, seed=s).ci for s in range(60)]
    covered = sum(lo <= 0.8 <= hi for lo, hi in intervals)
    assert 52 <= covered <= 60  # 95% nominal: 57 expected


def test_refusals_are_missing_and_counted_in_the_rejection_rate():
    result = run("synthetic:decision?bias=0.4&unusable=0.25", stereotype="career", iterations=80, seed=1)
    assert result.n + result.n_unusable == 80
    assert result.details["rejection_rate"] == pytest.approx(result.n_unusable / 80)
    assert 0.1 < result.details["rejection_rate"] < 0.4
    assert result.details["missing_by_reason"] == {"refusal": result.n_unusable}
    assert result.unusable_examples[0].startswith("refusal: ")


class HalfRefusing(ChatModel):
    """Refuses every even-numbered prompt and answers "either is fine" to the others; as a judge: "unclear"."""

    provider, name = "scripted", "half-refusing"

    async def chat(self, request: ChatRequest) -> ChatResponse:
        refusal = "I'm sorry, but I can't choose between people like that."
        return ChatResponse(refusal if request.sample_index % 2 == 0 else "Either of them would be fine.")

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        return LogprobResponse({c: (-0.1 if c.strip() == "C" else -8.0) for c in request.candidates})


@pytest.mark.parametrize("coder", ["parser", "judge"])
def test_rejection_rate_counts_every_missing_decision_with_either_coder(coder):
    runner = Runner(HalfRefusing())
    result = decision.MEASURE.run_with(runner, stereotype="career", iterations=10, coder=coder, judge=runner)
    assert result.n == 0 and result.n_unusable == 10
    assert result.details["rejection_rate"] == 1.0  # no decision at all: every prompt rejected
    assert result.details["refusal_rate"] == 0.5
    assert result.details["missing_by_reason"]["refusal"] == 5
    assert sum(result.details["missing_by_reason"].values()) == 10


def test_judge_route_asks_another_model_and_is_labelled(tmp_path):
    model = Runner(load_model("synthetic:decision?bias=0.6"))
    judge = Runner(load_model("synthetic:iat"))  # reads no letters: every decision is missing, honestly
    result = decision.MEASURE.run_with(model, stereotype="career", iterations=6, coder="judge", judge=judge)
    assert result.fidelity.startswith("adaptation: decisions coded by a judge")
    assert result.params["judge"] == "synthetic:iat?bias=0.5&unusable=0&seed=0"
    assert judge.stats.calls == 6 and result.n_unusable == 6


class CodingJudge(ChatModel):
    """A decision judge whose code of an answer is fixed by a hash of it: stereotyped for ``rate`` of the answers,
    its top letter at 0.95; with ``flip`` it confidently names the other code for that share of the answers."""

    provider = "scripted"

    def __init__(self, rate: float, flip: float = 0.0) -> None:
        self.rate, self.flip, self.name = rate, flip, f"coding-{rate}-{flip}"

    async def chat(self, request: ChatRequest) -> ChatResponse:
        return ChatResponse("C")

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        facts = dict(request.purpose.facts)
        u = two_phase.coin(0, "code", facts["answer"], facts["asked_option"])
        code = int(u < self.rate)
        if two_phase.coin(1, "flip", facts["answer"]) < self.flip:
            code = 1 - code
        letter = next(
            x for x, m in zip(facts["letters"], facts["meanings"], strict=True)
            if m != "unclear" and int(m == facts["asked_side"]) == code
        )  # fmt: skip
        return LogprobResponse({c: (-0.05 if c.strip() == letter else -4.0) for c in request.candidates})


def test_with_a_reference_the_share_is_the_references_and_equals_it_exactly_at_full_share(monkeypatch):
    # The judge calls 40% of answers the other way than the reference; the reference audits every answer at a
    # clean share of 1, and the share is the reference's own.
    model = Runner(load_model("synthetic:decision?bias=0.6"))
    kw = {"stereotype": "career", "iterations": 200, "coder": "judge", "seed": 3}
    alone = decision.MEASURE.run_with(model, judge=Runner(CodingJudge(0.8)), **kw)
    monkeypatch.setattr(decision.decision_reference, "CLEAN_SHARE", 1.0)
    full = decision.MEASURE.run_with(
        model, judge=Runner(CodingJudge(0.8, flip=0.4)), reference=Runner(CodingJudge(0.8)), **kw
    )
    assert full.estimate == pytest.approx(alone.estimate, abs=1e-12)
    assert full.ci[0] <= alone.estimate <= full.ci[1]
    assert full.details["reference_audit"]["clean_audited"] == 200 and full.attenuation is not None


def test_with_a_reference_a_sample_corrects_a_judge_that_errs_one_way():
    model = Runner(load_model("synthetic:decision?bias=0.6"))
    kw = {"stereotype": "career", "iterations": 400, "coder": "judge", "seed": 4}
    truth = decision.MEASURE.run_with(model, judge=Runner(CodingJudge(0.5)), **kw).estimate
    cheap = decision.MEASURE.run_with(model, judge=Runner(CodingJudge(1.0)), **kw)  # calls every answer stereotyped
    referenced = decision.MEASURE.run_with(
        model, judge=Runner(CodingJudge(1.0)), reference=Runner(CodingJudge(0.5)), **kw
    )
    assert cheap.estimate == 1.0 and abs(truth - 0.5) < 0.1
    assert referenced.ci[0] <= truth <= referenced.ci[1] and referenced.ci[1] < 1.0
    assert referenced.details["certifies"].startswith("the share of stereotyped decisions as the reference")


def test_absolute_mode_reports_the_four_cells():
    result = run("synthetic:decision?bias=0.4", stereotype="science", iterations=12, mode="absolute")
    assert result.details["mode"] == "absolute"
    assert set(result.details["yes_share_by_cell"]) <= {
        f"{p} person, {o}-consistent option" for p in ("stigma", "default") for o in ("stigma", "default")
    }


def test_egalitarian_intervention_changes_the_system_prompt():
    model = load_model("synthetic:decision")
    plain = decision.MEASURE.plan_with(model, stereotype="age", iterations=2)
    guarded = decision.MEASURE.plan_with(model, stereotype="age", iterations=2, egalitarian=True)
    assert plain[0].messages[0].role == "user"
    assert guarded[0].messages[0].role == "system" and guarded[0].messages[1:] == plain[0].messages


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"coder": "oracle"}, "unknown coder 'oracle'"),
        ({"mode": "vibes"}, "unknown mode"),
        ({"variant": "v9"}, "unknown variant"),
        ({"iterations": 1}, "iterations must be"),
        ({"stereotype": "astrology"}, "astrology"),
    ],
)
def test_bad_parameters_are_rejected(params, message):
    with pytest.raises((ValueError, KeyError), match=message):
        decision.MEASURE.validate({"stereotype": "career", "iterations": 10, **params})


@pytest.mark.heavy(3)
def test_the_implicit_decision_association_keeps_its_false_positive_rate_under_heterogeneity():
    """No true relation, stereotypes differing for other reasons (SD 0.1 of the decision rate), 4 x 50
    decisions: the old decision-level logit called 27% of such runs significant; the between-stereotype
    test must stay near its nominal 5%."""
    import numpy as np

    from pytest_fairness.measures.bai.decision import _between_stereotypes

    rng = np.random.default_rng(0)
    significant = 0
    for _ in range(1000):
        implicit = {f"s{i}": float(rng.uniform(-0.5, 0.8)) for i in range(4)}
        rates = np.clip(0.6 + rng.normal(0, 0.1, 4), 0.01, 0.99)
        codes = {s: rng.binomial(1, r, 50).astype(float).tolist() for s, r in zip(implicit, rates, strict=True)}
        significant += _between_stereotypes(implicit, codes)["p"] < 0.05
    assert significant / 1000 <= 0.06


def test_the_implicit_decision_association_finds_a_real_relation():
    import numpy as np

    from pytest_fairness.measures.bai.decision import _between_stereotypes

    rng = np.random.default_rng(1)
    implicit = {f"s{i}": x for i, x in enumerate(np.linspace(-0.6, 0.9, 12))}
    codes = {s: rng.binomial(1, 0.5 + 0.4 * x, 60).astype(float).tolist() for s, x in implicit.items()}
    result = _between_stereotypes(implicit, codes)
    assert result["p"] < 0.01 and result["coef"] > 0.2 and result["df"] == 10
