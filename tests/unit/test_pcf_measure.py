"""PCF through the runner: probes -> slot probabilities -> preferences -> risks, against planted truth."""

import numpy as np
import pytest

from pytest_fairness.measures.pcf import prejudice_caprice as pcf
from pytest_fairness.measures.pcf import prejudice_caprice_core as pcf_core
from pytest_fairness.measures.pcf.inputs import load_attributes, load_templates, render_probe
from pytest_fairness.measures.pcf.planted_slots import planted_preference
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner


def planted(model, attribute: str, occupations: list[str]) -> np.ndarray:
    k = len(load_attributes(attribute).words)
    grid = [
        [planted_preference(model, x, render_probe(t, x)[0].rstrip(), k) for t in load_templates(attribute).texts]
        for x in occupations
    ]
    return np.array(grid)


@pytest.mark.parametrize(
    ("attribute", "bias", "caprice"), [("gender", 0.6, 0.0), ("gender", 0.3, 0.4), ("race", 0.5, 0.2)]
)
@pytest.mark.parametrize("risk", ["total", "prejudice", "caprice"])
def test_planted_preferences_are_recovered_exactly(attribute, bias, caprice, risk):
    model = load_model(f"synthetic:pcf?bias={bias}&caprice={caprice}")
    result = pcf.MEASURE.run_with(Runner(model), attribute=attribute, occupations=20, risk=risk, seed=4)
    occupations = [o["occupation"] for o in result.details["most_prejudiced"]]
    assert occupations  # the measure names its most prejudiced occupations
    truth = pcf_core.risks(planted(model, attribute, list(_sample(attribute, 20, 4))), load_templates(attribute).counts)
    expected = {"total": truth.R, "prejudice": truth.prejudice, "caprice": truth.caprice}[risk] * 1000
    assert result.estimate == pytest.approx(expected, abs=1e-6)
    assert result.details["R"] == pytest.approx(truth.R * 1000, abs=1e-6)
    assert result.details["R_prejudice"] + result.details["R_caprice"] == pytest.approx(result.details["R"])
    assert result.n == 20 and result.n_unusable == 0
    assert result.ci[0] <= result.estimate <= result.ci[1]


def _sample(attribute: str, n: int, seed: int) -> list[str]:
    from pytest_fairness.measures.pcf.prejudice_caprice import _inputs

    return list(_inputs(attribute, n, seed, 10, None, None, None)[2].terms)


def test_no_caprice_planted_means_none_measured():
    result = pcf.MEASURE.run_with(
        Runner(load_model("synthetic:pcf?bias=0.7")), attribute="gender", occupations=10, risk="caprice"
    )
    assert result.estimate == pytest.approx(0.0, abs=1e-9)


def test_an_unbiased_model_has_zero_risk():
    result = pcf.MEASURE.run_with(
        Runner(load_model("synthetic:pcf?bias=0")), attribute="race", occupations=10, risk="total"
    )
    assert result.estimate == pytest.approx(0.0, abs=1e-9)


def test_requests_probe_every_occupation_and_template_as_plain_text():
    reqs = pcf.MEASURE.plan_with(load_model("synthetic:pcf"), attribute="gender", occupations=5)
    assert len(reqs) == 5 * 10
    assert all(r.messages == () for r in reqs)
    assert reqs[0].prefix.startswith("The ") and reqs[0].prefix.endswith(" said that")
    assert " he" in reqs[0].candidates and " she" in reqs[0].candidates


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"risk": "vibes"}, "unknown risk 'vibes'"),
        ({"occupations": 1}, "occupations must be a whole number >= 2"),
        ({"norm": "two"}, "norm must be 'inf' or a whole number"),
        ({"attribute": "age"}, "age"),
    ],
)
def test_bad_parameters_are_rejected(params, message):
    with pytest.raises(ValueError, match=message):
        pcf.MEASURE.validate({"attribute": "gender", "occupations": 10, **params})
