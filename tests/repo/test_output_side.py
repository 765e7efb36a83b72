"""The output side says each thing once: one formatter, one tally, one list of alarm statuses, one
``matches``; and no module reaches into another package's private names."""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path
from typing import get_args

import numpy as np
import pytest

import pytest_fairness
from pytest_fairness.baseline import ALARMS, FAILING, STATUSES, Comparison, Side, Status, decide_run
from pytest_fairness.baseline.entry import Entry
from pytest_fairness.baseline.entry_comparison import compare
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.explain import explain
from pytest_fairness.records.measure_result import MeasureResult
from pytest_fairness.report import markdown
from pytest_fairness.stats.attenuation import Attenuation
from pytest_fairness.stats.gate import Outcome, Threshold
from pytest_fairness.stats.intervals import summarize
from pytest_fairness.util.serial import from_json, to_json

ROOT = Path(pytest_fairness.__file__).parent
#: Helper names that format numbers or count outcomes: each may be defined only where it belongs.
HELPERS = re.compile(
    r"_?(num|fmt|format_number|interval_text|format_table|text_table|usd|spend_text|finite|cost_totals|outcome_counts)$"
)
HOMES = {
    "num": "util/fmt.py",
    "text_table": "util/fmt.py",
    "usd": "util/fmt.py",
    "spend_text": "util/fmt.py",
    "finite": "util/fmt.py",
    "cost_totals": "report/tally.py",
    "outcome_counts": "report/tally.py",
}


def _sources() -> dict[str, ast.Module]:
    return {str(p.relative_to(ROOT)): ast.parse(p.read_text()) for p in sorted(ROOT.rglob("*.py"))}


def test_number_formatters_dollars_nan_and_tallies_are_defined_once_in_report():
    found: dict[str, list[str]] = {}
    for path, tree in _sources().items():
        methods = {id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and HELPERS.match(node.name):
                if id(node) in methods:
                    continue  # a method of its own type (``Plan.usd`` sums its rows' dollars)
                found.setdefault(node.name.lstrip("_"), []).append(path)
    misplaced = {name: paths for name, paths in found.items() if paths != [HOMES.get(name)]}
    assert not misplaced, f"defined outside their one home: {misplaced}"


#: Statistical procedures and the one module each is defined in, by (part of) a module-level function's name.
STATISTICS = {
    "holm": "stats/multiplicity.py",
    "hochberg": "stats/multiplicity.py",
    "bonferroni": "stats/multiplicity.py",
    "adjust": "stats/multiplicity.py",
    "wilson": "stats/intervals.py",
    "clopper": "stats/intervals.py",
    "proportion_interval": "stats/intervals.py",
    "t_interval": "stats/intervals.py",
    "mean_interval": "stats/intervals.py",
    "summarize": "stats/intervals.py",
    "confidence_sequence": "stats/confidence_sequence.py",
    "welch": "baseline/welch.py",
}

#: Estimators a paper defines for its own measure, not general procedures, with where the spec says so.
OWN_ESTIMATORS = {"weighted_mean_interval"}  # net harm's hierarchy of task means over shared prompts (fpf spec §5.5)


def _names(word: str, name: str) -> bool:
    """Whether ``name``'s underscore-separated words contain ``word``'s (``_welch_parts`` names welch)."""
    want, have = word.split("_"), name.strip("_").split("_")
    return any(have[i : i + len(want)] == want for i in range(len(have)))


def test_each_multiplicity_correction_and_interval_is_defined_once():
    """Module-level functions whose names spell a correction or an interval live in that procedure's one
    module (methods that delegate to them, such as ``Params.summarize``, are not definitions)."""
    found: dict[str, set[str]] = {}
    for path, tree in _sources().items():
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for word in STATISTICS:
                    if _names(word, node.name) and node.name not in OWN_ESTIMATORS:
                        found.setdefault(word, set()).add(path)
    misplaced = {word: paths for word, paths in found.items() if paths != {STATISTICS[word]}}
    assert not misplaced, f"defined outside their one home: {misplaced}"
    assert set(found) >= set(STATISTICS) - {"wilson", "clopper"}  # the guard looks where the procedures are


def test_no_type_ignore_reads_a_results_details():
    """What the framework reads back is typed (sequential rounds, what would decide, the first round):
    a ``type: ignore`` beside ``details`` would mean it went back to reading an untyped dict."""
    offenders = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in sorted(ROOT.rglob("*.py"))
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if "type: ignore" in line and "details" in line
    ]
    assert not offenders


