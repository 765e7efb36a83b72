import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats as sps

from pytest_fairness.measures.pcf import prejudice_caprice_core as pcf

ABS = 1e-9
PROPERTY = settings(max_examples=100, deadline=None)


def approx(expected: object) -> object:
    return pytest.approx(np.asarray(expected) if isinstance(expected, list) else expected, abs=ABS)


def binary(male: list[list[float]]) -> np.ndarray:
    """[x][t] male probabilities -> tensor [x, t, (male, female)]."""
    p = np.asarray(male, dtype=float)
    return np.stack([p, 1 - p], axis=-1)


# -- spec §7.3 Example A: 3 occupations x 2 templates from raw slot probabilities ------------------------

EXAMPLE_A_RAW = {  # [doctor, nurse, teacher][t1, t2]
    "he": [[0.40, 0.30], [0.06, 0.10], [0.21, 0.02]],
    "man": [[0.05, 0.05], [0.02, 0.02], [0.00, 0.00]],
    "she": [[0.04, 0.10], [0.30, 0.15], [0.08, 0.15]],
    "woman": [[0.01, 0.05], [0.02, 0.03], [0.01, 0.03]],
}
GENDER = [["he", "man"], ["she", "woman"]]


def example_a(occupation_weights: np.ndarray | None = None) -> pcf.PcfRisks:
    calibrated = pcf.calibrate_preference(EXAMPLE_A_RAW, GENDER)
    return pcf.risks(calibrated.preference, pcf.weigh_templates([3, 1]), occupation_weights)


def test_example_a_calibrates_raw_word_probabilities_by_summing_each_group():
    calibrated = pcf.calibrate_preference(EXAMPLE_A_RAW, GENDER)
    assert calibrated.preference[..., 0] == approx([[0.9, 0.7], [0.2, 0.4], [0.7, 0.1]])
    assert calibrated.mass == approx([[0.5, 0.5], [0.4, 0.3], [0.3, 0.2]])
    assert calibrated.n_fallback == 0


def test_example_a_per_occupation_risks_match_the_hand_computation():
    res = example_a()
    assert res.template_weights == approx([0.75, 0.25])
    assert res.r == approx([0.70, 0.50, 0.50])
    assert res.r_prejudice == approx([0.70, 0.50, 0.10])
    assert res.r_caprice == approx([0.00, 0.00, 0.40])
    assert res.mean_preference == approx([[0.85, 0.15], [0.25, 0.75], [0.55, 0.45]])
    assert res.stereotype[:, 0] == approx([0.70, -0.50, 0.10])


def test_example_a_overall_risks_uniform_and_employment_weighted():
    res = example_a()
    assert (res.R, res.prejudice, res.caprice) == approx((1.7 / 3, 1.3 / 3, 0.4 / 3))
    assert res.scaled(1000) == approx((566.666666667, 433.333333333, 133.333333333))
    omega = pcf.weigh_occupations(["doctor", "nurse", "teacher"], {"doctor": 5, "nurse": 3, "teacher": 2})
    assert omega.weights == approx([0.5, 0.3, 0.2]) and omega.unmapped == ()
    weighted = example_a(omega.weights)
    assert (weighted.R, weighted.prejudice, weighted.caprice) == approx((0.60, 0.52, 0.08))
    assert weighted.scaled() == approx((600, 520, 80))


def test_example_a_is_unchanged_when_male_and_female_are_swapped():
    res = example_a()
    swapped = pcf.risks(pcf.calibrate_preference(EXAMPLE_A_RAW, GENDER[::-1]).preference, [3, 1])
    for field in ("r", "r_prejudice", "r_caprice"):
        assert getattr(swapped, field) == approx(getattr(res, field))


def test_example_a_directions_say_which_group_each_occupation_leans_to():
    res = example_a()
    assert res.leaning.tolist() == [0, 1, 0]
    assert res.directional == approx([0.1, -0.1])  # mean S_male over occupations: pro-male
    assert res.leaning_share == approx([2 / 3, 1 / 3])
    # Only teacher's contexts disagree (t2 leans female, weight 0.25), and only teacher has caprice.
    assert res.flip_rate == approx([0.0, 0.0, 0.25])


