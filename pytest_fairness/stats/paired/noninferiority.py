"""Non-inferiority of a run against its baseline on the same items, from per-cluster paired differences.

The units are the clusters' differences d = run − baseline (``matching.Pairing``); with scores in [low,
high] each lies in [low − high, high − low], so the project's betting machinery applies as is: the fixed-n
betting interval (``stats.intervals``) for a run of planned size, the confidence sequence
(``stats.confidence_sequence``) when the run grows through the baseline's items until it decides. Against a
margin δ > 0 on the harmful side:

- PASS when the one-sided bound on the harmful side lies within δ at ``passing_level``: shown no worse than δ;
- FAIL when the one-sided bound on the other side lies beyond δ at ``failing_level``: shown worse than δ;
- INCONCLUSIVE otherwise.

Why both verdicts are taken at α·γ: a team keeps one recorded baseline, and the baseline's own within-item
noise shifts every later rerun's paired difference by the same amount. A test at α holds α only on average
over baselines; given an unlucky one, reruns of an unchanged release fail far more often, and reruns of a
regression exactly at the margin pass far more often (at α, one baseline in twenty lets such a regression
pass in more than 11-16% of its reruns: ``benchmarks/paired_gate.py given-baseline``). If a verdict has
unconditional probability at most α·γ where it is wrong, Markov's inequality leaves at most a share γ of
baselines whose reruns reach it more than α of the time: ``baseline_level``. A measure whose items are read
exactly (``exact``: nothing re-sampled on either side) has no such noise: given the baseline a verdict is
reached or not, so its PASS at min(α, γ) keeps the same promise.

A fixed-size run decides on its differences in a seeded random order (``compare_paired``'s ``order``): the
fixed-n betting interval reads its units in turn and is valid for exchangeable ones, and a change that lines
up with the baseline's order of items (a measure that lists them grouped) is not.
"""

from __future__ import annotations

import math
import zlib
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


def baseline_level(alpha: float = 0.05, baseline_share: float = BASELINE_SHARE) -> float:
    """The level of a paired verdict (PASS, and FAIL with Holm across the run's checks) so that, given one
    recorded baseline, its reruns reach it wrongly at most ``alpha`` of the time for all but ``baseline_share``
    of baselines.

    With P(wrong verdict) ≤ alpha·γ over baselines and reruns, Markov's inequality gives
    P_baseline(P(wrong verdict | baseline) > alpha) ≤ alpha·γ / alpha = γ, for any distribution of the scores,
    any shape of change and any size.
    """
    if not (0 < alpha < 0.5 and 0 < baseline_share <= 1):
        raise ValueError(f"need 0 < alpha < 0.5 and 0 < baseline_share <= 1, got {alpha}, {baseline_share}")
    return round(alpha * baseline_share, 12)  # 0.05 × 0.05 is 0.0025, not 0.0025000000000000005


def exact_level(alpha: float = 0.05, baseline_share: float = BASELINE_SHARE) -> float:
    """The PASS level of a measure read exactly (nothing re-sampled, on either side): given the baseline its
    verdict is reached or not, so a PASS at min(alpha, γ) is wrong for at most γ of baselines, each then
    always (above alpha), the others never."""
    baseline_level(alpha, baseline_share)  # the same checks of its arguments
    return min(alpha, baseline_share)


