"""Coverage of the intervals gates use, by simulation over small and large n and truths near the bounds.

A 95% interval must cover the truth in at least 94% of samples (nominal minus one point) at every
n from 3 to 200. Binomial coverage is computed exactly (a sum over the binomial distribution);
the bounded-mean interval is checked by Monte Carlo with 2,000 samples per cell (standard error
about half a point at 95%), with a fixed seed per cell.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np
import pytest
from scipy import stats as sps

from pytest_fairness.stats import intervals

CONFIDENCE = 0.95
FLOOR = CONFIDENCE - 0.01
NS = (3, 5, 10, 20, 50, 100, 200)
SHARES = (0.01, 0.05, 0.5, 0.95)
REPS = 2000

Sampler = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]


@cache
def proportion_intervals(n: int, method: str = "clopper_pearson") -> np.ndarray:
    """The interval for every possible count 0..n, as rows (low, high)."""
    return np.array([intervals.proportion_interval(k, n, CONFIDENCE, method) for k in range(n + 1)])


def exact_binomial_coverage(n: int, p: float, method: str) -> float:
    """P(share p lies in the interval) when successes ~ Binomial(n, p): no simulation error."""
    ks = np.arange(n + 1)
    ci = proportion_intervals(n, method)
    covered = (ci[:, 0] <= p) & (p <= ci[:, 1])
    return float(sps.binom.pmf(ks, n, p)[covered].sum())


def three_point(p_a: float, a: float, p_b: float, b: float) -> Sampler:
    """Scores a with probability p_a, b with probability p_b, otherwise exactly 0 (a rare-event mixture)."""

    def draw(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        u = rng.random(shape)
        return np.where(u < p_a, a, np.where(u < p_a + p_b, b, 0.0))

    return draw


def bernoulli(p: float) -> Sampler:
    return lambda rng, shape: (rng.random(shape) < p).astype(float)


# name -> (low, high, true mean, sampler)
BOUNDED_CASES: dict[str, tuple[float, float, float, Sampler]] = {
    "mean 0: -1, 0, 1 with 1/4, 1/2, 1/4": (-1.0, 1.0, 0.0, three_point(0.25, 1.0, 0.25, -1.0)),
    "net harm 0.04: 1 with prob 0.04, else 0": (-1.0, 1.0, 0.04, three_point(0.04, 1.0, 0.0, 0.0)),
    "net harm 0.04: 1 w.p. 0.06, -1 w.p. 0.02": (-1.0, 1.0, 0.04, three_point(0.06, 1.0, 0.02, -1.0)),
    "net harm 0.04: 0.5 with prob 0.08": (-1.0, 1.0, 0.04, three_point(0.08, 0.5, 0.0, 0.0)),
    "mean 0.9: 1 w.p. 0.95, -1 w.p. 0.05": (-1.0, 1.0, 0.9, three_point(0.95, 1.0, 0.05, -1.0)),
    "mean 0.9: 2 Beta(19, 1) - 1": (-1.0, 1.0, 0.9, lambda rng, shape: 2 * rng.beta(19, 1, shape) - 1),
    **{f"Bernoulli({p}) on [0, 1]": (0.0, 1.0, p, bernoulli(p)) for p in SHARES},
}


@pytest.mark.heavy(3)
@pytest.mark.parametrize("method", ["clopper_pearson", "wilson_cc"])
def test_proportion_intervals_cover_at_least_nominal_at_every_n_and_share(method):
    coverage = {(n, p): exact_binomial_coverage(n, p, method) for n in NS for p in SHARES}
    worst = min(coverage, key=coverage.get)
    assert coverage[worst] >= FLOOR, f"{method}: coverage {coverage[worst]:.4f} at (n, p) = {worst}"


def test_clopper_pearson_covers_on_a_fine_grid_of_shares():
    shares = np.linspace(0.001, 0.999, 61)
    for n in (3, 10, 50):
        ks = np.arange(n + 1)
        ci = proportion_intervals(n)
        pmf = sps.binom.pmf(ks[:, None], n, shares[None, :])
        covered = (ci[:, :1] <= shares) & (shares <= ci[:, 1:])
        assert (pmf * covered).sum(axis=0).min() >= CONFIDENCE - 1e-9


def test_wilson_undercovers_near_the_bounds_so_it_is_not_the_gate_default():
    worst = min(exact_binomial_coverage(n, p, "wilson") for n in NS for p in SHARES)
    assert worst < FLOOR


def test_proportion_intervals_stay_in_0_1_and_are_never_points():
    for method in ("clopper_pearson", "wilson", "wilson_cc"):
        for n in NS:
            ci = proportion_intervals(n, method)
            assert (ci[:, 0] >= 0).all() and (ci[:, 1] <= 1).all()
            assert (ci[:, 1] > ci[:, 0]).all()


@pytest.mark.heavy(1)
@pytest.mark.parametrize("case", list(BOUNDED_CASES))
def test_bounded_mean_interval_covers_at_every_n_stays_on_scale_and_is_never_a_point(case):
    low, high, truth, draw = BOUNDED_CASES[case]
    coverage = {}
    for n in NS:
        x = draw(np.random.default_rng(n), (REPS, n))
        lo, hi = intervals.bounded_mean_intervals(x, low, high, CONFIDENCE)
        assert (lo >= low).all() and (hi <= high).all()
        assert (hi > lo).all()
        coverage[n] = float(np.mean((lo <= truth) & (truth <= hi)))
    worst = min(coverage, key=coverage.get)
    assert coverage[worst] >= FLOOR, f"coverage {coverage[worst]:.3f} at n = {worst}: {coverage}"


def test_the_t_interval_undercovers_rare_event_means_which_is_why_bounded_exists():
    # Net harm 0.04 from 20 prompts: the plain t interval misses in about half the samples.
    x = three_point(0.04, 1.0, 0.0, 0.0)(np.random.default_rng(0), (REPS, 20))
    mean, half = x.mean(axis=1), sps.t.ppf(0.975, 19) * x.std(axis=1, ddof=1) / np.sqrt(20)
    assert np.mean((mean - half <= 0.04) & (mean + half >= 0.04)) < 0.8


@pytest.mark.parametrize(("n", "max_ratio"), [(3, 1.0), (20, 1.7), (200, 1.4)])
def test_bounded_interval_costs_little_width_against_t_where_t_is_valid(n, max_ratio):
    # Roughly normal scores of SD 0.5 on [-1, 1]: t is about right here; the betting interval pays a
    # modest price at moderate n and none at n = 3, where t's quantile (4.3) explodes.
    x = np.clip(np.random.default_rng(n).normal(0.0, 0.5, (500, n)), -1, 1)
    lo, hi = intervals.bounded_mean_intervals(x, -1.0, 1.0, CONFIDENCE)
    t_width = 2 * sps.t.ppf(0.975, n - 1) * x.std(axis=1, ddof=1) / np.sqrt(n)
    assert np.mean(hi - lo) / np.mean(t_width) <= max_ratio
