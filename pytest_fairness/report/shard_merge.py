"""Merging the shards of one run (``python -m pytest_fairness merge SHARD.json...``) into the run's one decision.

Each shard (``--fairness-shard=I/N``) wrote its checks' records with the run's fingerprint and partition. The
merge first makes sure the files are every shard of one run, each once, each finished, and together the
whole run; any doubt is one line naming the file and the fix, and nothing is written. Then it decides as
one run would (``report.conclude``: error control across all checks, baselines, analyses, totals) and
writes the same outputs with the gate's exit status.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_fairness.config.settings import Settings
from pytest_fairness.config.shard import SECTION
from pytest_fairness.models.batch import PENDING_EXIT
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.replay import ReplayCheck
from pytest_fairness.report.conclude import conclude, gate_status
from pytest_fairness.report.output import RunReport
from pytest_fairness.report.tally import RunState, combined_state
from pytest_fairness.util.serial import from_json

#: What a shard's section holds (``ShardPlan.section``).
SECTION_KEYS = ("index", "count", "run", "partition", "fingerprint", "checks", "run_checks", "assignment", "exit")
#: A shard's own tests ended in one of these: it ran (its outcomes are the merge's to decide).
RAN = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)


class MergeError(ValueError):
    """Shards that cannot be merged into one run: one line, naming the file and the fix."""


@dataclass(frozen=True)
class ShardReport:
    """One shard's JSON report: where it was read from, the document, and its ``shard`` section."""

    path: Path
    document: Mapping[str, Any]

    @property
    def section(self) -> Mapping[str, Any]:
        return self.document[SECTION]

    @property
    def name(self) -> str:
        return f"shard {self.section['index']}/{self.section['count']} ({self.path})"

    @classmethod
    def read(cls, path: Path) -> ShardReport:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise MergeError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise MergeError(
                f"{path}: not a whole JSON report ({exc.msg} at line {exc.lineno}): the file was cut short; "
                "run or download that shard again"
            ) from None
        if not isinstance(document, dict) or not isinstance(document.get(SECTION), dict):
            raise MergeError(f"{path}: not a shard's report (no '{SECTION}' section): run it with --fairness-shard=I/N")
        lacking = [key for key in (*SECTION_KEYS, "settings", "run") if key not in {**document, **document[SECTION]}]
        if lacking:
            raise MergeError(f"{path}: not a whole shard report (no {lacking[0]!r}): run or download that shard again")
        return cls(path, document)


def _different(first: ShardReport, other: ShardReport) -> str:
    """What differs between two shards' fingerprints, in words."""
    a, b = first.section["fingerprint"], other.section["fingerprint"]
    for key in ("plugin", "suites", "selected"):
        if a[key] != b[key]:
            what = {"plugin": "pytest-fairness version", "suites": "suite files", "selected": "selected checks"}[key]
            return f"its {what} differ ({_brief(b[key])} vs {_brief(a[key])})"
    settings = sorted(k for k in {*a["settings"], *b["settings"]} if a["settings"].get(k) != b["settings"].get(k))
    return "; ".join(f"{k} {b['settings'].get(k)!r} vs {a['settings'].get(k)!r}" for k in settings) or "it differs"


