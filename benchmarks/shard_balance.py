"""How evenly --fairness-shard=I/N splits the built-in suites: each shard's estimated cost against the mean.

The partition reads the placement's cost estimate (token-equivalents of each sharing group's requests, no model
called) and puts whole groups, costliest first, on the least-loaded shard. No partition can do better than
the largest group alone; the table says when that group, not the partition, sets the largest shard.

    python benchmarks/shard_balance.py [--profile release] [--shards 2 3 4 5] [--skip fpf.answers]

Planning the release profile's net-harm checks takes minutes (it draws every name pair the run would send).
"""

from __future__ import annotations

import argparse
import time

from pytest_fairness.config import shard, suite
from pytest_fairness.models.providers import load_model
from pytest_fairness.run.placement import CHECK_PREFIX, plan_groups


def plan(profile: str, skip: str | None) -> tuple[dict[str, str], dict[str, float]]:
    """Every built-in suite check's sharing group, and each group's estimated cost (``skip``: groups left out)."""
    checks = [check for name in suite.builtin_suites() for check in suite.load(name).checks]
    if skip:
        checks = [c for c in checks if not c.measure.share_group(c.params).startswith(skip)]
    nodes, costs = plan_groups(checks, load_model("synthetic:iat"), profile=profile, seed=0, sequential=False)
    return {node.removeprefix(CHECK_PREFIX): group for node, group in nodes.items()}, costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="release")
    parser.add_argument("--shards", type=int, nargs="+", default=[2, 3, 4, 5])
    parser.add_argument("--skip", help="leave out sharing groups whose name starts with this (e.g. fpf.answers)")
    args = parser.parse_args()
    start = time.perf_counter()
    groups, costs = plan(args.profile, args.skip)
    print(
        f"{args.profile}: {len(groups)} checks in {len(costs)} groups, planned in {time.perf_counter() - start:.0f} s"
    )
    print("| shards | largest / mean | largest group / mean | set by |\n|---|---|---|---|")
    for count in args.shards:
        largest, group = shard.balance(groups, costs, count)
        print(f"| {count} | {largest:.3f} | {group:.3f} | {'one group' if largest <= group + 1e-9 else 'partition'} |")


if __name__ == "__main__":
    main()