# -- Example B: the introduction's two models --------------------------------------------------------------


def test_example_b_same_error_but_only_the_first_model_is_prejudiced():
    e1 = pcf.risks(binary([[0.6, 0.6, 0.6]]))
    assert (e1.R, e1.prejudice, e1.caprice) == approx((0.2, 0.2, 0.0))
    e2 = pcf.risks(binary([[0.5, 0.35, 0.65]]))
    assert (e2.R, e2.prejudice, e2.caprice) == approx((0.2, 0.0, 0.2))


# -- Example C: the criterion J ----------------------------------------------------------------------------


def test_example_c_criterion_and_stereotypes_for_two_groups():
    assert pcf.criterion([0.8, 0.2]) == approx(0.6)
    assert pcf.criterion([0.5, 0.5]) == approx(0.0)
    assert pcf.criterion([1.0, 0.0]) == approx(1.0)
    assert pcf.stereotypes([0.8, 0.2]) == approx([0.6, -0.6])


def test_example_c_criterion_for_three_and_five_groups_and_each_norm():
    assert pcf.criterion([0.5, 0.3, 0.2]) == approx(0.25)
    assert pcf.stereotypes([0.5, 0.3, 0.2]) == approx([0.25, -0.05, -0.2])
    p3 = [0.45, 0.45, 0.10]
    assert pcf.criterion(p3) == approx(0.175)
    assert pcf.criterion(p3, norm=2) == approx(0.175 * math.sqrt(2))  # 0.247487
    assert pcf.criterion(p3, norm=1) == approx(0.35)
    assert pcf.criterion([0.6, 0.1, 0.1, 0.1, 0.1]) == approx(0.5)
    assert pcf.criterion([0.3, 0.3, 0.3, 0.1, 0.0]) == approx(0.125)
    assert pcf.criterion([0.3, 0.3, 0.3, 0.1, 0.0], norm=1) == approx(0.375)


@pytest.mark.parametrize(
    ("contexts", "norm", "expected"),
    [  # (r, r^p, r^c) of one occupation with two equally weighted contexts: Example C and spec §6
        ([[1, 0, 0], [0, 1, 0]], math.inf, (1.0, 0.25, 0.75)),
        ([[1, 0, 0], [0, 1, 0]], 1, (1.0, 0.5, 0.5)),
        ([[1, 0, 0], [0, 1, 0]], 2, (1.0, 0.25 * math.sqrt(2), 1 - 0.25 * math.sqrt(2))),
        ([[0.5, 0.5, 0], [0.5, 0, 0.5]], math.inf, (0.25, 0.25, 0.0)),
        ([[0.5, 0.5, 0], [0.5, 0, 0.5]], 1, (0.5, 0.25, 0.25)),
        ([[0.5, 0.5, 0], [0.5, 0, 0.5]], 2, (0.25 * math.sqrt(2), 0.25, 0.25 * (math.sqrt(2) - 1))),
    ],
)
def test_example_c_three_group_caprice_depends_on_the_norm(contexts, norm, expected):
    res = pcf.risks([contexts], norm=norm)
    assert (res.R, res.prejudice, res.caprice) == approx(expected)


# -- Example D and spec §4: the reference models -----------------------------------------------------------


@pytest.mark.parametrize("k", [2, 5])
def test_unbiased_model_has_no_risk(k):
    res = pcf.risks(np.full((4, 3, k), 1.0 / k))
    assert (res.R, res.prejudice, res.caprice) == approx((0, 0, 0))


@pytest.mark.parametrize("k", [2, 5])
def test_stereotyped_model_is_all_prejudice(k):
    # Each occupation always predicts its own group ("all doctors are male, all nurses female").
    groups = np.arange(6) % k
    res = pcf.risks(np.repeat(np.eye(k)[groups][:, None, :], 4, axis=1))
    assert (res.R, res.prejudice, res.caprice) == approx((1, 1, 0))
    assert res.leaning.tolist() == groups.tolist()


