"""Sequential sampling: the confidence sequence holds under continuous monitoring, and stops early when it can."""

import numpy as np
import pytest
from scipy import stats as sps

from pytest_fairness.gate import Outcome, Threshold
from pytest_fairness.measures.bai.planted import expected_iat_score
from pytest_fairness.measures.bai.stimuli import get_stereotype
from pytest_fairness.models.cache import CacheMode
from pytest_fairness.sequential import SequentialPlan, confidence_sequence, confidence_sequence_path
from pytest_fairness.session import CheckRun, FairnessSession, Settings
from pytest_fairness.suite import parse


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


def run_sequentially(bias: float, samples: int, budget: int, threshold: float) -> CheckRun:
    """One implicit-bias check on the planted double, grown by the session's own loop (--fairness-sequential)."""
    entry = {"measure": "implicit_bias", "stereotype": "power", "samples": samples, "budget": budget}
    (check,) = parse({"suite": "s", "checks": [entry | {"threshold": {"max": threshold}}]}, "test").checks
    session = FairnessSession(
        Settings(model=f"synthetic:iat?bias={bias}", sequential=True, seed=2, cache_mode=CacheMode.OFF)
    )
    try:
        return session.run_check(check)
    finally:
        session.close()


def test_a_clearly_passing_truth_stops_early():
    run = run_sequentially(bias=0.0, samples=20, budget=1000, threshold=0.3)
    rounds, (lo, hi) = run.result.details["sequential"]["rounds"], run.result.ci
    ratio = run.result.n / 1000
    print(f"stopped after {run.result.n} of 1000 samples ({ratio:.0%} of the budget), interval [{lo}, {hi}]")
    assert run.outcome is Outcome.PASS and hi <= 0.3
    assert rounds[0] == 20 and ratio <= 0.1
    assert run.result.details["sequential"]["interval"] == "always-valid confidence sequence"


def test_a_truth_at_the_threshold_stays_inconclusive_and_says_why_it_stopped():
    # the planted double's exact mean score at bias 0.3
    truth = expected_iat_score(len(get_stereotype("power").stigma_attrs), 0.3)
    run = run_sequentially(bias=0.3, samples=20, budget=200, threshold=truth)
    sequential, (lo, hi) = run.result.details["sequential"], run.result.ci
    assert run.outcome is Outcome.INCONCLUSIVE and lo < truth < hi
    assert run.result.n == 200 or sequential["stopped"].startswith("unlikely to decide within the budget of 200")


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
