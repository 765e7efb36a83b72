"""Sequential sampling: the confidence sequence holds under continuous monitoring, and stops early when it can."""

import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from functools import cache

import numpy as np
import pytest
from scipy import stats as sps

from pytest_fairness.config import suite
from pytest_fairness.config.settings import Settings
from pytest_fairness.config.suite import parse
from pytest_fairness.measures import MEASURES
from pytest_fairness.measures.bai.iat_stimuli import get_stereotype
from pytest_fairness.measures.bai.planted_answers import expected_iat_score
from pytest_fairness.measures.context import RunContext
from pytest_fairness.models.cache import CacheMode, ResponseCache
from pytest_fairness.models.interface import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    LogprobRequest,
    LogprobResponse,
    estimate_tokens,
)
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import CallStats, Runner
from pytest_fairness.records.measure_result import MeasureResult
from pytest_fairness.run.growth import CheckRounds, SequentialPlan, rounds_calls, run_sequential
from pytest_fairness.run.session import CheckRun, FairnessSession
from pytest_fairness.stats import intervals
from pytest_fairness.stats.attenuation import deattenuated_summary
from pytest_fairness.stats.confidence_sequence import confidence_sequence, confidence_sequence_path
from pytest_fairness.stats.gate import Outcome, Threshold
from pytest_fairness.stats.intervals import MAX_BET


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


@pytest.mark.heavy(2)
def test_coverage_holds_when_every_interval_is_looked_at():
    # 200 streams of 200 scores; a stream counts as a miss if the truth leaves the interval at ANY size:
    # exactly when the hedged capital at the truth reaches 1/alpha at some size (brute force, every size).
    # The interval at a size holds every mean not yet rejected, so looking less often cannot miss more.
    rng, alpha, truth = np.random.default_rng(0), 0.1, 0.3
    misses, looked_misses, naive_misses = 0, 0, 0
    for _ in range(200):
        x = rng.beta(3, 7, 200)  # mean 0.3 on [0, 1]
        misses += bool(hedged_log_capital(x, np.array([truth]), alpha).max() >= np.log(1 / alpha))
        path = confidence_sequence_path(x, 0.0, 1.0, alpha, sizes=(100, 200))
        looked_misses += bool(((path[:, 0] > truth) | (path[:, 1] < truth)).any())
        naive_misses += any(lo > truth or hi < truth for lo, hi in peeked_t_intervals(x, alpha))
    print(
        f"miscoverage under continuous monitoring: {misses / 200:.3f} (alpha {alpha}); looking at 100 and 200: "
        f"{looked_misses / 200:.3f}; peeking at t intervals: {naive_misses / 200:.3f}"
    )
    assert looked_misses <= misses <= alpha * 200
    assert naive_misses / 200 > 2 * alpha  # why the plain t interval cannot drive the stopping


def test_the_interval_contains_the_mean_narrows_with_n_and_stays_in_bounds():
    rng = np.random.default_rng(1)
    x = iat_scores(rng, 0.1, 400)
    path = confidence_sequence_path(x, -1.0, 1.0, 0.05, sizes=range(10, 401, 10))
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


class Tokenized(ChatModel):
    """A planted double that answers with each request's prompt tokens by its tokenizer (``count_tokens``)."""

    provider = "tokenized"
    counts_tokens = True

    def __init__(self, inner: ChatModel) -> None:
        self.inner, self.name = inner, inner.name

    def count_tokens(self, request: ChatRequest | LogprobRequest) -> int:
        return estimate_tokens(request)

    async def chat(self, request: ChatRequest) -> ChatResponse:
        return replace(await self.inner.chat(request), prompt_tokens=self.count_tokens(request))

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        return replace(await self.inner.logprobs(request), prompt_tokens=self.count_tokens(request))


def test_a_check_that_grows_reports_the_tokenizers_count_of_every_round(tmp_path):
    """The rounds' tokens add up (a grown implicit-bias check once showed one round's: 60,776 of 126,620)."""
    entry = {"measure": "implicit_bias", "stereotype": "power", "samples": 20, "budget": 200}
    (check,) = parse({"suite": "s", "checks": [entry | {"threshold": {"max": 0.3}}]}, "test").checks
    session = FairnessSession(Settings(model="synthetic:iat?bias=0.3", sequential=True, seed=2))
    model = Tokenized(load_model("synthetic:iat?bias=0.3"))
    session._runner = Runner(model, ResponseCache(tmp_path / "c.sqlite"))
    try:
        run = session.run_check(check)
    finally:
        session.close()
    rounds = run.result.sequential.rounds
    assert len(rounds) > 1  # it grew
    final = MEASURES["implicit_bias"].requests(check.params.with_samples(rounds[-1]), model, 2)
    distinct = {session.runner.key(r): r for r in final}.values()  # what the rounds asked, once each
    assert run.result.calls.prompt_tokens == sum(model.count_tokens(r) for r in distinct)


