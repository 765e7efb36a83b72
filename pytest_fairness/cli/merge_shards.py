"""``merge SHARD.json... [--report PATH] [--markdown PATH] [--plots DIR] [--html PATH] [--junitxml PATH]
[--history DIR]``: the shards' reports into the run's one decision and its outputs; exits with the gate's status
(2: the files are not every shard of one run, said in one line)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

USAGE_EXIT = 2


class _Stdout:
    """The terminal summary's screen outside pytest."""

    def write_sep(self, sep: str, title: str | None = None, **markup: bool) -> None:
        text = f" {title} " if title else ""
        print(text.center(100, sep))

    def write_line(self, line: str, **markup: bool) -> None:
        print(line)


def register(commands: Any) -> None:
    merge = commands.add_parser("merge", help="decide a sharded run from its shards' JSON reports")
    merge.add_argument("shards", nargs="+", type=Path, help="every shard's --fairness-report file")
    merge.add_argument("--report", help="write the run's JSON report here")
    merge.add_argument("--markdown", help="write the run's Markdown summary here")
    merge.add_argument("--plots", help="write per-measure PNG plots to this folder (linked from the Markdown)")
    merge.add_argument("--html", help="write the run's HTML page with each check's evidence here")
    merge.add_argument("--junitxml", help="write a JUnit XML file of the run's checks here")
    merge.add_argument("--history", help="append the run's line to DIR/history.jsonl")
    merge.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pytest_fairness.report.formats import OUTPUTS
    from pytest_fairness.report.junit import JUnitDocument
    from pytest_fairness.report.output import Sinks
    from pytest_fairness.report.shard_merge import MergeError, ShardReport, merge

    outputs: dict[str, Any] = {name: getattr(args, name) for name in ("report", "markdown", "plots", "html", "history")}
    try:
        report, status = merge([ShardReport.read(path) for path in args.shards], outputs, Path.cwd())
    except MergeError as exc:
        print(f"pytest-fairness merge: {exc}", file=sys.stderr)
        return USAGE_EXIT
    junit = JUnitDocument() if args.junitxml else None
    for when, sinks in (("sessionfinish", Sinks(junit=junit)), ("terminal_summary", Sinks(terminal=_Stdout()))):
        for output in OUTPUTS:
            if output.when == when and output.wanted(report):
                output.write(report, sinks)
    if junit is not None:
        path = Path(args.junitxml)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(junit.render(report.records, report.settings.inconclusive, report.settings.pr_threshold))
    print(f"merged {len(args.shards)} shard(s): {len(report.records)} checks; exit status {status}")
    return status
