"""The replay check's rule, draw and comparison: a change touching 5% of a model's cached answers is caught with
99% probability, simulated through the check's own draw with Clopper–Pearson intervals."""

import pytest

from pytest_fairness.models.interface import ChatResponse, LogprobResponse
from pytest_fairness.run.replay_check import LOGPROB_TOLERANCE, difference
from pytest_fairness.stats import spot_check
from pytest_fairness.testing.spot_check_trials import detection_rates


def test_the_rule_sizes_the_draw_and_every_answer_is_asked_when_there_are_no_more():
    assert spot_check.sample_size(0.05, 0.99) == 90  # ln(0.01) / ln(0.95) = 89.8
    assert spot_check.sample_size(0.01, 0.99) == 459
    assert spot_check.draw(60, 90, seed=3) == list(range(60)) and spot_check.missable(60) == 0
    drawn = spot_check.draw(3777, 90, seed=3)
    assert drawn == spot_check.draw(3777, 90, seed=3) != spot_check.draw(3777, 90, seed=4)
    assert len(set(drawn)) == 90 and drawn == sorted(drawn)
    assert spot_check.missable(3777) == 188  # ceil(0.05 × 3777) - 1


def test_the_exact_chance_meets_the_rule_at_any_population():
    for population in (91, 303, 1212, 3777, 40_000):
        at_share = spot_check.detection_chance(round(0.05 * population + 0.5), population, 90)
        assert at_share >= 0.99, population


def test_what_an_unseen_change_could_move_is_bounded_by_the_items_it_touches():
    assert spot_check.estimate_shift(14, 100, 2.0) == pytest.approx(0.28)
    assert spot_check.estimate_shift(188, 100, 2.0) == 2.0  # it could touch every item
    assert spot_check.estimate_shift(5, 100, None) is None


def test_the_simulated_detection_rate_reaches_99_percent_from_a_5_percent_change():
    rates = {d.share: d for d in detection_rates(3777, (0.005, 0.01, 0.02, 0.05, 0.10), trials=2000, seed=1)}
    for share, found in rates.items():
        low, high = found.rate.interval
        assert low <= found.exact <= high, (share, found)  # the simulation agrees with the hypergeometric chance
    assert rates[0.05].rate.interval[1] >= 0.99 and rates[0.05].rate.value >= 0.985
    assert rates[0.10].rate.value >= 0.999
    assert rates[0.01].rate.interval[1] < 0.7  # a 1% change is often missed: what the PASS claim bounds


def test_answers_are_compared_exactly_and_log_probs_within_the_tolerance():
    assert difference({"text": "career - man"}, ChatResponse("career - man")) == ""
    assert "is now" in difference({"text": "career - man"}, ChatResponse("career - woman"))
    cached = {"logprobs": {" he": -0.40, " she": -1.10}}
    close = LogprobResponse({" he": -0.40 + LOGPROB_TOLERANCE / 2, " she": -1.10})
    far = LogprobResponse({" he": -0.40 + 3 * LOGPROB_TOLERANCE, " she": -1.10})
    assert difference(cached, close) == "" and "log-prob of ' he' -0.400 is now" in difference(cached, far)
    assert "log-probs of" in difference(cached, LogprobResponse({" he": -0.4}))
