"""What every measure run gets from the plugin: the model's runner, the judge's, the seed and the confidence."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pytest_fairness.models.runner import CallStats, ProgressFn, Runner


@dataclass(frozen=True)
class RunContext:
    """What the plugin hands every run: the model's runner, the judge's, the seed and the confidence.

    ``calls`` counts every model call made while the framework runs a measure under this context
    (``Measure.execute``): one context per check, so one counter per check. ``reference`` re-rates a
    sample of a judged measure's judgments (--fairness-judge-reference), and ``judge_calibration`` names a
    file of the team's own labelled calibration items (--fairness-judge-calibration); measures without
    them ignore both.
    """

    runner: Runner
    judge: Runner | None = None
    seed: int = 0
    confidence: float = 0.95
    progress: ProgressFn | None = None
    calls: CallStats = field(default_factory=CallStats)
    reference: Runner | None = None
    judge_calibration: str | None = None
    #: K: how many answers of the model each item gets, averaged into its score (``measures.resampling``).
    samples_per_item: int = 1

    def in_roles(self) -> RunContext:
        """This context with the judge's and the reference's calls counted for their roles, also where one of
        them is the runner of the model under test (a judge that is the model, told apart in the accounting)."""

        def cast(runner: Runner | None, role: str) -> Runner | None:
            return runner if runner is None or runner.role == role else runner.for_role(role)

        return replace(self, judge=cast(self.judge, "judge"), reference=cast(self.reference, "reference"))
