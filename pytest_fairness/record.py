"""The typed record of one gated check: what travels from xdist workers and what every output reads.

Terminal summary, JSON report, Markdown, JUnit properties, baselines, the release comparison and
the syrupy adapter all read a ``CheckRecord``; it round-trips through JSON (``to_dict`` /
``from_dict``) and carries a schema version so an old report is recognised as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from pytest_fairness.models.runner import CallStats
from pytest_fairness.result import MeasureResult, strict_json
from pytest_fairness.stats import Summary

SCHEMA_VERSION = 2
#: The whole check record travels from xdist workers under this user property; the controller takes it
#: off the report (so JUnit XML does not carry every sample) and leaves a compact JSON ``fairness`` one.
RECORD_PROPERTY = "fairness_record"
PROPERTY = "fairness"


@dataclass
class BaselineComparison:
    """How a check compared with its committed baseline."""

    status: str
    difference: float | None
    ci: tuple[float, float] | None
    p: float | None
    explanation: str

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> BaselineComparison:
        ci = raw.get("ci")
        return cls(raw["status"], raw.get("difference"), tuple(ci) if ci else None, raw.get("p"), raw["explanation"])


@dataclass
class CheckRecord:
    """One check's result, the gate's verdict and, when compared, its baseline comparison."""

    suite: str
    check: str
    outcome: str
    threshold: dict[str, float]
    threshold_text: str
    result: MeasureResult
    baseline: BaselineComparison | None = None
    schema: int = field(default=SCHEMA_VERSION)

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

    # -- JSON round trip -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": self.schema,
            "suite": self.suite,
            "check": self.check,
            "outcome": self.outcome,
            "threshold": dict(self.threshold),
            "threshold_text": self.threshold_text,
            "result": self.result.to_dict(),
        }
        if self.baseline is not None:
            out["baseline"] = strict_json(
                {**self.baseline.__dict__, "ci": list(self.baseline.ci) if self.baseline.ci else None}
            )
        return out

    def compact(self) -> dict[str, Any]:
        """The record without per-sample values and call details, e.g. for a JUnit XML property."""
        out = self.to_dict()
        out["result"] = {k: v for k, v in out["result"].items() if k not in ("samples", "details", "calls")}
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> CheckRecord:
        schema = raw.get("schema", 1)
        if schema > SCHEMA_VERSION:
            raise ValueError(
                f"check record of schema {schema} is newer than this pytest-fairness reads ({SCHEMA_VERSION}); "
                "upgrade pytest-fairness"
            )
        baseline = raw.get("baseline")
        return cls(
            suite=raw["suite"],
            check=raw["check"],
            outcome=raw["outcome"],
            threshold=dict(raw["threshold"]),
            threshold_text=raw["threshold_text"],
            result=result_from_dict(raw["result"]),
            baseline=BaselineComparison.from_dict(baseline) if baseline else None,
            schema=SCHEMA_VERSION,
        )


def _float(value: Any) -> float:
    return float("nan") if value is None else float(value)


def result_from_dict(raw: dict[str, Any]) -> MeasureResult:
    """Rebuild a MeasureResult from its JSON form (None stands for NaN there)."""
    s = raw["summary"]
    summary = Summary(
        mean=_float(s["mean"]),
        n=int(s["n"]),
        sd=_float(s["sd"]),
        ci_t=(_float(s["ci_t"][0]), _float(s["ci_t"][1])),
        ci_normal=(_float(s["ci_normal"][0]), _float(s["ci_normal"][1])),
        ci_bootstrap=(_float(s["ci_bootstrap"][0]), _float(s["ci_bootstrap"][1])),
        null=_float(s["null"]),
        t=_float(s["t"]),
        p=_float(s["p"]),
        confidence=_float(s["confidence"]),
    )
    calls = CallStats(**{f.name: raw["calls"][f.name] for f in fields(CallStats) if f.name in raw["calls"]})
    return MeasureResult(
        measure=raw["measure"],
        subject=raw["subject"],
        summary=summary,
        n_unusable=raw["n_unusable"],
        unusable_examples=list(raw["unusable_examples"]),
        fidelity=raw["fidelity"],
        model_id=raw["model_id"],
        versions=dict(raw["versions"]),
        params=dict(raw["params"]),
        details=dict(raw["details"]),
        calls=calls,
        samples=[_float(v) for v in raw["samples"]],
        unserved=raw.get("unserved"),
    )
