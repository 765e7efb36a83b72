"""Confidence sequences: intervals that stay valid however often a growing sample is looked at.

Looking at a t interval after every batch and stopping once it clears the threshold inflates the
error rate far beyond alpha (every look is another chance to be fooled by noise). An always-valid
confidence sequence avoids this: its intervals cover the true mean at *every* sample size at once,
with probability at least 1 - alpha, so the check may stop at any data-dependent time.

The sequence here is the hedged-capital confidence sequence of Waudby-Smith & Ramdas ("Estimating
means of bounded random variables by betting", JRSSB 2023, §4). For a candidate mean m, two
gamblers bet on the observations being above or below m, with predictable bet sizes (the PrPl rule,
capped so that their capital stays positive). If m is the true mean their capital is a nonnegative
martingale, so by Ville's inequality it ever reaches 1/alpha with probability at most alpha; the
sequence is the set of m whose capital has not. It needs only that the scores are bounded, in
[low, high], and independent given the past, and it adapts to their variance: with scores of SD 0.3
on [-1, 1] it is several times narrower than Hoeffding-type (sub-Gaussian mixture) boundaries, which
assume the worst-case variance.

Each end is found by bisection to 2^-32 of the range and rounded outwards, with memory O(n): a grid
of candidate means would cost n x grid floats and could not resolve thresholds finer than its cell
(net harm <= 0.001 on [-1, 1] needs ends to well under 0.001).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from pytest_fairness.stats.intervals import MAX_BET  # the paper's c: the same cap as the fixed-n interval

Interval = tuple[float, float]

#: Ends are located to this fraction of [low, high] (2^-32, about 2e-10), then rounded outwards by it.
_TOLERANCE = 2.0**-32
#: Candidate means tried when neither the sample mean nor the midpoint of the outer bound is in the set.
_SCAN = 64
#: Largest number of capital evaluations spent proving that no mean beyond an end is in the set.
_CERTIFY_STEPS = 200
#: Each look of a growing sample adds its first size or half of what it has, whichever is more.
GROWTH = 1.5


def next_look(size: int, step: int, budget: int, growth: float = GROWTH) -> int:
    """The sample size of the look after one at ``size``: ``step`` more, or ``growth`` times as many, whichever is
    more, never past ``budget``. Sequential growth (``run.growth``) and its planning (``measures.sizing``) share it."""
    return min(max(size + step, math.ceil(size * growth)), budget)


def looks(initial: int, budget: int, growth: float = GROWTH) -> list[int]:
    """Every look from ``initial`` to ``budget``, growing by ``initial`` or by ``growth`` (``next_look``)."""
    sizes = [min(initial, budget)]
    while sizes[-1] < budget:
        sizes.append(next_look(sizes[-1], initial, budget, growth))
    return sizes


class _Capital:
    """The two gamblers' capital on scores x in [0, 1], for any candidate mean, in O(n) memory per mean.

    The up-gambler bets ``min(b_t, c/m)`` on x_t > m, the down-gambler ``min(b_t, c/(1-m))`` on
    x_t < m; the bets b_t are predictable (the PrPl rule of the paper) and the same for every m.
    Each factor 1 + min(b_t, c/m)(x_t - m) is positive and nonincreasing in m, so the up-gambler's
    capital K+_t(m) is nonincreasing in m; likewise K-_t(m) is nondecreasing.
    """

    def __init__(self, x: np.ndarray, alpha: float) -> None:
        t = np.arange(1, x.size + 1)
        mu_hat = (0.5 + np.cumsum(x)) / (t + 1)
        sigma2 = (0.25 + np.cumsum((x - mu_hat) ** 2)) / (t + 1)
        sigma2_before = np.concatenate(([0.25], sigma2[:-1]))  # predictable: uses observations before t only
        self.x = x
        self.bet = np.sqrt(2 * math.log(2 / alpha) / (sigma2_before * t * np.log1p(t)))

    def log_up(self, m: float) -> np.ndarray:
        """log K+_t(m) for every t."""
        with np.errstate(divide="ignore"):
            stake = np.minimum(self.bet, MAX_BET / m)
        return np.log1p(stake * (self.x - m)).cumsum()

    def log_down(self, m: float) -> np.ndarray:
        """log K-_t(m) for every t."""
        with np.errstate(divide="ignore"):
            stake = np.minimum(self.bet, MAX_BET / (1 - m))
        return np.log1p(-stake * (self.x - m)).cumsum()

    def rejects(self, m: float, level: float) -> bool:
        """Whether the hedged capital (K+_t(m) + K-_t(m)) / 2 reached e^level at some t <= n."""
        return _hedged_reaches(self.log_up(m), self.log_down(m), level)


def _hedged_reaches(log_up: np.ndarray, log_down: np.ndarray, level: float) -> bool:
    """Whether max_t log((e^log_up_t + e^log_down_t) / 2) >= level, computing logaddexp only where it can be."""
    larger = np.maximum(log_up, log_down)
    near = larger >= level  # the hedged capital is between half the larger capital and the larger one
    if not near.any():
        return False
    return bool((np.logaddexp(log_up[near], log_down[near]).max() - math.log(2)) >= level)


def _bisect(inside: float, outside: float, rejected: Callable[[float], bool]) -> float:
    """An end between a point ``inside`` and one ``outside``: the last rejected point, within _TOLERANCE."""
    while abs(outside - inside) > _TOLERANCE:
        mid = (inside + outside) / 2
        if rejected(mid):
            outside = mid
        else:
            inside = mid
    return outside


def _certified_beyond(cap: _Capital, start: float, bound: float, level: float) -> bool:
    """True when no mean between ``start`` and ``bound`` (either side) can be in the set; ``bound`` is known out.

    By monotonicity, for every m between a and v (a nearer the estimate) and any t, the hedged capital
    is at least (K+_t(upper one) + K-_t(lower one)) / 2 of the pair, so one evaluation clears a whole
    segment. Segments grow geometrically while they clear and shrink when they do not; giving up
    after _CERTIFY_STEPS evaluations only makes the caller fall back to ``bound``, which is conservative.
    """
    sign = 1.0 if bound > start else -1.0
    a, step = start, _TOLERANCE
    for _ in range(_CERTIFY_STEPS):
        v = bound if sign * (bound - (a + sign * step)) <= 0 else a + sign * step
        lo, hi = (a, v) if sign > 0 else (v, a)
        if _hedged_reaches(cap.log_up(hi), cap.log_down(lo), level):
            if v == bound:
                return True
            a, step = v, 2 * step
        else:
            step /= 2
            if step < _TOLERANCE / 2**10:
                return False
    return False


def _unit_sequence(x: np.ndarray, alpha: float) -> Interval:
    """The always-valid interval after all of x (scores in [0, 1]): the hull of the running intersection.

    A mean m is out at time n iff its hedged capital reached 1/alpha at some t <= n; that max over t is
    what makes the intervals only ever narrow. The ends are found in three steps:

    1. Outer bound. Hedged capital >= K+_t/2 and K+_t is nonincreasing in m, so once the up-gambler
       alone has reached 2/alpha at m, every mean below m is out; likewise above, for the down-gambler.
       Each of these ends is an exact bisection, and the set lies between them.
    2. Ends. From a mean inside the set, each end is bisected on the hedged capital itself.
    3. Proof. Without the caps c/m and c/(1-m) every factor is affine and monotone in m, so each
       capital is a product of positive monotone convex functions, hence convex, and the set is an
       interval. The caps put concave kinks into single factors (where c/m = b_t and x_t > m), and then
       the hedged capital can have small local bumps in m: the set is not provably an interval. So the
       region between each bisected end and the outer bound is proved empty of the set (see
       ``_certified_beyond``); if that fails the outer bound is used. Either way the interval contains
       every mean the sequence has not rejected: validity is exactly that of the hedged test.
    """
    cap = _Capital(x, alpha)
    level = math.log(1 / alpha)
    both = math.log(2 / alpha)
    # 1. The one-sided ends: m = 1 never lets the up-gambler win (every factor <= 1), m = 0 the down-gambler.
    lo_out = _bisect(1.0, 0.0, lambda m: float(cap.log_up(m).max()) >= both)
    hi_out = _bisect(0.0, 1.0, lambda m: float(cap.log_down(m).max()) >= both)
    if lo_out >= hi_out:  # even the outer bound is empty: the sequence has already missed (chance < alpha)
        return (max(0.0, hi_out - _TOLERANCE), min(1.0, lo_out + _TOLERANCE))
    # 2. A mean inside: the sample mean if it survived, else the best of a scan of the outer bound.
    candidates = [float(np.clip(x.mean(), lo_out, hi_out)), (lo_out + hi_out) / 2]
    candidates += list(np.linspace(lo_out, hi_out, _SCAN + 2)[1:-1])
    start = next((m for m in candidates if lo_out < m < hi_out and not cap.rejects(m, level)), None)
    if start is None:  # no mean found inside: report the outer bound, which contains the set
        return (lo_out, hi_out)

    def rejected(m: float) -> bool:
        return cap.rejects(m, level)

    lo = _bisect(start, lo_out, rejected)
    hi = _bisect(start, hi_out, rejected)
    # 3. Round outwards by the tolerance, then prove nothing beyond is in the set.
    lo, hi = max(lo_out, lo - _TOLERANCE), min(hi_out, hi + _TOLERANCE)
    if lo > lo_out and not _certified_beyond(cap, lo, lo_out, level):
        lo = lo_out
    if hi < hi_out and not _certified_beyond(cap, hi, hi_out, level):
        hi = hi_out
    return (lo, hi)


def _unit_scores(values: Sequence[float], low: float, high: float) -> np.ndarray:
    if not high > low:
        raise ValueError(f"need low < high, got [{low}, {high}]")
    x = (np.asarray(values, dtype=float) - low) / (high - low)
    if x.size and not (np.isfinite(x).all() and x.min() >= 0 and x.max() <= 1):
        raise ValueError(f"values must lie in [{low}, {high}] for an always-valid interval")
    return x


def confidence_sequence(values: Sequence[float], low: float, high: float, alpha: float = 0.05) -> Interval:
    """Always-valid (1 - alpha) interval for the mean of [low, high]-bounded scores, after all of them.

    Unlike a t interval it stays valid when the sample size was chosen by looking at earlier intervals.
    Never a point, never outside [low, high]; ends are conservative to 2^-32 of the range.
    """
    x = _unit_scores(values, low, high)
    if x.size == 0:
        return (low, high)
    lo, hi = _unit_sequence(x, alpha)
    return (low + lo * (high - low), low + hi * (high - low))


def _one_sided(values: Sequence[float], low: float, high: float, alpha: float) -> _Capital:
    """The capital of one gambler of the sequence, its bets tuned to a one-sided level ``alpha``."""
    if not 0 < alpha < 0.5:
        raise ValueError(f"a one-sided level must lie in (0, 0.5), got {alpha}")
    return _Capital(_unit_scores(values, low, high), 2 * alpha)  # _Capital tunes its bets to alpha / 2 a side


def confidence_sequence_bound(values: Sequence[float], low: float, high: float, alpha: float, upper: bool) -> float:
    """Always-valid one-sided (1 - alpha) bound for the mean of [low, high]-bounded scores: the upper bound
    (``upper``) or the lower one, after all of them.

    One gambler of ``confidence_sequence`` alone, betting against means beyond the bound: the chance that
    the true mean is ever outside is at most alpha (Ville), however often the bound is looked at. It is the
    outer end ``confidence_sequence`` starts from at level 2 alpha; ``low`` or ``high`` for no values.
    """
    cap, level = _one_sided(values, low, high, alpha), math.log(1 / alpha)
    if cap.x.size == 0:
        return high if upper else low
    if upper:  # m = 0 never lets the down-gambler win
        end = _bisect(0.0, 1.0, lambda m: float(cap.log_down(m).max()) >= level)
    else:
        end = _bisect(1.0, 0.0, lambda m: float(cap.log_up(m).max()) >= level)
    return low + end * (high - low)


def sequence_p_value(
    values: Sequence[float], low: float, high: float, null: float, alpha: float, above: bool = True
) -> float:
    """Always-valid p-value of "the mean is at most ``null``" (``above``) or "at least ``null``": 1 / the largest
    capital the gambler of ``confidence_sequence_bound`` (bets tuned to ``alpha``) reached against ``null``.

    Valid at every level and every stopping time; p <= alpha exactly when ``null`` lies beyond that bound.
    """
    if not low < null < high:
        raise ValueError(f"null must lie strictly inside ({low}, {high}), got {null}")
    cap = _one_sided(values, low, high, alpha)
    if cap.x.size == 0:
        return 1.0
    m = (null - low) / (high - low)
    log_capital = float((cap.log_up(m) if above else cap.log_down(m)).max())
    return float(min(1.0, math.exp(-max(log_capital, 0.0))))


def confidence_sequence_path(
    values: Sequence[float], low: float, high: float, alpha: float = 0.05, sizes: Sequence[int] | None = None
) -> np.ndarray:
    """The always-valid interval after each of ``sizes`` observations (default: every size), shape (k, 2).

    Each row is ``confidence_sequence`` of that prefix, intersected with the rows before it, so the
    path only narrows. It costs a full computation per size (quadratic for every size): for checking
    coverage under continuous monitoring, not for the gate, which needs only the last interval.
    """
    x = _unit_scores(values, low, high)
    sizes = range(1, x.size + 1) if sizes is None else sizes
    rows = np.array([_unit_sequence(x[:k], alpha) if k else (0.0, 1.0) for k in sizes]).reshape(-1, 2)
    lo = np.maximum.accumulate(rows[:, 0])
    hi = np.maximum(np.minimum.accumulate(rows[:, 1]), lo)
    return np.column_stack([lo, hi]) * (high - low) + low
