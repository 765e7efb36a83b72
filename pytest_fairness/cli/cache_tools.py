"""``cache merge --into CACHE SHARD_CACHE...``: the shards' response caches into one, so that a replay of the
merged run costs nothing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_fairness.cli.merge_shards import USAGE_EXIT


def register(commands: Any) -> None:
    cache = commands.add_parser("cache", help="response cache tools")
    tools = cache.add_subparsers(dest="tool", required=True)
    combine = tools.add_parser("merge", help="combine the shards' response caches into one")
    combine.add_argument("--into", type=Path, required=True, help="the cache to write (created, or added to)")
    combine.add_argument("caches", nargs="+", type=Path, help="the shards' caches")
    combine.set_defaults(run=merge)


def merge(args: argparse.Namespace) -> int:
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
