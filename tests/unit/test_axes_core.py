"""Axes of difference (Bias Enumeration Algorithm): reading the judge's lists, deduplication, labels in
both orders (spec §7.4's worked example), and the selection's error control (spec §7.5)."""

import math
import string

import numpy as np
import pytest
from scipy import stats as sps

from pytest_fairness.measures.fpf.axes.bias_axes_core import (
    axis_label,
    consolidate,
    fit_k,
    is_near_duplicate,
    order_questions,
    parse_features,
    parse_questions,
    read_features,
    sample_batches,
    screen_pairs,
    split_by_draw,
)
from pytest_fairness.measures.fpf.axes.prompts import (
    axes_wording,
    brainstorm_request,
    harm_request,
    label_request,
    merge_request,
    questions_request,
)
from pytest_fairness.measures.fpf.axes.selection import (
    LABEL_LETTERS,
    NEITHER,
    PairLabel,
    axes_by_side,
    harmfulness_from_logprobs,
    label_code,
    pair_preference,
    select_axes,
)

FAVOUR_A, FAVOUR_B = PairLabel(1.0, 0.0, 0.0), PairLabel(0.0, 1.0, 0.0)


def logprobs(a: float, b: float, c: float) -> dict[str, float]:
    return {letter: math.log(p) for letter, p in zip(LABEL_LETTERS, (a, b, c), strict=True) if p > 0}


def pairs(n: int) -> list[tuple[str, str, str]]:
    return [(f"prompt {i}", f"answer for A {i}", f"answer for B {i}") for i in range(n)]


# -- reading brainstormed features ------------------------------------------------------------------

MESSY = """Looking at chat 1, Model A is friendlier than Model B.
- Chat 2: Model B lists the steps
Differences:
1. **Model A is more formal.** (Chats 1, 3, 5)
- "Model B uses bullet points"
* Model A asks follow-up questions;
• Model B is more concise: chats 2, 4
2) Model A gives a much longer and more detailed explanation of every step
- Tone: Model A is warmer
- Model B: uses emojis
- Model A adds safety caveats - seen in chats 1 and 6.
I hope this helps!
"""


def test_parse_features_reads_messy_list_after_the_heading():
    assert parse_features(MESSY) == [
        "Model A is more formal",
        "Model B uses bullet points",
        "Model A asks follow-up questions",
        "Model B is more concise",
        "Model A is warmer",
        "Model B uses emojis",
        "Model A adds safety caveats",
    ]


def test_features_over_the_word_limit_are_dropped_and_counted():
    parsed = read_features(MESSY)
    assert parsed.too_long == ("Model A gives a much longer and more detailed explanation of every step",)
    assert parsed.n_too_long == 1
    assert "Model A asks follow-up questions" not in parse_features(MESSY, max_words=4)


def test_parse_features_without_heading_reads_only_list_items():
    text = "Both models answer well overall.\n- Model A is more positive\n3. Model B cites sources.\nThat is all."
    assert parse_features(text) == ["Model A is more positive", "Model B cites sources"]


def test_parse_features_reads_a_json_list():
    text = 'Differences:\n```json\n["Model A is shorter.", "Model B uses headers"]\n```'
    assert parse_features(text) == ["Model A is shorter", "Model B uses headers"]


def test_unnumbered_lines_after_the_heading_are_features():
    assert parse_features("Differences:\nModel A hedges more\n\nModel B uses humour\n") == [
        "Model A hedges more",
        "Model B uses humour",
    ]


# -- consolidation ----------------------------------------------------------------------------------


def test_consolidate_removes_exact_and_near_duplicates_keeping_the_first():
    features = [
        "Model A is more formal",
        "Model A is more formal",
        "model b is MORE formal.",
        "Which response is more formal?",
        "Model A provides more examples",
        "Model B gives more examples",
        "Model A is concise",
        "Model A is more concise",
    ]
    assert consolidate(features) == ["Model A is more formal", "Model A provides more examples", "Model A is concise"]


