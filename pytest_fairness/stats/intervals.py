"""Statistics shared by every measure: pure functions over plain arrays, built on numpy/scipy.

The papers report a mean per cell with a 95% interval: the tables use the normal approximation
(mean ± 1.96·SD/√n), the figures a 1,000-resample percentile bootstrap. Those are kept for
reproducing the papers. A *gate* needs more: its interval must cover the truth at the nominal rate
at the small n a CI run can afford, stay on the measure's scale, and never collapse to a point,
because a point interval makes a noisy sample look conclusive.

Which interval a gate uses (``mean_interval(samples, kind, bounds, confidence)``;
``summarize(..., interval=kind, bounds=...)`` puts it in ``Summary.ci_t``, the field gates read,
and names it in ``Summary.ci_method``):

| kind        | for                                                   | interval                                   |
|-------------|-------------------------------------------------------|--------------------------------------------|
| ``binary``  | shares of 0/1 outcomes: decision shares, refusal      | Clopper–Pearson (exact binomial)           |
|             | rates, BEA shares                                     |                                            |
| ``bounded`` | means of scores known to lie in [low, high], e.g. net | fixed-n hedged-capital betting interval    |
|             | harm and implicit (IAT-style) scores in [-1, 1]       | (Waudby-Smith & Ramdas 2023)               |
| ``t``       | unbounded scores                                      | Student t; clipped to the bounds if given; |
|             |                                                       | the betting interval when SD is 0          |

Why:

- **Clopper–Pearson** inverts the exact binomial test, so its coverage is at least nominal for every
  n and every true share. Wilson's score interval is narrower but dips well below nominal near 0 and
  1 (about 86% at n = 3, p = 0.05, 90% at n = 10, p = 0.01), exactly where "0 of 3 decisions were
  stereotyped" must not pass a gate. It is offered (``method="wilson"``) for reporting only.
- **The betting interval** is valid for any distribution on [low, high], at every n, without a normal
  approximation: for each candidate mean m, a gambler bets that the scores lie above m and another
  that they lie below; if m is the true mean their capital is a nonnegative martingale, so it
  reaches 2/alpha with probability at most alpha/2 (Ville's inequality). The interval is the set of m
  where neither did. It cannot leave [low, high], has positive width from any finite sample, and
  adapts to the variance. The t interval fails exactly where fairness scores live: for a rare-event
  mean (net harm: most prompts score exactly 0, true mean 0.04) six prompts are usually all 0 and
  the t interval is the point [0, 0]; its coverage there is about 14% at n = 3 and 55% at n = 20.
  Falling back to the betting interval for constant samples is not enough: the clipped t still
  covers only 88-91% at n = 100-200 for such means, and ~89% at n = 3-5 near a bound (mean 0.9).
  The betting interval for six zeros on [-1, 1] is about [-0.55, 0.55], honestly inconclusive.
  The price is width when the t interval is right: for roughly normal scores on [-1, 1] with SD
  0.5-0.7 the betting interval is 1.2-1.5x as wide as t at n = 20-200, and no wider at n = 3,
  where t's quantile explodes (``tests/unit/test_interval_coverage.py`` checks both).
- **t** stays for scores without known bounds (no interval can guarantee coverage there), and as
  ``summarize``'s default (``interval=None``), which keeps the old unclipped t interval, points for
  constant samples included, until every measure names its kind.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from pytest_fairness.stats.lazy_scipy import sps

Interval = tuple[float, float]
NAN_INTERVAL: Interval = (math.nan, math.nan)
IntervalKind = Literal["t", "binary", "bounded"]
ProportionMethod = Literal["clopper_pearson", "wilson", "wilson_cc"]

#: Largest bet of the betting interval, as a fraction of the capital that could be lost (the paper's c,
#: which it sets to 1/2 or 3/4). Any value below 1 keeps the guarantee; 3/4 lets a sample of near-constant
#: scores (rare events: net harm) narrow the interval about a third faster than 1/2, which is what
#: decides "net harm ≤ 0.001" in thousands rather than tens of thousands of prompts.
MAX_BET = 0.75
#: Bisection steps for the betting interval's ends: locates them to 2^-30 of the range.
_BISECTIONS = 30
#: Resampled values the bootstrap holds at once (8 MB): its resamples go in batches of this over n, so its
#: memory stays flat in the sample size (the same numbers: the resamples are drawn in the same order).
_BOOTSTRAP_CELLS = 1_000_000


@dataclass(frozen=True)
class Summary:
    """Mean of a sample with its intervals and a one-sample t-test against ``null``."""

    mean: float
    n: int
    sd: float
    ci_t: Interval
    ci_normal: Interval
    ci_bootstrap: Interval
    null: float
    t: float
    p: float
    confidence: float
    #: Which interval ``ci_t`` holds (the one gates read): "t", "binary" or "bounded".
    ci_method: str = "t"


def t_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """Student-t interval for the mean; degenerate (a point) when every value is equal."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return NAN_INTERVAL
    mean = float(x.mean())
    sem = float(x.std(ddof=1)) / math.sqrt(x.size)
    if sem == 0.0:
        return (mean, mean)
    half = float(sps.t.ppf(0.5 + confidence / 2, df=x.size - 1)) * sem
    return (mean - half, mean + half)


