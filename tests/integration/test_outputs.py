"""Every output is written from one frozen ``RunReport`` through one contract, and reads one outcome table."""

from __future__ import annotations

import ast
import json
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

import pytest_fairness
from pytest_fairness.report import status
from pytest_fairness.report.formats import OUTPUTS, register_output
from pytest_fairness.report.jsonfile import JsonFile
from pytest_fairness.report.output import Output, RunReport, Sinks
from pytest_fairness.report.status import STYLES, UNDECIDED
from pytest_fairness.stats.gate import GateFamily, Outcome

PACKAGE = Path(pytest_fairness.__file__).parent
OUTCOME_VALUES = {o.value for o in Outcome}


class AtEnd(Output):
    def __init__(self) -> None:
        self.seen: list[tuple[RunReport, Sinks]] = []

    def write(self, report: RunReport, sinks: Sinks) -> None:
        self.seen.append((report, sinks))


class InSummary(AtEnd):
    when = "terminal_summary"


def test_every_output_gets_the_one_frozen_report_at_its_moment(pytester):
    at_end, in_summary, saved = AtEnd(), InSummary(), list(OUTPUTS)
    register_output(at_end)
    register_output(in_summary)
    try:
        pytester.runpytest(
            "--fairness-suite=gender",
            "--fairness-model=synthetic:iat?bias=0.9",
            "-k",
            "implicit",
            "--fairness-multiplicity=bonferroni",
            "--fairness-report=r.json",
        )
    finally:
        OUTPUTS[:] = saved  # the run is in this process: the registration must not outlive the test
    ((report, sinks),) = at_end.seen
    ((again, summary_sinks),) = in_summary.seen
    assert again is report and sinks.terminal is None and summary_sinks.terminal is not None
    with pytest.raises(FrozenInstanceError):
        report.records = ()  # type: ignore[misc]
    checks = json.loads((pytester.path / "r.json").read_text())["checks"]
    assert [rec.label for rec in report.records] == [f"{c['suite']}::{c['check']}" for c in checks]
    assert report.run.complete and report.run.selected == 4
    assert report.family == GateFamily(4, 0.95, "bonferroni")
    assert report.option(JsonFile.options[0]) == "r.json"


def test_an_option_name_is_taken_once():
    class Clash(AtEnd):
        options = JsonFile.options

    with pytest.raises(ValueError, match=r"\['report'\] are taken"):
        register_output(Clash())


def test_one_style_per_outcome_and_the_undecided_get_their_own_category():
    assert set(STYLES) == set(Outcome)
    assert len({s.letter for s in STYLES.values()}) == len(Outcome)
    loud = {Outcome.FAIL, Outcome.BEYOND_THRESHOLD, Outcome.WITHIN_THRESHOLD, *UNDECIDED}
    assert {o for o, s in STYLES.items() if s.level is not None} == loud
    assert status.teststatus("call", [("fairness_status", "within_threshold")]) == (
        "within threshold",
        "W",
        ("WITHIN THRESHOLD", {"cyan": True}),
    )
    assert status.teststatus("call", [("fairness_status", "cannot_serve")]) == (
        "cannot serve",
        "C",
        ("CANNOT SERVE", {"purple": True}),
    )
    assert status.teststatus("call", [("fairness_status", "pass")]) is None


def _words(node: ast.expr | None) -> bool:
    """Whether a dict value is wording: text, or a tuple of it."""
    if isinstance(node, ast.Tuple):
        return all(_words(e) for e in node.elts)
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def test_no_module_but_the_style_table_maps_outcomes_to_words():
    """A dict from outcomes (``Outcome.X`` or their values) to wording lives in report/status.py alone."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Dict) or where == "report/status.py":
                continue
            outcome_keys = [
                k
                for k in node.keys
                if (isinstance(k, ast.Attribute) and isinstance(k.value, ast.Name) and k.value.id == "Outcome")
                or (isinstance(k, ast.Constant) and k.value in OUTCOME_VALUES)
            ]
            if len(outcome_keys) >= 2 and all(_words(v) for v in node.values):
                offenders.append(f"{where}:{node.lineno}")
    assert not offenders