@dataclass(frozen=True)
class PairedGate:
    """How a paired check decides: the ``margin`` δ > 0 on the measure's scale, the harmful ``side`` (+1: a rise
    is worse, -1: a fall, 0: either), the promised wrong-verdict rate ``alpha`` given one recorded baseline,
    whether the measure reads its items ``exact``-ly (nothing re-sampled), whether the run grows until it
    decides (``sequential``: always-valid bounds), and levels that replace the defaults (``pass_alpha``:
    ``baseline_level`` or ``exact_level``; ``fail_alpha``: ``baseline_level``), for simulating other rules."""

    margin: float
    side: int
    alpha: float = 0.05
    fail_alpha: float | None = None
    sequential: bool = False
    exact: bool = False
    pass_alpha: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.margin) and self.margin > 0):
            raise ValueError(f"a paired gate needs a margin above 0 on the measure's scale, got {self.margin!r}")
        if self.side not in (1, -1, 0):
            raise ValueError(f"side must be +1 (a rise is worse), -1 (a fall is) or 0 (either), got {self.side!r}")
        levels = (self.alpha, self.failing_level, self.passing_level)
        if not all(0 < level < 0.5 for level in levels):
            raise ValueError(
                f"levels must lie in (0, 0.5), got alpha {self.alpha}, fail_alpha {self.fail_alpha}, "
                f"pass_alpha {self.pass_alpha}"
            )

    @property
    def failing_level(self) -> float:
        return baseline_level(self.alpha) if self.fail_alpha is None else self.fail_alpha

    @property
    def passing_level(self) -> float:
        if self.pass_alpha is not None:
            return self.pass_alpha
        return exact_level(self.alpha) if self.exact else baseline_level(self.alpha)

    def sides(self) -> tuple[int, ...]:
        return (self.side,) if self.side else (1, -1)


@dataclass(frozen=True)
class PairedComparison:
    """The verdict of one paired check, with what it rests on: the one record of it that a baseline
    comparison carries to every output (``records.comparison.Comparison.paired``).

    ``margin`` and ``side`` are the gate's (δ, and +1 when a rise is worse, -1 a fall, 0 either);
    ``interval`` holds the one-sided bounds at the PASS level ``pass_alpha`` that decide PASS (a
    1 − 2·pass_alpha interval), ``fail_interval`` those at the FAIL level ``fail_alpha``; ``p_worse`` is the p
    of "worse by at least the margin" (PASS when ≤ ``pass_alpha``), ``p_beyond`` that of "not worse than the
    margin" (FAIL when ≤ the FAIL level: the p a run adjusts with Holm). ``rho`` is the correlation of the
    clusters' baseline and run means (None: no spread to correlate), ``effective_n`` the independent items the
    clustered sample is worth, ``unpaired_n`` the clusters per side an unpaired comparison would have needed
    for the same standard error (None: any number), ``undrawn`` the baseline's items this run did not draw,
    and ``order`` the order the differences were read in ("": the baseline's).
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
    pass_alpha: float = 0.05
    order: str = ""

    @property
    def sequential(self) -> bool:
        return self.method.startswith("confidence sequence")

    def items_claimed(self) -> str:
        """The items the verdict is about: the baseline's first ones a sequential run grew through, else the
        items drawn (every one of the baseline's, unless the run drew fewer)."""
        total = self.items + self.undrawn
        if not self.undrawn:
            return f"all {total:,} of the baseline's items"
        if self.sequential:
            return f"the baseline's first {self.items:,} of {total:,} items"
        return f"{self.items:,} of the baseline's {total:,} items (its first ones)"


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
    passing = _ends(d, width, gate.passing_level, seq, correction)
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
        worse = max(_p(d, bounds, s * gate.margin, gate.passing_level, s < 0, seq) for s in sides)
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


def decision_order(key: str, clusters: int) -> np.ndarray:
    """The seeded random order a fixed-size run reads its ``clusters`` differences in: a permutation drawn
    from ``key`` alone (the baseline's seed, the check and the model), independent of the answers, so a rerun
    or a replay from the cache decides on the same order."""
    return np.random.default_rng(zlib.crc32(key.encode("utf-8"))).permutation(clusters)


def compare_paired(
    pairing: Pairing,
    scale: Interval,
    gate: PairedGate,
    correction: Correction | None = None,
    *,
    order_key: str | None = None,
) -> PairedComparison:
    """Decide a paired check from its matched items; ``scale`` = (low, high) bounds one item's score, and
    ``correction`` is a measured correction of the instrument common to both sides (``estimands``), if any.
    A fixed-size check with an ``order_key`` reads its differences in that key's random order
    (``decision_order``); a sequential one reads them as it grew, in the baseline's order."""
    d = pairing.differences
    order = ""
    if order_key is not None and not gate.sequential:
        d, order = d[decision_order(order_key, d.size)], f"random (seed {zlib.crc32(order_key.encode('utf-8'))})"
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
        pass_alpha=gate.passing_level,
        order=order,
    )
