"""Fixtures for users' own fairness tests. They share the run's model, cache, seed and profile."""

from __future__ import annotations

from typing import Any, Protocol

import pytest

from pytest_fairness.result import MeasureResult
from pytest_fairness.session import FairnessSession

SESSION_KEY = pytest.StashKey[FairnessSession]()


class MeasureFn(Protocol):
    def __call__(self, subject: str, /, **params: Any) -> MeasureResult: ...


@pytest.fixture(scope="session")
def fairness_session(pytestconfig: pytest.Config) -> FairnessSession:
    """The run's model, runner and settings (from --fairness-* options and ini keys)."""
    return pytestconfig.stash[SESSION_KEY]


def _measure(session: FairnessSession, measure: str, subject: str, samples: str) -> MeasureFn:
    def call(value: str, /, **params: Any) -> MeasureResult:
        return session.run_measure(measure, samples=params.pop(samples, None), **{subject: value}, **params)

    return call


@pytest.fixture
def implicit_bias(fairness_session: FairnessSession) -> MeasureFn:
    """LLM Implicit Bias on one stereotype; returns a result with .mean, .ci, .n, .p.

    Example::

        def test_career_bias(implicit_bias):
            result = implicit_bias("career", iterations=30)
            assert result.ci[1] < 0.3
    """
    return _measure(fairness_session, "implicit_bias", "stereotype", "iterations")


@pytest.fixture
def decision_bias(fairness_session: FairnessSession) -> MeasureFn:
    """LLM Decision Bias on one stereotype: the share of stereotyped decisions (0.5 = none).

    Example::

        def test_career_decisions(decision_bias):
            result = decision_bias("career", iterations=40, coder="judge")
            assert result.ci[1] < 0.7
            assert result.details["rejection_rate"] < 0.2
    """
    return _measure(fairness_session, "decision_bias", "stereotype", "iterations")


@pytest.fixture
def pcf_risk(fairness_session: FairnessSession) -> MeasureFn:
    """Prejudice-Caprice risk (×1000) for an attribute ("gender", "race"); ``risk=`` picks the component.

    Example::

        def test_gender_prejudice(pcf_risk):
            result = pcf_risk("gender", risk="prejudice", occupations=64)
            assert result.ci[1] < 400
            assert result.details["R_caprice"] < 50
    """
    return _measure(fairness_session, "pcf", "attribute", "occupations")


@pytest.fixture
def net_harm(fairness_session: FairnessSession) -> MeasureFn:
    """Net harmful-stereotype rating H(A, B) for a comparison ("gender", "black", "intersectional"...).

    Example::

        def test_names_do_not_change_answers_harmfully(net_harm):
            result = net_harm("gender", prompts=100, task="Write a story")
            assert result.ci[1] < 0.001
    """
    return _measure(fairness_session, "net_harm", "comparison", "prompts")


@pytest.fixture
def quality_disparity(fairness_session: FairnessSession) -> MeasureFn:
    """Answer quality by group: overall-quality difference A − B (1-5 scale), nine criteria in details.

    Example::

        def test_quality_is_equal(quality_disparity):
            result = quality_disparity("gender", prompts=50)
            assert not any(c["significant"] for c in result.details["criteria"].values())
    """
    return _measure(fairness_session, "quality_disparity", "comparison", "prompts")


@pytest.fixture
def bias_axes(fairness_session: FairnessSession) -> MeasureFn:
    """Axes of difference between two groups' answers (Bias Enumeration Algorithm).

    Example::

        def test_no_harmful_axis(bias_axes):
            result = bias_axes("gender", prompts=200, t=20)
            assert result.estimate == 0, result.details["axes"]
    """
    return _measure(fairness_session, "bias_axes", "comparison", "prompts")