@lru_cache(maxsize=65536)  # scipy finds each end by root finding (ms a call); power tables ask the same ones
def proportion_interval(
    successes: int, n: int, confidence: float = 0.95, method: ProportionMethod = "clopper_pearson"
) -> Interval:
    """Interval for a binomial share; NaN when n is 0.

    Clopper–Pearson (the default) is exact: coverage is at least nominal at every n and share.
    Wilson is narrower but undercovers near 0 and 1, so it suits reports, not gates.
    """
    if not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return NAN_INTERVAL
    scipy_method = {"clopper_pearson": "exact", "wilson": "wilson", "wilson_cc": "wilsoncc"}[method]
    ci = sps.binomtest(int(successes), int(n)).proportion_ci(confidence_level=confidence, method=scipy_method)
    return (float(ci.low), float(ci.high))


def _max_capital(x: np.ndarray, bets: np.ndarray, m: np.ndarray, up: bool) -> np.ndarray:
    """Per row, the largest capital reached by the gambler betting that the mean is above (below) m."""
    m = m[:, None]
    # Bets are capped so that no single score can cost more than MAX_BET of the capital.
    stake = np.minimum(bets, MAX_BET / m) if up else -np.minimum(bets, MAX_BET / (1 - m))
    stake *= x - m
    stake += 1.0
    with np.errstate(over="ignore"):  # an overflow to inf is still a rejection; factors are >= 1 - MAX_BET
        return np.cumprod(stake, axis=1, out=stake).max(axis=1)


def _fixed_n_bets(x: np.ndarray, alpha: float) -> np.ndarray:
    """Per row, the predictable bets of the fixed-n betting interval on scores x in [0, 1] (the paper's PrPl)."""
    reps, n = x.shape
    t = np.arange(1, n + 1)
    mu_hat = (0.5 + np.cumsum(x, axis=1)) / (t + 1)
    var_hat = (0.25 + np.cumsum((x - mu_hat) ** 2, axis=1)) / (t + 1)
    var_before = np.concatenate([np.full((reps, 1), 0.25), var_hat[:, :-1]], axis=1)  # predictable
    return np.sqrt(2 * math.log(2 / alpha) / (n * var_before))  # tuned for a fixed n


