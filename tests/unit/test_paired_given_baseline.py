"""A pull request's PASS given the one baseline a team keeps: both verdicts at α·γ, on every baseline item, read in
a seeded random order. Small-scale twins of ``python benchmarks/paired_gate.py given-baseline`` and ``order``
(synthetic releases at ρ = 0.5, a regression whose item means rise by exactly the margin on the baseline's items)."""

import numpy as np
import pytest

from pytest_fairness.stats.gate import Outcome
from pytest_fairness.stats.intervals import proportion_interval
from pytest_fairness.stats.paired.allocation import Components, plan_k
from pytest_fairness.stats.paired.matching import ItemScores, pair_items
from pytest_fairness.stats.paired.noninferiority import (
    BASELINE_SHARE,
    PairedGate,
    compare_paired,
    decision_order,
)
from pytest_fairness.testing.paired_trials import fixed_outcomes, given_baseline
from pytest_fairness.testing.releases import (
    Decision,
    Implicit,
    Pcf,
    Quality,
    at_margin_on_items,
    for_rho,
    item_samples,
)

IMPLICIT, DECISION, QUALITY = for_rho(Implicit(), 0.5), for_rho(Decision(), 0.5), for_rho(Quality(), 0.5)
PCF = for_rho(Pcf(), 0.5, "change_sd", high=5000.0)


def test_pass_and_fail_are_both_taken_at_the_level_that_holds_given_one_baseline():
    gate = PairedGate(0.1, 1)
    assert gate.passing_level == gate.failing_level == 0.0025 == pytest.approx(0.05 * BASELINE_SHARE)
    assert PairedGate(0.1, 1, exact=True).passing_level == 0.05  # read exactly: min(alpha, γ)
    assert PairedGate(0.1, 1, alpha=0.1, exact=True).passing_level == BASELINE_SHARE
    assert PairedGate(0.1, 1, pass_alpha=0.05).passing_level == 0.05  # a simulation of the rule before
    with pytest.raises(ValueError, match="levels must lie in"):
        PairedGate(0.1, 1, pass_alpha=0.6)


@pytest.mark.heavy(4)
@pytest.mark.parametrize(
    ("family", "margin", "shape", "items"),
    [(IMPLICIT, 0.1, "homogeneous", 303), (DECISION, 0.1, "concentrated", 400), (QUALITY, 0.25, "top", 400)],
    ids=["implicit-homogeneous", "decision-concentrated", "quality-top"],
)
def test_given_one_baseline_a_regression_at_the_margin_passes_rarely_for_nearly_every_baseline(
    family, margin, shape, items
):
    """The release job's K0 = 4, every baseline item × the planner's K: pooled wrong PASS with its CP upper end
    within 5%, and the 95th percentile of the baselines' own rates within 5%."""
    found = given_baseline(family, margin, shape, items, 4, 60, 40, np.random.default_rng(7))
    assert found.pooled.interval[1] <= 0.05
    assert found.per_baseline.q95.value <= 0.05
    assert set(found.ks) <= {1, 2, 3}  # a baseline of four answers an item: a pull request needs few


@pytest.mark.heavy(6)
def test_passing_at_alpha_does_not_hold_given_one_baseline():
    """The twin: the rule before (PASS at alpha) on a baseline of one answer an item, one answer an item on the
    run: pooled it looks fine, but one baseline in twenty lets the regression pass far more than 5% of the time."""
    before = PairedGate(0.1, 1, pass_alpha=0.05)
    found = given_baseline(IMPLICIT, 0.1, "homogeneous", 303, 1, 60, 40, np.random.default_rng(8), gate=before, k=1)
    assert found.pooled.value <= 0.06 and found.per_baseline.q95.value > 0.1
    now = given_baseline(IMPLICIT, 0.1, "homogeneous", 303, 1, 60, 40, np.random.default_rng(8), k=1)
    assert now.per_baseline.q95.value <= 0.05