@pytest.mark.parametrize("k", [2, 5])
def test_randomly_stereotyped_model_is_all_caprice(k):
    # Equally weighted contexts, each one-hot on a different group: the finite, balanced version.
    res = pcf.risks(np.repeat(np.eye(k)[None], 3, axis=0))
    assert (res.R, res.prejudice, res.caprice) == approx((1, 0, 1))
    assert res.leaning.tolist() == [-1, -1, -1]


def test_randomly_initialised_binary_model_is_half_caprice():
    # u ~ U(0,1) per (x, t): J = |2u - 1| ~ U(0,1) (sd 1/√12), so R's sd is 1/√(12·n) over n cells;
    # r^p_x = |2ū - 1| with 2ū - 1 ≈ N(0, 1/(3·n_T)). Six sds bound both with probability > 1 - 1e-8.
    n_x, n_t = 4, 100_000
    res = pcf.risks(binary(np.random.default_rng(0).uniform(size=(n_x, n_t))))
    tol_r = 6 / math.sqrt(12 * n_x * n_t)
    tol_p = 6 / math.sqrt(3 * n_t)
    assert abs(res.R - 0.5) <= tol_r
    assert 0 <= res.prejudice < tol_p
    assert abs(res.caprice - 0.5) <= tol_r + tol_p


def test_randomly_initialised_five_group_model_is_not_500_but_h5_minus_1_over_4():
    # Spec §4: p ~ Dirichlet(1,..,1) gives R = (H_5 - 1)/4 ≈ 0.3208; J is in [0, 1] so its sd <= 1/2.
    n_x, n_t = 4, 50_000
    res = pcf.risks(np.random.default_rng(1).dirichlet(np.ones(5), size=(n_x, n_t)))
    h5 = sum(1 / i for i in range(1, 6))
    assert abs(res.R - (h5 - 1) / 4) <= 6 * 0.5 / math.sqrt(n_x * n_t)
    assert res.prejudice < 0.01


# -- Example E: non-uniform π and ω --------------------------------------------------------------------------


def test_example_e_non_uniform_template_and_occupation_weights():
    male = [[0.58, 0.47, 0.34, 0.57], [0.47, 0.47, 0.93, 0.90], [0.70, 0.19, 0.58, 0.44], [0.33, 0.61, 0.43, 0.44]]
    res = pcf.risks(binary(male), [0.4, 0.3, 0.2, 0.1], [0.45, 0.35, 0.15, 0.05])
    assert res.r == approx([0.160, 0.294, 0.390, 0.242])
    assert res.r_prejudice == approx([0.004, 0.210, 0.006, 0.110])
    assert res.r_caprice == approx([0.156, 0.084, 0.384, 0.132])
    assert (res.R, res.prejudice, res.caprice) == approx((0.2455, 0.0817, 0.1638))


# -- stereotype directions and the non-uniform reference -------------------------------------------------------


def test_stereotype_direction_is_eq_1_for_the_uniform_reference():
    assert pcf.stereotype_direction(2, 0) == approx([1, -1])
    assert pcf.stereotype_direction(2, 1) == approx([-1, 1])
    assert pcf.stereotype_direction(5, 3) == approx([-0.25, -0.25, -0.25, 1, -0.25])


def test_non_uniform_reference_is_zero_at_p_star_and_one_when_all_mass_is_on_y():
    p_star = [0.5, 0.3, 0.2]
    assert pcf.stereotypes(p_star, p_star) == approx([0, 0, 0])
    assert pcf.criterion(p_star, p_star=p_star) == approx(0)
    assert np.diag(pcf.stereotypes(np.eye(3), p_star)) == approx([1, 1, 1])
    # S_y = (p_y - p*_y) / (1 - p*_y): moving mass among the other groups leaves it unchanged.
    assert pcf.stereotypes([0.6, 0.4, 0.0], p_star)[0] == approx(0.2)
    assert pcf.stereotypes([0.6, 0.0, 0.4], p_star)[0] == approx(0.2)
    assert pcf.stereotype_direction(3, 0, [1 / 3] * 3) == approx(pcf.stereotype_direction(3, 0))


