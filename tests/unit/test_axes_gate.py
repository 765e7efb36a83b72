"""The Bias Enumeration gate's estimand, the net prevalence of a harmful difference, and its error rates at
the release size, with the double's judge labels streamed through the pure core (``net_prevalence.evaluate``).

Rates are asserted on fixed seeds; ``benchmarks/net_prevalence.py stream 500`` repeats them with more runs."""

import math

import numpy as np
import pytest

from pytest_fairness.config import suite
from pytest_fairness.measures.fpf import planted_chatbot
from pytest_fairness.measures.fpf.axes import net_prevalence
from pytest_fairness.measures.fpf.axes.selection import NEITHER, PairLabel, select_axes
from pytest_fairness.stats.gate import Outcome, decide
from pytest_fairness.stats.intervals import proportion_interval
from pytest_fairness.testing import axes_streams
from pytest_fairness.testing.axes_streams import Question

TWIST = planted_chatbot.SHORT_QUESTION
(CHECK,) = suite.load("axes").checks
GATE = CHECK.threshold
RELEASE_PAIRS = CHECK.samples["release"] // 2  # the odd prompt draws are held out
RUNS = 30


def outcomes(questions: dict[str, Question], n: int, runs: int = RUNS, seed: int = 0, **kw) -> list[Outcome]:
    rng = np.random.default_rng(seed)
    return [decide(axes_streams.gate(questions, n, rng, **kw).value.interval, GATE) for _ in range(runs)]


# -- the estimand -----------------------------------------------------------------------------------


def test_the_net_prevalence_is_two_s_q_minus_one_of_the_papers_statistic():
    labels = [PairLabel(0.9, 0.05, 0.05), NEITHER, PairLabel(0.2, 0.5, 0.3), NEITHER, None]
    net = net_prevalence.net_prevalence(labels, 0.95)
    (axis,) = select_axes({"q?": labels})
    assert net.estimate == pytest.approx(2 * axis.mean_score - 1) == pytest.approx((0.85 - 0.3) / 4)
    assert net.n == 4 and net.n_undecided == 1  # an undecided pair is left out and counted
    assert net.interval[0] < net.estimate < net.interval[1]


def test_a_pair_the_judge_cannot_tell_apart_counts_zero_whether_it_guesses_or_says_neither():
    guesses = [PairLabel(0.5, 0.2, 0.3), PairLabel(0.2, 0.5, 0.3)] * 50
    assert net_prevalence.net_prevalence(guesses, 0.95).estimate == pytest.approx(0.0)
    assert net_prevalence.net_prevalence([NEITHER] * 100, 0.95).estimate == 0.0


def test_without_a_decided_pair_the_interval_is_the_whole_scale():
    net = net_prevalence.net_prevalence([None, None], 0.95)
    assert math.isnan(net.estimate) and net.interval == (-1.0, 1.0) and net.magnitude_interval == (0.0, 1.0)


def test_the_magnitude_folds_the_interval_at_zero():
    assert net_prevalence.fold((0.1, 0.3)) == (0.1, 0.3) and net_prevalence.fold((-0.3, -0.1)) == (0.1, 0.3)
    assert net_prevalence.fold((-0.1, 0.3)) == (0.0, 0.3) and net_prevalence.fold((-0.4, 0.2)) == (0.0, 0.4)


def test_questions_rated_within_half_a_step_below_the_mark_bound_a_pass_but_cannot_fail_it():
    ratings = {"harmful?": (3.0, 1.0), "near?": (1.0, 2.6), "mild?": (2.4, 2.4), "unread?": (None, None)}
    assert net_prevalence.gated(ratings, 3.0) == (("harmful?",), ("near?",))
    nets = {
        "harmful?": net_prevalence.Net(0.01, (-0.01, 0.03), 500, 0, 0.3),
        "near?": net_prevalence.Net(0.3, (0.25, 0.35), 500, 0, 0.3),
    }
    value = net_prevalence.largest_net(nets, net_prevalence.Gated(("harmful?",), ("near?",)), search_shown=True)
    assert value.interval == (0.0, 0.35) and value.question == "harmful?" and value.bounded_by == "near?"
    assert decide(value.interval, GATE) is Outcome.INCONCLUSIVE  # neither a PASS nor a FAIL


def test_without_a_search_shown_to_find_planted_differences_the_upper_end_is_the_scales():
    nets = {
        "a?": net_prevalence.Net(0.01, (0.0, 0.02), 9, 0, 0.1),
        "b?": net_prevalence.Net(0.5, (0.4, 0.6), 9, 0, 0.1),
    }
    assert net_prevalence.largest_net(nets, net_prevalence.Gated(("a?",), ()), search_shown=False).interval == (
        0.0,
        1.0,
    )
    clear = net_prevalence.largest_net(nets, net_prevalence.Gated(("b?",), ()), search_shown=False)
    assert clear.interval == (0.4, 1.0)  # a clear harmful difference still fails
    for shown in (True, False):  # nothing gated is never a [0, 0]
        assert net_prevalence.largest_net(nets, net_prevalence.Gated((), ()), search_shown=shown).interval == (0.0, 1.0)


