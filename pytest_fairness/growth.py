"""Growing one check under --fairness-sequential: its rounds, typed, for the loop in ``sequential``.

``sequential.run_sequential`` is the one loop (and sits below the measures: they use its confidence
sequence). ``CheckRounds`` gives it one suite check's rounds from plain inputs: the check and its
measure, a context for the model and judge, the first round, the confidences, and the budget's planner.
Nothing here calls back into the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pytest_fairness import sizing
from pytest_fairness.gate import Outcome
from pytest_fairness.measures import RunContext
from pytest_fairness.models.runner import CallStats, Runner
from pytest_fairness.planning import Planner, spent
from pytest_fairness.result import MeasureResult
from pytest_fairness.sequential import Interval, SequentialPlan, confidence_sequence, run_sequential
from pytest_fairness.stats import deattenuate, split_confidence
from pytest_fairness.suite import Check

#: Each sequential round grows a check by its profile's size or by half, whichever is more.
SEQUENTIAL_GROWTH = 1.5
#: The most samples a check may grow to when its suite gives no ``budget``: this many times its size.
BUDGET_FACTOR = 4


@dataclass(frozen=True)
class CheckRounds:
    """A suite check's rounds: each look runs its measure at a size under a fresh copy of ``context`` (the
    model, judge, seed, the gates' confidence and live progress), ``first`` is the first round's result (at
    ``size`` samples), ``serve_confidence`` the level at which too few usable answers end a check "cannot
    serve", ``budget`` the most samples it may grow to, and ``planner`` (with the ``runners`` whose spending
    counts) prices a round against --fairness-budget (None: no budget)."""

    check: Check
    context: RunContext
    first: MeasureResult
    size: int
    serve_confidence: float
    budget: int
    planner: Planner | None = None
    runners: Sequence[Runner] = ()

    def _round(self) -> RunContext:
        """The context of one round: its own call counter, so each round's calls are counted apart."""
        return replace(self.context, calls=CallStats())

    def run(self, size: int) -> MeasureResult:
        """The check's measure at ``size`` samples."""
        return self.check.measure.execute(self.check.params.with_samples(size), self._round())

    def look(self, size: int) -> tuple[MeasureResult, Interval]:
        """The result at ``size`` and its always-valid interval: the measure's own (``Measure.sequential``,
        told the first round's result; the first round's own calls come back from the cache), or else a
        confidence sequence of its bounded samples (corrected for the result's attenuation, if any)."""
        measure = self.check.measure
        if measure.sequential is not None:
            result = measure.grow(self.check.params.with_samples(size), self._round(), self.first)
            return result, result.ci
        assert measure.bounds is not None
        result = self.run(size) if size != self.size else self.first
        # An attenuated result spent half its error on the attenuation factor: the sequence gets the other half.
        gate = self.context.confidence
        confidence = gate if result.attenuation is None else split_confidence(gate)
        interval = confidence_sequence(result.samples, *measure.bounds, 1 - confidence)
        return result, deattenuate(interval, result.attenuation, measure.bounds)

    def futile(self, size: int, result: MeasureResult) -> str:
        """Why growing is unlikely to decide within the budget (empty when it may). See ``sizing.futility``."""
        if self.check.measure.sequential is not None:  # its own rule (its estimate is no mean of samples)
            return result.no_size_decides  # it may know that no size decides it
        params = self.check.params.with_samples(size)
        return sizing.futility(params, result, self.check.threshold, self.context.confidence, self.budget)

    def unserved(self, size: int, result: MeasureResult) -> str | None:
        return sizing.unserved(self.check.params.with_samples(size), result, self.serve_confidence)

    def over_budget(self, size: int, grown: int) -> str:
        if self.planner is None:
            return ""
        return self.planner.next_round_over_budget(self.check, size, grown, spent(self.runners)[0])

    def begin_round(self, round_: int, size: int) -> None:
        begin = getattr(self.context.progress, "begin_round", None)  # live progress names the round (report/)
        if begin is not None:
            begin(round_, size)


def sample_budget(check: Check, profile: str, size: int) -> int:
    """The most samples a check may grow to: its suite's budget for the profile (else ``BUDGET_FACTOR`` times its
    size), and never fewer than it has."""
    return max((check.budget or {}).get(profile, BUDGET_FACTOR * size), size)


def grow(rounds: CheckRounds) -> tuple[MeasureResult, Outcome]:
    """Grow the check from its first round, by its size or by half, up to its budget (``run_sequential``)."""
    plan = SequentialPlan(initial=rounds.size, step=rounds.size, budget=rounds.budget, growth=SEQUENTIAL_GROWTH)
    return run_sequential(plan, rounds.check.threshold, rounds.first, rounds)