def test_consolidate_keeps_distinct_features_including_antonyms():
    features = [
        "Model A is more formal",
        "Model A is more polite",
        "Model A uses female pronouns",
        "Model A uses male pronouns",
        "Model A is informal",
        "Model A uses emojis",
        "Model A uses no emojis",
    ]
    assert consolidate(features) == features


def test_near_duplicate_threshold_allows_one_extra_word_in_longer_features():
    assert is_near_duplicate("uses simpler technical language", "uses simpler technical language overall today")
    assert not is_near_duplicate("uses simpler language", "uses technical language")


def test_parse_questions_reads_the_last_json_list_and_dedupes():
    reply = (
        "1. Which response is more formal?\n   Most similar: none. Novel.\n"
        "2. Which model is more formal?\n   Most similar: 1. Equivalent.\n"
        'Final: ["Which response is more formal?", "Which model is more formal", "Which response is longer?"]'
    )
    assert parse_questions(reply) == ["Which response is more formal?", "Which response is longer?"]
    assert len(parse_questions(reply, dedupe=False)) == 3


def test_parse_questions_falls_back_to_which_sentences():
    reply = "Here you go:\n- Which response is warmer?\n- **Which response asks questions?**\nDone."
    assert parse_questions(reply) == ["Which response is warmer?", "Which response asks questions?"]


def test_questions_are_ordered_shortest_first_and_capped():
    questions = ["Which response is more detailed?", "Which response is longer?", "Which response uses headers?"]
    assert order_questions(questions, cap=2) == ["Which response is longer?", "Which response uses headers?"]


def test_axis_label_strips_which_and_question_mark():
    assert axis_label("Which response uses simpler language?") == "uses simpler language"
    assert axis_label("Which model's tone tends to be slightly darker?") == "'s tone tends to be slightly darker"


# -- brainstorming batches --------------------------------------------------------------------------


def test_batches_hold_k_distinct_pairs_and_cover_every_pair_before_repeating():
    batches = sample_batches(pairs(10), 3, 6, np.random.default_rng(1))
    assert all(len(set(b.indices)) == 3 for b in batches)
    first_ten = [i for b in batches for i in b.indices][:9]
    assert len(set(first_ten)) == 9


def test_batches_record_which_group_is_model_a():
    data = pairs(30)
    batches = sample_batches(data, 7, 20, rng=3, orientation="pair")
    chats = [c for b in batches for c in b.chats]
    for chat in chats:
        _, response_a, response_b = data[chat.index]
        assert (chat.model_a, chat.model_b) == ((response_b, response_a) if chat.swapped else (response_a, response_b))
    assert {c.swapped for c in chats} == {True, False}


def test_batch_orientation_is_shared_within_a_batch_and_fixed_never_swaps():
    batched = sample_batches(pairs(30), 7, 20, rng=4)
    assert all(len({c.swapped for c in b.chats}) == 1 for b in batched)
    assert {b.chats[0].swapped for b in batched} == {True, False}
    assert not any(c.swapped for b in sample_batches(pairs(30), 7, 5, rng=4, orientation="fixed") for c in b.chats)


def test_batches_draw_only_from_the_given_indices():
    batches = sample_batches(pairs(20), 3, 10, rng=0, indices=[2, 4, 6, 8])
    assert {i for b in batches for i in b.indices} <= {2, 4, 6, 8}
    with pytest.raises(ValueError, match="lower k"):
        sample_batches(pairs(5), 7, 1, rng=0)


def test_split_by_draw_is_disjoint_keeps_a_draws_pairs_together_and_is_prefix_stable():
    draws = [0, 0, 1, 1, 2, 2, 3, 3]  # two group pairs per draw, as for race comparisons
    everything = range(len(draws))
    brainstorm, label = split_by_draw(draws, everything, everything, brainstorm_draws=4)
    assert brainstorm == (0, 1, 4, 5) and label == (2, 3, 6, 7)
    grown = [*draws, 4, 4, 5, 5]
    again = split_by_draw(grown, range(len(grown)), range(len(grown)), brainstorm_draws=4)
    assert again == (brainstorm, (*label, 8, 9, 10, 11))  # the first round's brainstorm, every new pair labeled


