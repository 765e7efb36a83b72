"""The table of a run's gates, one row model for every renderer: the terminal and the Markdown read the same
cells in the same columns, and each only styles the check's name and the outcome's words.

Under the pull-request gate a check has two verdicts: the pull request's (against its baseline, what the run is
gated on) and its threshold's. Both stand side by side, so a check that is no worse than its baseline but lies
beyond its threshold never reads as meeting it; and a check whose baseline itself fails the threshold says so
("no worse than a baseline that fails ≤ 0.2").

A column is added here, once (a field of ``GateRow``, its cell in ``cells`` and its header in ``gate_table``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.stats.gate import Outcome, decide
from pytest_fairness.util.fmt import interval, num, shared_ci_label


@dataclass(frozen=True)
class GateRow:
    """One check's row: its cells as text, and its outcomes for a renderer to word. ``threshold_outcome`` is the
    threshold's own verdict where the check was gated on something else (a pull request's baseline; None in a
    release run, whose outcome is the threshold's); ``flag`` qualifies the outcome ("" when nothing does)."""

    check: str
    estimate: str
    ci: str
    n: str
    unusable: str
    threshold: str
    outcome: Outcome
    threshold_outcome: Outcome | None = None
    flag: str = ""

    def cells(self, check: Callable[[str], str], outcome: Callable[[Outcome], str]) -> tuple[str, ...]:
        """The row's cells in ``GateTable.columns`` order, the check's name and the outcomes styled by the caller."""
        front = (check(self.check), self.estimate, self.ci, self.n, self.unusable, self.threshold)
        shown = outcome(self.outcome) + (f" ({self.flag})" if self.flag else "")
        if self.threshold_outcome is None:
            return (*front, shown)
        return (*front, outcome(self.threshold_outcome), shown)


@dataclass(frozen=True)
class GateTable:
    """The header (its CI column named for the rows' confidence levels) and a row per check."""

    columns: tuple[str, ...]
    rows: tuple[GateRow, ...]


def pr_gate_of(record: CheckRecord) -> dict[str, str] | None:
    """What the pull-request gate recorded of a check (its verdict, the threshold's, why), if it gated it."""
    found = record.result.details.get("pr_gate")
    return found if isinstance(found, dict) else None


def baseline_fails_threshold(record: CheckRecord) -> bool:
    """Whether the baseline a check was compared with lies wholly beyond the check's threshold itself."""
    before = None if record.baseline is None else record.baseline.before
    if before is None or record.threshold is None:
        return False
    lo, hi = before.ci
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return False
    return decide((lo, hi), record.threshold) is Outcome.FAIL


def _row(record: CheckRecord, pr: bool) -> GateRow:
    gated = pr_gate_of(record)
    threshold_outcome = Outcome(gated["threshold"]) if gated and "threshold" in gated else record.outcome
    flag = f"no worse than a baseline that fails {record.threshold_text}" if baseline_fails_threshold(record) else ""
    return GateRow(
        check=record.label,
        estimate=num(record.result.estimate),
        ci=interval(record.result.ci),
        n=str(record.result.n),
        unusable=str(record.result.n_unusable),
        threshold=record.threshold_text,
        outcome=record.outcome,
        threshold_outcome=threshold_outcome if pr else None,
        flag=flag,
    )


def gate_table(records: Sequence[CheckRecord]) -> GateTable:
    """The table: under the pull-request gate (any record it gated), the threshold's verdict and the pull
    request's in two columns; else the one outcome."""
    pr = any(pr_gate_of(rec) is not None for rec in records)
    columns = ("check", "estimate", shared_ci_label([rec.confidence for rec in records]), "n", "unusable", "threshold")
    verdicts = ("threshold verdict", "PR verdict") if pr else ("outcome",)
    return GateTable((*columns, *verdicts), tuple(_row(rec, pr) for rec in records))