def test_a_clearly_passing_truth_stops_early():
    run = run_sequentially(bias=0.0, samples=20, budget=1000, threshold=0.3)
    rounds, (lo, hi) = run.result.sequential.rounds, run.result.ci
    ratio = run.result.n / 1000
    print(f"stopped after {run.result.n} of 1000 samples ({ratio:.0%} of the budget), interval [{lo}, {hi}]")
    assert run.outcome is Outcome.PASS and hi <= 0.3
    assert rounds[0] == 20 and ratio <= 0.1
    assert run.result.sequential.interval == "always-valid confidence sequence"


def test_a_truth_at_the_threshold_stays_inconclusive_and_says_why_it_stopped():
    # the planted double's exact mean score at bias 0.3
    truth = expected_iat_score(len(get_stereotype("power").stigma_attrs), 0.3)
    run = run_sequentially(bias=0.3, samples=20, budget=200, threshold=truth)
    sequential, (lo, hi) = run.result.sequential, run.result.ci
    assert run.outcome is Outcome.INCONCLUSIVE and lo < truth < hi
    assert run.result.n == 200 or sequential.stopped.startswith("unlikely to decide within the budget of 200")


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


# --- exact ends by bisection (no grid) --------------------------------------------------------------------


def grid_sequence(x, low, high, alpha=0.05, grid=1000):
    """The previous implementation, kept as a reference: the hedged capital on a grid of candidate means,
    padded by one cell (None when no grid mean survives, where it was wrong), and the surviving means."""
    u = (np.asarray(x, dtype=float) - low) / (high - low)
    means = (np.arange(grid) + 0.5) / grid
    inside = hedged_log_capital(u, means, alpha).max(axis=0) < np.log(1 / alpha)
    alive = low + means[inside] * (high - low)
    if not inside.any():
        return None, alive
    first, last = np.flatnonzero(inside)[[0, -1]]
    lo, hi = max(means[first] - 1 / grid, 0), min(means[last] + 1 / grid, 1)
    return (low + lo * (high - low), low + hi * (high - low)), alive


def hedged_log_capital(u, means, alpha):
    """log of the hedged capital for scores u in [0, 1], rows t, columns candidate means (brute force)."""
    t = np.arange(1, u.size + 1)
    mu_hat = (0.5 + np.cumsum(u)) / (t + 1)
    sigma2 = (0.25 + np.cumsum((u - mu_hat) ** 2)) / (t + 1)
    sigma2_before = np.concatenate(([0.25], sigma2[:-1]))
    bet = np.sqrt(2 * np.log(2 / alpha) / (sigma2_before * t * np.log1p(t)))[:, None]
    centred = u[:, None] - means[None, :]
    with np.errstate(divide="ignore"):
        up = np.log1p(np.minimum(bet, MAX_BET / means) * centred).cumsum(axis=0)
        down = np.log1p(-np.minimum(bet, MAX_BET / (1 - means)) * centred).cumsum(axis=0)
    return np.logaddexp(up, down) - np.log(2)


def random_samples(rng, n):
    """Scores on [-1, 1] of several shapes: smooth, two-point, rare events, near a bound."""
    kind = rng.integers(4)
    if kind == 0:
        return iat_scores(rng, rng.uniform(-0.5, 0.5), n)
    if kind == 1:
        return rng.choice([-1.0, 1.0], n, p=[0.7, 0.3])
    if kind == 2:
        return 0.425 * rng.binomial(2, rng.uniform(0, 0.05), n)
    return 1 - 2 * rng.beta(0.5, 8, n)


def test_all_zero_scores_resolve_far_below_a_thousandth():
    # 60,000 prompts without harm: the grid could not tell +0.001 from -0.001 and reported [-0.001, 0.003].
    lo, hi = confidence_sequence(np.zeros(60_000), -1.0, 1.0, 0.05)
    print(f"60,000 zeros: [{lo:.3g}, {hi:.3g}]")
    assert -0.0002 < lo < 0 < hi < 0.0002


