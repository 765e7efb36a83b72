"""The paired comparison with a baseline: matching items, the non-inferiority verdict, and what it reports."""

import numpy as np
import pytest
from paths import REPO

from pytest_fairness.config import suite
from pytest_fairness.measures import MEASURES
from pytest_fairness.stats.confidence_sequence import confidence_sequence_bound, sequence_p_value
from pytest_fairness.stats.gate import Outcome
from pytest_fairness.stats.intervals import bounded_mean_intervals, bounded_mean_p_values
from pytest_fairness.stats.paired.allocation import fewest_for_identical
from pytest_fairness.stats.paired.matching import ItemScores, PairingError, pair_items, within_variance
from pytest_fairness.stats.paired.noninferiority import PairedGate, baseline_level, compare_paired, decide_differences
from pytest_fairness.testing.paired_trials import fixed_outcomes

IAT = (-1.0, 1.0)


def items(scores, clusters=None, prefix="i"):
    clusters = [f"c{i}" for i in range(len(scores))] if clusters is None else [str(c) for c in clusters]
    return [
        ItemScores(f"{prefix}{i}", c, tuple(np.atleast_1d(s).tolist()))
        for i, (s, c) in enumerate(zip(scores, clusters, strict=True))
    ]


def test_items_are_matched_by_key_and_averaged_within_clusters_with_the_baselines_weights():
    old = [
        ItemScores("a", "p1", (0.0,), weight=3.0),
        ItemScores("b", "p1", (1.0,), weight=1.0),
        ItemScores("c", "p2", (0.5, 0.7)),
    ]
    new = [ItemScores("c", "p2", (0.2,)), ItemScores("b", "p1", (0.0,), 5.0), ItemScores("a", "p1", (1.0,))]
    pairing = pair_items(old, new)
    assert pairing.clusters == ("p1", "p2")  # the baseline's order: the order a run grows in
    assert pairing.old == pytest.approx((0.25, 0.6)) and pairing.new == pytest.approx((0.75, 0.2))
    assert pairing.differences == pytest.approx([0.5, -0.4])
    assert pairing.item_differences == pytest.approx((1.0, -1.0, -0.4))
    assert pairing.samples_old == pytest.approx(4 / 3) and pairing.within_old == pytest.approx(0.02)
    assert pairing.within_new is None


def test_unmatched_items_are_listed_never_paired():
    pairing = pair_items(items([0.1, 0.2, 0.3]), items([0.1, 0.9], prefix="i")[:1] + items([0.5], prefix="x"))
    assert pairing.items == 1 and pairing.unmatched_old == ("i1", "i2") and pairing.unmatched_new == ("x0",)
    assert pairing.matched_share() == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (items([0.1, 0.2], ["p", "q"]), items([0.1, 0.2], ["p", "r"]), "is in cluster 'q' in the baseline but 'r'"),
        (items([0.1]) + items([0.2]), items([0.1]), "the baseline has item 'i0' twice"),
        (items([0.1]), items([0.1], prefix="x"), "shares no item with its baseline"),
    ],
)
def test_a_mispairing_is_refused_with_a_message_that_names_it(old, new, message):
    with pytest.raises(PairingError, match=message):
        pair_items(old, new)


def test_an_item_needs_a_finite_score_and_a_positive_weight():
    with pytest.raises(PairingError, match="needs at least one finite score"):
        ItemScores("a", "p", ())
    with pytest.raises(PairingError, match="needs a positive weight"):
        ItemScores("a", "p", (0.1,), weight=0.0)


def test_within_variance_pools_the_spread_of_repeated_samples():
    assert within_variance(items([[0.0, 1.0], [2.0, 2.0, 5.0], [7.0]])) == pytest.approx((0.5 + 6.0) / 3)
    assert within_variance(items([0.1, 0.2])) is None


def test_an_unchanged_release_with_the_cache_restored_passes_once_the_baseline_has_enough_items():
    gate = PairedGate(0.1, side=1)
    same = [0.3, -0.2, 0.5] * 54
    verdict = compare_paired(pair_items(items(same), items(same)), IAT, gate)
    assert verdict.outcome is Outcome.PASS and verdict.interval[1] < 0.1 and verdict.pass_alpha == 0.0025
    # the betting floor: 150 identical pairs on [-1, 1] cannot yet exclude an unseen excursion of 0.1 at 0.0025
    short = compare_paired(pair_items(items(same[:150]), items(same[:150])), IAT, gate)
    assert short.outcome is Outcome.INCONCLUSIVE and short.interval[1] > 0.1
    # read exactly (nothing re-sampled on either side), PASS is taken at min(alpha, γ): 80 clusters do
    exact = compare_paired(pair_items(items(same[:81]), items(same[:81])), IAT, PairedGate(0.1, 1, exact=True))
    assert exact.outcome is Outcome.PASS and exact.pass_alpha == 0.05


