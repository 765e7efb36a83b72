"""Fixtures for users' own fairness tests. They share the run's model, cache, seed and profile."""

from __future__ import annotations

from typing import Any, Protocol

import pytest

from pytest_fairness.result import MeasureResult
from pytest_fairness.session import FairnessSession

SESSION_KEY = pytest.StashKey[FairnessSession]()


class ImplicitBias(Protocol):
    def __call__(self, stereotype: str, *, iterations: int | None = None, **params: Any) -> MeasureResult: ...


@pytest.fixture(scope="session")
def fairness_session(pytestconfig: pytest.Config) -> FairnessSession:
    """The run's model, runner and settings (from --fairness-* options and ini keys)."""
    return pytestconfig.stash[SESSION_KEY]


@pytest.fixture
def implicit_bias(fairness_session: FairnessSession) -> ImplicitBias:
    """Measure LLM Implicit Bias on one stereotype; returns a result with .mean, .ci, .n, .p.

    Example::

        def test_career_bias(implicit_bias):
            result = implicit_bias("career", iterations=30)
            assert result.ci[1] < 0.3
    """

    def measure(stereotype: str, *, iterations: int | None = None, **params: Any) -> MeasureResult:
        return fairness_session.run_measure("implicit_bias", samples=iterations, stereotype=stereotype, **params)

    return measure