@pytest.mark.heavy(2)
def test_the_ends_agree_with_the_grid_to_a_cell_and_contain_every_surviving_mean():
    rng, cell = np.random.default_rng(11), 2 / 1000
    for _ in range(60):
        x = random_samples(rng, int(rng.integers(5, 400)))
        lo, hi = confidence_sequence(x, -1.0, 1.0, 0.05)
        assert -1 <= lo < hi <= 1
        old, alive = grid_sequence(x, -1.0, 1.0)
        if old is not None:  # the new ends lie inside the old padded ones, by at most a cell
            assert old[0] - 1e-9 <= lo <= old[0] + cell + 1e-9
            assert old[1] - cell - 1e-9 <= hi <= old[1] + 1e-9
        # every grid mean whose capital never reached 1/alpha (brute force over all t) is inside
        assert alive.size == 0 or (lo <= alive.min() and alive.max() <= hi)


def test_the_ends_are_tight_to_the_tolerance():
    # Just inside each end the capital has not reached 1/alpha; a few tolerances outside it has.
    rng = np.random.default_rng(12)
    for _ in range(10):
        x = random_samples(rng, 2_000)
        lo, hi = confidence_sequence(x, -1.0, 1.0, 0.05)
        u, inner, outer = (x + 1) / 2, np.array([(lo + 1) / 2, (hi + 1) / 2]), 4 * 2.0**-32
        capital = hedged_log_capital(u, np.array([inner[0] + outer, inner[1] - outer]), 0.05).max(axis=0)
        assert (capital < np.log(20)).all() or lo == -1 or hi == 1
        capital = hedged_log_capital(u, np.array([inner[0] - outer, inner[1] + outer]), 0.05).max(axis=0)
        beyond = inner + np.array([-outer, outer])
        assert ((capital >= np.log(20)) | (beyond <= 0) | (beyond >= 1)).all()


def test_memory_is_linear_in_n_and_the_time_modest():
    # The grid held n x 1,000 float64 (800 MB at n = 100,000); the bisection needs a few arrays of n.
    x = iat_scores(np.random.default_rng(13), 0.1, 100_000)
    tracemalloc.start()
    started = time.perf_counter()
    lo, hi = confidence_sequence(x, -1.0, 1.0, 0.05)
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"n = 100,000: [{lo:.5f}, {hi:.5f}] in {seconds:.2f} s, peak {peak / 1e6:.1f} MB")
    assert lo < 0.1 < hi
    assert peak < 20 * x.nbytes  # 16 MB; the grid needed 1,000 x
    assert seconds < 5  # about 0.5 s alone; generous for a shared machine


# --- the plugin's sequential procedure on net harm at the release size --------------------------------------


class StreamSession(FairnessSession):
    """The plugin's own check procedure (sizing, futility, rounds, gate) with the measure's runs replaced by
    prefixes of one pre-drawn stream: the real measures are prefix-stable, so rounds extend one sample.
    Each result carries the judge's mean rating of a harmful pair as a screen measures it for the judge the plan
    assumes (``NetHarmParams.expected_attenuation``), so the gate is corrected for it as net harm's is."""

    def __init__(self, stream: np.ndarray) -> None:
        super().__init__(Settings(model="synthetic:harm", profile="release", cache_mode=CacheMode.OFF, sequential=True))
        self.stream = stream

    def run_params(self, measure, params, progress=None, seed=None, samples_per_item=1):
        x = self.stream[: params.sample_size]
        assert x.size == params.sample_size, "stream too short"
        planned = params.expected_attenuation(self.family.gate_confidence)
        raw = measure.params.summarize(x, RunContext(runner=None, seed=0, confidence=planned.confidence))
        summary = deattenuated_summary(raw, planned, measure.params.BOUNDS, self.family.gate_confidence)
        return MeasureResult(
            measure.name, params.subject, summary, 0, [], "sim", "sim", {}, {}, samples=list(x), attenuation=planned
        )

    def rounds_of(self, check, first, size, progress, seed=None):
        rounds = super().rounds_of(check, first, size, progress, seed=seed)
        return StreamRounds(**{f.name: getattr(rounds, f.name) for f in fields(rounds)}, session=self)


@dataclass(frozen=True)
class StreamRounds(CheckRounds):
    """A check's rounds whose later runs, too, are prefixes of the session's stream."""

    session: StreamSession | None = None

    def run(self, size):
        return self.session.run_params(self.check.measure, self.check.params.with_samples(size))


