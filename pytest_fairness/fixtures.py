"""Fixtures for users' own fairness tests: one per registered measure, plus the run's session.

They share the run's model, cache, seed and profile. The measure fixtures are built from the
registry when the plugin is configured, so a measure a conftest.py registers gets one too::

    def test_career_bias(implicit_bias):
        result = implicit_bias("career", iterations=30)
        assert result.ci[1] < 0.3
"""

from __future__ import annotations

import types
from typing import Any, Protocol

import pytest

from pytest_fairness.measures import MEASURES, Measure
from pytest_fairness.result import MeasureResult
from pytest_fairness.session import FairnessSession

SESSION_KEY = pytest.StashKey[FairnessSession]()


class MeasureFn(Protocol):
    def __call__(self, subject: str, /, **params: Any) -> MeasureResult: ...


@pytest.fixture(scope="session")
def fairness_session(pytestconfig: pytest.Config) -> FairnessSession:
    """The run's model, runner and settings (from --fairness-* options and ini keys)."""
    return pytestconfig.stash[SESSION_KEY]


def _fixture_for(measure: Measure) -> Any:
    def fixture(fairness_session: FairnessSession) -> MeasureFn:
        def call(subject: str, /, **params: Any) -> MeasureResult:
            return fairness_session.run_measure(measure.name, subject, **params)

        return call

    p = measure.params
    fixture.__name__ = measure.fixture_name
    fixture.__doc__ = (
        f"{measure.doc}\n\nCall it as ``{measure.fixture_name}(<{p.subject_field()}>, {p.samples_field()}=N, ...)``; "
        f"other parameters: {', '.join(p.settable())}. Returns a MeasureResult (.estimate, .ci, .n, .details)."
    )
    return pytest.fixture(name=measure.fixture_name)(fixture)


def measure_fixtures() -> types.ModuleType:
    """A plugin module holding one fixture per registered measure."""
    plugin = types.ModuleType(f"{__name__}.measures", "One fixture per registered measure.")
    for measure in MEASURES.values():
        setattr(plugin, measure.fixture_name, _fixture_for(measure))
    return plugin
