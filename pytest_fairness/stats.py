"""Statistics shared by every measure: pure functions over plain arrays, built on numpy/scipy.

The papers report a mean per cell with a 95% interval: the tables use the normal approximation
(mean ± 1.96·SD/√n), the figures a 1,000-resample percentile bootstrap. Gates use the t interval,
which is the honest one for the small samples a CI run can afford.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

Interval = tuple[float, float]
NAN_INTERVAL: Interval = (math.nan, math.nan)


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


def summarize(values: Sequence[float], null: float = 0.0, confidence: float = 0.95, seed: int = 0) -> Summary:
    """Everything a result reports about one sample of per-prompt scores."""
    x = np.asarray(values, dtype=float)
    n = int(x.size)
    t, p = one_sample_t(x, null)
    return Summary(
        mean=float(x.mean()) if n else math.nan,
        n=n,
        sd=float(x.std(ddof=1)) if n > 1 else math.nan,
        ci_t=t_interval(x, confidence),
        ci_normal=normal_interval(x, confidence),
        ci_bootstrap=bootstrap_interval(x, confidence, seed=seed),
        null=null,
        t=t,
        p=p,
        confidence=confidence,
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