def test_a_planted_regression_fails_with_both_intervals_and_p_values_saying_so():
    rng = np.random.default_rng(0)
    old = np.clip(rng.normal(0.2, 0.3, 200), -1, 1)
    new = np.clip(old + 0.6 + rng.normal(0, 0.1, 200), -1, 1)
    verdict = compare_paired(pair_items(items(old), items(new)), IAT, PairedGate(0.1, side=1))
    assert verdict.outcome is Outcome.FAIL and verdict.fail_interval[0] > 0.1
    assert verdict.p_beyond <= baseline_level() and verdict.p_worse > 0.5
    assert (verdict.items, verdict.clusters) == (200, 200) and verdict.method == "betting interval"


@pytest.mark.parametrize("sequential", [False, True])
def test_p_values_agree_with_the_bounds_that_decide(sequential):
    rng = np.random.default_rng(1)
    gate = PairedGate(0.1, side=1, sequential=sequential)
    for shift in (-0.05, 0.0, 0.04, 0.1, 0.25, 0.4):
        old = np.clip(rng.normal(0.0, 0.3, 150), -1, 1)
        new = np.clip(old + shift + rng.normal(0, 0.2, 150), -1, 1)
        verdict = compare_paired(pair_items(items(old), items(new)), IAT, gate)
        assert (verdict.p_worse <= gate.passing_level) == (verdict.outcome is Outcome.PASS)
        assert (verdict.p_beyond <= gate.failing_level) == (verdict.outcome is Outcome.FAIL)


def test_a_fall_is_worse_for_a_minimum_and_either_way_for_a_range():
    d = np.full(200, -0.3)
    assert decide_differences(d, IAT, PairedGate(0.1, side=1))[0] is Outcome.PASS  # an improvement
    assert decide_differences(d, IAT, PairedGate(0.1, side=-1))[0] is Outcome.FAIL
    assert decide_differences(d, IAT, PairedGate(0.1, side=0))[0] is Outcome.FAIL
    assert decide_differences(np.zeros(200), IAT, PairedGate(0.1, side=0))[0] is Outcome.PASS
    noisy = np.clip(np.random.default_rng(7).normal(0.1, 0.3, 100), -1, 1)
    assert decide_differences(noisy, IAT, PairedGate(0.1, side=0))[0] is Outcome.INCONCLUSIVE


def test_a_gate_needs_a_margin_a_side_and_sensible_levels():
    with pytest.raises(ValueError, match="needs a margin above 0"):
        PairedGate(0.0, side=1)
    with pytest.raises(ValueError, match="side must be"):
        PairedGate(0.1, side=2)
    with pytest.raises(ValueError, match="levels must lie in"):
        PairedGate(0.1, side=1, fail_alpha=0.7)


def test_rho_effective_n_and_the_unpaired_equivalent_follow_the_item_effects():
    rng = np.random.default_rng(2)
    effect = rng.normal(0, 0.3, 400)  # between-item SD 0.3, within 0.3: rho 0.5
    old, new = (np.clip(effect + rng.normal(0, 0.3, 400), -1, 1) for _ in range(2))
    verdict = compare_paired(pair_items(items(old), items(new)), IAT, PairedGate(0.1, side=1))
    assert verdict.rho == pytest.approx(0.5, abs=0.08)
    assert verdict.unpaired_n == pytest.approx(400 / (1 - verdict.rho), rel=0.05)
    assert verdict.effective_n == 400 and verdict.clusters == verdict.items == 400
    # four items per prompt that share the prompt's effect on the difference: worth about one each
    prompt = np.repeat(rng.normal(0, 0.3, 100), 4)
    clustered = compare_paired(
        pair_items(items(np.zeros(400), np.repeat(np.arange(100), 4)), items(prompt, np.repeat(np.arange(100), 4))),
        IAT,
        PairedGate(0.1, side=1),
    )
    assert clustered.clusters == 100 and clustered.items == 400 and clustered.effective_n == 100
    assert clustered.rho is None  # the baseline's clusters are constant: no correlation to report


