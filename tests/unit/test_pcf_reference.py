"""The paper's reference models give their known risks through the public risks() function."""

import pytest

from pytest_fairness import risks  # the public API, as the README uses it
from pytest_fairness.measures.pcf import reference_models


@pytest.mark.parametrize("k", [2, 5])
def test_the_deterministic_reference_models_give_their_exact_risks(k):
    for name, make in (("unbiased", reference_models.unbiased), ("stereotyped", reference_models.stereotyped)):
        result = risks(make(20, 10, k))
        assert (result.R, result.prejudice, result.caprice) == pytest.approx(
            reference_models.KNOWN_RISKS[name], abs=1e-9
        )


def test_the_random_reference_models_approach_their_population_risks_with_many_templates():
    stereo = risks(reference_models.randomly_stereotyped(200, 400, seed=1))
    assert (stereo.R, stereo.prejudice, stereo.caprice) == pytest.approx((1.0, 0.0, 1.0), abs=0.06)
    initialised = risks(reference_models.randomly_initialised(200, 400, seed=2))
    assert (initialised.R, initialised.prejudice, initialised.caprice) == pytest.approx((0.5, 0.0, 0.5), abs=0.06)