@cache
def net_harm_check():
    return next(c for c in suite.load("gender").checks if c.id == "net_harm")


def harm_stream(seed: int, truth: float, n: int) -> np.ndarray:
    """Net harm per prompt as the synthetic harm double scores it: 0.425 x Binomial(2, B), mean 0.85 B, where
    B = ``truth`` is the share of twisted answers (its judge rates a harmful pair 0.85, the plan's assumption)."""
    return 0.425 * np.random.default_rng(seed).binomial(2, truth, n)


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    ci = sps.binomtest(k, n).proportion_ci(0.95, method="exact")
    return ci.low, ci.high


@pytest.fixture
def no_bootstrap(monkeypatch):
    # The bootstrap interval is reported, never gated on; at 23,092 scores it would dominate the run time.
    monkeypatch.setattr(intervals, "bootstrap_interval", lambda *args, **kwargs: (np.nan, np.nan))


@pytest.mark.heavy(4)
def test_net_harm_half_the_threshold_passes_under_sequential_at_release_size(no_bootstrap):
    check, reps = net_harm_check(), 20
    budget = 4 * check.sample_size("release")
    assert check.threshold.max == 0.001
    outcomes, sizes = [], []
    for seed in range(reps):
        run = StreamSession(harm_stream(seed, 0.0005, budget)).run_check(check)
        outcomes.append(run.outcome)
        sizes.append(run.result.sequential.final_size)
    passed = outcomes.count(Outcome.PASS)
    low, high = clopper_pearson(passed, reps)
    print(f"truth 0.0005: PASS {passed}/{reps} (95% CP [{low:.3f}, {high:.3f}]), mean final n {np.mean(sizes):.0f}")
    assert low >= 0.8


def capital_ever_reaches(streams: np.ndarray, mean: float, alpha: float) -> np.ndarray:
    """Per row of [0, 1] scores, whether the hedged capital at ``mean`` reached 1/alpha at any t (brute force,
    in plain products: an overflow to inf is a rejection, an underflow to 0 never one)."""
    t = np.arange(1, streams.shape[1] + 1)
    mu_hat = (0.5 + np.cumsum(streams, axis=1)) / (t + 1)
    sigma2 = (0.25 + np.cumsum((streams - mu_hat) ** 2, axis=1)) / (t + 1)
    sigma2_before = np.concatenate([np.full((streams.shape[0], 1), 0.25), sigma2[:, :-1]], axis=1)
    bet = np.sqrt(2 * np.log(2 / alpha) / (sigma2_before * t * np.log1p(t)))
    with np.errstate(over="ignore"):
        up = np.cumprod(1 + np.minimum(bet, MAX_BET / mean) * (streams - mean), axis=1)
        down = np.cumprod(1 - np.minimum(bet, MAX_BET / (1 - mean)) * (streams - mean), axis=1)
        return ((up + down) / 2).max(axis=1) >= 1 / alpha


@pytest.mark.heavy(7)
def test_net_harm_at_the_threshold_wrong_pass_is_rare(no_bootstrap):
    # The gate passes only if its raw interval ends below the raw mean (0.85 x the truth: it must end below the
    # threshold times the rating's lower bound), and the interval holds every mean whose capital has not reached
    # 1/alpha (tests above): so the chance that the capital at the raw mean reaches 1/alpha within the whole
    # budget bounds the wrong-PASS rate of *any* stopping rule, the plugin's included.
    check, reps, alpha = net_harm_check(), 200, 0.05
    budget = 4 * check.sample_size("release")
    for truth in (0.001, 0.0011):
        reached = sum(
            int(
                capital_ever_reaches(
                    np.stack([(harm_stream(s, truth, budget) + 1) / 2 for s in chunk]), (0.85 * truth + 1) / 2, alpha
                ).sum()
            )
            for chunk in np.array_split(np.arange(reps), 10)
        )
        low, high = clopper_pearson(reached, reps)
        print(
            f"truth {truth}: capital reached 1/alpha within {budget} in {reached}/{reps} "
            f"(95% CP [{low:.3f}, {high:.3f}])"
        )
        assert high <= alpha
    # and the procedure itself, end to end, at the threshold
    runs = [StreamSession(harm_stream(seed, 0.001, budget)).run_check(check) for seed in range(3)]
    assert not any(run.outcome is Outcome.PASS for run in runs)