@pytest.mark.heavy(2)
def test_the_vectorised_trials_decide_as_the_paired_comparison():
    rng = np.random.default_rng(3)
    d = np.clip(rng.normal(rng.uniform(-0.1, 0.3, (60, 1)), 0.3, (60, 120)), -2, 2)
    for gate in (PairedGate(0.1, 1), PairedGate(0.1, -1), PairedGate(0.1, 0), PairedGate(0.1, 1, fail_alpha=0.05)):
        passes, fails = fixed_outcomes(d, IAT, gate)
        outcomes = [decide_differences(row, IAT, gate)[0] for row in d]
        assert [o is Outcome.PASS for o in outcomes] == passes.tolist()
        assert [o is Outcome.FAIL for o in outcomes] == fails.tolist()
        assert passes.any() or fails.any()


def test_fixed_n_p_values_sit_exactly_at_the_interval_ends():
    rng = np.random.default_rng(4)
    x = np.clip(rng.normal(0.1, 0.4, (5, 80)), -1, 1)
    lo, hi = bounded_mean_intervals(x, -1, 1, 0.9)
    for row, (a, b) in enumerate(zip(lo, hi, strict=True)):
        below, above = (bounded_mean_p_values(x[row : row + 1], -1, 1, m, 0.9, True)[0] for m in (a - 1e-7, a + 1e-7))
        assert below <= 0.05 < above
        inside, beyond = (
            bounded_mean_p_values(x[row : row + 1], -1, 1, m, 0.9, False)[0] for m in (b - 1e-7, b + 1e-7)
        )
        assert beyond <= 0.05 < inside
    with pytest.raises(ValueError, match="strictly inside"):
        bounded_mean_p_values(x, -1, 1, 1.0)


@pytest.mark.heavy(4)
def test_the_one_sided_sequence_bound_holds_however_often_it_is_looked_at():
    rng = np.random.default_rng(5)
    alpha, misses = 0.1, 0
    for _ in range(200):
        x = np.clip(rng.normal(0.0, 0.5, 300), -1, 1)
        truth = float(np.mean(np.clip(rng.normal(0.0, 0.5, 200_000), -1, 1)))
        misses += any(confidence_sequence_bound(x[:n], -1, 1, alpha, upper=True) < truth for n in range(10, 301, 10))
    assert misses <= alpha * 200
    x = rng.uniform(-0.5, 0.7, 100)
    bound = confidence_sequence_bound(x, -1, 1, 0.05, upper=False)
    assert sequence_p_value(x, -1, 1, bound - 1e-6, 0.05) <= 0.05 < sequence_p_value(x, -1, 1, bound + 1e-6, 0.05)
    assert confidence_sequence_bound([], -1, 1, 0.05, upper=True) == 1


def test_every_measure_that_pairs_means_names_a_margin_inside_its_scale():
    margins = {}
    for name, measure in MEASURES.items():
        params = measure.params
        if params.PR_MARGIN is None and name != "pcf":
            continue
        low, high = params.BOUNDS
        values = [params.PR_MARGINS[r] for r in params.PR_MARGINS] if name == "pcf" else [params.PR_MARGIN]
        assert all(0 < v < (high - low) / 4 for v in values), name
        margins[name] = values
    assert set(margins) == {"implicit_bias", "decision_bias", "pcf", "net_harm", "quality_disparity"}
    pcf = MEASURES["pcf"].params
    assert pcf(attribute="gender", risk="caprice").pr_margin() == 20.0
    assert MEASURES["bias_axes"].params.PR_MARGIN is None


def test_every_built_in_checks_margin_can_pass_identical_answers_within_the_items_its_inputs_hold():
    """A measure whose inputs hold few distinct samples (PCF: the occupation list) needs a margin that identical
    answers can pass from that many; else no pull request could ever pass it."""
    limited = 0
    for path in sorted((REPO / "suites").glob("*.yaml")):
        for check in suite.load(str(path)).checks:
            params, held = check.params, check.params.available_samples()
            if held is None or params.BOUNDS is None or not (margin := params.pr_margin()):
                continue
            limited += 1
            width = params.BOUNDS[1] - params.BOUNDS[0]
            assert fewest_for_identical(width, margin) <= held, (path.name, check.id, margin, held)
    assert limited >= 2  # the PCF checks
