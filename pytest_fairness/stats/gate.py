"""One gate: a threshold on an estimate, decided from its confidence interval.

A check passes only when the whole interval lies within the allowed range, fails when the whole
interval lies outside it, and is inconclusive otherwise: sampling noise alone never passes or
fails a release.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from pytest_fairness.stats.intervals import Interval


class Outcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    #: A pull request's check that its paired comparison with the baseline could not decide, whose measure lies
    #: within its threshold: the threshold's verdict, named so (``baseline.pr_gate``); no gate here reaches it.
    WITHIN_THRESHOLD = "within_threshold"
    #: The same, with the measure beyond its threshold.
    BEYOND_THRESHOLD = "beyond_threshold"
    INCONCLUSIVE = "inconclusive"
    #: The model (or its judge) gives too few usable answers for the measure to mean anything.
    CANNOT_SERVE = "cannot_serve"
    #: A result a fixture measured in a user's own test: it has no threshold, so no gate decides it.
    MEASURED = "measured"


#: Every verdict a gate can reach, in the order reports list them (``MEASURED`` is none).
OUTCOMES = tuple(o.value for o in Outcome if o is not Outcome.MEASURED)


class GateError(ValueError):
    """A threshold that cannot be used as written."""


@dataclass(frozen=True)
class Threshold:
    """Allowed range for an estimate: ``min <= estimate <= max``; either side may be open."""

    min: float | None = None
    max: float | None = None

    @classmethod
    def from_mapping(cls, raw: object, where: str) -> Threshold:
        """Build from a suite's ``threshold:`` mapping, e.g. ``{max: 0.2}`` or ``{abs_max: 0.1}``."""
        if not isinstance(raw, dict) or not raw:
            raise GateError(f"{where}: 'threshold' must be a mapping such as {{max: 0.2}} or {{abs_max: 0.1}}")
        unknown = set(raw) - {"min", "max", "abs_max"}
        if unknown:
            raise GateError(f"{where}: unknown threshold key(s) {sorted(unknown)}; use min, max or abs_max")
        values: dict[str, float] = {}
        for key, value in raw.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
                raise GateError(f"{where}: threshold '{key}' must be a number, got {value!r}")
            values[key] = float(value)
        if "abs_max" in values:
            if {"min", "max"} & set(values):
                raise GateError(f"{where}: use either abs_max or min/max, not both")
            if values["abs_max"] < 0:
                raise GateError(f"{where}: abs_max must be >= 0")
            return cls(min=-values["abs_max"], max=values["abs_max"])
        lo, hi = values.get("min"), values.get("max")
        if lo is not None and hi is not None and lo > hi:
            raise GateError(f"{where}: threshold min {lo} is above max {hi}")
        return cls(min=lo, max=hi)

    def describe(self) -> str:
        if self.min is not None and self.max is not None:
            if self.min == -self.max:
                return f"|x| ≤ {self.max:g}"
            return f"{self.min:g} ≤ x ≤ {self.max:g}"
        if self.max is not None:
            return f"≤ {self.max:g}"
        if self.min is not None:
            return f"≥ {self.min:g}"
        return "none"

    def as_dict(self) -> dict[str, float | None]:
        return {"min": self.min, "max": self.max}

    def _sides(self) -> tuple[float | None, float | None]:
        """The finite limits (an infinite one is as good as open)."""

        def limit(value: float | None) -> float | None:
            return value if value is not None and math.isfinite(value) else None

        return limit(self.min), limit(self.max)

    def harmful_side(self) -> int:
        """+1 if a rise is harmful (a maximum), -1 if a fall is (a minimum), 0 if both can be (a range, or none)."""
        lo, hi = self._sides()
        if hi is not None and lo is None:
            return 1
        if lo is not None and hi is None:
            return -1
        return 0

    def harm_direction(self, old: float, new: float) -> int:
        """+1 if old -> new moves the harmful way, -1 the helpful way, 0 if the threshold cannot tell.

        Towards or over a maximum is harmful, down towards or under a minimum too; for a range, moving
        away from its centre.
        """
        lo, hi = self._sides()
        if lo is not None and hi is not None:
            centre = (lo + hi) / 2
            away = abs(new - centre) - abs(old - centre)
            return (away > 0) - (away < 0)
        if hi is not None:
            return (new > old) - (new < old)
        if lo is not None:
            return (new < old) - (new > old)
        return 0

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> Threshold:
        """The inverse of ``as_dict`` (missing or non-numeric sides are open), e.g. from a record or a baseline."""

        def side(key: str) -> float | None:
            value = raw.get(key)
            return float(value) if isinstance(value, int | float) and math.isfinite(value) else None

        return cls(min=side("min"), max=side("max"))


def decide(ci: Interval, threshold: Threshold) -> Outcome:
    """Pass when the interval is inside the allowed range, fail when it is wholly outside."""
    lo, hi = ci
    if math.isnan(lo) or math.isnan(hi):
        return Outcome.INCONCLUSIVE
    below = threshold.min is not None and hi < threshold.min
    above = threshold.max is not None and lo > threshold.max
    if below or above:
        return Outcome.FAIL
    lo_ok = threshold.min is None or lo >= threshold.min
    hi_ok = threshold.max is None or hi <= threshold.max
    return Outcome.PASS if lo_ok and hi_ok else Outcome.INCONCLUSIVE


#: How a run's gates share their error rate: each at its own confidence, or Bonferroni across the run.
GATE_MULTIPLICITY = ("none", "bonferroni")


@dataclass(frozen=True)
class GateFamily:
    """The gates of one run that share its error rate: how many, at what confidence, and how they share it.

    Fixed once collection knows the selected checks (every xdist worker sees them all); the gates run at
    ``gate_confidence`` and the report states the rate the family controls.
    """

    size: int
    confidence: float
    multiplicity: str = "none"

    @property
    def gate_confidence(self) -> float:
        """Each gate's confidence: the configured one, or under Bonferroni 1 - (1 - confidence) / checks, so
        that the chance any gate of the run errs is at most 1 - confidence."""
        if self.multiplicity == "bonferroni" and self.size > 1:
            return 1 - (1 - self.confidence) / self.size
        return self.confidence
