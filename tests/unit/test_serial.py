"""Records are read back from JSON generically, by their type hints: a field is declared once."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import ClassVar

import pytest

from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.comparison import Comparison, Side
from pytest_fairness.records.measure_result import MeasureResult, MoreSamples, SequentialInfo
from pytest_fairness.report.tally import RunState
from pytest_fairness.stats.attenuation import Attenuation
from pytest_fairness.stats.gate import Outcome, Threshold
from pytest_fairness.stats.intervals import summarize
from pytest_fairness.util.serial import OMIT_EMPTY, from_json, to_json, written_as


@dataclass(frozen=True)
class Inner:
    level: float
    where: tuple[float | None, float | None]


@dataclass(frozen=True)
class Outer:
    name: str
    outcome: Outcome
    inner: Inner | None
    sizes: list[int]
    by: dict[str, Inner]
    kept: tuple[str, ...] = ()
    added_later: int = 7
    notes: list[str] = field(default_factory=list)


def test_nested_types_optionals_and_enums_are_read_from_their_hints():
    raw = {
        "name": "a",
        "outcome": "fail",
        "inner": {"level": None, "where": [0.1, None]},
        "sizes": [1, 2],
        "by": {"x": {"level": 0.5, "where": [None, 2]}},
        "kept": ["p", "q"],
        "unknown": "ignored",
    }
    got = from_json(Outer, raw)
    assert got.outcome is Outcome.FAIL and got.kept == ("p", "q") and got.added_later == 7 and got.notes == []
    assert got.inner is not None and math.isnan(got.inner.level) and got.inner.where == (0.1, None)
    assert got.by["x"] == Inner(0.5, (None, 2.0)) and got.sizes == [1, 2]
    assert from_json(Outer, {**raw, "inner": None}).inner is None


def test_a_record_with_every_kind_of_state_round_trips_through_json():
    summary = summarize([0.1, 0.2, 0.4], null=0.0)
    result = MeasureResult(
        "net_harm",
        "gender",
        summary,
        2,
        ["refused"],
        "faithful",
        "m",
        {"prompts": "abc"},
        {"prompts": 3, "judge": None},
        details={"certifies": "x"},
        samples=[0.1, 0.2, 0.4],
        unserved=None,
        attenuation=Attenuation(0.8, 0.7, 0.9, 0.95, "judge", "calibration"),
        no_size_decides="the search missed a canary",
        sequential=SequentialInfo([20, 40], 400, stopped="futile"),
        to_decide=MoreSamples(120, more=80, observed_mean=0.2, observed_sd=0.15, usable_rate=1.0),
    )
    record = CheckRecord("gender", "net_harm", Outcome.INCONCLUSIVE, Threshold(max=0.001), result)
    again = CheckRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert again == record and again.to_dict() == record.to_dict()


def test_fields_are_written_in_order_and_an_empty_one_marked_so_is_left_out():
    assert to_json(Outer("a", Outcome.PASS, None, [1], {}, ("k",))) == {
        "name": "a",
        "outcome": "pass",
        "inner": None,
        "sizes": [1],
        "by": {},
        "kept": ["k"],
        "added_later": 7,
        "notes": [],
    }
    assert RunState("complete", 3, 3).to_dict() == {
        "status": "complete",
        "selected": 3,
        "passed": 3,
        "failed": 0,
        "inconclusive": 0,
        "cannot_serve": 0,
        "errored": 0,
        "not_run": 0,
        "abandoned": 0,
    }
    assert list(RunState("errored", stopped="a provider error").to_dict())[-1] == "stopped"
    assert to_json(Side(0.1, (0.0, 0.2), 0.95, 10)) == {"estimate": 0.1, "ci": [0.0, 0.2], "confidence": 0.95, "n": 10}
    assert to_json(Side(0.1, (0.0, 0.2), 0.95, 10, "m"))["model"] == "m"


@dataclass(frozen=True)
class Shaped:
    """A class whose JSON differs from its fields: a key first, a field in another form, a derived key."""

    JSON_DERIVED: ClassVar[dict[str, str]] = {"doubled": "size"}
    version: int = field(default=3, kw_only=True)
    size: int
    limit: Threshold | None = field(
        default=None,
        metadata=written_as(
            lambda t: {} if t is None else to_json(t), lambda r: from_json(Threshold, r) if r else None
        ),
    )
    why: str = field(default="", metadata=OMIT_EMPTY)

    @property
    def doubled(self) -> int:
        return 2 * self.size


def test_a_declared_field_writer_reader_and_derived_key_shape_the_json_and_read_back():
    assert to_json(Shaped(4)) == {"version": 3, "size": 4, "doubled": 8, "limit": {}}
    written = to_json(Shaped(4, Threshold(max=0.2), "x"))
    assert list(written) == ["version", "size", "doubled", "limit", "why"] and written["limit"] == {
        "min": None,
        "max": 0.2,
    }
    assert from_json(Shaped, written) == Shaped(4, Threshold(max=0.2), "x")  # the derived key is not read
    assert from_json(Shaped, to_json(Shaped(4))) == Shaped(4)


def test_a_value_that_cannot_be_read_names_its_field():
    with pytest.raises(ValueError, match=r"^inner: where: "):
        from_json(Outer, {"name": "a", "outcome": "fail", "inner": {"level": 1, "where": 3}, "sizes": [], "by": {}})
    with pytest.raises(ValueError, match=r"^by: expected a mapping, got \[1\]$"):
        from_json(Outer, {"name": "a", "outcome": "fail", "inner": None, "sizes": [], "by": [1]})


def test_the_record_and_comparison_json_keep_their_key_order():
    """The JSON report's key order (byte identity with earlier versions): the schema first, the readable threshold
    after the threshold, a comparison's mode after its status and its adjusted p after its own."""
    side = Side(0.1, (0.0, 0.2), 0.95, 10)
    comparison = Comparison("s::c", "unchanged", side, side, 0.0, (-0.1, 0.1), 0.9, 0.0, 0.05, mode="noninferiority")
    result = MeasureResult("m", "x", summarize([0.1, 0.2]), 0, [], "f", "id", {}, {})
    record = CheckRecord("s", "c", Outcome.PASS, Threshold(max=0.2), result, comparison)
    written = record.to_dict()
    assert list(written) == ["schema", "suite", "check", "outcome", "threshold", "threshold_text", "result", "baseline"]
    assert list(written["baseline"]) == [
        "check", "status", "mode", "before", "after", "difference", "ci", "p", "p_adjusted", "tolerance", "alpha",
        "threshold", "inputs_changed", "adjusted", "paired", "unpaired", "explanation",
    ]  # fmt: skip
    assert written["baseline"]["mode"] == "noninferiority" and written["threshold_text"] == "≤ 0.2"
    measured = replace(record, outcome=Outcome.MEASURED, threshold=None, baseline=None).to_dict()
    assert measured["threshold"] == {} and "baseline" not in measured
    assert CheckRecord.from_dict(json.loads(json.dumps(written))) == record