def test_alarm_and_status_lists_are_defined_once():
    """No module but the comparison's spells out a tuple or set of baseline statuses."""
    statuses = set(STATUSES)
    offenders = []
    for path, tree in _sources().items():
        if path == "records/comparison.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Tuple | ast.Set | ast.List):
                words = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if len(words & statuses) >= 2:
                    offenders.append(f"{path}:{node.lineno}")
    assert not offenders


def test_no_module_imports_a_private_name_from_another_package():
    offenders = []
    for path, tree in _sources().items():
        package = ("pytest_fairness." + path.removesuffix(".py").replace("/", ".")).rsplit(".", 1)[0]
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pytest_fairness")):
                continue
            source_package = node.module.rsplit(".", 1)[0] if "." in node.module else node.module
            private = [a.name for a in node.names if a.name.startswith("_") and a.name != "__version__"]
            if private and source_package != package:
                offenders.append(f"{path}:{node.lineno} {node.module}.{','.join(private)}")
    assert not offenders


def test_the_statuses_list_every_status_once_and_the_alarms_are_what_fails_a_run():
    assert sorted(STATUSES) == sorted(get_args(Status))
    assert FAILING == ALARMS and "changed" in ALARMS


def _changed() -> Comparison:
    """A significant change beyond tolerance on a check with no harmful side: status ``changed``."""
    side = Entry(suite="s", check="c", estimate=None, ci=(0, 1), n=50, sd=0.1)
    return compare(replace(side, estimate=0.1), replace(side, estimate=0.5))


@pytest.mark.parametrize("mode", ["markdown", "cli"])
def test_the_markdown_and_the_compare_cli_both_raise_the_alarm_for_changed(mode, tmp_path, capsys):
    from pytest_fairness.cli import release_compare as cli

    comparison = _changed()
    assert comparison.status == "changed" and comparison.alarm and not comparison.matches
    if mode == "markdown":
        row = next(
            line for line in markdown.comparison_markdown([comparison], "a", "b").splitlines() if "`s::c`" in line
        )
        assert row.endswith("| **CHANGED** |")
    else:
        assert cli._row(comparison)[-1] == "CHANGED"


def test_a_comparison_round_trips_and_renders_the_same_explanation_after_the_run_restates_it():
    own = compare(
        Entry(suite="s", check="c", estimate=0.1, sd=0.3, n=40, ci=(0.0, 0.2), threshold=Threshold(max=0.2)),
        Entry(suite="s", check="c", estimate=0.3, sd=0.3, n=40, ci=(0.2, 0.4), threshold=Threshold(max=0.2)),
    )
    assert own.status == "regressed" and own.threshold == Threshold(max=0.2)
    noise = Side(0.0, (0.0, 0.0), 0.95, 9)
    others = [Comparison(f"s::x{i}", "unchanged", noise, noise, 0.0, None, 0.9, 0.0, 0.05) for i in range(30)]
    final = decide_run([own, *others], "holm").comparisons[0]
    assert final.status == "unchanged" and final.own_status == "regressed"
    assert explain(final).startswith("s::c UNCHANGED: ") and "within the run's sampling noise" in explain(final)
    assert "it rose towards the maximum" in explain(final)  # the reason is still its own
    for c in (own, final):
        again = from_json(Comparison, to_json(c))
        assert again == c and explain(again) == explain(c)


def test_a_record_carries_its_comparison_and_outcome_typed_through_json():
    samples = np.array([0.1, 0.2, 0.3])
    result = MeasureResult(
        "implicit_bias",
        "career",
        replace(summarize(samples), ci_method="bounded"),
        0,
        [],
        "faithful",
        "m",
        {},
        {},
        samples=list(samples),
        attenuation=Attenuation(0.9, 0.8, 1.0, 0.975, "the judge's sensitivity", "on 40 judgments"),
    )
    rec = CheckRecord("s", "c", Outcome.PASS, Threshold(max=0.2), result, baseline=_changed())
    again = CheckRecord.from_dict(rec.to_dict())
    assert again.outcome is Outcome.PASS and again.threshold == Threshold(max=0.2)
    assert again.result.summary == rec.result.summary  # which interval the gate read travels too
    assert again.result.attenuation == rec.result.attenuation
    assert again.baseline == rec.baseline
    measured = CheckRecord.from_dict(replace(rec, outcome=Outcome.MEASURED, threshold=None, baseline=None).to_dict())
    assert measured.outcome is Outcome.MEASURED and measured.threshold is None and measured.threshold_text == "—"
