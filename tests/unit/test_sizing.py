"""Sizing checks: the release profile, the plan's chance to decide, what would decide an inconclusive
check, and when a model cannot serve a measure. Runs use the synthetic double with fixed seeds."""

from __future__ import annotations

import dataclasses
import math

import pytest

from pytest_fairness.config import suite
from pytest_fairness.config.settings import Settings
from pytest_fairness.measures import MEASURES, sizing
from pytest_fairness.measures.params import MAX_SAMPLES
from pytest_fairness.models.cache import CacheMode
from pytest_fairness.records.measure_result import MeasureResult
from pytest_fairness.run.session import FairnessSession
from pytest_fairness.stats.attenuation import deattenuated_summary
from pytest_fairness.stats.gate import Outcome, Threshold
from pytest_fairness.stats.intervals import summarize

#: Every built-in suite: a new one is sized without a line here.
SUITES = tuple(suite.builtin_suites())


def _builtin_checks() -> list[suite.Check]:
    return [check for name in SUITES for check in suite.load(name).checks]


def _check(measure: str, subject: str, threshold: dict[str, float], samples: object = None, **more: object):
    entry: dict[str, object] = {"measure": measure, MEASURES[measure].subject: subject, "threshold": threshold, **more}
    if samples is not None:
        entry["samples"] = samples
    return suite.parse({"suite": "t", "checks": [entry]}, "t.yaml").checks[0]


def _session(model: str, seed: int = 0) -> FairnessSession:
    return FairnessSession(Settings(model=model, seed=seed, cache_mode=CacheMode.OFF))


@pytest.mark.parametrize("check", _builtin_checks(), ids=lambda c: f"{c.suite}::{c.id}")
def test_the_release_profile_is_at_least_the_paper_profile_and_within_the_inputs(check: suite.Check) -> None:
    release = check.samples["release"]
    available = check.params.available_samples()
    assert release >= min(check.samples["paper"], available or MAX_SAMPLES)
    assert release <= MAX_SAMPLES and (available is None or release <= available)


@pytest.mark.parametrize("check", _builtin_checks(), ids=lambda c: f"{c.suite}::{c.id}")
def test_the_release_size_decides_at_the_design_truths_with_80_percent(check: suite.Check) -> None:
    params = check.params_for("release")
    power = sizing.power_at(params, params.sample_size, check.threshold, 0.95)
    if power.chance is None:  # no assumed spread (Bias Enumeration): nothing to promise
        assert params.assumed_sd(0.1) is None and check.samples["release"] == params.default_size("release")
        return
    assert power.chance >= 0.8  # every built-in threshold is within reach of its inputs
    assert power.truths == params.design_truths(check.threshold) and power.n == check.samples["release"]
    assert power.usable_rate == params.EXPECTED_USABLE


def test_decisions_are_sized_at_the_unbiased_share_and_a_clearly_biased_one_in_usable_answers() -> None:
    check = _check("decision_bias", "career", {"max": 0.7})
    assert check.params.design_truths(check.threshold) == (0.5, 0.85)
    assert 0.75 < check.params.EXPECTED_USABLE < 0.85  # the paper's rejection rate, about a fifth
    all_usable = dataclasses.replace(check.params)
    object.__setattr__(all_usable, "EXPECTED_USABLE", 1.0)  # the same check on a model that always decides
    usable_size = sizing.release_size(all_usable, check.threshold)
    assert usable_size > check.samples["paper"]  # 50 prompts decide 0.85 against 0.7 too rarely
    assert check.samples["release"] >= usable_size / check.params.EXPECTED_USABLE - 3


@dataclasses.dataclass(frozen=True)
class _StricterImplicit(type(_check("implicit_bias", "career", {"max": 0.2}).params)):  # type: ignore[misc]
    def design_truths(self, threshold: Threshold) -> tuple[float, ...]:
        return (0.15, 0.25)  # closer to the threshold than half and twice it


def test_a_measure_that_declares_its_own_design_truths_is_sized_and_planned_at_them() -> None:
    check = _check("implicit_bias", "career", {"max": 0.2})
    stricter = _StricterImplicit(**dataclasses.asdict(check.params))
    assert sizing.release_size(stricter, check.threshold) > check.samples["release"]
    power = sizing.power_at(stricter, check.samples["release"], check.threshold, 0.95)
    assert power.truths == (0.15, 0.25) and power.chance < 0.8


def test_pcf_release_is_capped_by_the_257_occupations() -> None:
    strict = _check("pcf", "gender", {"max": 5}, risk="caprice")
    assert strict.params.available_samples() == 257
    assert strict.samples["release"] == 257
    assert sizing.power_at(strict.params, 257, strict.threshold, 0.95).chance < 0.8  # too few to decide: capped


def test_release_is_capped_by_the_suite_limit() -> None:
    check = _check("net_harm", "gender", {"max": 0.00005})
    assert check.samples["release"] == MAX_SAMPLES
    assert sizing.power_at(check.params, MAX_SAMPLES, check.threshold, 0.95).needed is None