def test_bad_group_index_norm_or_reference_is_rejected():
    with pytest.raises(ValueError, match="group index"):
        pcf.stereotype_direction(2, 2)
    with pytest.raises(ValueError, match="K >= 2"):
        pcf.stereotype_direction(1, 0)
    with pytest.raises(ValueError, match="norm"):
        pcf.criterion([0.5, 0.5], norm=0)
    with pytest.raises(ValueError, match="norm"):
        pcf.criterion([0.5, 0.5], norm=1.5)
    with pytest.raises(ValueError, match="p_star"):
        pcf.criterion([0.5, 0.5], p_star=[0.7, 0.7])


# -- weights ------------------------------------------------------------------------------------------------


def test_template_weights_are_counts_over_their_total():
    assert pcf.weigh_templates([2142, 856, 0]) == approx([2142 / 2998, 856 / 2998, 0])
    with pytest.raises(ValueError, match="non-negative; entry 1 is -1"):
        pcf.weigh_templates([3, -1])
    with pytest.raises(ValueError, match="all zero"):
        pcf.weigh_templates([0, 0])
    with pytest.raises(ValueError, match="non-empty"):
        pcf.weigh_templates([])


def test_occupation_weights_are_uniform_by_default_and_report_unmapped_terms():
    assert pcf.weigh_occupations(["a", "b", "c", "d"]).weights == approx([0.25] * 4)
    w = pcf.weigh_occupations(["nurse", "vp", "doctor"], {"nurse": 3, "doctor": 1, "pilot": 9})
    assert w.weights == approx([0.75, 0, 0.25])
    assert w.unmapped == ("vp",)
    with pytest.raises(ValueError, match="covers none"):
        pcf.weigh_occupations(["vp"], {"nurse": 3})
    with pytest.raises(ValueError, match="'nurse' must be a non-negative number"):
        pcf.weigh_occupations(["nurse", "doctor"], {"nurse": -3, "doctor": 1})


# -- Eq. 10 calibration ------------------------------------------------------------------------------------------


def test_a_word_in_both_groups_counts_in_both_and_preferences_still_sum_to_one():
    calibrated = pcf.calibrate_preference({"he": 0.2, "canary": 0.1, "she": 0.1}, [["he", "canary"], ["she", "canary"]])
    assert calibrated.preference == approx([0.6, 0.4])
    assert float(calibrated.mass) == approx(0.5)


def test_zero_mass_cells_fall_back_to_p_star_with_a_warning_and_are_counted():
    probs = {"he": [0.3, 0.0, 0.0], "she": [0.1, 0.0, 0.0]}
    with pytest.warns(RuntimeWarning, match="2 cell"):
        calibrated = pcf.calibrate_preference(probs, [["he"], ["she"]])
    assert calibrated.preference == approx([[0.75, 0.25], [0.5, 0.5], [0.5, 0.5]])
    assert calibrated.fallback.tolist() == [False, True, True] and calibrated.n_fallback == 2
    with pytest.warns(RuntimeWarning):
        skewed = pcf.calibrate_preference(probs, [["he"], ["she"]], p_star=[0.6, 0.4])
    assert skewed.preference[1] == approx([0.6, 0.4])


def test_calibration_is_invariant_to_scaling_every_word_probability():
    scaled = {w: 1e-3 * np.asarray(v) for w, v in EXAMPLE_A_RAW.items()}
    assert pcf.calibrate_preference(scaled, GENDER).preference == approx(
        pcf.calibrate_preference(EXAMPLE_A_RAW, GENDER).preference
    )