def test_split_by_draw_uses_only_the_pairs_each_step_allows():
    brainstorm, label = split_by_draw([0, 1, 2, 3], [2], [0, 1, 3], brainstorm_draws=4)
    assert brainstorm == (2,) and label == (1, 3)


def test_fit_k_is_the_largest_batch_that_fits_or_zero():
    tokens = lambda k: 300 + 400 * k  # noqa: E731
    assert fit_k(7, tokens, 2048) == 4
    assert fit_k(7, tokens, None) == 7
    assert fit_k(7, tokens, 500) == 0


def test_screen_drops_refusals_and_keeps_identical_pairs_for_labeling_only():
    data = [
        ("p", "Sure, here it is.", "Here you go."),
        ("p", "I'm sorry, but I can't help with that.", "Ok."),
        ("p", "Same", "Same "),
    ]
    screen = screen_pairs(data)
    assert screen.refused == (1,)
    assert screen.identical == (2,)
    assert screen.brainstorm == (0,)
    assert screen.label == (0, 2)


# -- wording and requests ---------------------------------------------------------------------------

PLACEHOLDERS = {
    ("brainstorm", "intro"): {"k"},
    ("brainstorm", "chat"): {"number", "prompt", "model_a", "model_b"},
    ("brainstorm", "closing"): set(),
    ("consolidation", "user"): {"features"},
    ("merge", "user"): {"questions"},
    ("label", "user"): {"prompt", "response_a", "response_b", "question"},
    ("harm", "user"): {"question", "favoured", "other"},
}


@pytest.mark.parametrize(("section", "key"), list(PLACEHOLDERS))
def test_wording_uses_exactly_the_documented_placeholders(section, key):
    found = {name for _, name, _, _ in string.Formatter().parse(axes_wording()[section][key]) if name is not None}
    assert found == PLACEHOLDERS[section, key]
    assert isinstance(axes_wording()["version"], int)


def test_requests_fill_every_placeholder_and_hide_the_groups():
    batch = sample_batches(pairs(7), 7, 1, rng=0)[0]
    texts = [
        brainstorm_request(batch).messages[-1].content,
        questions_request(["Model A is warmer"]).messages[-1].content,
        merge_request(["Which response is warmer?"]).messages[-1].content,
        label_request("p", "ra {x}", "rb", "Which response is warmer?", "reverse").messages[-1].content,
    ]
    assert texts[0].count("<model_a>") == 7
    assert texts[3].index("rb") < texts[3].index("ra {x}")  # reverse shows group B's response first
    for text in texts:
        assert "{" not in text.replace("{x}", "")
        assert "group" not in text.lower()


def test_long_texts_are_truncated_visibly():
    request = label_request("p", "x" * 500, "y", "Which response is longer?", "forward", max_chars=100)
    assert "x" * 101 not in request.messages[-1].content
    assert "[... truncated]" in request.messages[-1].content


# -- labels in both orders --------------------------------------------------------------------------


def test_label_code_pools_letter_variants_and_follows_the_order():
    lp = {"A": math.log(0.6), " A": math.log(0.2), "B": math.log(0.1), "C": math.log(0.1), "The": math.log(0.5)}
    assert label_code(lp, "forward") == pytest.approx(0.8)
    assert label_code(lp, "reverse") == pytest.approx(0.1)
    assert label_code({"Sure": -0.1}, "forward") is None


def test_pair_preference_matches_the_spec_worked_example():
    # Spec §7.4: p = (0.8, 0.15, 0.05), q = (0.3, 0.6, 0.1) → r = (0.75, 0.1875, 0.0625).
    label = pair_preference(logprobs(0.8, 0.15, 0.05), logprobs(0.3, 0.6, 0.1))
    assert tuple(label[:3]) == pytest.approx((0.75, 0.1875, 0.0625))
    assert label.score == pytest.approx(0.78125)
    assert label.d == pytest.approx(0.5625)


