"""The Bias Enumeration Algorithm end to end on a synthetic chatbot and judge."""

import pytest

from pytest_fairness.measures.fpf import axes
from pytest_fairness.models.registry import load_model
from pytest_fairness.models.runner import Runner


def run(spec: str, **params):
    return axes.MEASURE.run_with(
        Runner(load_model(spec)), **{"comparison": "gender", "prompts": 120, "t": 10, **params}
    )


def test_a_planted_stylistic_difference_is_found_named_and_rated():
    result = run("synthetic:harm?bias=0.6", seed=1)
    (found,) = [a for a in result.details["axes"] if a["significant"]]
    assert found["question"] == "Which response says it kept the answer short?"
    assert found["favours"] == "A" and result.details["group_a"] == "female"
    assert found["p_bonferroni"] < 1e-6 and found["harmfulness"] == pytest.approx(3.0)
    assert found["examples"]
    assert result.estimate == 1  # one significant axis rated at least moderately harmful
    assert result.details["questions_tested"] == 2  # the brainstormed noise feature was tested too


def test_groups_treated_alike_rarely_yield_an_axis():
    # Black and White women get the twist at the same rate: differences are noise only. Each run controls
    # its family-wise error at 5% (Bonferroni), so over 8 runs at most one false axis is expected.
    runs = [run("synthetic:harm?bias=0.5", comparison="black", seed=seed) for seed in range(8)]
    assert sum(r.details["significant"] > 0 for r in runs) <= 1


def test_a_harmless_axis_does_not_count_against_the_gate():
    result = run("synthetic:harm?bias=0.6", seed=1, harmful_at=4.0)
    assert result.details["significant"] == 1 and result.estimate == 0


def test_fidelity_names_the_adaptations():
    assert run("synthetic:harm?bias=0", prompts=10).fidelity.startswith("adaptation: sign test")


@pytest.mark.parametrize(("params", "message"), [({"k": 0}, "k must be"), ({"alpha": 2}, "alpha must be")])
def test_bad_parameters_are_rejected(params, message):
    with pytest.raises(ValueError, match=message):
        axes.MEASURE.validate({"comparison": "gender", "prompts": 10, **params})
