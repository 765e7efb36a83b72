"""Public API of the Prejudice–Caprice Framework: risks of a preference tensor, the paper's data and its
reference models (``reference.stereotyped(...)`` etc., with their ``KNOWN_RISKS``)."""

from pytest_fairness.measures.pcf import reference
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
    "reference",
    "render_probe",
    "risks",
    "weigh_occupations",
    "weigh_templates",
]
