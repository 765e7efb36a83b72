"""Simulated error rates of the paired gate: vectorised decisions over many trials, and rates with their
Clopper–Pearson intervals, for the tests and ``benchmarks/paired_gate.py``.

``fixed_outcomes`` decides rows of per-cluster differences exactly as ``paired.compare.decide_differences``
does one (the tests check they agree); ``sequential_outcome`` grows one trial through its looks with the
always-valid bounds, as a run under ``--fairness-sequential`` would; ``given_baseline`` keeps one recorded
baseline fixed and reruns a regression exactly at the margin against it, as a team that keeps one baseline sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_fairness.stats.gate import Outcome
from pytest_fairness.stats.intervals import Interval, bounded_mean_p_values, proportion_interval
from pytest_fairness.stats.paired.allocation import components_from_baseline, plan_k
from pytest_fairness.stats.paired.matching import ItemScores
from pytest_fairness.stats.paired.noninferiority import PairedGate, decide_differences
from pytest_fairness.testing.releases import Family, Pcf, at_margin_on_items, exact_differences_at_margin, item_samples


def fixed_outcomes(
    differences: np.ndarray, scale: tuple[float, float], gate: PairedGate, checks: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Per row of per-cluster differences: whether the fixed-n paired gate PASSES and whether it FAILS.

    Each verdict is read off the gambler behind its bound (``bounded_mean_p_values``: a bound lies beyond the
    margin exactly when that gambler's p at the margin is at most its level), one capital per row rather
    than a bisection, as ``decide_differences`` decides one row (the tests check they agree).
    ``checks`` divides the FAIL level: a run of that many checks fails at all under Holm exactly when one of
    them fails at the level over ``checks`` (Holm's first step), which is what a run-level false alarm is.
    """
    d = np.asarray(differences, dtype=float).reshape(-1, np.shape(differences)[-1])
    width, delta = scale[1] - scale[0], gate.margin
    pass_level, fail_level = gate.passing_level, gate.failing_level / checks / len(gate.sides())
    passes, fails = np.ones(d.shape[0], bool), np.zeros(d.shape[0], bool)
    if delta >= width:  # no difference on this scale can be worse than the margin
        return passes.reshape(np.shape(differences)[:-1]), fails.reshape(np.shape(differences)[:-1])

    def p(null: float, level: float, above: bool) -> np.ndarray:
        return bounded_mean_p_values(d, -width, width, null, 1 - 2 * level, above)

    for side in gate.sides():
        passes &= p(side * delta, pass_level, side < 0) <= pass_level
        fails |= p(side * delta, fail_level, side > 0) <= fail_level
    shape = np.shape(differences)[:-1]
    return (passes & ~fails).reshape(shape), fails.reshape(shape)


def sequential_outcome(
    differences: np.ndarray, looks: Sequence[int], scale: tuple[float, float], gate: PairedGate
) -> tuple[Outcome, int]:
    """Grow one trial through ``looks`` (cluster counts) with always-valid bounds until it decides."""
    assert gate.sequential, "a sequential trial needs a sequential gate"
    for n in looks:
        outcome = decide_differences(np.asarray(differences)[:n], scale, gate)[0]
        if outcome is not Outcome.INCONCLUSIVE:
            return outcome, n
    return Outcome.INCONCLUSIVE, looks[-1]


@dataclass(frozen=True)
class Rate:
    """k events in n trials, with the two-sided 95% Clopper–Pearson interval."""

    k: int
    n: int

    @property
    def value(self) -> float:
        return self.k / self.n

    @property
    def interval(self) -> tuple[float, float]:
        return proportion_interval(self.k, self.n, 0.95)

    def __str__(self) -> str:
        lo, hi = self.interval
        digits = ".2%" if hi < 0.01 else ".1%"  # 0/20,000 is [0.00%, 0.02%], not [0.0%, 0.0%]
        return f"{self.value:{digits}} ({self.k:,}/{self.n:,}, CP [{lo:{digits}}, {hi:{digits}}])"


@dataclass(frozen=True)
class Conditional:
    """Per recorded baseline, the share of its reruns with the event: mean, 95th percentile and worst, with the
    95th-percentile baseline's own count (and its interval)."""

    rates: np.ndarray
    reruns: int

    @property
    def mean(self) -> float:
        return float(self.rates.mean())

    @property
    def q95(self) -> Rate:
        ranked = np.sort(self.rates)
        return Rate(round(float(ranked[int(np.ceil(0.95 * ranked.size)) - 1]) * self.reruns), self.reruns)

    @property
    def worst(self) -> Rate:
        return Rate(round(float(self.rates.max()) * self.reruns), self.reruns)

    def __str__(self) -> str:
        return f"mean {self.mean:.2%}; 95th percentile {self.q95}; worst {self.worst}"


