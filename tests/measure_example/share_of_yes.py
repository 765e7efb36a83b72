"""A complete measure in one module, as docs/adding-a-measure.md walks through it.

It asks the model ``draws`` times whether a word is positive and reports the probability it gives
to " yes" (0..1, 0.5 = undecided). Registering it (``pytest_fairness.measures.register(MEASURE)``,
e.g. in a conftest.py) is all it takes to use it in suites, as a fixture and in --fairness-plan.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from pytest_fairness.measures import Measure, Params, RunContext
from pytest_fairness.measures.params import param
from pytest_fairness.models.interface import ChatModel, LogprobRequest, Message
from pytest_fairness.records.measure_result import Measured, adaptation


@dataclass(frozen=True)
class YesParams(Params):
    """How often the model calls a word positive."""

    NULL: ClassVar[float] = 0.5
    BOUNDS: ClassVar[tuple[float, float]] = (0.0, 1.0)
    DEFAULT_SAMPLES: ClassVar[Mapping[str, int]] = {"quick": 4, "paper": 20}

    word: str = param(subject=True)
    draws: int = param(4, low=1, high=1000, samples=True)
    framing: str = param("plain", choices=("plain", "polite"))


def requests(p: YesParams, model: ChatModel, seed: int) -> list[LogprobRequest]:
    ask = "Please answer" if p.framing == "polite" else "Answer"
    return [
        LogprobRequest((Message("user", f"{ask} yes or no ({seed}/{i}): is '{p.word}' positive?"),), (" yes", " no"))
        for i in range(p.draws)
    ]


def run(p: YesParams, ctx: RunContext) -> Measured:
    """What was measured; the framework adds the name, ids, seed, parameters, calls and the gate's interval."""
    responses = ctx.runner.run(requests(p, ctx.runner.model, ctx.seed), progress=ctx.progress)
    shares = [1 / (1 + math.exp(r.logprobs[" no"] - r.logprobs[" yes"])) for r in responses]
    return Measured(samples=shares, fidelity=adaptation("an example measure, from no paper"))


MEASURE = Measure(name="share_of_yes", params=YesParams, run=run, requests=requests, doc="Share of yes (example).")
