"""Public API of the Prejudice–Caprice Framework: risks of a preference tensor, and the paper's data."""

from pytest_fairness.measures.pcf.core import (
    Diagnostics,
    PcfRisks,
    calibrate_preference,
    risks,
    weigh_occupations,
    weigh_templates,
)
from pytest_fairness.measures.pcf.data import (
    PcfDataError,
    load_attributes,
    load_occupations,
    load_templates,
    render_probe,
)

__all__ = [
    "Diagnostics",
    "PcfDataError",
    "PcfRisks",
    "calibrate_preference",
    "load_attributes",
    "load_occupations",
    "load_templates",
    "render_probe",
    "risks",
    "weigh_occupations",
    "weigh_templates",
]
