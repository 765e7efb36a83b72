"""Release against release: ``python -m pytest_fairness compare OLD NEW``.

OLD and NEW are each a JSON report (``--fairness-report``), one model's baseline folder
(``baselines/<model>/``) or a single baseline file; they may be of different kinds, e.g. the committed
baselines against a candidate's report. Every check is listed with both estimates, the difference,
its interval, p and the p adjusted across all compared checks (Holm by default). The exit status is 1
when a check regressed (a change significant after the adjustment and beyond its tolerance, the
harmful way), is not shown non-inferior (``--mode noninferiority``), is missing from NEW, or when NEW
is a report of a run that errored or was interrupted; 0 otherwise; 2 when the inputs cannot be read.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_fairness.baseline import (
    FAIL_ON,
    MODES,
    Comparison,
    FailOn,
    Mode,
    baseline_entry,
    decide_run,
    parse_baseline,
)
from pytest_fairness.baseline.entry import Entry
from pytest_fairness.baseline.entry_comparison import compare_entries
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.explain import explain
from pytest_fairness.report.markdown import comparison_markdown
from pytest_fairness.report.tally import RunState
from pytest_fairness.report.terminal import run_status_line
from pytest_fairness.stats.multiplicity import METHODS, Method
from pytest_fairness.util.fmt import interval, num, text_table
from pytest_fairness.util.serial import from_json

COLUMNS = ("check", "old", "new", "difference", "CI", "p", "adjusted p", "status")


class CompareError(Exception):
    """An input that cannot be compared; the message names the file and what was expected."""


def _report(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CompareError(f"{path}: not valid JSON ({exc})") from None


def load_run(path: Path) -> RunState | None:
    """The ``run`` section of a JSON report (complete, errored or interrupted); None for baselines or old reports."""
    if path.is_dir() or path.suffix != ".json" or not path.exists():
        return None
    doc = _report(path)
    run = doc.get("run") if isinstance(doc, dict) else None
    return from_json(RunState, run) if isinstance(run, dict) and "status" in run else None


def _report_entries(path: Path) -> list[Entry]:
    doc = _report(path)
    checks = doc.get("checks") if isinstance(doc, dict) else None
    if not isinstance(checks, list) or not all(isinstance(c, dict) and "result" in c for c in checks):
        raise CompareError(f"{path}: not a pytest-fairness report (expected the 'checks' list of --fairness-report)")
    try:
        return [baseline_entry(CheckRecord.from_dict(record)) for record in checks]
    except (KeyError, TypeError, ValueError) as exc:
        raise CompareError(f"{path}: a check record cannot be read ({exc}); is it a pytest-fairness report?") from None


def _baseline_entries(path: Path) -> list[Entry]:
    try:
        return parse_baseline(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise CompareError(f"{path}: {exc}; re-record it with --snapshot-update") from None


def _folder_files(path: Path) -> list[Path]:
    files = sorted(path.glob("*.yaml"))
    if files:
        return files
    models = sorted({p.parent for p in path.glob("*/*.yaml")})
    if len(models) == 1:
        return sorted(models[0].glob("*.yaml"))
    if models:
        names = ", ".join(m.name for m in models)
        raise CompareError(f"{path} holds the baselines of several models ({names}): pass one model's folder")
    raise CompareError(f"{path}: no baseline files (*.yaml) in this folder")


def load_entries(path: Path) -> list[Entry]:
    """Baseline entries from a JSON report, a baseline file, or a model's baseline folder."""
    if not path.exists():
        raise CompareError(f"{path}: no such file or folder")
    if path.is_dir():
        entries = [e for file in _folder_files(path) for e in _baseline_entries(file)]
    elif path.suffix == ".json":
        entries = _report_entries(path)
    elif path.suffix in (".yaml", ".yml"):
        entries = _baseline_entries(path)
    else:
        raise CompareError(f"{path}: expected a .json report, a .yaml baseline or a baseline folder")
    seen: set[str] = set()
    for entry in entries:
        if entry.key in seen:
            raise CompareError(f"{path}: check {entry.key} appears twice")
        seen.add(entry.key)
    return entries


def tolerances(specs: Sequence[str], keys: Sequence[str]) -> dict[str, float]:
    """Per-check tolerances from ``--tolerance`` values: ``X`` for every check, ``PATTERN=X`` by glob.

    Later values win, so ``--tolerance 0.02 --tolerance 'gender::pcf_*=20'`` gives PCF's x1000 scale
    its own margin.
    """
    out = dict.fromkeys(keys, 0.0)
    for spec in specs:
        pattern, _, raw = spec.rpartition("=")
        try:
            value = float(raw)
        except ValueError:
            raise CompareError(f"--tolerance {spec!r}: expected a number or PATTERN=NUMBER") from None
        if value < 0:
            raise CompareError(f"--tolerance {spec!r}: a tolerance cannot be negative")
        for key in keys:
            if not pattern or fnmatch.fnmatchcase(key, pattern):
                out[key] = value
    return out


