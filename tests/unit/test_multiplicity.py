"""Holm and Benjamini-Hochberg adjusted p-values: hand-computed cases, edge cases, and the rates they control."""

import numpy as np
import pytest
from scipy import stats as sps

from pytest_fairness.stats.multiplicity import adjust, benjamini_hochberg, bonferroni, describe, holm

P = [0.01, 0.04, 0.03, 0.005]


def test_holm_matches_a_hand_computed_example():
    # Sorted: 0.005 x4 = 0.02; 0.01 x3 = 0.03; 0.03 x2 = 0.06; 0.04 x1 = 0.04, raised to 0.06 (monotone).
    assert holm(P) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_benjamini_hochberg_matches_a_hand_computed_example():
    # Sorted: 0.005 x4/1 = 0.02; 0.01 x4/2 = 0.02; 0.03 x4/3 = 0.04; 0.04 x4/4 = 0.04 (already monotone).
    assert benjamini_hochberg(P) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # Step-up: a larger p can lower a smaller one's q-value: 0.03 x2/1 = 0.06, but 0.04 x2/2 = 0.04.
    assert benjamini_hochberg([0.03, 0.04]) == pytest.approx([0.04, 0.04])


def test_benjamini_hochberg_agrees_with_scipy():
    p = np.random.default_rng(1).uniform(0, 0.2, 40)
    assert benjamini_hochberg(list(p)) == pytest.approx(list(sps.false_discovery_control(p, method="bh")))


def test_adjusted_p_values_are_capped_at_1_never_below_the_raw_ones_and_keep_the_order():
    p = [0.5, 0.6, 0.001, 0.2, 0.2]
    for adjusted in (holm(p), benjamini_hochberg(p)):
        assert all(a >= raw for a, raw in zip(adjusted, p, strict=True))
        assert max(adjusted) <= 1.0
        ranks = np.argsort(p, kind="stable")
        assert list(np.asarray(adjusted)[ranks]) == sorted(adjusted)
    assert holm([0.5, 0.6]) == [1.0, 1.0]


def test_empty_none_and_invalid_inputs():
    assert holm([]) == [] and benjamini_hochberg([]) == []
    assert adjust([0.01, 0.2], "none") == [0.01, 0.2]
    for bad in ([1.5], [-0.1], [float("nan")]):
        with pytest.raises(ValueError, match=r"p-values must lie in \[0, 1\]"):
            holm(bad)
    with pytest.raises(ValueError, match="valid: holm, bonferroni, bh, none"):
        adjust([0.1], "sidak")  # type: ignore[arg-type]


def test_bonferroni_multiplies_by_the_number_of_tests_and_caps_at_1():
    assert bonferroni(P) == pytest.approx([0.04, 0.16, 0.12, 0.02])
    assert adjust(P, "bonferroni") == bonferroni(P)
    assert bonferroni([0.6, 0.9]) == [1.0, 1.0] and bonferroni([]) == []
    with pytest.raises(ValueError, match=r"p-values must lie in \[0, 1\]"):
        bonferroni([float("nan")])


def test_holm_and_bh_give_the_numbers_of_the_former_numpy_and_scipy_versions():
    # The quality measure's former numpy Holm (step-down maximum) and scipy's BH, on fixed inputs:
    # the one implementation gives the same numbers.
    p = list(np.random.default_rng(5).uniform(0, 0.3, 12))
    order = np.argsort(p, kind="stable")
    steps = np.maximum.accumulate((12 - np.arange(12)) * np.asarray(p)[order])
    reference = np.empty(12)
    reference[order] = np.minimum(steps, 1.0)
    assert holm(p) == reference.tolist()
    assert benjamini_hochberg(p) == pytest.approx(sps.false_discovery_control(p, method="bh").tolist(), abs=1e-15)


def test_holm_bounds_the_chance_of_any_false_alarm_in_a_run_of_29_checks():
    # 4000 runs of 29 true nulls: at 0.05 each, most runs flag something; after Holm, about 5% do.
    p = np.random.default_rng(7).uniform(size=(4000, 29))
    raw = (p < 0.05).any(axis=1).mean()
    corrected = np.mean([min(holm(list(row))) < 0.05 for row in p])
    assert raw > 0.7
    assert corrected <= 0.06


def test_the_summary_names_the_rate_controlled():
    assert describe("holm", 0.05) == "family-wise error rate controlled at 0.05 (Holm)"
    assert describe("bh", 0.1) == "false-discovery rate controlled at 0.1 (Benjamini-Hochberg)"
    assert "no multiplicity correction" in describe("none", 0.05)
