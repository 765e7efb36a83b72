"""How every output shows a check's outcome (one ``OutcomeStyle`` each), and the markers a check carries.

An undecided check (inconclusive, cannot serve) is neither a pass nor a failure of the model, so it
gets its own category in the progress line and the final counts ("5 passed, 1 inconclusive, 8 cannot
serve"), and so does a pull request's check that only its threshold decided ("1 within threshold": the
margin was not shown). The test's own outcome (failed, skipped, passed) still follows
--fairness-inconclusive (and --fairness-pr-threshold), so the exit code, -x and --lf keep working as
pytest users expect.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_fairness.stats.gate import Outcome

#: Property (on the report and in JUnit XML) of a check in its own category whose gate decided its test outcome.
#: A check whose gate was undecided but whose baseline comparison failed it has none: it shows as failed.
STATUS_PROPERTY = "fairness_status"
#: The outcomes no gate decided: their next step is more samples or a model that can serve.
UNDECIDED = (Outcome.INCONCLUSIVE, Outcome.CANNOT_SERVE)
#: The outcomes shown in their own category (and rerun by --lf whatever their test's outcome): the undecided
#: ones, and a pull request's check whose margin was not shown though its threshold passed it.
OWN_CATEGORY = (Outcome.WITHIN_THRESHOLD, *UNDECIDED)


@dataclass(frozen=True)
class OutcomeStyle:
    """How the outputs show one outcome.

    ``word``: in tables, counts and pytest's category (upper case in the terminal's table and pytest's
    progress); ``letter``: pytest's progress letter and the history table's; ``colour``: pytest's markup;
    ``plot``: its bars' colour; ``verdict``: what the interval showed, in a failure message; ``hint``: why,
    in brief, after the word in Markdown; ``level``: how loud, ``error`` (a CI error annotation, bold in
    Markdown), ``warning`` or None (no annotation).
    """

    word: str
    letter: str
    colour: str
    plot: str
    verdict: str
    hint: str = ""
    level: Literal["error", "warning"] | None = None


GREY = "#8C8C8C"
STYLES: dict[Outcome, OutcomeStyle] = {
    Outcome.PASS: OutcomeStyle(
        "pass", "P", "green", "#55A868", "the whole confidence interval lies within the allowed range"
    ),
    Outcome.FAIL: OutcomeStyle(
        "fail", "F", "red", "#C44E52", "the whole confidence interval lies outside the allowed range", level="error"
    ),
    Outcome.WITHIN_THRESHOLD: OutcomeStyle(
        "within threshold",
        "W",
        "cyan",
        "#A1C9A8",
        "the comparison with the baseline decided neither way, and the measure's interval lies within its "
        "threshold: the change is not shown within the margin",
        hint="margin not shown",
        level="warning",
    ),
    Outcome.BEYOND_THRESHOLD: OutcomeStyle(
        "beyond threshold",
        "B",
        "red",
        "#E0A3A5",
        "the comparison with the baseline decided neither way, and the measure's interval lies outside its "
        "threshold: the change is not shown worse than the margin",
        hint="margin not shown",
        level="error",
    ),
    Outcome.INCONCLUSIVE: OutcomeStyle(
        "inconclusive",
        "I",
        "yellow",
        GREY,
        "the confidence interval straddles the threshold: more samples are needed to decide",
        hint="needs more samples",
        level="warning",
    ),
    Outcome.CANNOT_SERVE: OutcomeStyle(
        "cannot serve",
        "C",
        "purple",
        GREY,
        "too few usable answers for the measure to mean anything",
        hint="too few usable answers",
        level="warning",
    ),
    Outcome.MEASURED: OutcomeStyle("measured", "M", "", GREY, "measured without a threshold, so no gate decides it"),
}


#: Marker every check whose measure calls a judge model carries: ``-m "not judge"`` runs the others.
JUDGE_MARKER = "judge"


def test_outcome(outcome: Outcome, inconclusive: str, pr_threshold: str = "pass") -> str:
    """What a check's gate outcome makes of its test under --fairness-inconclusive: passed, failed or skipped.

    "pass" forgives a gate the sample could not decide, never a model or judge that cannot serve. A pull
    request's WITHIN THRESHOLD passes (its warning says the margin was not shown), or under
    --fairness-pr-threshold=inconclusive counts as inconclusive; BEYOND THRESHOLD fails.
    """
    if outcome is Outcome.WITHIN_THRESHOLD:
        return test_outcome(Outcome.INCONCLUSIVE, inconclusive) if pr_threshold == "inconclusive" else "passed"
    if outcome in (Outcome.FAIL, Outcome.BEYOND_THRESHOLD):
        return "failed"
    if outcome in UNDECIDED:
        if inconclusive == "fail" or (inconclusive == "pass" and outcome is Outcome.CANNOT_SERVE):
            return "failed"
        if inconclusive == "skip":
            return "skipped"
    return "passed"


def report_status(user_properties: Iterable[tuple[str, Any]]) -> str | None:
    """The undecided outcome that decided a check's test, or None (a decided check, or no check)."""
    for key, value in user_properties:
        if key == STATUS_PROPERTY:
            return str(value)
    return None


def teststatus(
    when: str, user_properties: Sequence[tuple[str, Any]]
) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    """(category, letter, (word, markup)) of the call report of a check shown in its own category; None leaves
    it to pytest."""
    status = report_status(user_properties)
    if when != "call" or status not in OWN_CATEGORY:
        return None
    shown = STYLES[Outcome(status)]
    return shown.word, shown.letter, (shown.word.upper(), {shown.colour: True})


def marker_names(measure: str, suite: str, uses_judge: bool) -> list[str]:
    """The markers of one check: its measure, its suite, and ``judge`` when its measure needs one."""
    return [measure, suite, *([JUDGE_MARKER] if uses_judge else [])]


def marker_lines(measures: Iterable[tuple[str, bool]], suites: Iterable[str]) -> list[str]:
    """``markers`` ini lines registering every measure, suite and the judge marker (for --strict-markers)."""
    lines = [f"{JUDGE_MARKER}: fairness checks whose measure calls a judge model (-m 'not judge' runs the others)"]
    lines += [f"{name}: fairness checks of the {name} measure" for name, _ in measures]
    lines += [f"{name}: fairness checks of the {name} suite" for name in suites]
    return lines