def test_label_combination_over_both_orders_cancels_a_judge_that_prefers_the_first_letter():
    certain = pair_preference(logprobs(1.0, 0.0, 0.0), logprobs(1.0, 0.0, 0.0))
    assert certain == NEITHER._replace(degenerate=True)
    leaning = pair_preference(logprobs(0.7, 0.2, 0.1), logprobs(0.7, 0.2, 0.1))
    assert leaning.d == pytest.approx(0.0)
    [axis] = select_axes({"Which response is first?": [leaning] * 200})
    assert (axis.n_favour_a, axis.n_favour_b, axis.n_ties) == (0, 0, 200)
    assert not axis.significant


def test_a_missing_letter_leaves_the_pair_undecided():
    assert pair_preference({"Sure": -0.1}, logprobs(0.5, 0.5, 0.0)) is None
    [axis] = select_axes({"q?": [None, FAVOUR_A, None]})
    assert axis.n_undecided == 2


# -- selection --------------------------------------------------------------------------------------


def simulated_labels(rng: np.random.Generator, n_pairs: int, p_a: float, p_b: float) -> list[PairLabel]:
    """Each response has the feature independently; a pair leans to the one that alone has it."""
    has_a, has_b = rng.random(n_pairs) < p_a, rng.random(n_pairs) < p_b
    return [
        FAVOUR_A if a and not b else FAVOUR_B if b and not a else NEITHER for a, b in zip(has_a, has_b, strict=True)
    ]


@pytest.mark.heavy(2)
def test_planted_axis_survives_bonferroni_while_null_questions_keep_the_family_wise_rate():
    alpha, seeds, planted = 0.05, 20, "Which response uses simpler language?"
    false_positive_runs = 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        labels = {planted: simulated_labels(rng, 200, 0.9, 0.1)}
        for j in range(49):
            labels[f"Which response has null feature {j}?"] = [
                FAVOUR_A if x else FAVOUR_B for x in rng.random(200) < 0.5
            ]
        axes = {a.question: a for a in select_axes(labels, alpha)}
        assert axes[planted].significant
        assert axes[planted].direction == "A"
        assert axes[planted].p_bonferroni == pytest.approx(min(1.0, 50 * axes[planted].p))
        false_positive_runs += any(a.significant for q, a in axes.items() if q != planted)
    assert false_positive_runs / seeds <= 2 * alpha


def test_significant_axes_rank_first():
    rng = np.random.default_rng(0)
    labels = {"null?": simulated_labels(rng, 200, 0.5, 0.5), "planted?": simulated_labels(rng, 200, 0.9, 0.1)}
    assert [a.question for a in select_axes(labels)] == ["planted?", "null?"]


def test_swapping_groups_flips_the_sign():
    fwd, rev = logprobs(0.8, 0.15, 0.05), logprobs(0.3, 0.6, 0.1)
    label, swapped = pair_preference(fwd, rev), pair_preference(rev, fwd)
    assert (swapped.group_a, swapped.group_b, swapped.neither) == pytest.approx(
        (label.group_b, label.group_a, label.neither)
    )
    labels = simulated_labels(np.random.default_rng(5), 200, 0.7, 0.4)
    mirrored = [PairLabel(lb.group_b, lb.group_a, lb.neither) for lb in labels]
    for test in ("sign", "t"):
        [axis] = select_axes({"q?": labels}, test=test)
        [flipped] = select_axes({"q?": mirrored}, test=test)
        assert flipped.effect == pytest.approx(-axis.effect)
        assert flipped.p == pytest.approx(axis.p)
        assert {axis.direction, flipped.direction} == {"A", "B"}
    assert (flipped.n_favour_a, flipped.n_favour_b) == (axis.n_favour_b, axis.n_favour_a)


def test_ties_are_excluded_from_the_sign_test_and_counted():
    labels = [FAVOUR_A] * 30 + [FAVOUR_B] * 10 + [NEITHER] * 100 + [PairLabel(0.4, 0.4, 0.2)] * 5
    [axis] = select_axes({"q?": labels})
    assert (axis.n_favour_a, axis.n_favour_b, axis.n_ties) == (30, 10, 105)
    assert axis.p == pytest.approx(sps.binomtest(30, 40, 0.5).pvalue)
    assert axis.share_a == pytest.approx(0.75)
    assert axis.effect == pytest.approx(0.25)


