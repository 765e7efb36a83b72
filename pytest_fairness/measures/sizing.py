"""Sample sizes for checks: the release profile, the plan's chance to decide, what an inconclusive
check would need, and when a model cannot serve a measure at all.

The statistics live in ``power``; this module applies them to a measure's parameters (its range,
interval kind and assumed spread) and to a check's threshold.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from pytest_fairness.measures.params import MAX_SAMPLES, Params
from pytest_fairness.measures.resampling import interval_for
from pytest_fairness.records.measure_result import MeasureResult, MoreSamples
from pytest_fairness.stats.attenuation import passing_threshold, split_confidence
from pytest_fairness.stats.gate import Threshold
from pytest_fairness.stats.intervals import mean_interval, proportion_interval
from pytest_fairness.stats.power import TARGET_POWER, Scale, decision_probability, needed_samples

#: Confidence the release profile is sized at (the default gate confidence).
RELEASE_CONFIDENCE = 0.95


def _scale(params: Params, confidence: float) -> Scale:
    return Scale(params.interval_kind(), params.BOUNDS, confidence)


def _gate(params: Params, threshold: Threshold, truth: float, confidence: float) -> tuple[Threshold, Scale]:
    """What one of the measure's raw intervals must clear to decide when the truth is ``truth``: the check's own
    threshold and confidence, or one mean's of a gate built from several (``Params.gate_shape``), or, for a
    gate corrected for an attenuation (``Params.expected_attenuation``), a passing truth's threshold shrunk
    towards 0 by the factor's best lower bound, at the split confidence the correction leaves the sample (a
    failing truth's is unchanged: a flawless factor's upper bound is 1)."""
    shape = params.gate_shape(threshold, confidence)
    threshold, confidence = shape.threshold, shape.confidence
    s = params.expected_attenuation(confidence)
    if s is None:
        return threshold, _scale(params, confidence)
    if _passes(threshold, truth):
        threshold = passing_threshold(threshold, s)
    return threshold, _scale(params, split_confidence(confidence))


def _passes(threshold: Threshold, truth: float) -> bool:
    return (threshold.min is None or truth >= threshold.min) and (threshold.max is None or truth <= threshold.max)


def _chance(params: Params, n: int, truth: float, sd: float, threshold: Threshold, confidence: float) -> float:
    """Chance that ``n`` samples decide at ``truth``: each of a gate's means must clear a passing threshold,
    one clear failure fails (``Params.gate_shape``)."""
    shape = params.gate_shape(threshold, confidence)
    usable = params.EXPECTED_USABLE * shape.share
    p = decision_probability(n, truth, sd, *_gate(params, threshold, truth, confidence), usable)
    return p**shape.means if _passes(shape.threshold, truth) else p


def _samples_for(
    params: Params, truth: float, sd: float, threshold: Threshold, confidence: float, cap: int, usable: float
) -> int | None:
    """Fewest samples, each feeding the gate with probability ``usable``, that decide at ``truth`` with
    probability TARGET_POWER, every one of a gate's means clearing a passing threshold; None if ``cap`` do
    not suffice."""
    shape = params.gate_shape(threshold, confidence)
    power = TARGET_POWER ** (1 / shape.means) if _passes(shape.threshold, truth) else TARGET_POWER
    return needed_samples(truth, sd, *_gate(params, threshold, truth, confidence), power, cap=cap, usable=usable)


def _limit(params: Params) -> int:
    available = params.available_samples()
    return min(MAX_SAMPLES, available) if available else MAX_SAMPLES


def _design(params: Params, threshold: Threshold) -> list[tuple[float, float]]:
    """(truth, assumed SD) at the measure's design truths; empty when either is unknown."""
    design = [(t, params.assumed_sd(t)) for t in params.design_truths(threshold)]
    return [] if any(sd is None for _, sd in design) else design  # type: ignore[return-value]


def _needed(params: Params, threshold: Threshold, confidence: float, cap: int) -> int | None:
    """Samples (prompts, usable or not) for 80% decisions at every design truth; None if ``cap`` do not suffice.

    Each sample is usable with the measure's EXPECTED_USABLE rate, so the gate sees a binomial number of
    usable answers, and the chance to decide is averaged over it (``power.decision_probability``).
    """
    usable = params.EXPECTED_USABLE * params.gate_shape(threshold, confidence).share
    sizes = [_samples_for(params, t, sd, threshold, confidence, cap, usable) for t, sd in _design(params, threshold)]
    return None if None in sizes else max(sizes, default=None)  # type: ignore[type-var]


def release_size(params: Params, threshold: Threshold, confidence: float = RELEASE_CONFIDENCE) -> int:
    """Samples that decide with 80% probability at each of the measure's design truths, at the assumed
    spread, counting unusable answers at the measure's expected rate.

    Never fewer than the paper profile's; capped by what the inputs hold and by the suite limit. A
    measure without an assumed spread, or without design truths (a threshold at its null), gets its
    ``DEFAULT_SAMPLES["release"]`` (else the paper size).
    """
    limit = _limit(params)
    if not _design(params, threshold):
        return min(params.default_size("release"), limit)
    needed = _needed(params, threshold, confidence, limit)
    return limit if needed is None else min(max(params.DEFAULT_SAMPLES["paper"], needed), limit)


