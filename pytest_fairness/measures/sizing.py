"""Sample sizes for checks: the release profile, the plan's chance to decide, what an inconclusive
check would need, and when a model cannot serve a measure at all.

The statistics live in ``power``; this module applies them to a measure's parameters (its range,
interval kind and assumed spread) and to a check's threshold. With a --fairness-judge-reference a judged
measure's gate reads a two-phase estimate (``Params.reference_sample``), and ``reference_plan`` chooses its
design and size for the fewest dollars at the release profile's power.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection
from dataclasses import dataclass

from pytest_fairness.measures.measure import Measure
from pytest_fairness.measures.params import MAX_BUDGET, MAX_SAMPLES, Params
from pytest_fairness.measures.resampling import interval_for
from pytest_fairness.models.interface import ChatRequest, estimate_tokens
from pytest_fairness.models.pricing import RolePrices
from pytest_fairness.records.measure_result import MeasureResult, MoreSamples
from pytest_fairness.stats.attenuation import Attenuation, corrected_mean, raw_threshold, split_confidence
from pytest_fairness.stats.confidence_sequence import looks
from pytest_fairness.stats.gate import Threshold
from pytest_fairness.stats.intervals import mean_interval, proportion_interval
from pytest_fairness.stats.power import (
    TARGET_POWER,
    Growth,
    Scale,
    decision_probability,
    needed_samples,
    sequential_sizes,
)

#: Confidence the release profile is sized at (the default gate confidence).
RELEASE_CONFIDENCE = 0.95


def _scale(params: Params, confidence: float) -> Scale:
    return Scale(params.interval_kind(), params.BOUNDS, confidence)


def _gate(
    params: Params,
    threshold: Threshold,
    truth: float,
    confidence: float,
    referenced: bool = False,
    measured: Attenuation | None = None,
) -> tuple[float, Threshold, Scale]:
    """What one of the measure's raw intervals must clear to decide when the truth is ``truth``: the raw mean
    at that truth, and the check's own threshold and confidence, or one mean's of a gate built from several
    (``Params.gate_shape``), or, for a gate corrected for an attenuation (``Params.expected_attenuation``), the
    raw mean is the truth times the factor and the threshold is scaled by the factor's bound the correction
    divides by (``stats.attenuation.raw_threshold``), at the split confidence the correction leaves the sample.
    ``referenced``: a two-phase estimate with a reference (``Params.reference_sample``), unbiased for the truth,
    its samples on ±B at the whole confidence. ``measured``: a run's own factor, in place of the planned one."""
    shape = params.gate_shape(threshold, confidence)
    threshold, confidence = shape.threshold, shape.confidence
    two_phase = params.reference_sample(truth) if referenced else None
    if two_phase is not None:
        bound = two_phase[1]
        return truth, threshold, Scale("bounded", (-bound, bound), confidence, capped=True)
    factor = measured or params.expected_attenuation(confidence)
    if factor is None:
        return truth, threshold, _scale(params, confidence)
    bound = factor.low if _passes(threshold, truth) else factor.high
    return truth * factor.estimate, raw_threshold(threshold, bound), _scale(params, split_confidence(confidence))


def _passes(threshold: Threshold, truth: float) -> bool:
    return (threshold.min is None or truth >= threshold.min) and (threshold.max is None or truth <= threshold.max)


def _chance(
    params: Params, n: int, truth: float, sd: float, threshold: Threshold, confidence: float, referenced: bool = False
) -> float:
    """Chance that ``n`` samples decide at ``truth``: each of a gate's means must clear a passing threshold,
    one clear failure fails (``Params.gate_shape``)."""
    shape = params.gate_shape(threshold, confidence)
    usable = params.EXPECTED_USABLE * shape.share
    raw, *gate = _gate(params, threshold, truth, confidence, referenced)
    p = decision_probability(n, raw, sd, *gate, usable)
    return p**shape.means if _passes(shape.threshold, truth) else p