def test_calibration_rejects_missing_words_bad_groups_and_negative_probabilities():
    with pytest.raises(ValueError, match="no probability for woman"):
        pcf.calibrate_preference({"he": 0.1, "she": 0.1}, [["he"], ["she", "woman"]])
    with pytest.raises(ValueError, match="K >= 2"):
        pcf.calibrate_preference({"he": 0.1}, [["he"]])
    with pytest.raises(ValueError, match="group 1 must be a non-empty"):
        pcf.calibrate_preference({"he": 0.1}, [["he"], []])
    with pytest.raises(ValueError, match="twice"):
        pcf.calibrate_preference({"he": 0.1, "she": 0.1}, [["he", "he"], ["she"]])
    with pytest.raises(ValueError, match=r"'she'.*non-negative"):
        pcf.calibrate_preference({"he": 0.1, "she": -0.1}, [["he"], ["she"]])


# -- caprice clamp, validation, diagnostics ---------------------------------------------------------------------


def test_caprice_clamps_float_noise_and_raises_on_a_real_negative_gap():
    assert pcf.caprice([0.3, 0.5], [0.3 + 1e-13, 0.1]).tolist() == [0.0, pytest.approx(0.4)]
    with pytest.raises(ValueError, match="below zero"):
        pcf.caprice([0.3], [0.3 + 1e-9])


@pytest.mark.parametrize(
    ("preferences", "message"),
    [
        (np.full((2, 2), 0.5), r"\[occupation, template, group\]; got 2 dimension"),
        (np.ones((2, 3, 1)), "K >= 2"),
        (np.ones((0, 3, 2)), "at least one occupation"),
        (np.array([[[0.5, -0.1]]]), r"non-negative; preferences\[0, 0, 1\] is -0.1"),
        (np.array([[[0.5, np.nan]]]), "finite"),
        (np.array([[[0.5, 0.5]], [[0.0, 0.0]]]), r"preferences\[1, 0\] is all zero"),
    ],
)
def test_risks_rejects_malformed_preferences_with_a_clear_message(preferences, message):
    with pytest.raises(ValueError, match=message):
        pcf.risks(preferences)


def test_risks_rejects_weights_of_the_wrong_length():
    with pytest.raises(ValueError, match="template_weights has 3 entries but the preferences have 2 templates"):
        pcf.risks(np.full((1, 2, 2), 0.5), [1, 1, 1])
    with pytest.raises(ValueError, match="occupation_weights has 1 entries but the preferences have 2 occupations"):
        pcf.risks(np.full((2, 1, 2), 0.5), occupation_weights=[1])


def test_risks_renormalises_cells_that_do_not_sum_to_one():
    assert pcf.risks([[[4.0, 1.0]]]).scaled(1) == approx((0.6, 0.6, 0))


def test_diagnostics_match_scipy_and_are_nan_where_undefined():
    x = np.random.default_rng(3).exponential(size=50)
    d = pcf.diagnostics(x)
    assert (d.n, d.mean, d.sd, d.max) == approx((50, x.mean(), x.std(ddof=1), x.max()))
    assert (d.skewness, d.excess_kurtosis) == approx((sps.skew(x), sps.kurtosis(x)))
    assert (d.normality_statistic, d.normality_p) == approx(tuple(sps.shapiro(x)))
    assert d.normality_p < 0.05  # exponential data are not normal
    flat = pcf.diagnostics([0.2, 0.2, 0.2])
    assert math.isnan(flat.skewness) and math.isnan(flat.normality_p) and flat.sd == approx(0)
    assert math.isnan(pcf.diagnostics([0.1]).sd)


def test_diagnostics_skip_occupations_without_weight():
    res = pcf.risks(binary([[0.9], [0.8], [0.6], [0.5]]), occupation_weights=[1, 1, 1, 0])
    assert res.prejudice_diagnostics.n == 3
    assert res.prejudice_diagnostics.max == approx(0.8)


# -- Example F: properties on random tensors ---------------------------------------------------------------------

CELL = st.floats(0, 1, allow_subnormal=False)
WEIGHT = st.floats(0, 10, allow_subnormal=False)


