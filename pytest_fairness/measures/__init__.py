"""The registry of measures a suite can name, with their parameters and default sample sizes."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_fairness.measures import axes, decision, harm, implicit, pcf
from pytest_fairness.models.base import ChatRequest, LogprobRequest
from pytest_fairness.result import MeasureResult

PROFILES = ("quick", "paper")


@dataclass(frozen=True)
class Measure:
    """How suites and fixtures drive one measure's ``run`` function (and plan it with ``requests``).

    ``subject`` is the parameter that names what is measured (a stereotype...), ``samples`` the one
    that sets the sample size, whose default depends on the profile: ``quick`` is sized for the
    embedded model in CI, ``paper`` follows the paper.
    """

    name: str
    run: Callable[..., MeasureResult]
    requests: Callable[..., Sequence[ChatRequest | LogprobRequest]]
    validate: Callable[..., None]
    subject: str
    samples: str
    default_samples: dict[str, int]
    null: float
    #: Range of one sample, for always-valid intervals in sequential sampling; None: not sequential.
    bounds: tuple[float, float] | None = None

    @property
    def params(self) -> tuple[str, ...]:
        """Parameters a suite may set: the run function's keywords, minus those the plugin owns."""
        owned = {"runner", "judge", "seed", "progress", "confidence", self.samples}
        return tuple(p for p in inspect.signature(self.run).parameters if p not in owned)

    @property
    def uses_judge(self) -> bool:
        return "judge" in inspect.signature(self.run).parameters

    def defaults(self) -> dict[str, object]:
        sig = inspect.signature(self.run).parameters
        return {p: sig[p].default for p in self.params if sig[p].default is not inspect.Parameter.empty}


MEASURES: dict[str, Measure] = {
    "implicit_bias": Measure(
        name="implicit_bias",
        run=implicit.run,
        requests=implicit.requests,
        validate=implicit.validate,
        subject="stereotype",
        samples="iterations",
        default_samples={"quick": 20, "paper": 50},
        null=0.0,
        bounds=(-1.0, 1.0),
    ),
    "decision_bias": Measure(
        name="decision_bias",
        run=decision.run,
        requests=decision.requests,
        validate=decision.validate,
        subject="stereotype",
        samples="iterations",
        default_samples={"quick": 10, "paper": 50},
        null=0.5,
        bounds=(0.0, 1.0),
    ),
    "net_harm": Measure(
        name="net_harm",
        run=harm.run,
        requests=harm.requests,
        validate=harm.validate,
        subject="comparison",
        samples="prompts",
        default_samples={"quick": 6, "paper": 200},
        null=0.0,
    ),
    "quality_disparity": Measure(
        name="quality_disparity",
        run=harm.run_quality,
        requests=harm.requests,
        validate=harm.validate,
        subject="comparison",
        samples="prompts",
        default_samples={"quick": 6, "paper": 200},
        null=0.0,
    ),
    "bias_axes": Measure(
        name="bias_axes",
        run=axes.run,
        requests=axes.requests,
        validate=axes.validate,
        subject="comparison",
        samples="prompts",
        default_samples={"quick": 60, "paper": 340},
        null=0.0,
    ),
    "pcf": Measure(
        name="pcf",
        run=pcf.run,
        requests=pcf.requests,
        validate=pcf.validate,
        subject="attribute",
        samples="occupations",
        default_samples={"quick": 32, "paper": 257},
        null=0.0,
    ),
}
