"""The real Clopper–Pearson gate's exact chance to decide when some answers are unusable (shared by tests)."""

from __future__ import annotations

import numpy as np
from scipy import stats as sps

from pytest_fairness.stats.gate import Outcome, Threshold, decide
from pytest_fairness.stats.intervals import proportion_interval


def _first(m: int, threshold: Threshold, outcomes: tuple[Outcome, ...]) -> int:
    """Smallest count k of m whose real gate outcome is in ``outcomes`` (m + 1: none), by bisection: under a
    maximum, Clopper–Pearson's ends rise with k, so the gate passes, then is inconclusive, then fails."""
    low, high = -1, m + 1
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if decide(proportion_interval(mid, m), threshold) in outcomes else (mid, high)
    return high


def exact_binary_rate_with_unusable(prompts: int, usable: float, p: float, threshold: Threshold) -> float:
    """The real gate's chance to decide when each of ``prompts`` answers is usable with probability
    ``usable``: every usable count m with any weight, and for each the counts of ones that pass or fail."""
    assert threshold.min is None and threshold.max is not None
    counts = np.arange(1, prompts + 1)
    weights = sps.binom.pmf(counts, prompts, usable)
    rate = 0.0
    for m, w in zip(counts[weights > 1e-12], weights[weights > 1e-12], strict=True):
        passing = _first(int(m), threshold, (Outcome.INCONCLUSIVE, Outcome.FAIL)) - 1  # last count that passes
        failing = _first(int(m), threshold, (Outcome.FAIL,))
        rate += w * (sps.binom.cdf(passing, m, p) + sps.binom.sf(failing - 1, m, p))
    return float(rate)
