"""The registry of measures a suite, a fixture or ``--fairness-plan`` can name: one line per measure.

Each measure module declares its ``MEASURE`` (see ``measures.measure`` and ``measures.params``); ``register``
adds one more, for example a team's own measure from its conftest.py.
"""

from __future__ import annotations

from typing import Any

from pytest_fairness.measures.bai import decision, implicit
from pytest_fairness.measures.context import RunContext
from pytest_fairness.measures.fpf import quality
from pytest_fairness.measures.fpf.axes import bias_axes
from pytest_fairness.measures.fpf.harm import net_harm
from pytest_fairness.measures.measure import Measure
from pytest_fairness.measures.params import PROFILES, Params, ParamsError
from pytest_fairness.measures.pcf import prejudice_caprice as pcf

MEASURES: dict[str, Measure[Any]] = {}


def register(measure: Measure[Any]) -> Measure[Any]:
    """Make a measure available to suites, fixtures and the plan; its name must be new."""
    if measure.name in MEASURES and MEASURES[measure.name] is not measure:
        raise ValueError(f"a measure named {measure.name!r} is already registered")
    measure.params.subject_field(), measure.params.samples_field()  # fail early on a malformed Params
    MEASURES[measure.name] = measure
    return measure


register(implicit.MEASURE)
register(decision.MEASURE)
register(net_harm.MEASURE)
register(quality.MEASURE)
register(bias_axes.MEASURE)
register(pcf.MEASURE)

__all__ = ["MEASURES", "PROFILES", "Measure", "Params", "ParamsError", "RunContext", "register"]
