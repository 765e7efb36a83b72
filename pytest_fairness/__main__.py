"""``python -m pytest_fairness``: the steps of a sharded run that happen outside pytest.

- ``merge SHARD.json... [--report PATH] [--markdown PATH] [--plots DIR] [--junitxml PATH] [--history DIR]``:
  the shards' reports into the run's one decision and its outputs; exits with the gate's status (2: the
  files are not every shard of one run, said in one line).
- ``cache merge --into CACHE SHARD_CACHE...``: the shards' response caches into one, so that a replay of
  the merged run costs nothing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pytest_fairness", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    merge = commands.add_parser("merge", help="decide a sharded run from its shards' JSON reports")
    merge.add_argument("shards", nargs="+", type=Path, help="every shard's --fairness-report file")
    merge.add_argument("--report", help="write the run's JSON report here")
    merge.add_argument("--markdown", help="write the run's Markdown summary here")
    merge.add_argument("--plots", help="write per-measure PNG plots to this folder (linked from the Markdown)")
    merge.add_argument("--junitxml", help="write a JUnit XML file of the run's checks here")
    merge.add_argument("--history", help="append the run's line to DIR/history.jsonl")
    cache = commands.add_parser("cache", help="response cache tools")
    tools = cache.add_subparsers(dest="tool", required=True)
    combine = tools.add_parser("merge", help="combine the shards' response caches into one")
    combine.add_argument("--into", type=Path, required=True, help="the cache to write (created, or added to)")
    combine.add_argument("caches", nargs="+", type=Path, help="the shards' caches")
    return parser


def _merge(args: argparse.Namespace) -> int:
    from pytest_fairness.merge import MergeError, ShardReport, merge
    from pytest_fairness.report.junit import JUnitDocument
    from pytest_fairness.report.output import Sinks
    from pytest_fairness.report.outputs import OUTPUTS

    outputs: dict[str, Any] = {name: getattr(args, name) for name in ("report", "markdown", "plots", "history")}
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
        path.write_text(junit.render(report.records, report.settings.inconclusive))
    print(f"merged {len(args.shards)} shard(s): {len(report.records)} checks; exit status {status}")
    return status


def _cache_merge(args: argparse.Namespace) -> int:
    from pytest_fairness.models.cache import CacheError, merge_caches

    try:
        merged = merge_caches(args.into, args.caches)
    except CacheError as exc:
        print(f"pytest-fairness cache merge: {exc}", file=sys.stderr)
        return USAGE_EXIT
    for conflict in merged.conflicts:
        print(f"conflict: {conflict}", file=sys.stderr)
    print(f"{args.into}: {merged.added} entries added, {merged.total} in all, {len(merged.conflicts)} conflicting")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "merge":
        return _merge(args)
    return _cache_merge(args)


if __name__ == "__main__":
    sys.exit(main())
