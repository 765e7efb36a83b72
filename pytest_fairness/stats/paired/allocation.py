"""How many items, and how many samples per item, a paired check needs: the least cost for a wanted power.

A cluster's paired difference has variance

    V(K) = within · (1/K0 + 1/K) / m + change

where ``within`` is the variance of one sample around its item's mean (re-sampling noise), K0 and K the
samples per item on the baseline and the run, m the items per cluster (prompt), and ``change`` the
variance of a real change across clusters (0 for an unchanged release; the between-item variance
cancels in the pairing). n clusters of K samples per item cost n·m·(item_cost + K·sample_cost): a
prompt's own tokens are paid once per item when the K answers come from one request, a completion per
sample. The chance that the one-sided betting bound at alpha lies within the margin at a true difference
of 0 is ``power.decision_probability`` on the differences' scale (its betting-floor model included), and
the planner takes the (n, K) of least cost that reaches the wanted power.

The variances come from a baseline: with K0 ≥ 2 samples per item, ``within`` is their pooled spread and
``between`` the item means' variance less within / K0; with K0 = 1 the two cannot be told apart from one
sample per item, so the split comes from a pairing correlation ρ (measured on an earlier paired run, or
assumed: ρ = 0 puts all the variance within items, the cautious choice); after a paired run, the item
differences' variance over (1/K0 + 1/K) bounds ``within`` from above (a real change adds to it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_fairness.stats.intervals import bounded_mean_interval
from pytest_fairness.stats.lazy_scipy import sps
from pytest_fairness.stats.paired.matching import ItemScores, Pairing, within_variance
from pytest_fairness.stats.power import TARGET_POWER, BettingFit, Scale, fewest, half_width

#: Most samples per item the planner considers: beyond it a run pays mostly for noise it no longer has.
MAX_SAMPLES_PER_ITEM = 16
#: The betting interval's half-width as the paired planner models it (``power.half_width``): fitted to the real
#: gate's chance to pass an unchanged release (implicit, decision and quality; K0 1 and 4, K 1-8, half to twice
#: the baseline's items, levels 0.0025 and 0.05), where the release profile's cautious fit falls up to 0.26
#: short of it; ``tests/unit/test_paired_planner.py`` holds it to simulation.
BETTING_FIT = BettingFit(noise=0.975, floor=1.1, power=4.0)


@dataclass(frozen=True)
class Components:
    """The variance components of one sample's score: ``between`` items (their means' variance) and
    ``within`` an item (re-sampling noise), measured on a baseline of ``k_old`` samples per item, with
    ``items_per_cluster`` items per prompt; ``basis`` says how they were measured."""

    between: float
    within: float
    k_old: int = 1
    items_per_cluster: float = 1.0
    basis: str = ""

    @property
    def rho(self) -> float:
        """Correlation of two single samples of the same item: the pairing correlation at K0 = K = 1."""
        total = self.between + self.within
        return self.between / total if total > 0 else math.nan

    def difference_variance(self, k: int, change: float = 0.0) -> float:
        """Variance of one cluster's paired difference with K samples per item on the run."""
        return self.within * (1 / self.k_old + 1 / k) / self.items_per_cluster + change


def components_from_baseline(items: Sequence[ItemScores], rho: float | None = None) -> Components:
    """Variance components from a baseline's items: measured from the spread of K0 ≥ 2 samples per item, else
    split by ``rho`` (default 0: all within items, the cautious assumption)."""
    if not items:
        raise ValueError("a baseline with no items has no variances to plan from")
    means = np.array([i.mean for i in items])
    k_old = min(len(i.scores) for i in items)
    per_cluster = len(items) / len({i.cluster for i in items})
    within = within_variance(items)
    spread = float(np.var(means, ddof=1)) if means.size > 1 else 0.0
    if within is not None and k_old >= 2:
        basis = f"measured on {len(items)} items × {k_old} samples"
        return Components(max(spread - within / k_old, 0.0), within, k_old, per_cluster, basis)
    share = 0.0 if rho is None else rho
    basis = f"{len(items)} items × 1 sample, split by ρ = {share:g} ({'assumed' if rho is None else 'given'})"
    return Components(share * spread, (1 - share) * spread, k_old, per_cluster, basis)


