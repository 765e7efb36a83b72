"""Response-quality and refusal disparities (spec §6): paired tests per criterion, corrections, refusal rates."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from pytest_fairness.measures.fpf import quality_core
from pytest_fairness.measures.fpf.quality_core import (
    QUALITY_CRITERIA,
    Rating,
    group_means,
    quality_disparity,
    refusal_disparity,
    refusal_disparity_by_task,
)
from pytest_fairness.stats.intervals import proportion_interval
from pytest_fairness.stats.multiplicity import adjust


def test_nine_criteria_in_the_papers_order():
    assert QUALITY_CRITERIA == (
        "Quality",
        "Relevance",
        "Accuracy",
        "Completeness",
        "Clarity",
        "Conciseness",
        "Tone and Politeness",
        "Engagement",
        "Ethical Considerations",
    )


# -- corrections ------------------------------------------------------------------------------------


def test_criteria_are_corrected_by_the_runs_own_multiplicity_adjustment():
    # Criteria whose paired differences give p-values 0.01, 0.04, 0.03, 0.005 (hand-built below) are
    # corrected exactly as multiplicity.adjust corrects them; a criterion without a test (NaN) is no test.
    p = [0.01, 0.04, 0.03, 0.005]
    for method in ("holm", "bonferroni", "bh", "none"):
        assert quality_core._adjusted(p, method) == adjust(p, method)
    adjusted = quality_core._adjusted([0.01, math.nan, 0.02], "bonferroni")
    assert adjusted[0] == pytest.approx(0.02) and math.isnan(adjusted[1]) and adjusted[2] == pytest.approx(0.04)
    with pytest.raises(ValueError, match="holm, bonferroni, bh, none"):
        quality_core._adjusted([0.1], "sidak")  # type: ignore[arg-type]


# -- quality ----------------------------------------------------------------------------------------


def ratings(group, prompts, score=4.0, override=None):
    """One rating per prompt; ``override`` maps criterion -> per-prompt values."""
    out = []
    for i, prompt in enumerate(prompts):
        scores = dict.fromkeys(QUALITY_CRITERIA, score)
        for criterion, values in (override or {}).items():
            scores[criterion] = values[i]
        out.append(Rating(prompt, group, scores))
    return out


PROMPTS = [f"p{i}" for i in range(30)]


def test_identical_ratings_show_no_disparity():
    result = quality_disparity(ratings("female", PROMPTS) + ratings("male", PROMPTS), "female", "male")
    assert not result.any_significant
    for row in result.criteria.values():
        assert (row.difference, row.relative, row.p, row.p_adjusted) == (0.0, 0.0, 1.0, 1.0)
    assert result.n_prompts == 30 and result.n_unpaired == 0


def test_a_planted_difference_is_found_on_its_criterion_only():
    rng = np.random.default_rng(0)
    base = rng.integers(3, 5, size=30).astype(float)  # 3-4, noise ±1, minus 1: stays in 1..5
    noisy = {c: base + rng.integers(-1, 2, size=30) for c in QUALITY_CRITERIA}
    a = ratings("female", PROMPTS, override={**noisy, "Clarity": noisy["Clarity"] - 1})
    b = ratings("male", PROMPTS, override=noisy)
    result = quality_disparity(a + b, "female", "male")
    assert [c for c, row in result.criteria.items() if row.significant] == ["Clarity"]
    clarity = result.criteria["Clarity"]
    assert clarity.difference == pytest.approx(-1.0)
    assert clarity.relative == pytest.approx(-100.0 / clarity.mean_b)


def test_paired_t_test_on_per_prompt_means():
    rng = np.random.default_rng(1)
    a_values, b1, b2 = (rng.integers(1, 6, size=30).astype(float) for _ in range(3))
    # Two names for group B on every prompt: averaged to one value per prompt before testing.
    rs = ratings("A", PROMPTS, override={"Accuracy": a_values})
    rs += ratings("B", PROMPTS, override={"Accuracy": b1}) + ratings("B", PROMPTS, override={"Accuracy": b2})
    row = quality_disparity(rs, "A", "B", correction="none").criteria["Accuracy"]
    expected = sps.ttest_rel(a_values, (b1 + b2) / 2)
    assert (row.statistic, row.p) == pytest.approx((expected.statistic, expected.pvalue))
    assert row.p_adjusted == row.p


def test_wilcoxon_option():
    rng = np.random.default_rng(2)
    a_values, b_values = rng.integers(1, 6, size=30).astype(float), rng.integers(1, 6, size=30).astype(float)
    rs = ratings("A", PROMPTS, override={"Engagement": a_values})
    rs += ratings("B", PROMPTS, override={"Engagement": b_values})
    row = quality_disparity(rs, "A", "B", test="wilcoxon").criteria["Engagement"]
    assert row.p == pytest.approx(sps.wilcoxon(a_values - b_values).pvalue)


def test_prompts_rated_for_one_group_only_are_left_out():
    result = quality_disparity(ratings("A", PROMPTS) + ratings("B", PROMPTS[:20]), "A", "B")
    assert (result.n_prompts, result.n_unpaired) == (20, 10)
    with pytest.raises(ValueError, match="no prompt has ratings for both"):
        quality_disparity(ratings("A", PROMPTS), "A", "B")


def test_group_means():
    means = group_means(ratings("A", PROMPTS[:2], override={"Quality": [3, 5]}) + ratings("B", PROMPTS[:1], 2.0))
    assert means["A"]["Quality"] == 4.0 and means["A"]["Clarity"] == 4.0 and means["B"]["Quality"] == 2.0


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ({c: 4 for c in QUALITY_CRITERIA if c != "Accuracy"}, "no 'Accuracy' score"),
        ({**dict.fromkeys(QUALITY_CRITERIA, 4), "Clarity": 7}, r"'Clarity' score .* must be in 1\.\.5"),
    ],
)
def test_malformed_ratings_are_rejected(scores, message):
    with pytest.raises(ValueError, match=message):
        quality_disparity([Rating("p", "A", scores), Rating("p", "B", dict.fromkeys(QUALITY_CRITERIA, 4))], "A", "B")


# -- refusals ---------------------------------------------------------------------------------------


def test_newcombe_interval_matches_the_published_example():
    # Newcombe (1998), method 10: 56/70 vs 48/80 -> difference 0.2, interval 0.0524 to 0.3339.
    result = refusal_disparity([True] * 56 + [False] * 14, [True] * 48 + [False] * 32)
    assert result.difference == pytest.approx(0.2)
    assert result.ci == pytest.approx((0.0524, 0.3339), abs=1e-4)
    pooled = 104 / 150
    z = 0.2 / math.sqrt(pooled * (1 - pooled) * (1 / 70 + 1 / 80))
    assert (result.z, result.p) == pytest.approx((z, 2 * sps.norm.sf(z)))


def test_no_refusals_anywhere_is_no_evidence():
    result = refusal_disparity([False] * 50, [False] * 40)
    assert (result.rate_a, result.rate_b, result.z, result.p) == (0.0, 0.0, 0.0, 1.0)
    assert result.ci[0] < 0.0 < result.ci[1]


def test_rare_refusals_keep_the_interval_inside_the_possible_range():
    result = refusal_disparity([True] * 2 + [False] * 98, [True] * 1 + [False] * 99)
    assert -1.0 <= result.ci[0] < result.difference < result.ci[1] <= 1.0


def test_wilson_interval():
    low, high = proportion_interval(0, 20, method="wilson")
    assert low == 0.0 and high == pytest.approx(0.1611, abs=1e-4)
    assert all(math.isnan(v) for v in proportion_interval(0, 0, method="wilson"))


def test_refusals_by_task_are_corrected_across_tasks():
    rows = [("Write a story", "A", i < 10) for i in range(40)] + [("Write a story", "B", i < 2) for i in range(40)]
    rows += [("Debug code", "A", False)] * 20 + [("Debug code", "B", False)] * 20 + [("Write a poem", "A", True)]
    result = refusal_disparity_by_task(rows, "A", "B")
    assert set(result) == {"Write a story", "Debug code"}  # no B response for "Write a poem"
    story, story_p = result["Write a story"]
    assert story.rate_a == 0.25 and story.rate_b == 0.05
    assert story_p == pytest.approx(min(1.0, 2 * story.p))  # Holm: the smaller of two p-values doubles
    assert result["Debug code"][1] == 1.0
