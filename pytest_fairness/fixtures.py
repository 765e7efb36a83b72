"""Fixtures for users' own fairness tests: one per registered measure, plus the run's session.

They share the run's model, cache, seed and profile. The measure fixtures are built from the
registry when the plugin is configured, so a measure a conftest.py registers gets one too::

    def test_career_bias(implicit_bias):
        result = implicit_bias("career", iterations=30)   # or samples=30, whatever the measure calls it
        assert result.ci[1] < 0.3

Each call may also name its own ``model=`` and ``judge=``: a model spec ("python:my_app:answer") or an app
object or function, so one run can gate several variants of an application (system prompts, temperatures).

Every result also reaches the run's summary, JSON report and cost table, as a record whose outcome
is "measured" (the user's own asserts are its gate); it travels to the xdist controller on the
test's report like a suite check's.
"""

from __future__ import annotations

import types
from typing import Any, Protocol

import pytest

from pytest_fairness.measures import MEASURES, Measure, ParamsError
from pytest_fairness.record import RECORD_PROPERTY
from pytest_fairness.result import MeasureResult
from pytest_fairness.session import FairnessSession, measured_record

SESSION_KEY = pytest.StashKey[FairnessSession]()


class MeasureFn(Protocol):
    def __call__(
        self, subject: str, /, *, model: object = None, judge: object = None, **params: Any
    ) -> MeasureResult: ...


@pytest.fixture(scope="session")
def fairness_session(pytestconfig: pytest.Config) -> FairnessSession:
    """The run's model, runner and settings (from --fairness-* options and ini keys)."""
    return pytestconfig.stash[SESSION_KEY]


def _fixture_for(measure: Measure) -> Any:
    def fixture(fairness_session: FairnessSession, request: pytest.FixtureRequest) -> MeasureFn:

        def call(subject: str, /, *, model: object = None, judge: object = None, **params: Any) -> MeasureResult:
            __tracebackhide__ = True  # a misuse shows the user's line and the message, not our frames
            try:
                built = fairness_session.measure_params(measure.name, subject, params)
            except ParamsError as exc:
                raise ParamsError(str(exc)) from None
            result = fairness_session.run_params(measure, built, model=model, judge=judge)
            record = measured_record(request.node.nodeid, result)
            request.node.user_properties.append((RECORD_PROPERTY, record.to_dict()))
            return result

        return call

    p = measure.params
    fixture.__name__ = measure.fixture_name
    fixture.__doc__ = (
        f"{measure.doc}\n\nCall it as ``{measure.fixture_name}(<{p.subject_field()}>, {p.samples_field()}=N, ...)`` "
        "(``samples=N`` works too; ``model=`` and ``judge=`` take a model spec or an app object or function); "
        f"other parameters: {', '.join(p.settable())}. Returns a MeasureResult (.estimate, .ci, .n, .details)."
    )
    return pytest.fixture(name=measure.fixture_name)(fixture)


def measure_fixtures() -> types.ModuleType:
    """A plugin module holding one fixture per registered measure."""
    plugin = types.ModuleType(f"{__name__}.measures", "One fixture per registered measure.")
    for measure in MEASURES.values():
        setattr(plugin, measure.fixture_name, _fixture_for(measure))
    return plugin
