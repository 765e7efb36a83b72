"""One rule for a gate corrected for an instrument that sees only part of the effect (a judge's attenuation).

A measured correction (``Attenuation``: a factor s and an offset, with bounds) turns an interval for
s × truth − offset into one for the truth. The rule, applied by every path that gates on such a
measure (a fixed-size run, a sequential one, a pull request's paired comparison) and assumed by its
sizing: the sample's interval and the correction's bounds each get half the error (``split_confidence``),
and the sample's interval is divided by whichever bound of s moves each end away from 0
(``deattenuate``). ``corrected_interval`` is that rule over any interval procedure; ``raw_threshold``
is its inverse, what a raw interval must clear for a planned run to pass or fail.

A correction with nothing measured to split the error with (no factor, no offset) but samples on a range of
their own (``sample_bounds``: a two-phase estimate with a reference, ``stats.two_phase``, whose samples are
unbiased for the truth and lie within ±B) gets the whole error for the samples' interval, built on that range
(``sample_level``, ``sample_range``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from pytest_fairness.stats.gate import Threshold
from pytest_fairness.stats.intervals import Interval, Summary


@dataclass(frozen=True)
class Attenuation:
    """A measured correction of an instrument: observed ≈ s × truth − offset, so truth ≈ (observed + offset) / s.

    E.g. a judge whose mean rating of a truly harmful answer pair is s reports about s × the true net harm;
    a reference that re-judges a sample of the run's pairs measures the offset, what the judge's errors on
    those pairs moved the average by. ``low`` and ``high`` bound s, ``offset_low`` and ``offset_high`` the
    offset, jointly at ``confidence``; ``what`` names the correction and ``basis`` says what it was measured
    on, for the result's explanation. ``void`` says why nothing can be concluded (e.g. a placebo that should
    show no effect showed one): the corrected interval is then the whole scale.
    """

    estimate: float
    low: float
    high: float
    confidence: float
    what: str
    basis: str
    offset: float = 0.0
    offset_low: float = 0.0
    offset_high: float = 0.0
    void: str = ""
    #: The range of the samples the gate's interval is built from when the estimator puts them beyond the scale
    #: (a two-phase estimate's ±B); None: the measure's own bounds.
    sample_bounds: tuple[float, float] | None = None

    @property
    def scaled(self) -> bool:
        """Whether the correction divides by a measured factor (not only adds an offset)."""
        return not self.estimate == self.low == self.high == 1.0

    @property
    def splits(self) -> bool:
        """Whether the correction's bounds take half the gate's error: it has a factor or an offset to bound."""
        return self.scaled or self.offset_low != 0.0 or self.offset_high != 0.0

    def describe(self) -> str:
        if self.void:
            return f"no conclusion: {self.void}"
        if not self.splits:
            return f"{self.what} {self.basis}".strip()
        if not self.scaled:
            return (
                f"corrected for {self.what} {self.offset:+.4f} [{self.offset_low:+.4f}, {self.offset_high:+.4f}] "
                f"{self.basis}"
            )
        return f"corrected for {self.what} s = {self.estimate:.2f} [{self.low:.2f}, {self.high:.2f}] {self.basis}"


def split_confidence(confidence: float) -> float:
    """Confidence of each of two intervals whose joint error is at most 1 - ``confidence`` (Bonferroni):
    the sample's interval and the attenuation factor's each get half the error."""
    return 1 - (1 - confidence) / 2


def sample_level(attenuation: Attenuation | None, confidence: float) -> float:
    """The confidence of the samples' own interval under a gate at ``confidence``: half the error when the
    correction's bounds take the other half, else all of it."""
    return split_confidence(confidence) if attenuation is not None and attenuation.splits else confidence


def sample_range(attenuation: Attenuation | None, bounds: tuple[float, float]) -> tuple[float, float]:
    """The range the samples' interval is built on: the correction's ``sample_bounds``, else the scale's."""
    return bounds if attenuation is None or attenuation.sample_bounds is None else attenuation.sample_bounds