def components_from_pairing(pairing: Pairing, baseline: Components) -> Components:
    """The within-item variance a paired run implies (an upper bound: a real change adds to the differences'
    spread), with the baseline's between-item variance."""
    k = pairing.samples_new
    spread = float(np.var(pairing.item_differences, ddof=1)) if pairing.items > 1 else math.nan
    within = spread / (1 / pairing.samples_old + 1 / k)
    basis = f"from {pairing.items} paired items (K0 = {pairing.samples_old:g}, K = {k:g})"
    return Components(baseline.between, within, baseline.k_old, baseline.items_per_cluster, basis)


@dataclass(frozen=True)
class Plan:
    """A paired check's size: ``clusters`` × ``samples_per_item`` on the run, its ``cost`` and ``power``."""

    clusters: int
    samples_per_item: int
    cost: float
    power: float
    single: tuple[int, float] | None  # (clusters, cost) with one sample per item, for the comparison
    explanation: str


def pass_probability(
    components: Components,
    clusters: int,
    k: int,
    margin: float,
    width: float,
    alpha: float = 0.05,
    baseline_quantile: float | None = None,
) -> float:
    """Chance that an unchanged release passes: the one-sided betting bound at ``alpha`` lies within ``margin``.

    Over baselines and reruns (``baseline_quantile`` None), the sample mean of the differences is normal
    around 0 with their SD, and the bound lies the betting interval's modelled half-width above it
    (``power.half_width`` with the paired fit ``BETTING_FIT``). Given one recorded baseline whose own noise
    averages at its ``baseline_quantile`` towards the harmful side, only the run's noise is left to vary,
    around that offset: the chance a team with such a baseline sees.
    """
    if clusters < 1:
        return 0.0
    sd = math.sqrt(components.difference_variance(k))
    scale = Scale("bounded", (-width, width), 1 - 2 * alpha)
    offset, spread = 0.0, sd
    if baseline_quantile is not None:
        per_cluster = components.within / components.items_per_cluster
        offset = float(sps.norm.ppf(baseline_quantile)) * math.sqrt(per_cluster / components.k_old / clusters)
        spread = math.sqrt(per_cluster / k)
    room = margin - offset - half_width(clusters, sd, offset, width, scale, BETTING_FIT)
    return float(sps.norm.cdf(room * math.sqrt(clusters) / spread)) if spread > 0 else float(room > 0)


def plan(
    components: Components,
    margin: float,
    width: float,
    *,
    item_cost: float,
    sample_cost: float,
    alpha: float = 0.05,
    power: float = TARGET_POWER,
    available: int | None = None,
    max_k: int = MAX_SAMPLES_PER_ITEM,
    baseline_quantile: float | None = None,
) -> Plan | None:
    """The (clusters, K) of least cost whose chance to pass an unchanged release is at least ``power`` (given a
    baseline at ``baseline_quantile``, if set: ``pass_probability``); None when no K up to ``max_k`` does it
    within the ``available`` clusters (the baseline's). ``width`` is the score's range (high − low):
    differences lie within ± it."""
    m = components.items_per_cluster
    options = []
    for k in range(1, max_k + 1):

        def chance(n: int, k: int = k) -> float:
            return pass_probability(components, n, k, margin, width, alpha, baseline_quantile) if n else 0.0

        n = fewest(chance, power, available or 10**6)
        if n is not None:
            options.append((n * m * (item_cost + k * sample_cost), n, k))
    if not options:
        return None
    cost, n, k = min(options)
    single = next(((o[1], o[0]) for o in options if o[2] == 1), None)
    chance = pass_probability(components, n, k, margin, width, alpha, baseline_quantile)
    return Plan(n, k, cost, chance, single, _explain(components, margin, n, k, cost, chance, single))