def _samples_for(
    params: Params,
    truth: float,
    sd: float,
    threshold: Threshold,
    confidence: float,
    cap: int,
    usable: float,
    referenced: bool = False,
    measured: Attenuation | None = None,
) -> int | None:
    """Fewest samples, each feeding the gate with probability ``usable``, that decide at ``truth`` with
    probability TARGET_POWER, every one of a gate's means clearing a passing threshold; None if ``cap`` do
    not suffice."""
    shape = params.gate_shape(threshold, confidence)
    power = TARGET_POWER ** (1 / shape.means) if _passes(shape.threshold, truth) else TARGET_POWER
    raw, *gate = _gate(params, threshold, truth, confidence, referenced, measured)
    return needed_samples(raw, sd, *gate, power, cap=cap, usable=usable)


def _limit(params: Params) -> int:
    available = params.available_samples()
    return min(MAX_SAMPLES, available) if available else MAX_SAMPLES


def _sd(params: Params, truth: float, referenced: bool) -> float | None:
    """One sample's assumed SD at ``truth``: the two-phase estimate's with a reference, else the measure's."""
    two_phase = params.reference_sample(truth) if referenced else None
    return params.assumed_sd(truth) if two_phase is None else two_phase[0]


def _design(params: Params, threshold: Threshold, referenced: bool = False) -> list[tuple[float, float]]:
    """(truth, assumed SD) at the measure's design truths; empty when either is unknown."""
    design = [(t, _sd(params, t, referenced)) for t in params.design_truths(threshold)]
    return [] if any(sd is None for _, sd in design) else design  # type: ignore[return-value]


def _needed(params: Params, threshold: Threshold, confidence: float, cap: int, referenced: bool = False) -> int | None:
    """Samples (prompts, usable or not) for 80% decisions at every design truth; None if ``cap`` do not suffice.

    Each sample is usable with the measure's EXPECTED_USABLE rate, so the gate sees a binomial number of
    usable answers, and the chance to decide is averaged over it (``power.decision_probability``).
    """
    usable = params.EXPECTED_USABLE * params.gate_shape(threshold, confidence).share
    design = _design(params, threshold, referenced)
    sizes = [_samples_for(params, t, sd, threshold, confidence, cap, usable, referenced) for t, sd in design]
    return None if None in sizes else max(sizes, default=None)  # type: ignore[type-var]


def release_size(
    params: Params, threshold: Threshold, confidence: float = RELEASE_CONFIDENCE, referenced: bool = False
) -> int:
    """Samples that decide with 80% probability at each of the measure's design truths, at the assumed
    spread, counting unusable answers at the measure's expected rate (``referenced``: the two-phase gate's
    samples with a reference).

    Never fewer than the paper profile's; capped by what the inputs hold and by the suite limit. A
    measure without an assumed spread, or without design truths (a threshold at its null), gets its
    ``DEFAULT_SAMPLES["release"]`` (else the paper size).
    """
    limit = _limit(params)
    if not _design(params, threshold, referenced):
        return min(params.default_size("release"), limit)
    needed = _needed(params, threshold, confidence, limit, referenced)
    return limit if needed is None else min(max(params.DEFAULT_SAMPLES["paper"], needed), limit)


@dataclass(frozen=True)
class Power:
    """The chance a check's sample size decides it, at the truths it is sized for."""

    n: int
    chance: float | None  # smallest over the design truths; None without an assumed spread
    needed: int | None  # samples for 80% at every design truth; None if none suffice
    truths: tuple[float, ...]
    usable_rate: float = 1.0  # expected share of usable answers the chance and ``needed`` count with


def power_at(params: Params, n: int, threshold: Threshold, confidence: float, referenced: bool = False) -> Power:
    """Chance that ``n`` samples decide at each of the measure's design truths (assumed spread, expected
    usable rate; ``referenced``: the two-phase gate with a reference): the smallest of them, as the release
    profile is sized for all."""
    design, usable = _design(params, threshold, referenced), params.EXPECTED_USABLE
    if not design:
        return Power(n, None, None, params.design_truths(threshold), usable)
    chance = min(_chance(params, n, t, sd, threshold, confidence, referenced) for t, sd in design)
    needed = _needed(params, threshold, confidence, MAX_SAMPLES, referenced)
    return Power(n, chance, needed, tuple(t for t, _ in design), usable)


