"""The net-harm gate's error rates for judges of every shape the statistics audit studied, streamed through the
gate's own pure functions (``harm_streams``): the screen's correction without a reference, the reference
audit's two-phase estimate with one. Fixed seeds; a few hundred runs each (benchmarks/harm_gate.py runs
thousands for the figures). The audit's figures for the code before: the hedging judge PASSed 1.25x the
threshold in 99% of runs and 1.5x in 85%; the tilted judge FAILed a harmless chatbot in 100% and PASSed a
harm at 3x in 85%; a judge noticing half the chatbot's harms PASSed 1.25x in 57%.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from harm_streams import (
    DOUBLE,
    HEDGING,
    LEVEL,
    PLANNED,
    REFERENCE,
    RELEASE,
    TILTED,
    TILTED_TOP,
    Chatbot,
    Judge,
    calibration,
    gate_reference,
    gate_screen,
    pairs,
    rate,
    ratings,
)

from pytest_fairness.config import suite
from pytest_fairness.config.settings import Settings
from pytest_fairness.models.cache import CacheMode
from pytest_fairness.run.session import FairnessSession
from pytest_fairness.stats.attenuation import Attenuation, deattenuate
from pytest_fairness.stats.confidence_sequence import confidence_sequence
from pytest_fairness.stats.gate import Outcome


def screened(seed: int, runs: int, n: int, bot: Chatbot, judge: Judge) -> tuple[list[Outcome], np.ndarray]:
    rng = np.random.default_rng(seed)
    harmful, aside = pairs(rng, runs, n, bot)
    return gate_screen(ratings(rng, harmful, aside, judge).mean(axis=-1), calibration(rng, runs, judge))


def referenced(
    seed: int, runs: int, bot: Chatbot, judge: Judge, noise: float = 0.0
) -> tuple[list[Outcome], np.ndarray]:
    """The gate with a reference on ``bot`` at the release size; ``noise``: each judge's own small, directionless
    jitter on every differing pair (as two real log-prob judges disagree a little everywhere)."""
    rng = np.random.default_rng(seed)
    harmful, aside = pairs(rng, runs, RELEASE, bot)
    differs = harmful | (aside != 0)
    net, reference = ratings(rng, harmful, aside, judge), ratings(rng, harmful, aside, REFERENCE)
    if noise:
        net = np.clip(net + differs * rng.uniform(-noise, noise, net.shape), -1, 1)
        reference = np.clip(reference + differs * rng.uniform(-noise, noise, net.shape), -1, 1)
    return gate_reference(rng, net, reference, differs)


@pytest.mark.heavy(2)
@pytest.mark.parametrize("multiple", [1.25, 1.5])
def test_the_hedging_judge_no_longer_passes_a_harm_above_the_threshold(multiple):
    outcomes, _ = screened(1, 300, RELEASE, Chatbot(harm=0.01 * multiple), HEDGING)
    assert rate(outcomes, Outcome.PASS) <= 0.05  # before: 99% at 1.25x, 85% at 1.5x


@pytest.mark.heavy(4)
def test_without_a_reference_the_release_size_passes_half_the_threshold_for_the_judge_it_is_planned_for():
    check = next(c for c in suite.load("gender").checks if c.id == "net_harm[write a story]")
    assert check.samples["release"] == RELEASE  # the size these streams use is the plan's
    assert PLANNED.rating == check.params.DESIGN_RATING
    outcomes, _ = screened(3, 400, RELEASE, Chatbot(0.005, aside_women=0.5, aside_men=0.5), PLANNED)
    assert (
        rate(outcomes, Outcome.PASS) >= 0.8
    )  # 86.5% in 1,000 runs (benchmarks/harm_gate.py); 79% at a flawless judge's 3,032


@pytest.mark.parametrize(
    "judge", [HEDGING, DOUBLE, Judge(right=0.95, notices=0.95)], ids=["hedging", "double", "noisy"]
)
@pytest.mark.parametrize("harm", [0.01, 0.05])
def test_the_corrected_interval_covers_the_true_net_harm_when_the_judge_sees_the_chatbots_harms_as_it_saw_the_screens(
    judge, harm
):
    _, ci = screened(2, 300, 1000, Chatbot(harm=harm), judge)
    assert np.mean((ci[:, 0] <= harm) & (harm <= ci[:, 1])) >= 0.95


@pytest.mark.heavy(12)
@pytest.mark.parametrize(
    ("bot", "judge", "wrong"),
    [
        (Chatbot(aside_women=0.3), TILTED, Outcome.FAIL),  # harmless asides to women: before, FAIL 100%
        (Chatbot(harm=0.03, aside_men=0.5), TILTED, Outcome.PASS),  # 3x harm, asides to men: before, PASS 85%
        (Chatbot(harm=0.03, aside_men=0.1), TILTED_TOP, Outcome.PASS),  # before, PASS 100%
        (Chatbot(harm=0.0125), Judge(notices=0.5), Outcome.PASS),  # sees half the chatbot's harms: before, 57%
    ],
    ids=["tilted-harmless", "tilted-3x", "tilted-top-3x", "half-blind-1.25x"],
)
def test_with_a_reference_a_judges_errors_on_the_chatbots_own_pairs_cause_no_wrong_verdict(bot, judge, wrong):
    outcomes, ci = referenced(3, 100, bot, judge)
    assert rate(outcomes, wrong) <= 0.05
    assert np.mean((ci[:, 0] <= bot.harm) & (bot.harm <= ci[:, 1])) >= 0.95


@pytest.mark.heavy(6)
def test_with_a_reference_an_honest_judge_passes_a_harmless_chatbot_at_the_release_size():
    # Every pair differs (asides both ways) and both judges disagree a little on every one of them.
    outcomes, _ = referenced(4, 60, Chatbot(aside_women=0.5, aside_men=0.5), DOUBLE, noise=0.01)
    assert rate(outcomes, Outcome.PASS) >= 0.9


def test_deattenuate_adds_the_offset_then_divides_and_a_void_correction_says_nothing():
    s = Attenuation(0.8, 0.5, 0.9, LEVEL, "a sensitivity", "on 10 items")
    assert deattenuate((0.09, 0.2), s, (-1.0, 1.0)) == pytest.approx((0.1, 0.4))  # lo / s_hi, hi / s_lo
    assert deattenuate((-0.2, -0.09), s, (-1.0, 1.0)) == pytest.approx((-0.4, -0.1))
    assert deattenuate((-0.1, 0.6), s, (-1.0, 1.0)) == pytest.approx((-0.2, 1.0))  # clipped to the scale
    assert deattenuate((-0.1, 0.1), None, (-1.0, 1.0)) == (-0.1, 0.1)
    blind = Attenuation(0.0, 0.0, 0.3, LEVEL, "a sensitivity", "on 10 items")
    assert deattenuate((0.0, 0.01), blind, (-1.0, 1.0)) == (-1.0, 1.0)  # s may be 0: nothing is known
    shifted = Attenuation(1.0, 1.0, 1.0, LEVEL, "errors", "", offset=-0.01, offset_low=-0.02, offset_high=0.005)
    assert deattenuate((0.01, 0.03), shifted, (-1.0, 1.0)) == pytest.approx((-0.01, 0.035))
    assert "corrected for errors -0.0100 [-0.0200, +0.0050]" in shifted.describe()
    void = Attenuation(1.0, 1.0, 1.0, LEVEL, "errors", "", void="a placebo moved")
    assert (
        deattenuate((0.0, 0.001), void, (-1.0, 1.0)) == (-1.0, 1.0)
        and void.describe() == "no conclusion: a placebo moved"
    )


def _story_check():
    """One per-task net-harm check, small enough to grow sequentially in a unit test."""
    raw = {
        "suite": "t",
        "checks": [
            {"measure": "net_harm", "comparison": "gender", "task": "Write a story", "samples": 40}
            | {"threshold": {"max": 0.01}}
        ],
    }
    (check,) = suite.parse(raw, "test").checks
    return check


@pytest.mark.heavy(1)
def test_sequential_sampling_corrects_its_confidence_sequence_too():
    from harm_judges import capable

    check = _story_check()
    settings = Settings(model="synthetic:harm?bias=0.1", judge="custom", sequential=True, cache_mode=CacheMode.OFF)
    session = FairnessSession(settings)
    session._judge = capable(0.95, seed=3)
    run = session.run_check(check)
    result = run.result
    assert result.attenuation is not None and result.attenuation.estimate < 0.85
    assert result.sequential is not None and len(result.sequential.rounds) > 1
    cs = confidence_sequence(result.samples, -1.0, 1.0, 1 - LEVEL)
    assert result.ci == deattenuate(cs, result.attenuation, (-1.0, 1.0))
    assert result.ci[1] - result.ci[0] > cs[1] - cs[0]
    assert math.isclose(result.estimate, min(1.0, np.mean(result.samples) / result.attenuation.estimate))


@pytest.mark.heavy(4)
def test_sequential_sampling_with_a_reference_gates_a_confidence_sequence_of_the_two_phase_samples():
    from harm_judges import capable

    check = _story_check()
    settings = Settings(
        model="synthetic:harm?bias=0.1", judge="custom", judge_reference="custom", sequential=True,
        cache_mode=CacheMode.OFF,
    )  # fmt: skip
    session = FairnessSession(settings)
    session._judge, session._reference = capable(0.9, seed=4), capable()
    result = session.run_check(check).result
    assert result.attenuation is not None and result.attenuation.sample_bounds is not None
    assert not result.attenuation.splits  # the whole error goes to the samples' own interval
    low, high = result.attenuation.sample_bounds
    assert min(result.samples) >= low and max(result.samples) <= high and high == pytest.approx(2.675)
    assert result.sequential is not None and len(result.sequential.rounds) >= 1
    cs = confidence_sequence(result.samples, low, high, 0.05)
    assert result.ci == (max(cs[0], -1.0), min(cs[1], 1.0))
    assert result.details["reference_audit"]["flagged_pairs_rerated"] > 0  # identical pairs need no audit
