"""Sequential sampling: draw more samples for an inconclusive check, and stay honest about error rates.

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
assume the worst-case variance. The sequence is computed on a grid of candidate means and
intersected over time, so it only ever narrows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_fairness.gate import Outcome, Threshold, decide
from pytest_fairness.stats import MAX_BET  # the paper's c: the same cap as the fixed-n interval

Interval = tuple[float, float]


def _log_capital(x: np.ndarray, grid: np.ndarray, alpha: float) -> np.ndarray:
    """log of the hedged capital max(K+, K-)/2 after each observation (rows) for each grid mean (columns)."""
    t = np.arange(1, x.size + 1)
    mu_hat = (0.5 + np.cumsum(x)) / (t + 1)
    sigma2 = (0.25 + np.cumsum((x - mu_hat) ** 2)) / (t + 1)
    sigma2_before = np.concatenate(([0.25], sigma2[:-1]))  # predictable: uses observations before t only
    bet = np.sqrt(2 * math.log(2 / alpha) / (sigma2_before * t * np.log1p(t)))[:, None]
    centred = x[:, None] - grid[None, :]
    up = np.log1p(np.minimum(bet, MAX_BET / grid) * centred).cumsum(axis=0)
    down = np.log1p(-np.minimum(bet, MAX_BET / (1 - grid)) * centred).cumsum(axis=0)
    return np.logaddexp(up, down) - math.log(2)


def confidence_sequence_path(
    values: Sequence[float], low: float, high: float, alpha: float = 0.05, grid: int = 1000
) -> np.ndarray:
    """The always-valid interval after each observation: an array of shape (n, 2), running-intersected.

    Bounds are conservative to one grid cell: (high - low) / grid.
    """
    if not high > low:
        raise ValueError(f"need low < high, got [{low}, {high}]")
    x = (np.asarray(values, dtype=float) - low) / (high - low)
    if x.size and (x.min() < 0 or x.max() > 1):
        raise ValueError(f"values must lie in [{low}, {high}] for an always-valid interval")
    means = (np.arange(grid) + 0.5) / grid
    inside = _log_capital(x, means, alpha) < math.log(1 / alpha)
    first = np.where(inside.any(axis=1), inside.argmax(axis=1), grid // 2)
    last = np.where(inside.any(axis=1), grid - 1 - inside[:, ::-1].argmax(axis=1), grid // 2)
    lo = np.maximum.accumulate(np.clip(means[first] - 1 / grid, 0, 1))
    hi = np.minimum.accumulate(np.clip(means[last] + 1 / grid, 0, 1))
    hi = np.maximum(hi, lo)  # an empty intersection (probability < alpha) collapses to a point
    return np.column_stack([lo, hi]) * (high - low) + low


def confidence_sequence(values: Sequence[float], low: float, high: float, alpha: float = 0.05) -> Interval:
    """Always-valid (1 - alpha) interval for the mean of [low, high]-bounded scores, after all of them.

    Unlike a t interval it stays valid when the sample size was chosen by looking at earlier intervals.
    """
    if len(values) == 0:
        return (low, high)
    lo, hi = confidence_sequence_path(values, low, high, alpha)[-1]
    return (float(lo), float(hi))


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
        return min(max(n_done + self.step, math.ceil(n_done * self.growth)), self.budget)
