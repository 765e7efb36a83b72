"""Non-inferiority of a run against its baseline on the same items, from per-cluster paired differences.

The units are the clusters' differences d = run − baseline (``matching.Pairing``); with scores in [low,
high] each lies in [low − high, high − low], so the project's betting machinery applies as is: the fixed-n
betting interval (``stats.intervals``) for a run of planned size, the confidence sequence
(``stats.confidence_sequence``) when the run grows through the baseline's items until it decides. Against a
margin δ > 0 on the harmful side:

- PASS when the one-sided (1 − alpha) bound on the harmful side lies within δ: shown no worse than δ;
- FAIL when the one-sided bound on the other side lies beyond δ at ``fail_alpha``: shown worse than δ;
- INCONCLUSIVE otherwise.

Why FAIL has its own, smaller level: a team keeps one recorded baseline, and the baseline's own within-item
noise shifts every later rerun's paired difference by the same amount. A test at alpha holds alpha only on
average over baselines; given an unlucky one, reruns of an unchanged release fail far more often (a
one-sided test at 0.05 against a margin of 0 fails about a quarter of reruns at the baseline in the 95th
percentile). If the run's FAIL has unconditional probability at most alpha·γ, then by Markov's inequality at
most a share γ of baselines give their reruns a conditional failure rate above alpha: ``fail_level``. The
margin adds room on top, and K samples per item on the run shrink the rerun's own noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pytest_fairness.stats.attenuation import Attenuation, corrected_interval, split_confidence
from pytest_fairness.stats.confidence_sequence import confidence_sequence_bound, sequence_p_value
from pytest_fairness.stats.gate import Outcome
from pytest_fairness.stats.intervals import bounded_mean_intervals, bounded_mean_p_values
from pytest_fairness.stats.paired.matching import MovedItem, Pairing, most_moved

Interval = tuple[float, float]
#: A measured correction of the instrument at a given (two-sided) confidence, common to both sides (e.g. net
#: harm's judge factor when the same judge and screen serve the baseline and the run: ``estimands``).
Correction = Callable[[float], Attenuation]
#: The share γ of recorded baselines allowed to give an unchanged release's reruns a failure rate above alpha.
BASELINE_SHARE = 0.05


def fail_level(alpha: float = 0.05, baseline_share: float = BASELINE_SHARE) -> float:
    """The level of a run's FAIL decisions (Holm across its checks) so that, given one recorded baseline, an
    unchanged release's reruns fail at most ``alpha`` of the time for all but ``baseline_share`` of baselines.

    With P(fail) ≤ alpha·γ over baselines and reruns, Markov's inequality gives
    P_baseline(P(fail | baseline) > alpha) ≤ alpha·γ / alpha = γ, for any distribution of the scores.
    """
    if not (0 < alpha < 0.5 and 0 < baseline_share <= 1):
        raise ValueError(f"need 0 < alpha < 0.5 and 0 < baseline_share <= 1, got {alpha}, {baseline_share}")
    return alpha * baseline_share


@dataclass(frozen=True)
class PairedGate:
    """How a paired check decides: the ``margin`` δ > 0 on the measure's scale, the harmful ``side`` (+1: a rise
    is worse, -1: a fall, 0: either), the wrong-PASS level ``alpha``, the FAIL level ``fail_alpha`` (default
    ``fail_level(alpha)``) and whether the run grows until it decides (``sequential``: always-valid bounds)."""

    margin: float
    side: int
    alpha: float = 0.05
    fail_alpha: float | None = None
    sequential: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.margin) and self.margin > 0):
            raise ValueError(f"a paired gate needs a margin above 0 on the measure's scale, got {self.margin!r}")
        if self.side not in (1, -1, 0):
            raise ValueError(f"side must be +1 (a rise is worse), -1 (a fall is) or 0 (either), got {self.side!r}")
        if not 0 < self.alpha < 0.5 or not 0 < self.failing_level < 0.5:
            raise ValueError(f"levels must lie in (0, 0.5), got alpha {self.alpha}, fail_alpha {self.fail_alpha}")

    @property
    def failing_level(self) -> float:
        return fail_level(self.alpha) if self.fail_alpha is None else self.fail_alpha

    def sides(self) -> tuple[int, ...]:
        return (self.side,) if self.side else (1, -1)


@dataclass(frozen=True)
class PairedComparison:
    """The verdict of one paired check, with what it rests on: the one record of it that a baseline
    comparison carries to every output (``records.comparison.Comparison.paired``).

    ``margin`` and ``side`` are the gate's (δ, and +1 when a rise is worse, -1 a fall, 0 either);
    ``interval`` holds the one-sided (1 − alpha) bounds that decide PASS (a 1 − 2·alpha interval),
    ``fail_interval`` those at the FAIL level ``fail_alpha``; ``p_worse`` is the p of "worse by at least the
    margin" (PASS when ≤ alpha), ``p_beyond`` that of "not worse than the margin" (FAIL when ≤ the FAIL
    level: the p a run adjusts with Holm). ``rho`` is the correlation of the clusters' baseline and run means
    (None: no spread to correlate), ``effective_n`` the independent items the clustered sample is worth,
    ``unpaired_n`` the clusters per side an unpaired comparison would have needed for the same standard error
    (None: any number), and ``undrawn`` the baseline's items this run did not draw.
    """

    outcome: Outcome
    margin: float
    side: int
    interval: Interval
    fail_interval: Interval
    p_worse: float
    p_beyond: float
    fail_alpha: float
    clusters: int
    items: int
    rho: float | None
    effective_n: float
    unpaired_n: float | None
    method: str
    undrawn: int = 0
    #: The matched items that moved most (``matching.most_moved``): where a reviewer looks first.
    moved: tuple[MovedItem, ...] = ()


def _bound(d: np.ndarray, bounds: Interval, level: float, upper: bool, sequential: bool) -> float:
    """The one-sided (1 − level) bound of the mean of d: fixed-n betting, or the always-valid sequence."""
    if sequential:
        return confidence_sequence_bound(d, *bounds, level, upper)
    lo, hi = bounded_mean_intervals(d[None, :], *bounds, 1 - 2 * level)
    return float(hi[0] if upper else lo[0])


def _ends(d: np.ndarray, width: float, level: float, sequential: bool, correction: Correction | None) -> Interval:
    """Both one-sided (1 − level) bounds of the mean difference. With a common correction of the instrument
    (observed ≈ s × truth on both sides, so observed differences ≈ s × true ones) the corrected gate's rule
    applies as to one side (``attenuation.corrected_interval``): jointly valid."""
    bounds = (-width, width)

    def raw_at(error: float) -> Interval:
        return (_bound(d, bounds, error, False, sequential), _bound(d, bounds, error, True, sequential))

    if correction is None:
        return raw_at(level)
    confidence = 1 - level
    measured = correction(split_confidence(confidence))
    return corrected_interval(lambda at, _: raw_at(1 - at), measured, bounds, confidence)


def _verdicts(passing: Interval, failing: Interval, gate: PairedGate) -> Outcome:
    delta = gate.margin
    if any((s > 0 and failing[0] > delta) or (s < 0 and failing[1] < -delta) for s in gate.sides()):
        return Outcome.FAIL
    if all((s > 0 and passing[1] < delta) or (s < 0 and passing[0] > -delta) for s in gate.sides()):
        return Outcome.PASS
    return Outcome.INCONCLUSIVE


def decide_differences(
    differences: np.ndarray, scale: Interval, gate: PairedGate, correction: Correction | None = None
) -> tuple[Outcome, Interval, Interval]:
    """The outcome from per-cluster differences of scores on ``scale`` = (low, high), with the PASS interval and
    the FAIL interval (each end one-sided at its level; for ``side`` 0 the FAIL level is split between the ends)."""
    d = np.asarray(differences, dtype=float)
    width, seq = scale[1] - scale[0], gate.sequential
    passing = _ends(d, width, gate.alpha, seq, correction)
    failing = _ends(d, width, gate.failing_level / len(gate.sides()), seq, correction)
    return _verdicts(passing, failing, gate), passing, failing


def _p(d: np.ndarray, bounds: Interval, null: float, level: float, above: bool, sequential: bool) -> float:
    """p of "mean ≤ null" (``above``) or "mean ≥ null", from the gambler behind ``_bound`` at ``level``."""
    if sequential:
        return sequence_p_value(d, *bounds, null, level, above)
    return float(bounded_mean_p_values(d[None, :], *bounds, null, 1 - 2 * level, above)[0])


def _smallest_level(shown: Callable[[float], bool]) -> float:
    """The smallest level at which ``shown`` holds (1 when it does not at 0.5), by bisection on its logarithm:
    the p-value of a corrected bound, whose bets and factor interval both depend on the level."""
    if not shown(0.499):
        return 1.0
    low, high = math.log(1e-12), math.log(0.499)
    if shown(1e-12):
        return 1e-12
    for _ in range(30):
        mid = (low + high) / 2
        low, high = (low, mid) if shown(math.exp(mid)) else (mid, high)
    return math.exp(high)


def _p_values(d: np.ndarray, scale: Interval, gate: PairedGate, correction: Correction | None) -> tuple[float, float]:
    """p of "worse by at least the margin" (the larger over the harmful sides) and of "not worse beyond it"
    (the smaller over the sides, doubled for two sides: Bonferroni)."""
    width, seq, sides = scale[1] - scale[0], gate.sequential, gate.sides()
    if gate.margin >= width:
        return 0.0, 1.0  # no difference on this scale can be worse than the margin
    if correction is None:
        bounds = (-width, width)
        worse = max(_p(d, bounds, s * gate.margin, gate.alpha, s < 0, seq) for s in sides)
        beyond = min(_p(d, bounds, s * gate.margin, gate.failing_level / len(sides), s > 0, seq) for s in sides)
        return worse, min(1.0, beyond * len(sides))

    def within(side: int, level: float) -> bool:
        lo, hi = _ends(d, width, level, seq, correction)
        return hi < gate.margin if side > 0 else lo > -gate.margin

    def outside(side: int, level: float) -> bool:
        lo, hi = _ends(d, width, level, seq, correction)
        return lo > gate.margin if side > 0 else hi < -gate.margin

    worse = max(_smallest_level(lambda a, s=s: within(s, a)) for s in sides)
    beyond = min(_smallest_level(lambda a, s=s: outside(s, a)) for s in sides)
    return worse, min(1.0, beyond * len(sides))


def pairing_summary(pairing: Pairing) -> tuple[float, float, float]:
    """The pairing correlation ρ of the clusters' baseline and run means (NaN when either is constant or
    there are fewer than 3 clusters), the effective number of independent items (clusters × the item
    differences' variance over the cluster differences', between the numbers of clusters and of items), and
    the clusters per side an unpaired comparison would need for the paired standard error."""
    old, new, d = np.asarray(pairing.old), np.asarray(pairing.new), pairing.differences
    n = d.size
    spread_old, spread_new = (float(np.var(x, ddof=1)) if n > 1 else math.nan for x in (old, new))
    rho = math.nan
    if n >= 3 and spread_old > 0 and spread_new > 0:
        rho = float(np.corrcoef(old, new)[0, 1])
    var_d = float(np.var(d, ddof=1)) if n > 1 else math.nan
    if not var_d > 0:
        return rho, float(pairing.items), math.inf if n > 1 else math.nan
    var_items = float(np.var(pairing.item_differences, ddof=1))
    effective = min(max(n * var_items / var_d, n), pairing.items)
    return rho, float(effective), n * (spread_old + spread_new) / var_d


def compare_paired(
    pairing: Pairing, scale: Interval, gate: PairedGate, correction: Correction | None = None
) -> PairedComparison:
    """Decide a paired check from its matched items; ``scale`` = (low, high) bounds one item's score, and
    ``correction`` is a measured correction of the instrument common to both sides (``estimands``), if any."""
    d = pairing.differences
    outcome, passing, failing = decide_differences(d, scale, gate, correction)
    p_worse, p_beyond = _p_values(d, scale, gate, correction)
    rho, effective, unpaired = pairing_summary(pairing)
    return PairedComparison(
        outcome=outcome,
        margin=gate.margin,
        side=gate.side,
        interval=passing,
        fail_interval=failing,
        p_worse=p_worse,
        p_beyond=p_beyond,
        fail_alpha=gate.failing_level,
        clusters=int(d.size),
        items=pairing.items,
        rho=None if math.isnan(rho) else rho,
        effective_n=effective,
        unpaired_n=None if math.isinf(unpaired) or math.isnan(unpaired) else unpaired,
        method=("confidence sequence" if gate.sequential else "betting interval")
        + ("" if correction is None else ", corrected"),
        undrawn=len(pairing.unmatched_old),
        moved=most_moved(pairing),
    )