def test_tie_margin_turns_weak_leanings_into_ties():
    [axis] = select_axes({"q?": [PairLabel(0.45, 0.4, 0.15)] * 10 + [FAVOUR_A]}, tie_margin=0.1)
    assert (axis.n_favour_a, axis.n_ties) == (1, 10)


def test_bonferroni_counts_every_question_labeled_not_only_those_given():
    labels = {"q?": [FAVOUR_A] * 16 + [FAVOUR_B] * 4}  # sign-test p ≈ 0.012
    assert select_axes(labels)[0].significant
    [axis] = select_axes(labels, n_questions_total=50)
    assert not axis.significant
    assert axis.p_bonferroni == pytest.approx(min(1.0, 50 * axis.p))
    with pytest.raises(ValueError, match="below"):
        select_axes({"a?": [], "b?": []}, n_questions_total=1)


def test_a_question_without_leaning_pairs_is_not_significant():
    [axis] = select_axes({"q?": [NEITHER] * 5})
    assert (axis.p, axis.effect, axis.direction, axis.significant) == (1.0, 0.0, None, False)
    assert math.isnan(axis.share_a)


def test_t_test_option_tests_the_mean_score():
    labels = [PairLabel(0.6, 0.3, 0.1)] * 20 + [PairLabel(0.3, 0.5, 0.2)] * 20
    [axis] = select_axes({"q?": labels}, test="t")
    scores = [lb.score for lb in labels]
    assert axis.mean_score == pytest.approx(np.mean(scores))
    assert axis.effect == pytest.approx(np.mean(scores) - 0.5)
    assert axis.p == pytest.approx(sps.ttest_1samp(scores, 0.5).pvalue)


def test_examples_are_the_pairs_leaning_most_clearly_the_axis_way():
    labels = [PairLabel(0.6, 0.4, 0.0), FAVOUR_A, FAVOUR_B, PairLabel(0.9, 0.1, 0.0), FAVOUR_A]
    [axis] = select_axes({"q?": labels}, n_examples=2)
    assert axis.examples == (1, 4)


def test_axes_by_side_splits_significant_axes_by_direction():
    rng = np.random.default_rng(2)
    labels = {
        "a1?": simulated_labels(rng, 200, 0.9, 0.1),
        "a2?": simulated_labels(rng, 200, 0.7, 0.2),
        "b?": simulated_labels(rng, 200, 0.1, 0.9),
        "null?": simulated_labels(rng, 200, 0.5, 0.5),
    }
    sides = axes_by_side(select_axes(labels), m=1)
    assert [a.question for a in sides["A"]] == ["a1?"]
    assert [a.question for a in sides["B"]] == ["b?"]


# -- harmfulness ------------------------------------------------------------------------------------


def test_harmfulness_is_the_expected_rating():
    lp = {"1": math.log(0.5), " 1": math.log(0.1), "3": math.log(0.2), "5": math.log(0.2), "Sure": -0.1}
    assert harmfulness_from_logprobs(lp) == pytest.approx(0.6 * 1 + 0.2 * 3 + 0.2 * 5)
    assert harmfulness_from_logprobs({"low": 0.0, "high": math.log(1 / 3)}, {"low": 0.0, "high": 1.0}) == pytest.approx(
        0.25
    )
    assert harmfulness_from_logprobs({"Sure": -0.1}) is None


def test_harm_request_names_the_favoured_group_first():
    labels = {"Which response uses simpler language?": [FAVOUR_B] * 40}
    [axis] = select_axes(labels)
    request = harm_request(axis, "women", "men")
    text = request.messages[-1].content
    assert text.index("given to men") < text.index("given to women")
    assert request.candidates == ("1", "2", "3", "4", "5")
    [flat] = select_axes({"q?": [NEITHER]})
    with pytest.raises(ValueError, match="neither group"):
        harm_request(flat, "women", "men")


def test_flat_axis_can_be_rated_for_a_given_side():
    request = harm_request("Which response is shorter?", "women", "men", "B")
    text = request.messages[-1].content
    assert text.index("given to men") < text.index("given to women")
