import math

import numpy as np
import pytest
from scipy import stats as sps

from pytest_fairness.stats import intervals
from pytest_fairness.stats.confidence_sequence import confidence_sequence
from pytest_fairness.stats.gate import Outcome, Threshold, decide


def test_normal_interval_reproduces_the_papers_table_arithmetic():
    # Spec §1.7: decision 0.840 with n = 50 -> [0.737, 0.943] (mean ± 1.96·SD/√n).
    values = [1.0] * 42 + [0.0] * 8
    lo, hi = intervals.normal_interval(values)
    assert (round(lo, 3), round(hi, 3)) == (0.737, 0.943)


def test_t_interval_matches_scipy_and_is_wider_than_normal():
    rng = np.random.default_rng(1)
    x = rng.normal(0.3, 0.2, size=12)
    lo, hi = intervals.t_interval(x)
    expected = sps.t.interval(0.95, df=11, loc=x.mean(), scale=sps.sem(x))
    assert (lo, hi) == pytest.approx(expected)
    nlo, nhi = intervals.normal_interval(x)
    assert lo < nlo and hi > nhi


def test_intervals_are_points_for_constant_samples_and_nan_for_single_values():
    assert intervals.t_interval([0.5, 0.5, 0.5]) == (0.5, 0.5)
    assert intervals.bootstrap_interval([0.5, 0.5, 0.5]) == (0.5, 0.5)
    assert all(math.isnan(v) for v in intervals.t_interval([0.5]))


def test_bootstrap_interval_is_reproducible_for_a_seed_and_brackets_the_mean():
    x = np.random.default_rng(2).uniform(size=40)
    first = intervals.bootstrap_interval(x, seed=7)
    assert first == intervals.bootstrap_interval(x, seed=7)
    assert first[0] < x.mean() < first[1]


def test_one_sample_t_handles_zero_variance():
    assert intervals.one_sample_t([0.2, 0.2], 0.0) == (math.inf, 0.0)
    assert intervals.one_sample_t([0.0, 0.0], 0.0) == (0.0, 1.0)


def test_summarize_reports_mean_n_and_a_t_test_against_the_null():
    s = intervals.summarize([0.1, 0.2, 0.3, 0.4], null=0.0)
    assert s.mean == pytest.approx(0.25) and s.n == 4
    assert s.t == pytest.approx(sps.ttest_1samp([0.1, 0.2, 0.3, 0.4], 0.0).statistic)
    assert s.ci_t[0] < 0.25 < s.ci_t[1]


def test_three_unanimous_binary_decisions_get_an_exact_interval_that_cannot_pass_a_max_07_gate():
    # Issue 13: 3 usable decisions all coded 0 gave the t point [0, 0] and a PASS.
    lo, hi = intervals.mean_interval([0, 0, 0], "binary")
    exact = sps.binomtest(0, 3).proportion_ci(0.95, method="exact")
    assert (lo, hi) == pytest.approx((exact.low, exact.high))
    assert hi > lo
    assert decide((lo, hi), Threshold(max=0.7)) is not Outcome.PASS


def test_six_zero_net_harm_prompts_cover_a_planted_harm_of_004_so_a_max_0001_gate_cannot_pass():
    # Issue 13: a chatbot with net harm 0.04 passed net_harm <= 0.001 with [0, 0] from 6 prompts.
    for kind in ("bounded", "t"):
        lo, hi = intervals.mean_interval([0.0] * 6, kind, bounds=(-1.0, 1.0))
        assert lo <= 0.04 <= hi
        assert decide((lo, hi), Threshold(max=0.001)) is not Outcome.PASS


def test_t_kind_is_clipped_to_the_bounds_and_keeps_the_t_interval_inside_them():
    values = [1, 1, 1, 0, 1]  # the t interval is [0.245, 1.355]
    plain = intervals.t_interval(values)
    lo, hi = intervals.mean_interval(values, "t", bounds=(0.0, 1.0))
    assert plain[1] > 1 and hi == 1.0 and lo == pytest.approx(plain[0])
    x = np.random.default_rng(3).uniform(0.2, 0.8, size=30)
    assert intervals.mean_interval(x, "t", bounds=(0.0, 1.0)) == pytest.approx(intervals.t_interval(x))