def test_the_intervals_are_bonferroni_over_the_gated_questions_only():
    labels = {f"q{i}?": [PairLabel(0.5, 0.2, 0.3)] * 30 for i in range(5)}
    ratings = {q: ((4.0, 4.0) if q in ("q0?", "q1?") else (1.0, 1.0)) for q in labels}
    gate = net_prevalence.evaluate(labels, ratings, 3.0, 0.95, search_shown=True)
    alone = net_prevalence.net_prevalence(labels["q0?"], 1 - 0.05 / 2)
    assert gate.nets["q0?"].interval == alone.interval and gate.nets["q4?"].interval == alone.interval


@pytest.mark.heavy(1)
@pytest.mark.parametrize("absent", ["guess", "sure-guess", "neither"])
def test_each_interval_covers_the_true_net_prevalence_whatever_the_judge_does_on_other_pairs(absent):
    # A difference in 10% of group A's answers, seen by a judge 90% sure of it: net 0.085. 300 runs of 60
    # pairs at 90% confidence: at most 10% may miss.
    rng = np.random.default_rng(3)
    truth = 0.1 * axes_streams.TOWARDS_A.d
    misses = 0
    for _ in range(300):
        labels = axes_streams.labels(Question(0.1, absent), 60, 0.25, rng)
        lo, hi = net_prevalence.net_prevalence(labels, 0.9).interval
        misses += not lo <= truth <= hi
    assert proportion_interval(misses, 300, 0.9)[0] <= 0.1


# -- error rates at the release size (issue 35's "must show") ----------------------------------------


def test_the_axes_suites_release_size_holds_out_enough_pairs_for_its_design_truths():
    assert CHECK.params.design_truths(GATE) == (0.0, 2 * GATE.max)
    assert 1500 <= RELEASE_PAIRS <= 2500  # 3,799 prompts at SD 0.3 over 13 gated questions


@pytest.mark.heavy(3)
def test_a_fair_chatbot_passes_at_the_release_size():
    # Twelve canary questions, none of them a real difference; the judge guesses softly (d = ±0.3).
    results = outcomes(axes_streams.canary_questions(), RELEASE_PAIRS)
    assert results.count(Outcome.PASS) >= 0.8 * RUNS  # 30/30 on this seed
    assert results.count(Outcome.FAIL) == 0


@pytest.mark.heavy(2)
def test_a_judge_answering_neither_for_absent_differences_passes_a_fair_chatbot():
    # The old gate could never pass with such a judge: the canary questions had no leaning pair.
    assert outcomes(axes_streams.canary_questions("neither"), RELEASE_PAIRS, runs=20).count(Outcome.PASS) == 20
    assert outcomes(axes_streams.canary_questions("neither"), 300, runs=20).count(Outcome.PASS) == 20


@pytest.mark.heavy(3)
def test_a_found_harmful_twist_at_twice_the_threshold_fails_at_the_release_size():
    questions = {
        **axes_streams.canary_questions(),
        TWIST: Question(2 * GATE.max / axes_streams.TOWARDS_A.d, "neither", 3.0),
    }
    assert outcomes(questions, RELEASE_PAIRS).count(Outcome.FAIL) >= 0.8 * RUNS  # 30/30 on this seed


@pytest.mark.heavy(4)
@pytest.mark.parametrize("prevalence", [0.06, 0.10])
@pytest.mark.parametrize("absent", ["sure-guess", "neither"])
def test_a_found_harmful_twist_in_6_or_10_percent_of_answers_never_passes(prevalence, absent):
    # The old gate passed 62% of runs at 6% when the judge guessed on pairs without the twist: its lean was
    # about the prevalence. The net prevalence is 0.051 / 0.085 whatever the judge guesses, above 0.04.
    questions = {**axes_streams.canary_questions(), TWIST: Question(prevalence, absent, 3.0)}
    assert outcomes(questions, 900, runs=30).count(Outcome.PASS) == 0


@pytest.mark.heavy(2)
def test_a_judge_that_guesses_as_surely_as_it_sees_needs_more_than_the_release_size():
    # d = ±0.85 on every pair without the difference, far above the assumed spread (0.3): about 8 times the
    # pairs (benchmarks/net_prevalence.py stream). Such a run is inconclusive, never a wrong FAIL.
    results = outcomes(axes_streams.canary_questions("sure-guess"), RELEASE_PAIRS, runs=10)
    assert results.count(Outcome.INCONCLUSIVE) == 10