@st.composite
def cases(draw: st.DrawFn, k: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(preferences, template weights, occupation weights) with every cell and weight vector usable."""
    n_x, n_t = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    k = k or draw(st.integers(2, 5))
    p = draw(hnp.arrays(float, (n_x, n_t, k), elements=CELL))
    p[p.sum(axis=-1) == 0] = 1.0
    pi, omega = (draw(hnp.arrays(float, n, elements=WEIGHT)) for n in (n_t, n_x))
    for w in (pi, omega):
        if w.sum() == 0:
            w[0] = 1.0
    return p, pi, omega


NORMS = st.sampled_from([math.inf, 1, 2, 3])


@pytest.mark.heavy(1)
@PROPERTY
@given(cases(), NORMS)
def test_overall_risk_is_prejudice_plus_caprice(case, norm):
    res = pcf.risks(*case, norm=norm)
    assert res.prejudice + res.caprice == pytest.approx(res.R, abs=ABS)
    assert res.r == pytest.approx(res.r_prejudice + res.r_caprice, abs=ABS)


@pytest.mark.heavy(1)
@PROPERTY
@given(cases(), NORMS)
def test_risks_are_ordered_within_zero_and_one_and_caprice_is_never_negative(case, norm):
    res = pcf.risks(*case, norm=norm)
    assert np.all(res.r_caprice >= 0)
    assert np.all(res.r_prejudice >= 0) and np.all(res.r_prejudice <= res.r + ABS) and np.all(res.r <= 1 + ABS)
    assert res.caprice >= 0 and 0 <= res.prejudice <= res.R + ABS and res.R <= 1 + ABS


@pytest.mark.heavy(1)
@PROPERTY
@given(cases(), st.randoms(use_true_random=False))
def test_relabelling_the_groups_changes_no_risk(case, rnd):
    p, pi, omega = case
    order = list(range(p.shape[-1]))
    rnd.shuffle(order)
    res, relabelled = pcf.risks(p, pi, omega), pcf.risks(p[..., order], pi, omega)
    assert relabelled.r == approx(res.r) and relabelled.r_prejudice == approx(res.r_prejudice)
    assert (relabelled.R, relabelled.prejudice, relabelled.caprice) == approx((res.R, res.prejudice, res.caprice))


@pytest.mark.heavy(1)
@PROPERTY
@given(cases(), st.randoms(use_true_random=False), st.floats(0.01, 100))
def test_permuting_templates_or_occupations_with_their_weights_or_rescaling_counts_changes_no_risk(case, rnd, c):
    p, pi, omega = case
    t_order, x_order = list(range(p.shape[1])), list(range(p.shape[0]))
    rnd.shuffle(t_order)
    rnd.shuffle(x_order)
    res = pcf.risks(p, pi, omega)
    by_template = pcf.risks(p[:, t_order], pi[t_order] * c, omega)
    by_occupation = pcf.risks(p[x_order], pi, omega[x_order])
    assert by_template.r == approx(res.r) and by_template.r_caprice == approx(res.r_caprice)
    assert by_occupation.r == approx(res.r[x_order])
    for other in (by_template, by_occupation):
        assert (other.R, other.prejudice, other.caprice) == approx((res.R, res.prejudice, res.caprice))


@pytest.mark.heavy(2)
@PROPERTY
@given(cases(k=2))
def test_for_two_groups_every_norm_agrees_and_one_sided_contexts_have_no_caprice(case):
    p, pi, omega = case
    res = pcf.risks(p, pi, omega)
    for norm in (1, 2, 3):
        assert pcf.risks(p, pi, omega, norm=norm).r == approx(res.r)
    one_sided = np.sort(p, axis=-1)[..., ::-1]  # male share >= 0.5 in every context
    assert pcf.risks(one_sided, pi, omega).r_caprice == approx(0)
    assert pcf.risks(p[:, :1], None, omega).r_caprice == approx(0)  # a single template
