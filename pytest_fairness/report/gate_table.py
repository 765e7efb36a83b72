"""The table of a run's gates, one row model for every renderer: the terminal and the Markdown read the same
cells in the same columns, and each only styles the check's name and the outcome's word.

A column is added here, once (a field of ``GateRow``, its cell in ``cells`` and its header in ``columns``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.stats.gate import Outcome
from pytest_fairness.util.fmt import interval, num, shared_ci_label


@dataclass(frozen=True)
class GateRow:
    """One check's row: its cells as text, and its outcome for a renderer to word."""

    check: str
    estimate: str
    ci: str
    n: str
    unusable: str
    threshold: str
    outcome: Outcome

    def cells(self, check: Callable[[str], str], outcome: Callable[[Outcome], str]) -> tuple[str, ...]:
        """The row's cells in ``GateTable.columns`` order, the check's name and the outcome styled by the caller."""
        return (check(self.check), self.estimate, self.ci, self.n, self.unusable, self.threshold, outcome(self.outcome))


@dataclass(frozen=True)
class GateTable:
    """The header (its CI column named for the rows' confidence levels) and a row per check."""

    columns: tuple[str, ...]
    rows: tuple[GateRow, ...]


def gate_table(records: Sequence[CheckRecord]) -> GateTable:
    columns = ("check", "estimate", shared_ci_label([rec.confidence for rec in records]), "n", "unusable")
    rows = tuple(
        GateRow(
            check=rec.label,
            estimate=num(rec.result.estimate),
            ci=interval(rec.result.ci),
            n=str(rec.result.n),
            unusable=str(rec.result.n_unusable),
            threshold=rec.threshold_text,
            outcome=rec.outcome,
        )
        for rec in records
    )
    return GateTable((*columns, "threshold", "outcome"), rows)