def _looks(stream: np.ndarray, calls_per_sample: int = 1):
    """``look`` over prefixes of one stream of [0, 1] scores: each round's result and its always-valid interval,
    each round making a call per new sample and answering the earlier ones from the cache."""
    seen: list[int] = []

    def look(n: int) -> tuple[MeasureResult, tuple[float, float]]:
        x = list(stream[:n])
        before = seen[-1] if seen else 0
        seen.append(n)
        new = (n - before) * calls_per_sample  # the cache answers the samples of the rounds before
        calls = CallStats(calls=new, cache_hits=before, prompt_tokens=3 * new)
        summary = intervals.summarize(x, interval="bounded", bounds=(0.0, 1.0))
        result = MeasureResult("m", "s", summary, 0, [], "sim", "sim", {}, {}, calls=calls, samples=x)
        return result, confidence_sequence(x, 0.0, 1.0, 0.05)

    return look, seen


@dataclass
class Rounds:
    """The loop's view of a check, from plain functions: ``look`` at a size, and why to stop growing."""

    look: Callable[[int], tuple[MeasureResult, tuple[float, float]]]
    futile: Callable[[int, MeasureResult], str] = lambda n, r: ""
    unserved: Callable[[int, MeasureResult], str | None] = lambda n, r: None
    over_budget: Callable[[int, int], str] = lambda n, grown: ""

    def begin_round(self, round_: int, size: int) -> None:
        pass


def test_run_sequential_grows_until_the_interval_decides_and_records_its_rounds_and_calls():
    stream = np.random.default_rng(0).binomial(1, 0.1, 2000).astype(float)
    look, seen = _looks(stream)
    first, _ = look(20)
    seen.clear()
    plan = SequentialPlan(initial=20, step=20, budget=2000, growth=1.5)
    result, outcome = run_sequential(plan, Threshold(max=0.3), first, Rounds(look))
    assert outcome is Outcome.PASS and result.ci[1] <= 0.3
    assert result.sequential.rounds == seen and seen[0] == 20 and 20 < seen[-1] < 2000
    assert result.sequential.budget == 2000 and result.sequential.stopped == ""
    # Calls: the first round's, plus each later round's new samples; cache hits net of the re-asked ones.
    assert result.calls.calls == seen[-1]
    assert result.calls.cache_hits == 0  # every re-asked sample was one this check paid for in an earlier round
    assert result.calls.prompt_tokens == 3 * seen[-1]  # the tokens of every round's own calls
    assert result.n == seen[-1] and result.summary.ci_t == result.ci


def test_rounds_calls_with_the_cache_off_count_no_negative_hits():
    """Without a cache each later round pays for the earlier samples again: its calls are all real, and no
    hit is taken away for them (the run's totals once showed thousands of negative cache hits)."""
    rounds = [CallStats(calls=20, prompt_tokens=20), CallStats(calls=40, prompt_tokens=40)]
    calls = rounds_calls(rounds)
    assert calls.calls == 60 and calls.cache_hits == 0 and calls.prompt_tokens == 60  # all paid for, twice


def test_run_sequential_stops_when_futile_or_unserved_and_says_why():
    stream = np.full(400, 0.3)  # exactly at the threshold: never decides
    look, _ = _looks(stream)
    first, _ = look(20)
    plan = SequentialPlan(initial=20, step=20, budget=400)
    futile = lambda n, r: "hopeless" if n >= 40 else ""  # noqa: E731
    result, outcome = run_sequential(plan, Threshold(max=0.3), first, Rounds(look, futile=futile))
    assert outcome is Outcome.INCONCLUSIVE
    assert result.sequential.rounds == [20, 40] and result.sequential.stopped == "hopeless"
    served = lambda n, r: "cannot serve" if n >= 60 else None  # noqa: E731
    result, outcome = run_sequential(plan, Threshold(max=0.3), first, Rounds(look, unserved=served))
    assert outcome is Outcome.CANNOT_SERVE and result.unserved == "cannot serve"
    assert result.sequential.rounds == [20, 40, 60]


def test_the_session_grows_a_check_with_the_tested_loop(monkeypatch):
    import pytest_fairness.run.growth as growth_module

    called = []

    def spy(*args, **kwargs):
        called.append(args[0])
        return run_sequential(*args, **kwargs)

    monkeypatch.setattr(growth_module, "run_sequential", spy)
    run = run_sequentially(bias=0.0, samples=20, budget=200, threshold=0.3)
    assert len(called) == 1 and called[0].initial == 20 and run.result.sequential.rounds[0] == 20
