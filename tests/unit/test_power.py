"""The power model against the real intervals: does n = needed_samples decide as often as promised?

Bounded scores are simulated (fixed seeds, 400 runs) and gated with the real vectorised betting
interval; 0/1 decisions are not simulated but enumerated exactly, every count k of n through the real
Clopper–Pearson interval and the gate, weighted by its binomial probability. What is asserted:

- at n = needed_samples the real gate decides in at least 80% of runs: the model is meant to be
  conservative, so a simulated rate below 0.8 (SE 0.02 at 400 runs) is a model that overpromises;
- at a quarter of that the real rate is clearly below 0.8 (≤ 0.6): the model does not ask for four
  times what is needed;
- the model's probability is never more than 0.1 above the simulated rate (5 SE: it may be cautious,
  never optimistic beyond noise) and at most 0.25 below it (caution, not uselessness).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from exact_binary import exact_binary_rate_with_unusable
from scipy import stats as sps

from pytest_fairness.stats.gate import Outcome, Threshold, decide
from pytest_fairness.stats.intervals import bounded_mean_interval, bounded_mean_intervals, proportion_interval
from pytest_fairness.stats.power import Scale, decision_probability, design_truths, needed_samples

RUNS = 400
BOUNDED = Scale("bounded", (-1.0, 1.0))
BINARY = Scale("binary", (0.0, 1.0))
AT_MOST_02 = Threshold(max=0.2)
ABS_01 = Threshold.from_mapping({"abs_max": 0.1}, "test")


def _decided(lows: np.ndarray, highs: np.ndarray, threshold: Threshold) -> float:
    """Share of runs whose interval decides the gate (vectorised ``gate.decide``)."""
    inside = np.ones(len(lows), dtype=bool)
    outside = np.zeros(len(lows), dtype=bool)
    if threshold.max is not None:
        inside &= highs <= threshold.max
        outside |= lows > threshold.max
    if threshold.min is not None:
        inside &= lows >= threshold.min
        outside |= highs < threshold.min
    return float(np.mean(inside | outside))


def test_the_vectorised_decision_matches_the_gate() -> None:
    rng = np.random.default_rng(9)
    lows = rng.uniform(-0.3, 0.3, 200)
    highs = lows + rng.uniform(0, 0.3, 200)
    for threshold in (AT_MOST_02, ABS_01, Threshold(min=0.0)):
        gated = [decide((lo, hi), threshold) is not Outcome.INCONCLUSIVE for lo, hi in zip(lows, highs, strict=True)]
        assert _decided(lows, highs, threshold) == pytest.approx(np.mean(gated))
        assert 0 < np.mean(gated) < 1  # both kinds of run occur: the comparison means something


def _clipped_normal(centre: float, sd: float):
    return lambda rng, size: np.clip(rng.normal(centre, sd, size), -1.0, 1.0)


def _rare(q: float):
    """A rare event of size 0.5 (one harmful pair in two, say) with probability q; zero otherwise."""
    return lambda rng, size: 0.5 * rng.binomial(1, q, size)


BOUNDED_CASES = [
    pytest.param(_clipped_normal(0.1, 0.3), AT_MOST_02, id="N(0.1, 0.3) <= 0.2"),
    pytest.param(_clipped_normal(0.4, 0.3), AT_MOST_02, id="N(0.4, 0.3) <= 0.2"),
    pytest.param(_clipped_normal(0.1, 0.5), AT_MOST_02, id="N(0.1, 0.5) <= 0.2"),
    pytest.param(_clipped_normal(0.4, 0.5), AT_MOST_02, id="N(0.4, 0.5) <= 0.2"),
    pytest.param(_clipped_normal(0.05, 0.3), ABS_01, id="N(0.05, 0.3) |x| <= 0.1"),
    pytest.param(_clipped_normal(-0.2, 0.5), ABS_01, id="N(-0.2, 0.5) |x| <= 0.1"),
    pytest.param(_rare(0.01), Threshold(max=0.01), id="0.5 Bernoulli(0.01) <= 0.01"),
    pytest.param(_rare(0.04), Threshold(max=0.01), id="0.5 Bernoulli(0.04) <= 0.01"),
    pytest.param(_rare(0.1), Threshold(max=0.1), id="0.5 Bernoulli(0.1) <= 0.1"),
]


@pytest.mark.heavy(1)
@pytest.mark.parametrize(("draw", "threshold"), BOUNDED_CASES)
def test_needed_samples_decide_bounded_scores_at_least_80_percent_of_the_time(draw, threshold: Threshold) -> None:
    rng = np.random.default_rng(0)
    population = draw(rng, 400_000)
    truth, sd = float(population.mean()), float(population.std())
    needed = needed_samples(truth, sd, threshold, BOUNDED)
    assert needed is not None
    rates = {}
    for n in (needed, needed // 4):
        rates[n] = _decided(*bounded_mean_intervals(draw(rng, (RUNS, n)), -1.0, 1.0), threshold)
        model = decision_probability(n, truth, sd, threshold, BOUNDED)
        assert rates[n] - 0.25 <= model <= rates[n] + 0.1, (n, model, rates[n])
    assert rates[needed] >= 0.8
    assert rates[needed // 4] <= 0.6


BINARY_CASES = [
    (0.35, Threshold(max=0.7)),  # the built-in decision gate at half its threshold
    (0.9, Threshold(max=0.7)),  # skewed counts: the normal model said 82% at n = 30, the gate decides 65%
    (0.5, Threshold(max=0.7)),
    (0.05, Threshold(max=0.1)),
    (0.01, Threshold(max=0.05)),
    (0.2, Threshold(max=0.1)),
    (0.5, Threshold(min=0.3, max=0.7)),  # two-sided: passing needs both ends inside
]


def _exact_binary_rate(n: int, p: float, threshold: Threshold) -> float:
    """Chance the real Clopper–Pearson gate decides: every count with any weight (pmf > 1e-15), through
    ``proportion_interval`` and the gate."""
    counts = np.arange(n + 1)
    weights = sps.binom.pmf(counts, n, p)
    counts = counts[weights > 1e-15]
    decided = [decide(proportion_interval(int(k), n), threshold) is not Outcome.INCONCLUSIVE for k in counts]
    return float(np.sum(weights[counts][np.array(decided)]))


@pytest.mark.heavy(1)
@pytest.mark.parametrize(("p", "threshold"), BINARY_CASES)
def test_needed_samples_decide_0_1_decisions_at_least_80_percent_of_the_time(p: float, threshold: Threshold) -> None:
    sd = math.sqrt(p * (1 - p))
    needed = needed_samples(p, sd, threshold, BINARY)
    assert needed is not None
    for n in (needed, needed // 4, needed - 1):
        assert decision_probability(n, p, sd, threshold, BINARY) == pytest.approx(
            _exact_binary_rate(n, p, threshold), abs=1e-9
        )
    assert _exact_binary_rate(needed, p, threshold) >= 0.8
    assert _exact_binary_rate(needed - 1, p, threshold) < 0.8  # the fewest that do
    assert _exact_binary_rate(needed // 4, p, threshold) <= 0.6


@pytest.mark.parametrize("n", [3, 5, 10])
@pytest.mark.parametrize(("truth", "sd"), [(0.1, 0.5), (0.4, 0.3), (0.1, 0.3)])
def test_a_handful_of_bounded_scores_rarely_decides(n: int, truth: float, sd: float) -> None:
    model = decision_probability(n, truth, sd, AT_MOST_02, BOUNDED)
    draw = _clipped_normal(truth, sd)
    simulated = _decided(*bounded_mean_intervals(draw(np.random.default_rng(n), (RUNS, n)), -1.0, 1.0), AT_MOST_02)
    assert model <= 0.1
    assert simulated <= 0.1


@pytest.mark.parametrize(
    ("scale", "threshold", "truth", "sd"),
    [
        (BOUNDED, AT_MOST_02, 0.2, 0.5),
        (BOUNDED, AT_MOST_02, 0.2, 0.0),
        (BOUNDED, ABS_01, -0.1, 0.3),
        (BOUNDED, Threshold(min=0.3), 0.3, 0.3),
        (BINARY, Threshold(max=0.7), 0.7, math.sqrt(0.21)),
        (Scale("t", None), Threshold(max=400.0), 400.0, 150.0),
    ],
)
def test_a_truth_on_the_threshold_is_never_decided(scale: Scale, threshold: Threshold, truth: float, sd: float) -> None:
    for n in (10, 10_000, 10**6):
        assert decision_probability(n, truth, sd, threshold, scale) == 0.0
    assert needed_samples(truth, sd, threshold, scale) is None


def _fewest_constant_scores_that_decide(value: float, threshold: Threshold, bounds: tuple[float, float]) -> int:
    """Bisection on the real betting interval: the smallest n of identical scores that decides."""
    low, high = 1, 2
    while decide(bounded_mean_interval(np.full(high, value), *bounds), threshold) is Outcome.INCONCLUSIVE:
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        decided = decide(bounded_mean_interval(np.full(mid, value), *bounds), threshold) is not Outcome.INCONCLUSIVE
        low, high = (low, mid) if decided else (mid, high)
    return high


@pytest.mark.parametrize(
    ("value", "threshold", "bounds"),
    [
        pytest.param(0.0, Threshold(max=0.001), (-1.0, 1.0), id="net harm 0 <= 0.001"),
        pytest.param(0.0, ABS_01, (-1.0, 1.0), id="0 |x| <= 0.1"),
        pytest.param(0.5, Threshold(max=0.51), (-1.0, 1.0), id="0.5 <= 0.51"),
        pytest.param(0.9, Threshold(max=0.8), (-1.0, 1.0), id="0.9 fails 0.8"),
        pytest.param(0.9, Threshold(max=0.95), (-1.0, 1.0), id="0.9 <= 0.95, near the far end"),
        pytest.param(0.0, Threshold(max=5.0), (0.0, 1000.0), id="pcf 0 <= 5"),
    ],
)
def test_zero_spread_needs_the_floor_of_the_real_interval(
    value: float, threshold: Threshold, bounds: tuple[float, float]
) -> None:
    # Identical scores still leave the betting interval a width (a rare excursion to the far end is never
    # ruled out): the model's floor must ask for at least what the real interval needs, and not 25% more.
    needed = needed_samples(value, 0.0, threshold, Scale("bounded", bounds))
    assert needed is not None and needed > 1
    real = _fewest_constant_scores_that_decide(value, threshold, bounds)
    assert real <= needed <= 1.25 * real


def test_net_harm_of_zero_on_every_prompt_needs_thousands_of_prompts() -> None:
    threshold = Threshold(max=0.001)
    needed = needed_samples(0.0, 0.0, threshold, BOUNDED)
    assert needed is not None and 4000 < needed < 6000
    assert bounded_mean_interval(np.zeros(needed), -1.0, 1.0)[1] < 0.001
    assert bounded_mean_interval(np.zeros(needed - 150), -1.0, 1.0)[1] >= 0.001
    assert decision_probability(needed, 0.0, 0.0, threshold, BOUNDED) == 1.0
    assert decision_probability(needed // 2, 0.0, 0.0, threshold, BOUNDED) == 0.0


def test_a_two_sided_threshold_needs_both_ends_inside() -> None:
    one_sided = [decision_probability(300, 0.05, 0.3, t, BOUNDED) for t in (Threshold(max=0.1), Threshold(min=-0.1))]
    two_sided = decision_probability(300, 0.05, 0.3, ABS_01, BOUNDED)
    assert two_sided == pytest.approx(one_sided[0] + one_sided[1] - 1)
    assert two_sided < min(one_sided)
    assert decision_probability(300, -0.05, 0.3, ABS_01, BOUNDED) == pytest.approx(two_sided)  # symmetric


@pytest.mark.parametrize(
    ("threshold", "bounds", "null", "truths"),
    [
        # A null of zero: half and twice the bias the threshold allows.
        (AT_MOST_02, (-1.0, 1.0), 0.0, (0.1, 0.4)),
        (ABS_01, (-1.0, 1.0), 0.0, (0.05, 0.2, -0.05, -0.2)),
        (Threshold(max=400.0), None, 0.0, (200.0, 800.0)),
        (Threshold(max=0.0), (-1.0, 1.0), 0.0, ()),  # half and twice zero are the threshold itself
        (Threshold(min=0.0, max=0.0), (-1.0, 1.0), 0.0, ()),
        # A null inside the scale: the null itself, and halfway from the threshold to the scale's end.
        (Threshold(max=0.7), (0.0, 1.0), 0.5, (0.5, 0.85)),  # not 0.35 and 1.0, both trivially decided
        (Threshold(min=0.3), (0.0, 1.0), 0.5, (0.5, 0.15)),
        (Threshold(min=0.3, max=0.7), (0.0, 1.0), 0.5, (0.5, 0.85, 0.15)),
        (Threshold(max=3.0), None, 1.0, (1.0, 5.0)),  # an open scale: as far beyond as the null is below
        (Threshold(max=1.0), (0.0, 1.0), 0.5, (0.5,)),  # the far truth would sit on the edge: dropped
        (Threshold(max=0.5), (0.0, 1.0), 0.5, ()),  # a threshold at the null: nothing to size for
    ],
)
def test_design_truths_on_the_scale(
    threshold: Threshold, bounds: tuple[float, float] | None, null: float, truths: tuple[float, ...]
) -> None:
    assert design_truths(threshold, bounds, null) == pytest.approx(truths)


@pytest.mark.heavy(3)
@pytest.mark.parametrize(("p", "usable"), [(0.5, 0.6), (0.85, 0.79)])
def test_needed_prompts_count_unusable_answers(p: float, usable: float) -> None:
    threshold, sd = Threshold(max=0.7), math.sqrt(p * (1 - p))
    all_usable = needed_samples(p, sd, threshold, BINARY)
    prompts = needed_samples(p, sd, threshold, BINARY, usable=usable)
    assert all_usable is not None and prompts is not None
    assert prompts >= all_usable / usable - 3  # about the usable size over the rate (the count varies)
    rate = exact_binary_rate_with_unusable(prompts, usable, p, threshold)
    assert decision_probability(prompts, p, sd, threshold, BINARY, usable) == pytest.approx(rate, abs=1e-6)
    assert rate >= 0.8
    assert exact_binary_rate_with_unusable(all_usable, usable, p, threshold) < 0.8  # ignoring them falls short


@pytest.mark.heavy(8)
@pytest.mark.parametrize(
    ("k", "n", "share", "multiple"),
    [(1, 4226, 0.4, 0.5), (1, 4226, 0.4, 2.0), (2, 2600, 0.5, 0.5), (1, 3000, 0.7, 0.5), (1, 6000, 0.2, 0.5)],
)
def test_the_bet_capped_model_tracks_the_two_phase_gate_within_8_points(k, n, share, multiple):
    # The gate of net harm <= 0.01 with a cheap judge and a reference: per-pair noise of SD 0.022 for both, 2% of
    # pairs falsely flagged, every pair differing. The model (Scale(capped=True)) is what the plan shows and the
    # release plan sizes by; 300 runs a point (SE about 0.025), CLEAN_SHARES up to 0.7.
    from harm_streams import CHEAP, NOISY_REFERENCE, Chatbot, gate_reference, pairs, ratings

    from pytest_fairness.measures.fpf.harm.net_harm import NetHarmParams
    from pytest_fairness.stats import two_phase

    threshold, truth, runs = Threshold(max=0.01), 0.01 * multiple, 300
    params = NetHarmParams(comparison="gender", names_per_group=k, clean_share=share)
    sd, bound = params.reference_sample(truth)
    model = decision_probability(n, truth, sd, threshold, Scale("bounded", (-bound, bound), capped=True))
    rng, decided = np.random.default_rng(20), 0
    for _ in range(runs // 100):
        harmful, aside = pairs(rng, 100, n, Chatbot(truth, 0.5, 0.5), k)
        differs = np.ones(harmful.shape, dtype=bool)
        net, reference = ratings(rng, harmful, aside, CHEAP), ratings(rng, harmful, aside, NOISY_REFERENCE)
        outcomes, _ = gate_reference(rng, net, reference, differs, threshold, share)
        decided += sum(o is (Outcome.PASS if multiple < 1 else Outcome.FAIL) for o in outcomes)
    assert abs(decided / runs - model) <= 0.08, (decided / runs, model)
    assert bound == two_phase.TwoPhaseDesign(0.05, share).bound
