"""Growing one check under --fairness-sequential until its always-valid interval decides.

``run_sequential`` is the one loop: it draws more samples for an inconclusive check and gates on a
confidence sequence (``stats.confidence_sequence``), so the error rate holds however often it looks.
``CheckRounds`` gives it one suite check's rounds from plain inputs: the check and its measure, a context
for the model and judge, the first round, the confidences, and the budget's planner. Nothing here calls
back into the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from pytest_fairness.config.suite import Check
from pytest_fairness.measures import RunContext, sizing
from pytest_fairness.models.runner import CallStats, Runner
from pytest_fairness.planning.plan import Planner, spent
from pytest_fairness.records.measure_result import MeasureResult, SequentialInfo
from pytest_fairness.stats.attenuation import corrected_interval
from pytest_fairness.stats.confidence_sequence import GROWTH, Interval, confidence_sequence, next_look
from pytest_fairness.stats.gate import Outcome, Threshold, decide

#: Each sequential round grows a check by its profile's size or by half, whichever is more.
SEQUENTIAL_GROWTH = GROWTH


@dataclass(frozen=True)
class SequentialPlan:
    """Draw ``initial`` samples, then grow while the gate is inconclusive, up to ``budget``: by ``step``, or
    by the factor ``growth`` when that is more (so a large budget takes a few rounds, not hundreds)."""

    initial: int
    step: int
    budget: int
    growth: float = 1.0

    def __post_init__(self) -> None:
        if not 1 <= self.initial <= self.budget or self.step < 1:
            raise ValueError(f"need 1 <= initial <= budget and step >= 1, got {self}")

    def next_size(self, n_done: int, interval: Interval, threshold: Threshold) -> int | None:
        """The sample size to grow to next, or None to stop (the interval decides the gate, or budget spent)."""
        if n_done < self.initial:
            return self.initial
        if n_done >= self.budget or decide(interval, threshold) is not Outcome.INCONCLUSIVE:
            return None
        return next_look(n_done, self.step, self.budget, self.growth)


class Rounds(Protocol):
    """One check's rounds, as the loop reads them (``CheckRounds`` for a suite check)."""

    def look(self, size: int) -> tuple[MeasureResult, Interval]:
        """The result at ``size`` with its always-valid interval (at the first size: the first round's)."""
        ...

    def futile(self, size: int, result: MeasureResult) -> str:
        """Why growing from ``size`` is unlikely to decide ("" when it may); stopping claims nothing."""
        ...

    def unserved(self, size: int, result: MeasureResult) -> str | None:
        """Why a larger sample shows the model cannot serve the measure (None when it can)."""
        ...

    def over_budget(self, size: int, grown: int) -> str:
        """Why growing from ``size`` to ``grown`` would break a spending limit ("" when it would not)."""
        ...

    def begin_round(self, round_: int, size: int) -> None:
        """A round starts (live progress names it)."""
        ...


def run_sequential(
    plan: SequentialPlan, threshold: Threshold, first: MeasureResult, rounds: Rounds
) -> tuple[MeasureResult, Outcome]:
    """Grow a check from its ``first`` round while the gate is inconclusive and the budget allows, gating on
    an always-valid interval, whose error rate holds however often it is looked at.

    Stops when the interval decides, the sample budget is spent, growing is futile or would break a spending
    limit (neither claims anything, so the guarantee is untouched), or a larger sample shows the model cannot
    serve the measure. Returns the last round's result, gated on its interval, with its rounds
    (``SequentialInfo``) and the calls of every round, and the outcome.
    """
    sizes, spent, stopped = [plan.initial], [first.calls], ""
    result, interval = rounds.look(plan.initial)
    while (grown := plan.next_size(sizes[-1], interval, threshold)) is not None:
        if (stopped := rounds.futile(sizes[-1], result)) or (stopped := rounds.over_budget(sizes[-1], grown)):
            break
        rounds.begin_round(len(sizes) + 1, grown)
        result, interval = rounds.look(grown)
        sizes.append(grown)
        spent.append(result.calls)
        result = replace(result, unserved=rounds.unserved(grown, result))
        if result.unserved:
            break
    result = replace(
        result,
        summary=replace(result.summary, ci_t=interval),
        calls=rounds_calls(spent),
        sequential=SequentialInfo(sizes, plan.budget, stopped=stopped),
    )
    return result, Outcome.CANNOT_SERVE if result.unserved else decide(interval, threshold)


def rounds_calls(rounds: Sequence[CallStats]) -> CallStats:
    """What the rounds of a sequential check cost: the first round's accounting plus every counter of each
    later one (calls, retries, tokens, seconds, spend, ...; a later round's tokens are its own calls', as
    the cache answers what it asks again), except the hits: a later round asks again for the samples before
    it, which the cache answers, so the hits are the last round's less the calls of the rounds before."""
    first, last = rounds[0], rounds[-1]
    calls = replace(first)
    for later in rounds[1:]:
        calls.add(later)
    if len(rounds) == 1:
        return calls
    # With the cache off (or read-only) the later rounds paid for the earlier samples again: no hits to take.
    hits = max(0, last.cache_hits - (calls.calls - last.calls))
    return replace(calls, cache_hits=hits)


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
        confidence sequence of its bounded samples (corrected for the result's attenuation, if any, and on the range
        of its samples: a two-phase estimate's with a reference)."""
        measure = self.check.measure
        if measure.sequential is not None:
            result = measure.grow(self.check.params.with_samples(size), self._round(), self.first)
            return result, result.ci
        assert measure.bounds is not None
        result = self.run(size) if size != self.size else self.first

        def sequence(level: float, bounds: tuple[float, float]) -> Interval:
            return confidence_sequence(result.samples, *bounds, 1 - level)

        return result, corrected_interval(sequence, result.attenuation, measure.bounds, self.context.confidence)

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
    return check.budget_for(profile, size)


def grow(rounds: CheckRounds) -> tuple[MeasureResult, Outcome]:
    """Grow the check from its first round, by its size or by half, up to its budget (``run_sequential``)."""
    plan = SequentialPlan(initial=rounds.size, step=rounds.size, budget=rounds.budget, growth=SEQUENTIAL_GROWTH)
    return run_sequential(plan, rounds.check.threshold, rounds.first, rounds)
