"""The typed record of one gated check: what travels from xdist workers and what every output reads.

Terminal summary, JSON report, Markdown, JUnit properties, baselines, the release comparison and
the syrupy adapter all read a ``CheckRecord``; it round-trips through JSON (``to_dict`` /
``from_dict``) and carries a schema version so an old report is recognised as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from pytest_fairness.records.comparison import Comparison
from pytest_fairness.records.explain import explain
from pytest_fairness.records.measure_result import MeasureResult, strict_json
from pytest_fairness.stats.gate import Outcome, Threshold
from pytest_fairness.util.serial import from_json, to_json, written_as

SCHEMA_VERSION = 2
#: The whole check record travels from xdist workers under this user property; the controller takes it
#: off the report (so JUnit XML does not carry every sample) and leaves a compact JSON ``fairness`` one.
RECORD_PROPERTY = "fairness_record"
PROPERTY = "fairness"


def result_from_dict(raw: dict[str, Any]) -> MeasureResult:
    """Rebuild a MeasureResult from its JSON form: its fields read generically (None stands for NaN there),
    the framework's typed state taken back out of ``details``."""
    details = dict(raw["details"])
    state = {name: details.pop(name, None) for name in ("sequential", "to_decide")}
    no_size_decides = str(details.pop("no_size_decides", "") or "")
    return from_json(MeasureResult, {**raw, **state, "details": details, "no_size_decides": no_size_decides})


def _threshold_json(threshold: Threshold | None) -> Any:
    return {} if threshold is None else to_json(threshold)


def _threshold_read(raw: Any) -> Threshold | None:
    return Threshold.from_dict(raw) if raw else None


def _baseline_json(comparison: Comparison) -> Any:
    """A comparison as the report keeps it: its fields and its rendered explanation, in strict JSON."""
    return strict_json({**to_json(comparison), "explanation": explain(comparison)})


def _baseline_read(raw: Any) -> Comparison | None:
    """A baseline section of an earlier version (its prose, not the whole comparison) is not read: nothing could
    restate it, and the report's ``baselines`` section keeps it."""
    return from_json(Comparison, raw) if raw and Comparison.readable(raw) else None


@dataclass(frozen=True)
class CheckRecord:
    """One check's result, the gate's verdict and, when compared, its baseline comparison.

    ``threshold`` is None for a result a fixture measured in a user's own test (``Outcome.MEASURED``). The JSON
    form (``to_dict``) is the fields in this order, with the threshold as people read it after the threshold.
    """

    #: First in the JSON form, so a reader sees the version before anything else; given by name.
    schema: int = field(default=SCHEMA_VERSION, kw_only=True)
    suite: str
    check: str
    outcome: Outcome
    threshold: Threshold | None = field(metadata=written_as(_threshold_json, _threshold_read))
    result: MeasureResult = field(metadata=written_as(MeasureResult.to_dict, result_from_dict))
    baseline: Comparison | None = field(
        default=None, metadata=written_as(_baseline_json, _baseline_read, omit_empty=True)
    )
    JSON_DERIVED: ClassVar[dict[str, str]] = {"threshold_text": "threshold"}

    # -- what outputs read most ----------------------------------------------------------------

    @property
    def label(self) -> str:
        return f"{self.suite}::{self.check}"

    @property
    def measure(self) -> str:
        return self.result.measure

    @property
    def confidence(self) -> float:
        return self.result.summary.confidence

    @property
    def threshold_text(self) -> str:
        """The threshold as people read it (``≤ 0.2``); a dash when there is none."""
        return "—" if self.threshold is None else self.threshold.describe()

    # -- JSON round trip -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The record's JSON form (``serial.to_json``); read back with ``from_dict``."""
        return dict(to_json(self))

    def compact(self) -> dict[str, Any]:
        """The record without per-sample values and call details, e.g. for a JUnit XML property."""
        out = self.to_dict()
        out["result"] = {
            k: v for k, v in out["result"].items() if k not in ("samples", "items", "details", "calls", "evidence")
        }
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> CheckRecord:
        """The inverse of ``to_dict`` (``serial.from_json``), for a record of this schema or an earlier one."""
        schema = raw.get("schema", 1)
        if schema > SCHEMA_VERSION:
            raise ValueError(
                f"check record of schema {schema} is newer than this pytest-fairness reads ({SCHEMA_VERSION}); "
                "upgrade pytest-fairness"
            )
        return from_json(cls, {**raw, "schema": SCHEMA_VERSION})