def _brief(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def check_shards(shards: Sequence[ShardReport]) -> None:
    """Raise ``MergeError`` unless ``shards`` are every shard of one run, once each, each finished."""
    if not shards:
        raise MergeError("no shard reports given: name every shard's --fairness-report file")
    first = shards[0]
    for other in shards[1:]:
        if other.section["fingerprint"] != first.section["fingerprint"]:
            raise MergeError(f"{other.name} is from another run than {first.name}: {_different(first, other)}")
        if (other.section["count"], other.section["partition"]) != (first.section["count"], first.section["partition"]):
            raise MergeError(
                f"{other.name} split the run differently from {first.name}: rerun every shard with one "
                "--fairness-shard=I/N count and one plugin version"
            )
    seen: dict[int, ShardReport] = {}
    for one in shards:
        index = one.section["index"]
        if index in seen:
            raise MergeError(f"shard {index}/{one.section['count']} is given twice: {seen[index].path} and {one.path}")
        seen[index] = one
    count = first.section["count"]
    missing = [str(i) for i in range(1, count + 1) if i not in seen]
    if missing:
        raise MergeError(f"shard(s) {', '.join(missing)} of {count} missing: give every shard's report to the merge")
    _check_cover(shards)
    for one in shards:
        _check_finished(one)


def _check_cover(shards: Sequence[ShardReport]) -> None:
    """The shards' checks are the run's selected checks, each in one shard, as the partition assigns them."""
    run_checks = list(shards[0].section["run_checks"])
    assignment = shards[0].section["assignment"]
    owner: dict[str, ShardReport] = {}
    for one in shards:
        for label in one.section["checks"]:
            if label in owner:
                raise MergeError(f"check {label} is in {owner[label].name} and in {one.name}: rerun both shards")
            if assignment.get(label) != one.section["index"]:
                raise MergeError(
                    f"check {label} ran in {one.name}; the run's partition gives it to shard {assignment.get(label)}"
                )
            owner[label] = one
        ran = {rec["suite"] + "::" + rec["check"] for rec in one.document.get("checks", [])}
        strays = sorted(ran & set(run_checks) - set(one.section["checks"]))
        if strays:
            raise MergeError(f"{one.name} holds results of checks it was not given ({strays[0]}): rerun that shard")
    uncovered = [label for label in run_checks if label not in owner]
    if uncovered:
        raise MergeError(f"the shards do not cover the run: no shard ran {uncovered[0]} ({len(uncovered)} in all)")


def _check_finished(one: ShardReport) -> None:
    """A shard that was interrupted, or waits for provider batches, is not merged: the run would be incomplete."""
    run = from_json(RunState, one.document["run"])
    exit_status = one.section["exit"]
    if exit_status == PENDING_EXIT:
        raise MergeError(f"{one.name} left requests waiting in provider batches: rerun that shard to collect them")
    if run.status in ("interrupted", "planned", "not started") or exit_status not in RAN:
        raise MergeError(
            f"{one.name} did not finish (run {run.status}, exit status {exit_status}; {run.not_run} of "
            f"{run.selected} checks not run): rerun that shard"
        )


def merged_records(shards: Sequence[ShardReport]) -> tuple[list[CheckRecord], dict[str, Any]]:
    """Every shard's records in one run's order (results of a team's own tests first, as pytest runs them before
    the suites' checks; then the checks as the suites list them), and each check's suite file and line."""
    order = {label: i for i, label in enumerate(shards[0].section["run_checks"])}
    raw = [rec for one in shards for rec in one.document.get("checks", [])]
    records = [CheckRecord.from_dict(rec) for rec in raw]
    locations = {rec.label: dict(r["location"]) for rec, r in zip(records, raw, strict=True) if "location" in r}

    def rank(i: int) -> tuple[int, int]:
        label = records[i].label
        return (1, order[label]) if label in order else (0, i)

    return [records[i] for i in sorted(range(len(records)), key=rank)], locations


def merge(shards: Sequence[ShardReport], outputs: Mapping[str, Any], rootdir: Path) -> tuple[RunReport, int]:
    """The run decided from its shards (``check_shards`` first), and its exit status."""
    check_shards(shards)
    records, locations = merged_records(shards)
    first = shards[0]
    settings = Settings.recorded(first.document["settings"], first.section["fingerprint"]["settings"], outputs)
    run = combined_state([from_json(RunState, one.document["run"]) for one in shards], records)
    replay = ReplayCheck.combined(
        [ReplayCheck.from_dict(one.document["replay"]) for one in shards if "replay" in one.document]
    )
    report = conclude(records, settings, run, locations=locations, rootdir=rootdir, replay=replay)
    exits = {int(one.section["exit"]) for one in shards}
    tests = pytest.ExitCode.OK
    if pytest.ExitCode.TESTS_FAILED in exits:
        tests = pytest.ExitCode.TESTS_FAILED
    elif exits == {pytest.ExitCode.NO_TESTS_COLLECTED}:
        tests = pytest.ExitCode.NO_TESTS_COLLECTED
    return report, gate_status(int(tests), report)
