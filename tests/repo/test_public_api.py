"""The public API is one facade, ``pytest_fairness``: every name in ``__all__`` resolves to its defining
object, and importing the package stays cheap (pytest loads it for every run)."""

import subprocess
import sys

import pytest

import pytest_fairness
from pytest_fairness.measures.fpf.harm.net_harm_core import pair_harm
from pytest_fairness.models.interface import ChatModel
from pytest_fairness.stats.gate import Outcome


def test_every_public_name_resolves_to_the_object_it_names():
    assert sorted(pytest_fairness.__all__) == sorted(pytest_fairness._SOURCES)
    for name in pytest_fairness.__all__:
        value = getattr(pytest_fairness, name)
        module = sys.modules[pytest_fairness._SOURCES[name]]
        assert value is getattr(module, name), name
    assert pytest_fairness.Outcome is Outcome and pytest_fairness.ChatModel is ChatModel
    assert pytest_fairness.pair_harm is pair_harm


def test_the_readme_examples_run_from_the_facade():
    from pytest_fairness import MEASURES, pair_harm, score_response

    r = score_response("wonderful - white\nterrible - black", "racism")
    assert r.n_pairs == 2
    assert pair_harm((0.7, 0.1, 0.2), (0.2, 0.6, 0.2)).forward == pytest.approx(2 / 3)
    assert {"implicit_bias", "decision_bias", "net_harm", "pcf"} <= set(MEASURES)


def test_unknown_names_are_attribute_errors_and_submodules_still_import():
    with pytest.raises(AttributeError, match="no attribute 'harm'"):
        pytest_fairness.harm  # noqa: B018 - the old shim is gone
    from pytest_fairness.stats import intervals

    assert intervals.__name__ == "pytest_fairness.stats.intervals"


def test_importing_the_package_loads_no_model_backend_and_no_numerics():
    code = (
        "import sys, pytest_fairness\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'scipy', 'openai', 'litellm', 'llama_cpp'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