def test_a_measure_without_an_assumed_spread_gets_its_default_release_size() -> None:
    check = _check("implicit_bias", "career", {"max": 0.2})
    object.__setattr__(check.params, "SPREAD", None)  # as a measure that assumes no spread
    assert sizing.release_size(check.params, check.threshold) == check.params.default_size("release")
    assert check.params.default_size("release") == check.samples["paper"]


def test_bias_axes_is_sized_for_every_gated_question_on_the_held_out_half_of_its_prompts() -> None:
    # Each of 13 gated questions must clear -0.04 <= E[d] <= 0.04 at 1 - 0.05/13 for a PASS, from half the
    # prompts: twice the prompts a single mean of every prompt would need, and more than a looser family.
    (check,) = suite.load("axes").checks
    params, threshold = check.params, check.threshold
    shape = params.gate_shape(threshold, 0.95)
    assert shape.means == 13 and shape.share == 0.5 and shape.threshold == Threshold(-0.04, 0.04)
    assert shape.confidence == pytest.approx(1 - 0.05 / 13)
    power = sizing.power_at(params, check.samples["release"], threshold, 0.95)
    assert power.truths == (0.0, 0.08) and power.chance >= 0.8
    assert sizing.power_at(params, check.samples["release"] // 2, threshold, 0.95).chance < 0.5
    race = _check("bias_axes", "black", {"max": 0.04})  # two pairs a prompt: half the prompts
    assert race.params.gate_shape(threshold, 0.95).share == 1.0
    assert abs(race.samples["release"] - check.samples["release"] / 2) <= 2


def test_a_threshold_at_zero_gets_the_default_release_size() -> None:
    check = _check("implicit_bias", "career", {"max": 0.0})
    assert check.samples["release"] == check.params.default_size("release")
    assert _check("implicit_bias", "career", {"max": 0.2}).samples["release"] > check.samples["release"]


def test_a_suites_own_release_size_is_kept() -> None:
    assert _check("implicit_bias", "career", {"max": 0.2}, samples={"release": 123}).samples["release"] == 123
    assert _check("implicit_bias", "career", {"max": 0.2}, samples=40).samples["release"] == 40


def test_a_stricter_threshold_needs_a_larger_release() -> None:
    sizes = [_check("implicit_bias", "career", {"max": t}).samples["release"] for t in (0.4, 0.2, 0.1)]
    assert sizes[0] < sizes[1] < sizes[2]


def test_more_samples_for_an_inconclusive_check_decide_it_on_a_rerun() -> None:
    # A planted implicit score of about 0.1 against a 0.2 bar: 20 iterations cannot tell.
    session = _session("synthetic:iat?bias=0.1")
    run = session.run_check(_check("implicit_bias", "career", {"max": 0.2}, samples=20))
    assert run.outcome is Outcome.INCONCLUSIVE
    hint = run.result.to_decide
    assert hint is not None and hint.more is not None and hint.needed is not None
    assert hint.more > 0 and hint.needed == 20 + hint.more
    assert "about" in sizing.more_samples_text(hint) and f"{hint.needed} in all" in sizing.more_samples_text(hint)
    rerun = session.run_check(_check("implicit_bias", "career", {"max": 0.2}, samples=hint.needed))
    assert rerun.outcome is Outcome.PASS


def _result(samples: list[float], unusable: int = 0) -> MeasureResult:
    summary = summarize(samples, interval="bounded", bounds=(-1.0, 1.0))
    return MeasureResult("implicit_bias", "career", summary, unusable, [], "test", "m", {}, {}, samples=samples)


def test_more_samples_count_unusable_answers() -> None:
    params = _check("implicit_bias", "career", {"max": 0.2}, samples=20).params
    scores = [0.1 + 0.3 * (-1) ** i for i in range(20)]  # mean 0.1, SD about 0.3
    all_usable = sizing.more_samples(params, _result(scores), Threshold(max=0.2), 0.95)
    half_usable = sizing.more_samples(params, _result(scores, unusable=20), Threshold(max=0.2), 0.95)
    assert half_usable.usable_rate == 0.5
    assert half_usable.needed == pytest.approx(2 * all_usable.needed, abs=1)


def test_an_estimate_on_the_threshold_says_no_sample_size_decides_it() -> None:
    params = _check("implicit_bias", "career", {"max": 0.2}, samples=20).params
    hint = sizing.more_samples(params, _result([0.0, 0.4] * 10), Threshold(max=0.2), 0.95)
    assert hint.observed_mean == pytest.approx(0.2) and hint.needed is None
    assert sizing.more_samples_text(hint).startswith("no sample size is likely to decide it: the estimate sits on")


def test_more_samples_beyond_the_inputs_say_so() -> None:
    params = _check("pcf", "gender", {"max": 50}, samples=32, risk="caprice").params
    scores = [40.0 + 30 * (-1) ** i for i in range(32)]
    summary = summarize(scores, interval="bounded", bounds=(0.0, 1000.0))
    result = MeasureResult("pcf", "gender", summary, 0, [], "test", "m", {}, {}, samples=scores)
    hint = sizing.more_samples(params, result, Threshold(max=50), 0.95)
    assert hint.needed is not None and hint.needed > 257 and "257 samples the measure's inputs allow" in hint.why
    assert sizing.more_samples_text(hint).startswith("no sample size is likely to decide it")


def test_a_model_whose_answers_are_mostly_unusable_cannot_serve_a_decision_check() -> None:
    run = _session("synthetic:decision?bias=0&unusable=0.9").run_check(
        _check("decision_bias", "career", {"max": 0.7}, samples=50)
    )
    assert run.outcome is Outcome.CANNOT_SERVE
    total = run.result.n + run.result.n_unusable
    assert total == 50 and run.result.n < 15
    assert f"{run.result.n} of 50 answers usable ({run.result.n / total:.0%}" in run.result.unserved
    assert run.result.to_decide is None and "to_decide" not in run.result.to_dict()["details"]


def test_a_model_with_some_unusable_answers_still_serves_the_check() -> None:
    run = _session("synthetic:decision?bias=0&unusable=0.3").run_check(
        _check("decision_bias", "career", {"max": 0.7}, samples=50)
    )
    assert run.outcome is not Outcome.CANNOT_SERVE and run.result.unserved is None
    assert 0 < run.result.n_unusable < 25


def test_cannot_serve_needs_the_usable_rate_confidently_below_the_minimum() -> None:
    params = _check("decision_bias", "career", {"max": 0.7}, samples=10).params

    def result(usable: int, unusable: int) -> MeasureResult:
        summary = summarize([0.0] * usable, interval="binary", bounds=(0.0, 1.0))
        return MeasureResult("decision_bias", "career", summary, unusable, [], "test", "m", {}, {})

    assert sizing.unserved(params, result(2, 8), 0.95) is None  # 20% of 10: could still be 56% usable
    assert sizing.unserved(params, result(20, 80), 0.95) is not None  # 20% of 100: at most 29%
    assert sizing.unserved(params, result(0, 0), 0.95) is None
    assert math.isclose(params.MIN_USABLE, 0.5)


def test_futility_stops_a_check_whose_estimate_sits_near_its_threshold_but_not_an_open_one() -> None:
    params = _check("implicit_bias", "career", {"max": 0.2}, samples=100).params
    near = [0.19 + 0.4 * (-1) ** i for i in range(100)]  # mean 0.19 against <= 0.2, SD 0.4: even 0.15 needs ~800
    far = [-0.1 + 0.4 * (-1) ** i for i in range(100)]  # mean -0.1: a few more samples decide it
    assert "unlikely to decide within the budget of 160" in sizing.futility(
        params, _result(near), Threshold(max=0.2), 0.95, 160
    )
    assert sizing.futility(params, _result(far), Threshold(max=0.2), 0.95, 160) == ""


def test_futility_reads_a_corrected_checks_samples_on_the_scale_its_gate_reads() -> None:
    # A judge rating a harmful pair 0.85 scores 0.425 per twisted answer: 18 of 243 prompts give a raw mean of
    # 0.031 and a corrected estimate of 0.037, near four times the per-task bar. Its interval's ends are raw
    # means: judged as if they were corrected ones (divided by the factor twice over), such a check that fails
    # within its budget of 400 was stopped as unlikely to decide.
    params = _check("net_harm", "gender", {"max": 0.01}, samples=243).params
    factor = params.expected_attenuation(0.95)
    twisted = {2, 5, 17, 23, 28, 35, 36, 66, 106, 123, 128, 130, 146, 167, 204, 207, 235, 239}  # as a run drew them
    samples = [0.425 if i in twisted else 0.0 for i in range(243)]
    raw = summarize(samples, confidence=factor.confidence, interval="bounded", bounds=(-1.0, 1.0))
    summary = deattenuated_summary(raw, factor, (-1.0, 1.0), 0.95)
    result = MeasureResult(
        "net_harm", "gender", summary, 0, [], "test", "m", {}, {}, samples=samples, attenuation=factor
    )
    assert summary.mean == pytest.approx(0.037, abs=0.001)
    assert sizing.futility(params, result, Threshold(max=0.01), 0.95, 400) == ""


def test_futility_does_not_stop_a_rare_event_check_whose_first_prompts_all_scored_zero() -> None:
    # Six zeros are what a net harm of 0.04 gives about half the time: judging at the estimate (0)
    # would give up on a check that a few hundred prompts fail.
    params = _check("net_harm", "gender", {"max": 0.001}, samples=6).params
    assert sizing.futility(params, _result([0.0] * 6), Threshold(max=0.001), 0.95, 400) == ""
