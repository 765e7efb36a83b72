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

from pytest_fairness.config.suite import MAX_SAMPLES
from pytest_fairness.measures import MEASURES, Measure, Params, ParamsError
from pytest_fairness.records.check_record import RECORD_PROPERTY, CheckRecord
from pytest_fairness.records.measure_result import MeasureResult
from pytest_fairness.run.session import FairnessSession
from pytest_fairness.stats.gate import Outcome

SESSION_KEY = pytest.StashKey[FairnessSession]()


class MeasureFn(Protocol):
    def __call__(
        self, subject: str, /, *, model: object = None, judge: object = None, **params: Any
    ) -> MeasureResult: ...


@pytest.fixture(scope="session")
def fairness_session(pytestconfig: pytest.Config) -> FairnessSession:
    """The run's model, runner and settings (from --fairness-* options and ini keys)."""
    return pytestconfig.stash[SESSION_KEY]


def call_params(measure: Measure, subject: str, values: dict[str, Any], profile: str) -> Params:
    """A fixture call's parameters: its keywords, ``samples=`` for the measure's sample size (whatever the
    measure calls it), and the profile's sample size when none is given; ParamsError otherwise."""
    values = dict(values)
    if "samples" in values and measure.samples != "samples":
        if measure.samples in values:
            raise ParamsError(f"{measure.fixture_name}(): give {measure.samples}= or samples=, not both")
        values[measure.samples] = values.pop("samples")
    keywords = (measure.samples, *measure.params.settable())
    unknown = sorted(set(values) - set(keywords))
    if unknown:
        alias = "" if measure.samples == "samples" else f" (samples= also sets {measure.samples})"
        raise ParamsError(
            f"{measure.fixture_name}(): unknown keyword(s) {unknown}; valid: {', '.join(keywords)}{alias}"
        )
    size = values.setdefault(measure.samples, measure.params.default_size(profile))
    if isinstance(size, int) and size > MAX_SAMPLES:
        raise ParamsError(f"{measure.fixture_name}(): {measure.samples}={size} is above the limit of {MAX_SAMPLES}")
    return measure.validate({measure.subject: subject, **values}, where=f"{measure.fixture_name}(): ")


def measured_record(where: str, result: MeasureResult) -> CheckRecord:
    """The record of a result a fixture measured in a user's own test: no threshold, so no verdict."""
    return CheckRecord(
        suite=where,
        check=f"{result.measure}[{result.subject}]",
        outcome=Outcome.MEASURED,
        threshold=None,
        result=result,
    )


def _fixture_for(measure: Measure) -> Any:
    def fixture(fairness_session: FairnessSession, request: pytest.FixtureRequest) -> MeasureFn:

        def call(subject: str, /, *, model: object = None, judge: object = None, **params: Any) -> MeasureResult:
            __tracebackhide__ = True  # a misuse shows the user's line and the message, not our frames
            try:
                built = call_params(measure, subject, params, fairness_session.settings.profile)
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
