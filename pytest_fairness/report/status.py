"""How pytest shows a check's outcome: its category, letter and word, and the markers a check carries.

An undecided check (inconclusive, cannot serve) is neither a pass nor a failure of the model, so it
gets its own category in the progress line and the final counts ("5 passed, 1 inconclusive, 8 cannot
serve"). The test's own outcome (failed, skipped, passed) still follows --fairness-inconclusive, so the
exit code, -x and --lf keep working as pytest users expect.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pytest_fairness.gate import Outcome

#: Property (on the report and in JUnit XML) of a check whose undecided gate decided its test outcome.
#: A check whose gate was undecided but whose baseline comparison failed it has none: it shows as failed.
STATUS_PROPERTY = "fairness_status"
#: The outcomes shown in their own category.
UNDECIDED = (Outcome.INCONCLUSIVE, Outcome.CANNOT_SERVE)
#: Category, letter, word and colour of each undecided outcome in pytest's progress and counts.
STATUS: dict[str, tuple[str, str, str, str]] = {
    Outcome.INCONCLUSIVE.value: ("inconclusive", "I", "INCONCLUSIVE", "yellow"),
    Outcome.CANNOT_SERVE.value: ("cannot serve", "C", "CANNOT SERVE", "purple"),
}
#: Marker every check whose measure calls a judge model carries: ``-m "not judge"`` runs the others.
JUDGE_MARKER = "judge"


def report_status(user_properties: Iterable[tuple[str, Any]]) -> str | None:
    """The undecided outcome that decided a check's test, or None (a decided check, or no check)."""
    for key, value in user_properties:
        if key == STATUS_PROPERTY:
            return str(value)
    return None


def teststatus(
    when: str, user_properties: Sequence[tuple[str, Any]]
) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    """(category, letter, (word, markup)) of an undecided check's call report; None leaves it to pytest."""
    if when != "call":
        return None
    status = STATUS.get(report_status(user_properties) or "")
    if status is None:
        return None
    category, letter, word, colour = status
    return category, letter, (word, {colour: True})


def marker_names(measure: str, suite: str, uses_judge: bool) -> list[str]:
    """The markers of one check: its measure, its suite, and ``judge`` when its measure needs one."""
    return [measure, suite, *([JUDGE_MARKER] if uses_judge else [])]


def marker_lines(measures: Iterable[tuple[str, bool]], suites: Iterable[str]) -> list[str]:
    """``markers`` ini lines registering every measure, suite and the judge marker (for --strict-markers)."""
    lines = [f"{JUDGE_MARKER}: fairness checks whose measure calls a judge model (-m 'not judge' runs the others)"]
    lines += [f"{name}: fairness checks of the {name} measure" for name, _ in measures]
    lines += [f"{name}: fairness checks of the {name} suite" for name in suites]
    return lines