def _unit_betting_intervals(x: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Betting intervals for the mean of each row of x, scores in [0, 1]; ends are rounded outwards."""
    reps = x.shape[0]
    bets = _fixed_n_bets(x, alpha)
    threshold = 2 / alpha
    # The up-gambler's capital falls as m rises and the down-gambler's rises, so each end is one bisection.
    lo_out, lo_in = np.zeros(reps), np.ones(reps)  # m = 1 is never rejected by the up-gambler
    hi_in, hi_out = np.zeros(reps), np.ones(reps)  # m = 0 is never rejected by the down-gambler
    for _ in range(_BISECTIONS):
        mid = (lo_out + lo_in) / 2
        rejected = _max_capital(x, bets, mid, up=True) >= threshold
        lo_out, lo_in = np.where(rejected, mid, lo_out), np.where(rejected, lo_in, mid)
        mid = (hi_in + hi_out) / 2
        rejected = _max_capital(x, bets, mid, up=False) >= threshold
        hi_in, hi_out = np.where(rejected, hi_in, mid), np.where(rejected, mid, hi_out)
    return np.minimum(lo_out, hi_out), np.maximum(lo_out, hi_out)


def _unit_rows(samples: np.ndarray, low: float, high: float, confidence: float) -> np.ndarray:
    """Rows of scores within [low, high] mapped to [0, 1], after checking the bounds, shape and confidence."""
    if not high > low:
        raise ValueError(f"need low < high, got [{low}, {high}]")
    x = np.asarray(samples, dtype=float)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError(f"need a 2-D array with at least one column, got shape {x.shape}")
    if not np.isfinite(x).all() or x.min() < low or x.max() > high:
        raise ValueError(f"samples must lie in [{low}, {high}]")
    return (x - low) / (high - low)


def bounded_mean_intervals(
    samples: np.ndarray, low: float, high: float, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """``bounded_mean_interval`` for each row of a 2-D array at once (vectorised, for simulations)."""
    x = _unit_rows(samples, low, high, confidence)
    lo, hi = _unit_betting_intervals(x, 1 - confidence)
    return low + lo * (high - low), low + hi * (high - low)


def bounded_mean_p_values(
    samples: np.ndarray, low: float, high: float, null: float, confidence: float = 0.95, above: bool = True
) -> np.ndarray:
    """Per row, the p-value of "the mean is at most ``null``" (``above``; small when the scores show the mean
    above it) or "at least ``null``", from the gambler behind that row's ``bounded_mean_intervals`` end.

    p = min(1, 1 / the largest capital the gambler reached betting against ``null``), valid at every level
    by Ville's inequality; p ≤ (1 − confidence) / 2 exactly when ``null`` lies beyond that end of the interval
    at ``confidence`` (whose bets it shares). ``null`` must lie strictly inside (low, high).
    """
    if not low < null < high:
        raise ValueError(f"null must lie strictly inside ({low}, {high}), got {null}")
    unit = _unit_rows(samples, low, high, confidence)
    m = np.full(unit.shape[0], (null - low) / (high - low))
    capital = _max_capital(unit, _fixed_n_bets(unit, 1 - confidence), m, up=above)
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, 1.0 / capital)


def bounded_mean_interval(samples: Sequence[float], low: float, high: float, confidence: float = 0.95) -> Interval:
    """Interval for the mean of independent scores known to lie in [low, high]; NaN for an empty sample.

    The fixed-n betting interval of Waudby-Smith & Ramdas (JRSSB 2023): valid for every
    distribution on [low, high] and every n, never outside [low, high], never a point. The ends
    come from the two one-sided gamblers separately (each at alpha/2), which makes each end a
    bisection and the set an interval; their hedged (averaged) capital would give a slightly
    narrower set inside this one.
    Unlike ``confidence_sequence.confidence_sequence`` it is valid only for an n fixed in advance, which
    buys a tighter interval (bets tuned to n).
    """
    x = np.asarray(samples, dtype=float)
    if x.size == 0:
        return NAN_INTERVAL
    lo, hi = bounded_mean_intervals(x[None, :], low, high, confidence)
    return (float(lo[0]), float(hi[0]))


def mean_interval(
    samples: Sequence[float],
    kind: IntervalKind = "t",
    bounds: tuple[float, float] | None = None,
    confidence: float = 0.95,
) -> Interval:
    """The interval a gate uses for the mean of ``samples`` (see the module docstring for which kind when).

    - "binary": samples are 0/1; Clopper–Pearson for their share.
    - "bounded": samples lie in ``bounds``; the betting interval.
    - "t": the t interval, clipped to ``bounds`` if given. With zero variance (or one sample) it falls
      back to the betting interval when bounds are known, and is NaN (undecidable) when they are not,
      never a point.
    NaN for an empty sample.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    x = np.asarray(samples, dtype=float)
    if x.size == 0:
        return NAN_INTERVAL
    if kind == "binary":
        if not np.isin(x, (0.0, 1.0)).all():
            raise ValueError("binary samples must be 0 or 1")
        return proportion_interval(int(x.sum()), int(x.size), confidence)
    if kind == "bounded":
        if bounds is None:
            raise ValueError('kind "bounded" needs bounds=(low, high)')
        return bounded_mean_interval(x, *bounds, confidence)
    if kind != "t":
        raise ValueError(f"unknown interval kind {kind!r}; use 't', 'binary' or 'bounded'")
    if x.size < 2 or np.ptp(x) == 0:
        return NAN_INTERVAL if bounds is None else bounded_mean_interval(x, *bounds, confidence)
    lo, hi = t_interval(x, confidence)
    if bounds is not None:
        lo, hi = max(lo, float(bounds[0])), min(hi, float(bounds[1]))
    return (lo, hi)


def normal_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """The papers' table interval: mean ± z·SD(ddof=1)/√n."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return NAN_INTERVAL
    mean = float(x.mean())
    half = float(sps.norm.ppf(0.5 + confidence / 2)) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return (mean - half, mean + half)


def bootstrap_interval(
    values: Sequence[float], confidence: float = 0.95, resamples: int = 1000, seed: int = 0
) -> Interval:
    """Percentile bootstrap of the mean (the papers' figures: 1,000 resamples)."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return NAN_INTERVAL
    if np.ptp(x) == 0:
        return (float(x[0]), float(x[0]))
    res = sps.bootstrap(
        (x,),
        np.mean,
        confidence_level=confidence,
        n_resamples=resamples,
        method="percentile",
        rng=np.random.default_rng(seed),
        batch=max(1, _BOOTSTRAP_CELLS // x.size),
    )
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


def one_sample_t(values: Sequence[float], null: float) -> tuple[float, float]:
    """Two-sided one-sample t-test; (nan, nan) when it is undefined."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return (math.nan, math.nan)
    if np.ptp(x) == 0:
        # Zero variance: the test statistic is infinite unless the mean equals the null.
        if float(x[0]) == null:
            return (0.0, 1.0)
        return (math.copysign(math.inf, float(x[0]) - null), 0.0)
    res = sps.ttest_1samp(x, null)
    return (float(res.statistic), float(res.pvalue))


def summarize(
    values: Sequence[float],
    null: float = 0.0,
    confidence: float = 0.95,
    seed: int = 0,
    interval: IntervalKind | None = None,
    bounds: tuple[float, float] | None = None,
) -> Summary:
    """Everything a result reports about one sample of per-prompt scores.

    ``ci_t`` is the interval gates read: with ``interval`` set, ``mean_interval(values, interval,
    bounds)``; with ``interval=None`` (the old behaviour) the plain t interval, a point for a
    constant sample. ``ci_method`` says which.
    """
    x = np.asarray(values, dtype=float)
    n = int(x.size)
    t, p = one_sample_t(x, null)
    gate_ci = t_interval(x, confidence) if interval is None else mean_interval(x, interval, bounds, confidence)
    return Summary(
        mean=float(x.mean()) if n else math.nan,
        n=n,
        sd=float(x.std(ddof=1)) if n > 1 else math.nan,
        ci_t=gate_ci,
        ci_normal=normal_interval(x, confidence),
        ci_bootstrap=bootstrap_interval(x, confidence, seed=seed),
        null=null,
        t=t,
        p=p,
        confidence=confidence,
        ci_method=interval or "t",
    )


def weighted_summary(
    values: Sequence[float], weights: Sequence[float], null: float = 0.0, confidence: float = 0.95
) -> Summary:
    """Weighted mean with a t interval on the effective sample size (Kish's n_eff = 1 / Σw²).

    For estimates that are weighted means over units, e.g. PCF risks over occupations weighted by
    employment. No bootstrap interval: the weights make the plain resampling one misleading.
    """
    x = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    w = w / w.sum()
    mean = float(w @ x)
    n = int(np.count_nonzero(w))
    n_eff = 1.0 / float(np.sum(w**2))
    if n < 2:
        return Summary(
            mean, n, math.nan, NAN_INTERVAL, NAN_INTERVAL, NAN_INTERVAL, null, math.nan, math.nan, confidence
        )
    se = math.sqrt(float(np.sum(w**2 * (x - mean) ** 2)) * n / (n - 1))
    df = max(n_eff - 1.0, 1.0)
    t_half = float(sps.t.ppf(0.5 + confidence / 2, df=df)) * se
    z_half = float(sps.norm.ppf(0.5 + confidence / 2)) * se
    t = (mean - null) / se if se > 0 else math.copysign(math.inf, mean - null) if mean != null else 0.0
    p = float(2 * sps.t.sf(abs(t), df=df)) if math.isfinite(t) else (0.0 if t else 1.0)
    sd = math.sqrt(float(w @ (x - mean) ** 2) * n / (n - 1))
    return Summary(
        mean,
        n,
        sd,
        (mean - t_half, mean + t_half),
        (mean - z_half, mean + z_half),
        NAN_INTERVAL,
        null,
        t,
        p,
        confidence,
    )