def test_an_exact_measure_passes_a_regression_at_the_margin_for_at_most_a_share_gamma_of_baselines():
    """PCF read exactly: its verdict is fixed given the baseline and the release, so its PASS at min(alpha, γ)
    leaves at most γ of baselines passing a regression at the margin (each of them always)."""
    for shape in ("homogeneous", "concentrated", "top"):
        found = given_baseline(PCF, 50.0, shape, 257, 1, 150, 1, np.random.default_rng(9))
        assert found.events.shape == (150, 1) and found.pooled.interval[1] <= 0.05


def test_the_planner_takes_few_answers_an_item_on_a_baseline_of_four_and_says_when_one_of_one_falls_short():
    implicit = Components(*IMPLICIT.variances(), k_old=4)
    chosen = plan_k(implicit, 303, 0.1, 2.0, alpha=0.0025)
    assert chosen.reached and chosen.k <= 2 and chosen.chance >= 0.8
    quality = Components(*QUALITY.variances(), k_old=1)
    single = plan_k(quality, 400, 0.25, 8.0, alpha=0.0025)
    assert single.k > chosen.k and single.chance < plan_k(Components(*QUALITY.variances(), 4), 400, 0.25, 8.0,
                                                          alpha=0.0025).chance  # fmt: skip
    assert not plan_k(quality, 150, 0.25, 8.0, alpha=0.0025).reached  # too few items for any K


@pytest.mark.heavy(2)
def test_a_regression_that_lines_up_with_the_baselines_order_is_caught_in_the_seeded_random_order():
    """The baseline's first 210 of 303 items unchanged, the rest regressed so that the mean rises by the margin:
    the fixed-n betting interval, read in the baseline's order, is convinced before the regressed items arrive;
    in a random order it is not."""
    rng, head, reruns = np.random.default_rng(10), 210, 25
    drawn, shuffled = [], []
    for _ in range(40):
        z = rng.standard_normal(303)
        recorded = item_samples(IMPLICIT, rng, z, np.zeros(303), 4, 1)[0].mean(-1)
        tail = at_margin_on_items(IMPLICIT, "homogeneous", z[head:], 0.1 * 303 / (303 - head), rng)
        d = item_samples(IMPLICIT, rng, z, np.concatenate([np.zeros(head), tail]), 1, reruns).mean(-1) - recorded
        drawn.append(fixed_outcomes(d, IMPLICIT.scale, PairedGate(0.1, 1))[0])
        shuffled.append(fixed_outcomes(d[:, rng.permutation(303)], IMPLICIT.scale, PairedGate(0.1, 1))[0])
    in_order, at_random = int(np.sum(drawn)), int(np.sum(shuffled))
    assert proportion_interval(in_order, 40 * reruns)[0] > 0.2
    assert proportion_interval(at_random, 40 * reruns)[1] <= 0.05


def test_the_decision_order_is_seeded_by_the_baseline_the_check_and_the_model():
    key = "0:religion::implicit_bias[islam]:my-model@v2"
    assert np.array_equal(decision_order(key, 50), decision_order(key, 50))
    assert not np.array_equal(decision_order(key, 50), decision_order(key.replace("v2", "v3"), 50))
    assert sorted(decision_order(key, 50)) == list(range(50))
    old = [ItemScores(f"i{i}", f"i{i}", (0.1,)) for i in range(200)]
    new = [ItemScores(f"i{i}", f"i{i}", (0.1 + (0.6 if i >= 120 else 0.0),)) for i in range(200)]
    gate = PairedGate(0.1, 1)
    fixed = compare_paired(pair_items(old, new), (-1.0, 1.0), gate, order_key=key)
    assert fixed.order.startswith("random (seed ") and fixed == compare_paired(pair_items(old, new), (-1.0, 1.0),
                                                                                gate, order_key=key)  # fmt: skip
    growing = compare_paired(pair_items(old, new), (-1.0, 1.0), PairedGate(0.1, 1, sequential=True), order_key=key)
    assert growing.order == "" and growing.items_claimed() == "all 200 of the baseline's items"
    assert fixed.outcome is Outcome.FAIL  # 80 of 200 items 0.6 worse: 0.24 on average, beyond the margin
