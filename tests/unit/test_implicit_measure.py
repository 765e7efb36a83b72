"""Running LLM Implicit Bias against the synthetic model, whose planted bias is known exactly."""

import random

import pytest

from pytest_fairness.measures.bai import implicit
from pytest_fairness.measures.bai.iat_stimuli import get_stereotype
from pytest_fairness.measures.bai.implicit_prompts import draw_prompt
from pytest_fairness.measures.bai.planted_answers import expected_iat_score
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner


def run(spec: str, **params):
    return implicit.MEASURE.run_with(Runner(load_model(spec)), **params)


@pytest.mark.heavy(2)
@pytest.mark.parametrize("route", ["list", "forced_choice"])
@pytest.mark.parametrize(("stereotype", "bias"), [("career", 0.4), ("racism", 0.8), ("power", -0.5), ("eating", 0.0)])
def test_planted_bias_is_recovered_within_the_interval(route, stereotype, bias):
    result = run(f"synthetic:iat?bias={bias}", stereotype=stereotype, iterations=150, route=route, seed=11)
    truth = expected_iat_score(len(get_stereotype(stereotype).stigma_attrs), bias)
    lo, hi = result.ci
    assert lo <= truth <= hi, f"truth {truth:.4f} outside [{lo:.4f}, {hi:.4f}]"
    assert result.n == 150 and result.n_unusable == 0


@pytest.mark.heavy(2)
def test_interval_covers_the_truth_at_about_its_nominal_rate():
    truth = expected_iat_score(4, 0.3)
    intervals = [
        run("synthetic:iat?bias=0.3", stereotype="power", iterations=25, seed=seed, route="list").ci
        for seed in range(60)
    ]
    covered = sum(lo <= truth <= hi for lo, hi in intervals)
    assert 50 <= covered <= 60  # 95% nominal: 57 expected, binomial 99% range is about 52-60


def test_planted_truth_matches_the_formula_at_the_extremes():
    assert expected_iat_score(8, 1.0) == pytest.approx(implicit.implicit_bias(8, 0, 0, 8))
    assert expected_iat_score(8, -1.0) == pytest.approx(-1.0)


def test_refusals_are_counted_as_unusable_with_examples_not_scored():
    result = run("synthetic:iat?bias=0.4&unusable=0.3", stereotype="career", iterations=100, route="list", seed=2)
    assert result.n + result.n_unusable == 100
    assert 15 <= result.n_unusable <= 45
    assert "sort people" in result.unusable_examples[0]


def test_same_seed_same_result_other_seed_other_draws():
    a = run("synthetic:iat?bias=0.4", stereotype="science", iterations=30, seed=5)
    b = run("synthetic:iat?bias=0.4", stereotype="science", iterations=30, seed=5)
    c = run("synthetic:iat?bias=0.4", stereotype="science", iterations=30, seed=6)
    assert a.samples == b.samples
    assert a.samples != c.samples


def test_result_records_fidelity_route_and_data_versions():
    listed = run("synthetic:iat", stereotype="age", iterations=5, route="list")
    forced = run("synthetic:iat", stereotype="age", iterations=5, route="forced_choice")
    assert listed.fidelity.startswith("adaptation: the paper's list protocol")
    assert forced.fidelity.startswith("adaptation: per-word forced choice")
    assert set(listed.versions) == {"stimuli", "prompts"}
    assert forced.details["route"] == "forced_choice"


def test_auto_route_uses_forced_choice_for_models_that_cannot_follow_lists():
    model = load_model("synthetic:iat")
    model.follows_list_instructions = False
    result = implicit.MEASURE.run_with(Runner(model), stereotype="age", iterations=3)
    assert result.params["route"] == "forced_choice"


def test_synonym_variant_prompts_use_the_synonym_words():
    st = get_stereotype("weight")
    prompt = draw_prompt(st, "synonym", random.Random(0))
    assert set(prompt.attributes) == set(st.synonym_default_attrs + st.synonym_stigma_attrs)
    assert prompt.stigma_word == "fat" and prompt.default_word == "thin"
    for word in prompt.attributes:
        assert word in prompt.text


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"stereotype": "astrology"}, "unknown stereotype 'astrology'; valid: racism, guilt"),
        ({"variant": "remix"}, "unknown variant 'remix'; valid: replication, instruction1, instruction2, synonym"),
        ({"route": "telepathy"}, "unknown route"),
        ({"iterations": 1}, "iterations must be a whole number >= 2"),
        ({"epsilon": -1}, r"epsilon must be a number in \[0, 1\]"),
    ],
)
def test_bad_parameters_are_rejected_before_any_call(params, message):
    full = {"stereotype": "career", "iterations": 10, **params}
    with pytest.raises((ValueError, KeyError), match=message):
        run("synthetic:iat", **full)