def test_t_kind_never_returns_a_point_for_a_constant_sample():
    assert all(math.isnan(v) for v in intervals.mean_interval([0.5, 0.5, 0.5], "t"))
    lo, hi = intervals.mean_interval([0.5, 0.5, 0.5], "t", bounds=(0.0, 1.0))
    assert lo < 0.5 < hi
    assert (lo, hi) == intervals.bounded_mean_interval([0.5, 0.5, 0.5], 0.0, 1.0)


@pytest.mark.parametrize("values", [[0.0, 0.0, 0.0], [1.0] * 4, [-1.0], [0.3] * 50])
def test_bounded_interval_of_a_constant_sample_has_width_and_stays_on_the_scale(values):
    lo, hi = intervals.bounded_mean_interval(values, -1.0, 1.0)
    assert -1.0 <= lo <= values[0] <= hi <= 1.0
    assert hi > lo


def test_bounded_interval_narrows_with_n_and_brackets_the_sample_mean():
    x = np.random.default_rng(4).uniform(-1, 1, size=200)
    widths = []
    for n in (10, 50, 200):
        lo, hi = intervals.bounded_mean_interval(x[:n], -1.0, 1.0)
        assert lo < x[:n].mean() < hi
        widths.append(hi - lo)
    assert widths[0] > widths[1] > widths[2]


def test_fixed_n_betting_interval_is_tighter_than_the_always_valid_sequence():
    x = np.random.default_rng(5).uniform(-0.5, 0.7, size=100)
    lo, hi = intervals.bounded_mean_interval(x, -1.0, 1.0)
    cs_lo, cs_hi = confidence_sequence(x, -1.0, 1.0, alpha=0.05)
    assert hi - lo < cs_hi - cs_lo


def test_bounded_intervals_batch_agrees_with_one_sample_at_a_time():
    x = np.random.default_rng(6).uniform(0, 1, size=(4, 12))
    lo, hi = intervals.bounded_mean_intervals(x, 0.0, 1.0, 0.9)
    for row, a, b in zip(x, lo, hi, strict=True):
        assert intervals.bounded_mean_interval(row, 0.0, 1.0, 0.9) == (a, b)


def test_higher_confidence_gives_wider_intervals_for_every_kind():
    x = [0, 1, 1, 0, 1, 1, 1, 0, 1, 1]
    for kind in ("binary", "bounded", "t"):
        lo90, hi90 = intervals.mean_interval(x, kind, bounds=(0.0, 1.0), confidence=0.9)
        lo99, hi99 = intervals.mean_interval(x, kind, bounds=(0.0, 1.0), confidence=0.99)
        assert lo99 < lo90 and hi90 < hi99


def test_proportion_interval_methods_are_scipys_and_an_empty_sample_is_undecidable():
    wilson = sps.binomtest(3, 10).proportion_ci(0.9, method="wilson")
    assert intervals.proportion_interval(3, 10, 0.9, "wilson") == pytest.approx((wilson.low, wilson.high))
    assert all(math.isnan(v) for v in intervals.proportion_interval(0, 0))
    assert all(math.isnan(v) for v in intervals.mean_interval([], "bounded", bounds=(0.0, 1.0)))


@pytest.mark.parametrize(
    ("values", "kind", "bounds"),
    [
        ([0, 0.5, 1], "binary", None),
        ([0.1, 0.2], "bounded", None),
        ([0.1, 2.0], "bounded", (0.0, 1.0)),
        ([1], "z", None),
    ],
)
def test_mean_interval_rejects_samples_that_do_not_fit_the_kind(values, kind, bounds):
    with pytest.raises(ValueError):
        intervals.mean_interval(values, kind, bounds)


def test_proportion_interval_rejects_impossible_counts():
    with pytest.raises(ValueError):
        intervals.proportion_interval(4, 3)


def test_summarize_keeps_the_t_interval_by_default_and_puts_a_chosen_interval_where_gates_read():
    values = [0.0, 0.0, 0.0]
    legacy = intervals.summarize(values)
    assert legacy.ci_t == (0.0, 0.0) and legacy.ci_method == "t"
    chosen = intervals.summarize(values, interval="binary")
    assert chosen.ci_method == "binary"
    assert chosen.ci_t == intervals.proportion_interval(0, 3)
    harm = intervals.summarize([0.0] * 6, interval="bounded", bounds=(-1.0, 1.0))
    assert harm.ci_t == intervals.bounded_mean_interval([0.0] * 6, -1.0, 1.0) and harm.mean == 0.0