def deattenuate(interval: Interval, attenuation: Attenuation | None, bounds: tuple[float, float]) -> Interval:
    """The interval for the truth given one for s × truth − offset and the bounds of s and the offset
    (Rogan–Gladen style).

    The offset's bounds are added to the matching ends, then each end is divided by whichever bound of s
    moves it away from 0, so the result covers the truth whenever the raw interval (at ``split_confidence``)
    and the correction's bounds do; it is clipped to ``bounds``, a scale whose no-effect point is 0. With no
    correction the interval is returned as is; with s possibly 0, or a void correction, nothing beyond the
    scale itself can be said.
    """
    if attenuation is None:
        return interval
    if attenuation.void:
        return (float(bounds[0]), float(bounds[1]))
    if not all(math.isfinite(end) for end in interval):
        return interval
    if attenuation.low <= 0:
        return (float(bounds[0]), float(bounds[1]))
    lo, hi = interval[0] + attenuation.offset_low, interval[1] + attenuation.offset_high
    lo = lo / attenuation.high if lo >= 0 else lo / attenuation.low
    hi = hi / attenuation.low if hi >= 0 else hi / attenuation.high
    return (max(lo, float(bounds[0])), min(hi, float(bounds[1])))


def corrected_mean(raw_mean: float, attenuation: Attenuation) -> float:
    """A mean of raw samples on the truth's scale: (raw + offset) / s (nan when s is not positive)."""
    return (raw_mean + attenuation.offset) / attenuation.estimate if attenuation.estimate > 0 else math.nan


def deattenuated_summary(
    raw: Summary, attenuation: Attenuation, bounds: tuple[float, float], confidence: float
) -> Summary:
    """``raw`` (its gate interval at ``sample_level(attenuation, confidence)``, on ``sample_range``) with the mean
    divided by s's estimate and the gate interval ``deattenuate``d: what a gate at ``confidence`` reads. The
    papers' normal and bootstrap intervals, SD and t-test stay on the raw scale."""
    mean = corrected_mean(raw.mean, attenuation)
    what = "attenuation" if attenuation.scaled else "the judge's lean" if attenuation.splits else "the reference"
    return replace(
        raw,
        mean=min(max(mean, float(bounds[0])), float(bounds[1])) if math.isfinite(mean) else mean,
        ci_t=deattenuate(raw.ci_t, attenuation, bounds),
        confidence=confidence,
        ci_method=f"{raw.ci_method}, {'two-phase estimate with' if not attenuation.splits else 'corrected for'} {what}",
    )


def corrected_interval(
    raw_at: Callable[[float, tuple[float, float]], Interval],
    attenuation: Attenuation | None,
    bounds: tuple[float, float],
    confidence: float,
) -> Interval:
    """The interval a corrected gate reads at ``confidence``: ``raw_at(level, range)`` is the samples' interval
    at a confidence level on a range (fixed-n, always-valid or paired); with no correction it is taken at
    ``confidence`` on ``bounds``, with one at ``sample_level`` on ``sample_range``, then ``deattenuate``d by the
    correction's bounds (measured at the other half, if any) and clipped to ``bounds``."""
    if attenuation is None:
        return raw_at(confidence, bounds)
    raw = raw_at(sample_level(attenuation, confidence), sample_range(attenuation, bounds))
    return deattenuate(raw, attenuation, bounds)


def raw_threshold(threshold: Threshold, factor: float) -> Threshold:
    """What a raw interval must clear for its corrected interval to clear ``threshold`` when the factor's bound
    that the correction divides by is ``factor`` (no offset): each end times it. A planned run that must pass
    is divided by the factor's lower bound; one that must fail, by its upper bound."""
    lo, hi = threshold.min, threshold.max
    return Threshold(None if lo is None else lo * factor, None if hi is None else hi * factor)
