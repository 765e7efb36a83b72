"""The statistics of one comparison, from (estimate, sd, n) of each side: Welch's test of "no change"
and the non-inferiority test of "worse by more than a margin" on the side the check's threshold calls harmful.

Pure functions over baseline entries; nothing here knows a measure, a file or pytest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_fairness.stats.gate import Threshold
from pytest_fairness.stats.lazy_scipy import sps
from pytest_fairness.util.fmt import finite

if TYPE_CHECKING:
    from pytest_fairness.baseline.entry import Entry

Interval = tuple[float, float]


@dataclass(frozen=True)
class _Welch:
    difference: float
    se: float
    df: float


def _welch_parts(old: Entry, new: Entry) -> _Welch | None:
    """Difference new - old, its standard error and Welch degrees of freedom; None if a side cannot be tested."""
    m0, m1 = finite(old.estimate), finite(new.estimate)
    s0, s1 = finite(old.sd), finite(new.sd)
    n0, n1 = old.n or 0, new.n or 0
    if m0 is None or m1 is None or s0 is None or s1 is None or n0 < 2 or n1 < 2:
        return None
    v0, v1 = s0**2 / n0, s1**2 / n1
    if v0 + v1 == 0:
        return _Welch(m1 - m0, 0.0, math.inf)
    df = (v0 + v1) ** 2 / (v0**2 / (n0 - 1) + v1**2 / (n1 - 1))
    return _Welch(m1 - m0, math.sqrt(v0 + v1), df)


def _interval(w: _Welch, tail: float) -> Interval:
    half = 0.0 if w.se == 0 else float(sps.t.ppf(1 - tail, w.df)) * w.se
    return w.difference - half, w.difference + half


def welch(old: Entry, new: Entry, alpha: float) -> tuple[float, Interval, float] | None:
    """Difference new - old with its (1 - alpha) Welch interval and two-sided p; None if untestable.

    Zero variance on both sides (deterministic measures) makes any non-zero difference exact: p = 0.
    """
    w = _welch_parts(old, new)
    if w is None:
        return None
    if w.se == 0:
        return w.difference, (w.difference, w.difference), 1.0 if w.difference == 0 else 0.0
    return w.difference, _interval(w, alpha / 2), float(2 * sps.t.sf(abs(w.difference) / w.se, w.df))


def _worse_p(w: _Welch, margin: float, side: int) -> float:
    """One-sided p of H0 "worse by at least the margin" on the harmful side (+1 up, -1 down)."""
    shifted = w.difference - side * margin  # H0: side * difference >= margin
    if w.se == 0:
        return 0.0 if side * shifted < 0 else 1.0
    return float(sps.t.cdf(side * shifted / w.se, w.df))


def noninferiority(
    old: Entry, new: Entry, margin: float, alpha: float, threshold: Threshold
) -> tuple[float, Interval, float] | None:
    """Difference new - old, its (1 - 2 alpha) interval and the p of "worse by more than ``margin``".

    Worse is the threshold's harmful side; for a range (or no threshold) both sides are, and the p is
    the larger of the two one-sided tests (TOST). The check is non-inferior when p < alpha, which is
    the interval lying within the margin on the harmful side(s).
    """
    w = _welch_parts(old, new)
    if w is None:
        return None
    side = threshold.harmful_side()
    p = max(_worse_p(w, margin, s) for s in ((side,) if side else (1, -1)))
    return w.difference, _interval(w, alpha), p
