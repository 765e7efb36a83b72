"""Splitting one run into shards (``--fairness-shard=I/N``): which checks each shard runs, and the run's fingerprint.

A shard is an ordinary pytest process (a CI matrix job); ``report.shard_merge`` makes the run's decision once from
every shard's JSON report. So every shard must select the same partition from the same inputs, on any
machine: the checks are split by the placement's cost estimate (``placement.plan_groups``, which calls no
model), checks that share answers stay together and each check stays whole (a sequential check is one
sequence), and ties are broken by name. The fingerprint names the run (suite files, selection, profile,
seed, model, judge, the settings that decide, plugin version); shards of one run share it, and the
partition's hash, which the merge checks before it reads a single result.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The JSON report's section a shard writes (and the merge reads).
SECTION = "shard"


class ShardError(ValueError):
    """A --fairness-shard value that cannot be used."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    @classmethod
    def parse(cls, raw: str) -> Shard:
        """``I/N`` with 1 <= I <= N, e.g. ``2/4``."""
        index, _, count = str(raw).partition("/")
        try:
            shard = cls(int(index), int(count))
        except ValueError:
            shard = cls(0, 0)
        if not 1 <= shard.index <= shard.count:
            raise ShardError(f"--fairness-shard={raw!r}: give I/N with 1 <= I <= N, e.g. 2/4 (the second of four)")
        return shard

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def partition(groups: Mapping[str, str], costs: Mapping[str, float], count: int) -> dict[str, int]:
    """Each check (label -> its sharing group) assigned a shard 1..count: whole groups, costliest first, each to
    the shard with the least estimated cost so far (longest-processing-time order; ties go by name and to the
    lowest shard, so the result depends on nothing but the arguments)."""
    members: dict[str, list[str]] = {}
    for label in sorted(groups):
        members.setdefault(groups[label], []).append(label)
    load = [0.0] * count
    out: dict[str, int] = {}
    for group in sorted(members, key=lambda g: (-costs.get(g, 0.0), g)):
        shard = min(range(count), key=lambda k: (load[k], k))
        load[shard] += costs.get(group, 0.0)
        out |= dict.fromkeys(members[group], shard + 1)
    return out


def loads(
    assignment: Mapping[str, int], groups: Mapping[str, str], costs: Mapping[str, float], count: int
) -> list[float]:
    """Each shard's estimated cost under ``assignment`` (a group's cost counted once, on its shard)."""
    shard_of = {groups[label]: shard for label, shard in assignment.items()}
    totals: list[list[float]] = [[] for _ in range(count)]
    for group, shard in shard_of.items():
        totals[shard - 1].append(costs.get(group, 0.0))
    return [math.fsum(t) for t in totals]


def balance(groups: Mapping[str, str], costs: Mapping[str, float], count: int) -> tuple[float, float]:
    """How even ``count`` shards are: the largest shard's estimated cost over the mean shard's, and the largest
    group's (no partition does better than that group alone)."""
    per_shard = loads(partition(groups, costs, count), groups, costs, count)
    mean = math.fsum(per_shard) / count
    return max(per_shard) / mean, max(costs.values(), default=0.0) / mean


def digest(value: Any) -> str:
    """A short stable hash of a JSON-able value (keys sorted)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class ShardPlan:
    """The run's partition as one shard sees it: every selected check's shard, the run's checks in the suites'
    order, and the run's fingerprint (what must be equal for shards to be one run)."""

    shard: Shard
    assignment: Mapping[str, int]
    order: tuple[str, ...]
    fingerprint: Mapping[str, Any]

    @property
    def mine(self) -> tuple[str, ...]:
        """This shard's checks, in the run's order."""
        return tuple(label for label in self.order if self.assignment[label] == self.shard.index)

    @property
    def run_id(self) -> str:
        return digest(dict(self.fingerprint))

    @property
    def partition_hash(self) -> str:
        return digest({"count": self.shard.count, "assignment": dict(self.assignment)})

    @classmethod
    def from_section(cls, raw: Mapping[str, Any]) -> ShardPlan:
        """The plan back from its ``section`` (an xdist worker's plan, read on the controller)."""
        shard = Shard(int(raw["index"]), int(raw["count"]))
        return cls(shard, dict(raw["assignment"]), tuple(raw["run_checks"]), dict(raw["fingerprint"]))

    def section(self, exit_status: int) -> dict[str, Any]:
        """The JSON report's ``shard`` section; ``exit_status`` is pytest's status of the shard's own tests, before
        sharding made it say only whether the shard ran."""
        return {
            "index": self.shard.index,
            "count": self.shard.count,
            "run": self.run_id,
            "partition": self.partition_hash,
            "fingerprint": dict(self.fingerprint),
            "checks": list(self.mine),
            "run_checks": list(self.order),
            "assignment": dict(self.assignment),
            "exit": int(exit_status),
        }


def fingerprint(
    settings: Mapping[str, Any], suites: Mapping[str, str], selected: Sequence[str], version: str
) -> dict[str, Any]:
    """What makes shards one run: the plugin version, each suite file's hash (by suite name, so paths may
    differ between machines), the checks selected (after -k/-m), and the settings that decide (``settings``:
    model and judge ids, profile, seed, confidence, multiplicity, baselines...)."""
    return {"plugin": version, "suites": dict(suites), "selected": sorted(selected), "settings": dict(settings)}


def file_hash(data: bytes) -> str:
    """A suite file's hash, the same for a checkout with Windows line ends."""
    return hashlib.sha256(data.replace(b"\r\n", b"\n")).hexdigest()