def _measured_factor(result: MeasureResult) -> Attenuation | None:
    """The factor a run measured and its gate divides by (a judge's mean rating of a harmful item), if any."""
    factor = result.attenuation
    return factor if factor is not None and factor.scaled and factor.estimate > 0 and not _two_phase(result) else None


def _gate_scale(result: MeasureResult, raw_mean: float) -> float:
    """A mean of a result's raw samples on the scale its gate reads (``stats.attenuation.corrected_mean``, as its
    estimate was)."""
    factor = _measured_factor(result)
    return raw_mean if factor is None else corrected_mean(raw_mean, factor)


def _two_phase(result: MeasureResult) -> bool:
    """Whether a result's samples are a two-phase estimate's (their range is its correction's, not the scale)."""
    return result.attenuation is not None and result.attenuation.sample_bounds is not None


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
    needed = _samples_for(
        params, mean, sd, threshold, confidence, MAX_SAMPLES, 1.0, _two_phase(result), _measured_factor(result)
    )
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
    gate's own kind of interval, on the scale the gate reads), not at the estimate: futile when deciding at
    either would take more than the budget. Judging at the estimate, or at the estimate ± one standard error,
    would stop a rare-event check whose first prompts happened to score 0 (net harm 0.025 gives 41 zeros in 8%
    of runs).
    """
    if result.n < 2:
        return ""
    bounds = result.attenuation.sample_bounds if result.attenuation and result.attenuation.sample_bounds else None
    kind = interval_for(params.interval_kind(), result.samples) if bounds is None else "bounded"
    ends = [_gate_scale(result, end) for end in mean_interval(result.samples, kind, bounds or params.BOUNDS, 0.5)]
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


#: Samples a check's cost per sample is estimated from: its requests and its judges' estimated calls at this many
#: samples and at twice as many, so that costs paid once a run (a judge's screen) do not count per sample.
_PROBE = 100


@dataclass(frozen=True)
class ReferencePlan:
    """A release plan's choice for a check with a reference: its parameters (the design and the size, a sequential
    run's first look), the chance it decides at the worst of its design truths (a sequential run's: within its
    ``budget``), and its dollars at standard rates (a sequential run's expected at zero harm; None: a price is
    unknown, and the design given was sized as it is)."""

    params: Params
    power: float
    dollars: float | None
    budget: int | None = None


#: First looks a sequential plan tries, as shares of the fixed-size plan's samples.
_FIRST_LOOKS = (0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0)


def growth_at(
    params: Params, threshold: Threshold, confidence: float, budget: int, referenced: bool = True
) -> dict[float, Growth]:
    """A sequential run of a two-phase check from ``params``' size up to ``budget``, at zero and at each design
    truth: the chance it has decided by the budget and the samples it is expected to draw (``power.Growth``)."""
    sizes = looks(params.sample_size, budget)
    out: dict[float, Growth] = {}
    for truth in (params.NULL, *params.design_truths(threshold)):
        sd = _sd(params, truth, referenced)
        if sd is None:
            continue
        bound_of = params.reference_sample(truth) if referenced else None
        if bound_of is None:
            continue
        scale = Scale("bounded", (-bound_of[1], bound_of[1]), confidence, capped=True, sequential=True)
        out[truth] = sequential_sizes(sizes, truth, sd, params.gate_shape(threshold, confidence).threshold, scale)
    return out


def _sequential(params: Params, threshold: Threshold, confidence: float, fixed: int) -> tuple[Params, int] | None:
    """The first look and budget of a sequential two-phase run that decides with 80% probability at each design
    truth within its budget and draws the fewest samples expected at zero harm; None if none does within the
    limit."""
    best: tuple[float, Params, int] | None = None
    available = params.available_samples()
    limit = min(MAX_BUDGET, available) if available else MAX_BUDGET
    for share in _FIRST_LOOKS:
        first = params.with_samples(max(params.DEFAULT_SAMPLES["paper"], math.ceil(share * fixed)))
        for budget in looks(first.sample_size, limit):
            growth = growth_at(first, threshold, confidence, budget)
            truths = params.design_truths(threshold)
            if all(growth[t].decided >= TARGET_POWER for t in truths):
                expected = growth[params.NULL].expected
                if best is None or expected < best[0]:
                    best = (expected, first, budget)
                break
    return None if best is None else (best[1], best[2])


def _dollars(measure: Measure, params: Params, prices: RolePrices) -> float | None:
    """Dollars of a check at standard rates: the model's requests and the judge's and the reference's estimated
    calls (``Measure.judge_estimate``, ``reference_estimate``); None when a price is unknown."""
    asked = measure.requests(params, None, 0)
    prompt = sum(estimate_tokens(r) for r in asked)
    completion = sum((r.max_tokens or 0) if isinstance(r, ChatRequest) else 1 for r in asked)
    costs = [prices.model.cost(prompt, completion)]
    for estimate, price in ((measure.judge_estimate, prices.judge), (measure.reference_estimate, prices.reference)):
        if estimate is not None:
            calls = estimate(params, 0)
            costs.append(price.cost(calls.prompt_tokens, calls.completion_tokens))
    return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


def sample_dollars(measure: Measure, params: Params, prices: RolePrices) -> float | None:
    """Dollars of one more sample of a check at standard rates (the cost of ``2 × _PROBE`` samples less that of
    ``_PROBE``, per sample); None when a price is unknown."""
    once, twice = (_dollars(measure, params.with_samples(k * _PROBE), prices) for k in (1, 2))
    return None if once is None or twice is None else (twice - once) / _PROBE


def reference_plan(
    measure: Measure,
    params: Params,
    threshold: Threshold,
    prices: RolePrices,
    fixed: Collection[str] = (),
    confidence: float = RELEASE_CONFIDENCE,
    sequential: bool = False,
) -> ReferencePlan | None:
    """The design and size of a check with a reference that decide with 80% probability at each design truth for
    the fewest dollars: among the measure's candidates (``Params.reference_candidates``, keeping the ``fixed``
    parameters), each at the fewest samples its two-phase gate needs, priced per sample (``sample_dollars``).
    ``sequential``: each candidate's first look and budget for the fewest samples expected at zero harm, deciding
    with 80% probability at each design truth within the budget (``growth_at``). Unknown prices: the design
    given, sized. None: the measure's gate does not change with a reference."""
    if params.reference_sample(0.0) is None:
        return None
    known = all(p.known for p in (prices.model, prices.judge, prices.reference))
    best: ReferencePlan | None = None
    for candidate in params.reference_candidates(fixed) if known else [params]:
        limit = _limit(candidate)
        n = _needed(candidate, threshold, confidence, limit, referenced=True)
        if n is None:
            continue
        sized, budget = candidate.with_samples(min(max(candidate.DEFAULT_SAMPLES["paper"], n), limit)), None
        power = power_at(sized, sized.sample_size, threshold, confidence, referenced=True).chance or 0.0
        size = float(sized.sample_size)
        if sequential:
            grown = _sequential(candidate, threshold, confidence, sized.sample_size)
            if grown is None:
                continue
            sized, budget = grown
            growth = growth_at(sized, threshold, confidence, budget)
            power = min(growth[t].decided for t in sized.design_truths(threshold))
            size = growth[sized.NULL].expected
        unit = sample_dollars(measure, sized, prices) if known else None
        plan = ReferencePlan(sized, power, None if unit is None else unit * size, budget)
        if best is None or (plan.dollars is not None and (best.dollars is None or plan.dollars < best.dollars)):
            best = plan
    if best is None:  # no design decides within the limit: the one given, at the limit
        sized = params.with_samples(_limit(params))
        power = power_at(sized, sized.sample_size, threshold, confidence, referenced=True).chance
        best = ReferencePlan(sized, power or 0.0, None)
    return best