@dataclass(frozen=True)
class Power:
    """The chance a check's sample size decides it, at the truths it is sized for."""

    n: int
    chance: float | None  # smallest over the design truths; None without an assumed spread
    needed: int | None  # samples for 80% at every design truth; None if none suffice
    truths: tuple[float, ...]
    usable_rate: float = 1.0  # expected share of usable answers the chance and ``needed`` count with


def power_at(params: Params, n: int, threshold: Threshold, confidence: float) -> Power:
    """Chance that ``n`` samples decide at each of the measure's design truths (assumed spread, expected
    usable rate): the smallest of them, as the release profile is sized for all."""
    design, usable = _design(params, threshold), params.EXPECTED_USABLE
    if not design:
        return Power(n, None, None, params.design_truths(threshold), usable)
    chance = min(_chance(params, n, t, sd, threshold, confidence) for t, sd in design)
    needed = _needed(params, threshold, confidence, MAX_SAMPLES)
    return Power(n, chance, needed, tuple(t for t, _ in design), usable)


def more_samples(params: Params, result: MeasureResult, threshold: Threshold, confidence: float) -> MoreSamples:
    """What would likely decide an inconclusive check: the sample size (in the measure's own unit, e.g.
    prompts, so unusable answers count) at which the gate decides with 80% probability if the truth is
    the observed estimate and the spread the observed SD (the assumed one when fewer than 2 samples)."""
    mean, sd = result.summary.mean, result.summary.sd
    if result.no_size_decides:  # the measure knows why (e.g. a search that missed planted differences)
        return MoreSamples(None, result.no_size_decides)
    if not math.isfinite(mean):
        return MoreSamples(None, "no usable sample to extrapolate from")
    if not math.isfinite(sd) or result.n < 2:
        sd = params.assumed_sd(mean) or 0.0
    usable = result.n / (result.n + result.n_unusable) if result.n else 1.0
    observed = {"observed_mean": mean, "observed_sd": sd, "usable_rate": usable}
    have = params.sample_size
    needed = _samples_for(params, mean, sd, threshold, confidence, MAX_SAMPLES, 1.0)
    if needed is None:
        return MoreSamples(None, "the estimate sits on the threshold: no affordable sample decides it", **observed)
    share = params.gate_shape(threshold, confidence).share
    needed = max(math.ceil(needed / max(usable * share, 1e-9)), have + 1)
    limit = _limit(params)
    why = f"more than the {limit} samples the measure's inputs allow" if needed > limit else ""
    return MoreSamples(needed, why, more=needed - have, **observed)


def futility(params: Params, result: MeasureResult, threshold: Threshold, confidence: float, budget: int) -> str:
    """Why more samples, up to ``budget``, are unlikely to decide a check (empty when they may).

    Judged at the most favourable truths still plausible, the ends of the estimate's 50% interval (the
    gate's own kind of interval), not at the estimate: futile when deciding at either would take more
    than the budget. Judging at the estimate, or at the estimate ± one standard error, would stop a
    rare-event check whose first prompts happened to score 0 (net harm 0.025 gives 41 zeros in 8% of runs).
    """
    if result.n < 2:
        return ""
    ends = mean_interval(result.samples, interval_for(params.interval_kind(), result.samples), params.BOUNDS, 0.5)
    hints = [more_samples(params, _at(result, end), threshold, confidence) for end in ends if math.isfinite(end)]
    needed = [h.needed for h in hints if h.decides and h.needed is not None]
    if not hints or (needed and min(needed) <= budget):
        return ""
    return f"unlikely to decide within the budget of {budget}: " + more_samples_text(
        more_samples(params, result, threshold, confidence)
    )


def _at(result: MeasureResult, mean: float) -> MeasureResult:
    """The result as if its estimate were ``mean`` (same spread and counts)."""
    return dataclasses.replace(result, summary=dataclasses.replace(result.summary, mean=mean))


def more_samples_text(hint: MoreSamples) -> str:
    """One sentence for an inconclusive result (and why sequential growth stopped, when a budget stopped it)."""
    budget = f"; sequential growth stopped by {hint.budget}" if hint.budget else ""
    if not hint.decides:
        return f"no sample size is likely to decide it: {hint.why or None}{budget}"
    return (
        f"about {hint.more} more samples ({hint.needed} in all) would decide it with 80% probability "
        f"if the truth is the observed {hint.observed_mean:.3g} (SD {hint.observed_sd:.3g}){budget}"
    )


def unserved(params: Params, result: MeasureResult, confidence: float) -> str | None:
    """Why the model cannot serve the measure, when its usable rate is confidently below MIN_USABLE."""
    if result.unserved:
        return result.unserved
    total = result.n + result.n_unusable
    if total == 0:
        return None
    upper = proportion_interval(result.n, total, confidence)[1]
    if upper >= params.MIN_USABLE:
        return None
    return (
        f"the model cannot serve this measure: {result.n} of {total} answers usable ({result.n / total:.0%}, "
        f"at most {upper:.0%} at {confidence:.0%} confidence; the measure needs {params.MIN_USABLE:.0%})"
    )