@dataclass(frozen=True)
class KChoice:
    """The samples per item ``k`` a run of all its baseline's clusters takes, its modelled ``chance`` to pass an
    unchanged release, and whether that reaches the wanted power (``reached``)."""

    k: int
    chance: float
    reached: bool


def plan_k(
    components: Components,
    clusters: int,
    margin: float,
    width: float,
    *,
    alpha: float,
    power: float = TARGET_POWER,
    max_k: int = MAX_SAMPLES_PER_ITEM,
) -> KChoice:
    """K for a run that draws every one of its baseline's ``clusters``: the least K whose chance to pass an
    unchanged release at ``alpha`` reaches ``power``. When none up to ``max_k`` does (the baseline is too small
    for its own noise: the run's K cannot shrink the baseline's K0), the least K within a point of the best
    chance, since more answers would buy almost nothing."""
    chances = [pass_probability(components, clusters, k, margin, width, alpha) for k in range(1, max_k + 1)]
    reached = next((k for k, chance in enumerate(chances, 1) if chance >= power), None)
    if reached is not None:
        return KChoice(reached, chances[reached - 1], True)
    k = next(k for k, chance in enumerate(chances, 1) if chance >= max(chances) - 0.01)
    return KChoice(k, chances[k - 1], False)


def fewest_for_identical(width: float, margin: float, alpha: float = 0.05) -> int:
    """Fewest clusters whose differences, all exactly 0 (an unchanged model answered from the cache), PASS:
    the betting bound cannot rule out an unseen excursion to the far end of ±``width`` sooner. A baseline
    the paired gate is to pass at the margin must hold at least this many clusters."""
    if not 0 < margin < width:
        raise ValueError(f"need 0 < margin < width, got margin {margin}, width {width}")

    def passes(n: int) -> bool:
        return bool(bounded_mean_interval(np.zeros(n), -width, width, 1 - 2 * alpha)[1] < margin)

    low, high = 1, 2
    while not passes(high):  # doubling first: the answer is small next to the cap a plan searches up to
        low, high = high, 2 * high
        assert high <= 10**7, "identical pairs always pass a margin inside the scale"
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if passes(mid) else (mid, high)
    return high


def fewest_for_any_valid_test(width: float, margin: float, alpha: float = 0.05, power: float = TARGET_POWER) -> int:
    """Fewest clusters with which *any* test that is valid for every distribution of differences within
    ±``width`` (wrong PASS ≤ ``alpha`` at a regression of exactly the margin) can pass an unchanged release
    (mean difference 0) with probability ``power``: a floor for every method, not only the betting bound.

    Why: mix the unchanged release's differences P with an excursion to the top of the range, Q = (1 − p)·P +
    p·(point at +width), p = margin / width, so that Q's mean is exactly the margin. With probability (1 − p)^n
    a sample from Q is a sample from P, so the test passes Q at least (1 − p)^n · power of the time, and
    validity needs that to be at most alpha: n ≥ ln(power / alpha) / −ln(1 − p)."""
    if not 0 < margin < width or not 0 < alpha < power < 1:
        raise ValueError(f"need 0 < margin < width and 0 < alpha < power < 1, got {margin}, {width}, {alpha}, {power}")
    return math.ceil(math.log(power / alpha) / -math.log1p(-margin / width))


def _explain(
    components: Components, margin: float, n: int, k: int, cost: float, chance: float, single: tuple[int, float] | None
) -> str:
    """The plan in one line, for --fairness-plan."""
    rho = components.rho
    versus = "" if single is None or k == 1 else f"; K = 1 would need {single[0]:,} prompts (${single[1]:,.2f})"
    return (
        f"paired: {n:,} prompts × K = {k} samples per item (${cost:,.2f}) pass an unchanged release with "
        f"{chance:.0%} probability at margin {margin:g}; within-item SD {math.sqrt(components.within):.3g}, "
        f"ρ = {'n/a' if math.isnan(rho) else f'{rho:.2f}'}, baseline K0 = {components.k_old} "
        f"({components.basis}){versus}"
    )