def _row(c: Comparison) -> tuple[str, ...]:
    ci = "n/a" if c.ci is None else f"{num(100 * c.interval_level, 'g')}% {interval(c.ci, '+.3g')}"
    status = c.status.upper() if c.alarm else c.status
    return (
        c.check,
        num(c.old, ".4g"),
        num(c.new, ".4g"),
        num(c.difference, "+.4g"),
        ci,
        num(c.p, ".2g"),
        num(c.p_adjusted, ".2g"),
        status,
    )


def _label(path: Path, entries: Sequence[Entry]) -> str:
    models = sorted({e.model_id for e in entries})
    return f"{path} ({', '.join(models) or 'no checks'})"


def run(
    old: Path,
    new: Path,
    tolerance: Sequence[str],
    alpha: float,
    markdown: Path | None,
    *,
    method: Method = "holm",
    mode: Mode = "difference",
    fail_on: FailOn = "regression",
) -> int:
    """Compare, print, optionally write Markdown; the exit status."""
    before, after = load_entries(old), load_entries(new)
    old_run, new_run = load_run(old), load_run(new)
    keys = sorted({e.key for e in [*before, *after]})
    comparisons = compare_entries(before, after, tolerances(tolerance, keys), alpha=alpha, mode=mode)
    decision = decide_run(comparisons, method, alpha=alpha, mode=mode, fail_on=fail_on)
    print(f"old: {_label(old, before)}\nnew: {_label(new, after)}\n")
    for side, side_run in (("old", old_run), ("new", new_run)):
        if side_run is not None and not side_run.complete:
            print(f"{side} {run_status_line(side_run)}\n")
    for line in text_table([_row(c) for c in decision.comparisons], COLUMNS):
        print(line)
    if decision.shown:
        print()
        for c in decision.shown:
            print(explain(c))
    print("\n" + (decision.headline() if comparisons else "no checks on either side"))
    incomplete = new_run is not None and not new_run.complete
    if incomplete:
        print(f"the run fails: the new run is {new_run.status}, not complete")  # type: ignore[union-attr]
    elif comparisons:
        print(decision.verdict())
    if markdown is not None:
        text = comparison_markdown(
            decision.comparisons, _label(old, before), _label(new, after), decision=decision, new_run=new_run
        )
        markdown.write_text(text, "utf-8")
    return 1 if decision.failing or incomplete else 0


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "compare",
        help="compare two releases (JSON reports or baseline folders) check by check",
        description="Compare two fairness runs (JSON reports or baseline folders) check by check, adjusted for "
        "multiplicity across the checks; exit 1 if a check regressed (or is not shown non-inferior), a check of OLD "
        "is missing from NEW, or NEW's run errored or was interrupted.",
    )
    parser.add_argument("old", type=Path, help="the reference: a --fairness-report JSON or a baselines/<model>/ folder")
    parser.add_argument("new", type=Path, help="the candidate, in either form")
    parser.add_argument(
        "--tolerance",
        action="append",
        default=[],
        metavar="[PATTERN=]X",
        help="smallest change that counts, on the measure's scale (default 0); PATTERN=X for checks matching a "
        "glob on suite::check; repeatable, later wins",
    )
    parser.add_argument("--alpha", type=float, default=0.05, help="error level across all compared checks (0.05)")
    parser.add_argument(
        "--multiplicity",
        choices=METHODS,
        default="holm",
        help="holm (default: family-wise error rate), bh (false-discovery rate) or none",
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="difference",
        help="difference (default) or noninferiority: pass only checks shown no worse than OLD by more than the "
        "tolerance (needs --tolerance)",
    )
    parser.add_argument(
        "--fail-on", choices=FAIL_ON, default="regression", help="regression (default) or change (improvements too)"
    )
    parser.add_argument("--markdown", type=Path, help="also write the comparison as Markdown to this path")
    parser.set_defaults(run=compare, parser=parser)


def compare(args: argparse.Namespace) -> int:
    if not 0 < args.alpha < 0.5:
        args.parser.error(f"--alpha must lie in (0, 0.5), got {args.alpha}")
    try:
        return run(
            args.old,
            args.new,
            args.tolerance,
            args.alpha,
            args.markdown,
            method=args.multiplicity,
            mode=args.mode,
            fail_on=args.fail_on,
        )
    except CompareError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
