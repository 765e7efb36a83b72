import math

import numpy as np
import pytest
from scipy import stats as sps

from pytest_fairness import stats


def test_normal_interval_reproduces_the_papers_table_arithmetic():
    # Spec §1.7: decision 0.840 with n = 50 -> [0.737, 0.943] (mean ± 1.96·SD/√n).
    values = [1.0] * 42 + [0.0] * 8
    lo, hi = stats.normal_interval(values)
    assert (round(lo, 3), round(hi, 3)) == (0.737, 0.943)


def test_t_interval_matches_scipy_and_is_wider_than_normal():
    rng = np.random.default_rng(1)
    x = rng.normal(0.3, 0.2, size=12)
    lo, hi = stats.t_interval(x)
    expected = sps.t.interval(0.95, df=11, loc=x.mean(), scale=sps.sem(x))
    assert (lo, hi) == pytest.approx(expected)
    nlo, nhi = stats.normal_interval(x)
    assert lo < nlo and hi > nhi


def test_intervals_are_points_for_constant_samples_and_nan_for_single_values():
    assert stats.t_interval([0.5, 0.5, 0.5]) == (0.5, 0.5)
    assert stats.bootstrap_interval([0.5, 0.5, 0.5]) == (0.5, 0.5)
    assert all(math.isnan(v) for v in stats.t_interval([0.5]))


def test_bootstrap_interval_is_reproducible_for_a_seed_and_brackets_the_mean():
    x = np.random.default_rng(2).uniform(size=40)
    first = stats.bootstrap_interval(x, seed=7)
    assert first == stats.bootstrap_interval(x, seed=7)
    assert first[0] < x.mean() < first[1]


def test_one_sample_t_handles_zero_variance():
    assert stats.one_sample_t([0.2, 0.2], 0.0) == (math.inf, 0.0)
    assert stats.one_sample_t([0.0, 0.0], 0.0) == (0.0, 1.0)


def test_summarize_reports_mean_n_and_a_t_test_against_the_null():
    s = stats.summarize([0.1, 0.2, 0.3, 0.4], null=0.0)
    assert s.mean == pytest.approx(0.25) and s.n == 4
    assert s.t == pytest.approx(sps.ttest_1samp([0.1, 0.2, 0.3, 0.4], 0.0).statistic)
    assert s.ci_t[0] < 0.25 < s.ci_t[1]