def conditional(events: np.ndarray) -> Conditional:
    """``events`` of shape (baselines, reruns) → the per-baseline rates."""
    return Conditional(events.mean(axis=1), events.shape[1])


def cluster_bootstrap(events: np.ndarray, rng: np.random.Generator, reps: int = 2000) -> tuple[Interval, Interval]:
    """95% percentile intervals of the pooled rate and of the 95th percentile over baselines, resampling the
    baselines (the rows of ``events``, shape (baselines, reruns)): the reruns of one baseline are not
    independent of each other, so the pooled Clopper–Pearson interval alone would be too narrow."""
    rates = events.mean(axis=1)
    drawn = np.sort(rates[rng.integers(0, rates.size, (reps, rates.size))], axis=1)
    pooled = np.quantile(drawn.mean(axis=1), [0.025, 0.975])
    q95 = np.quantile(drawn[:, int(np.ceil(0.95 * rates.size)) - 1], [0.025, 0.975])
    return (float(pooled[0]), float(pooled[1])), (float(q95[0]), float(q95[1]))


@dataclass(frozen=True)
class GivenBaseline:
    """Wrong PASSes of a regression exactly at the margin, per recorded baseline (rows) and rerun (columns), with
    the samples per item ``ks`` each baseline's run took; ``twin`` holds another gate's on the same reruns."""

    events: np.ndarray
    ks: np.ndarray
    twin: np.ndarray | None = None

    @property
    def pooled(self) -> Rate:
        return Rate(int(self.events.sum()), self.events.size)

    @property
    def per_baseline(self) -> Conditional:
        return conditional(self.events)


def given_baseline(
    family: Family,
    margin: float,
    shape: str,
    items: int,
    k_old: int,
    baselines: int,
    reruns: int,
    rng: np.random.Generator,
    gate: PairedGate | None = None,
    k: int | None = None,
    twin: PairedGate | None = None,
) -> GivenBaseline:
    """For each of ``baselines`` recorded baselines (``items`` drawn, K0 = ``k_old`` answers each), a regression
    whose item means rise by exactly ``margin`` on those items (``releases.at_margin_on_items``, ``shape``),
    rerun ``reruns`` times as a pull request runs it: every baseline item × K answers (``k``, else the planner's
    ``plan_k`` from the recorded items at the gate's PASS level), the differences read in one seeded random
    order per baseline (the plugin's order is fixed by the baseline's seed, the check and the model), decided by
    ``gate`` (default: the plugin's, at the margin) and by ``twin`` on the same reruns, if given. PCF is read
    exactly: its differences are fixed given the baseline and the release, so each baseline has one rerun, and
    its gate is ``exact``."""
    width = family.scale[1] - family.scale[0]
    exact = isinstance(family, Pcf)
    gate = gate or PairedGate(margin, 1, exact=exact)
    shape_of = (baselines, 1 if exact else reruns)
    events, twins = np.zeros(shape_of, bool), np.zeros(shape_of, bool)
    ks = np.ones(baselines, int)
    for b in range(baselines):
        z = rng.standard_normal(items)
        if isinstance(family, Pcf):
            d = exact_differences_at_margin(family, shape, z, rng.standard_normal(items), margin, rng)[None, :]
        else:
            recorded = item_samples(family, rng, z, np.zeros(items), k_old, 1)[0]
            shift = at_margin_on_items(family, shape, z, margin, rng)
            if k is None:
                scores = [ItemScores(str(i), str(i), tuple(float(v) for v in row)) for i, row in enumerate(recorded)]
                ks[b] = plan_k(components_from_baseline(scores), items, margin, width, alpha=gate.passing_level).k
            else:
                ks[b] = k
            d = item_samples(family, rng, z, shift, int(ks[b]), reruns).mean(-1) - recorded.mean(-1)
            d = d[:, rng.permutation(items)]
        events[b] = fixed_outcomes(d, family.scale, gate)[0]
        if twin is not None:
            twins[b] = fixed_outcomes(d, family.scale, twin)[0]
    return GivenBaseline(events, ks, twins if twin is not None else None)
