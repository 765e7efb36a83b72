"""Sequential sampling: the confidence sequence holds under continuous monitoring, and stops early when it can."""

import numpy as np
import pytest
from scipy import stats as sps

from pytest_fairness.gate import Threshold
from pytest_fairness.sequential import (
    SequentialPlan,
    confidence_sequence,
    confidence_sequence_path,
    sample_sequentially,
)


def iat_scores(rng, mean, n):
    """Scores on the IAT's [-1, 1] scale with the spread the quick profile sees (SD about 0.3)."""
    return np.clip(rng.normal(mean, 0.3, n), -1, 1)


def peeked_t_intervals(x, alpha, every=5):
    """The t interval a naive loop would look at after every batch of ``every`` scores."""
    k = np.arange(every, x.size + 1, every)
    mean = np.cumsum(x)[k - 1] / k
    sd = np.sqrt((np.cumsum(x**2)[k - 1] - k * mean**2) / (k - 1))
    half = sps.t.ppf(1 - alpha / 2, k - 1) * sd / np.sqrt(k)
    return zip(mean - half, mean + half, strict=True)


def test_coverage_holds_when_every_interval_is_looked_at():
    # 200 streams of 200 scores; a stream counts as a miss if the truth leaves the interval at ANY size.
    rng, alpha, truth = np.random.default_rng(0), 0.1, 0.3
    misses, naive_misses = 0, 0
    for _ in range(200):
        x = rng.beta(3, 7, 200)  # mean 0.3 on [0, 1]
        path = confidence_sequence_path(x, 0.0, 1.0, alpha, grid=400)
        misses += bool(((path[:, 0] > truth) | (path[:, 1] < truth)).any())
        naive_misses += any(lo > truth or hi < truth for lo, hi in peeked_t_intervals(x, alpha))
    print(
        f"miscoverage under continuous monitoring: {misses / 200:.3f} (alpha {alpha}); "
        f"peeking at t intervals: {naive_misses / 200:.3f}"
    )
    assert misses / 200 <= alpha
    assert naive_misses / 200 > 2 * alpha  # why the plain t interval cannot drive the stopping


def test_the_interval_contains_the_mean_narrows_with_n_and_stays_in_bounds():
    rng = np.random.default_rng(1)
    x = iat_scores(rng, 0.1, 400)
    path = confidence_sequence_path(x, -1.0, 1.0, 0.05)
    assert np.all(np.diff(path[:, 0]) >= 0) and np.all(np.diff(path[:, 1]) <= 0)  # running intersection
    lo, hi = confidence_sequence(x, -1.0, 1.0, 0.05)
    assert -1 <= lo < 0.1 < hi <= 1
    assert hi - lo < 0.2
    assert confidence_sequence([], -1.0, 1.0) == (-1.0, 1.0)


def test_values_outside_the_bounds_are_refused():
    with pytest.raises(ValueError, match=r"must lie in \[0.0, 1.0\]"):
        confidence_sequence([0.5, 1.5], 0.0, 1.0)


def test_a_clearly_passing_truth_stops_early():
    rng = np.random.default_rng(2)
    plan = SequentialPlan(initial=20, step=20, budget=1000)
    values, (lo, hi) = sample_sequentially(lambda k: iat_scores(rng, -0.1, k), plan, Threshold(max=0.2), -1, 1)
    ratio = values.size / plan.budget
    print(f"stopped after {values.size} of {plan.budget} samples ({ratio:.0%} of the budget), interval [{lo}, {hi}]")
    assert hi <= 0.2
    assert ratio <= 0.1


def test_a_truth_at_the_threshold_spends_the_budget_and_stays_inconclusive():
    rng = np.random.default_rng(3)
    plan = SequentialPlan(initial=20, step=40, budget=200)
    values, (lo, hi) = sample_sequentially(lambda k: iat_scores(rng, 0.2, k), plan, Threshold(max=0.2), -1, 1)
    assert values.size == plan.budget
    assert lo < 0.2 < hi


def test_the_plan_grows_in_steps_and_stops_when_conclusive_or_spent():
    plan = SequentialPlan(initial=20, step=30, budget=100)
    gate = Threshold(max=0.2)
    assert plan.next_size(0, (-1.0, 1.0), gate) == 20
    assert plan.next_size(20, (0.0, 0.4), gate) == 50
    assert plan.next_size(80, (0.0, 0.4), gate) == 100
    assert plan.next_size(100, (0.0, 0.4), gate) is None  # budget spent
    assert plan.next_size(50, (0.0, 0.1), gate) is None  # passes
    assert plan.next_size(50, (0.3, 0.4), gate) is None  # fails
    with pytest.raises(ValueError):
        SequentialPlan(initial=0, step=1, budget=10)
