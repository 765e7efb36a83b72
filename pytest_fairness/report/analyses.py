"""Analyses across a run's checks that registered measures provide (e.g. implicit→decision), computed once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_fairness.measures import MEASURES
from pytest_fairness.records.check_record import CheckRecord


def session_analyses(records: Sequence[CheckRecord]) -> dict[str, Any]:
    """Every registered analysis that has something to say about these records, by name."""
    out: dict[str, Any] = {}
    for measure in MEASURES.values():
        for name, analysis in measure.analyses.items():
            result = analysis.compute(records)
            if result is not None:
                out[name] = result
    return out


def analysis_lines(name: str, result: Any) -> list[str]:
    """An analysis's result in the words of the measure that registered it."""
    for measure in MEASURES.values():
        if name in measure.analyses:
            return measure.analyses[name].lines(result)
    return []
