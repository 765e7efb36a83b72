"""How a run compares with its baselines: the baseline options (mode, alpha, tolerance, ...), validated once.

Part of the run's ``Settings`` (``Settings.baseline``), so the plugin reads one place for where the
baselines live, which model line they belong to, and how their comparisons are decided.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_fairness.records.comparison import MODES, Mode
from pytest_fairness.stats.multiplicity import METHODS, Method

FailOn = Literal["regression", "change"]
FAIL_ON: tuple[FailOn, ...] = ("regression", "change")


@dataclass(frozen=True)
class BaselinePolicy:
    """Error level, default tolerance, multiplicity control, mode, what fails the run; folder and model line."""

    alpha: float = 0.05
    tolerance: float = 0.0
    method: Method = "holm"
    mode: Mode = "difference"
    fail_on: FailOn = "regression"
    #: Folder of the baselines, relative to the rootdir (or absolute).
    directory: str = "baselines"
    #: Baseline folder to compare with instead of the one derived from the model id (a model line).
    model: str | None = None

    @classmethod
    def from_values(cls, get: Callable[[str], Any]) -> BaselinePolicy:
        """Build from a getter of option/ini values (None or "" = unset); ValueError names the option."""

        def number(name: str, default: float, valid: Callable[[float], bool], expect: str) -> float:
            raw = get(name)
            if raw in (None, ""):
                return default
            try:
                value = float(raw)
            except (TypeError, ValueError):
                value = math.nan
            if not (math.isfinite(value) and valid(value)):
                raise ValueError(f"--fairness-{name.replace('_', '-')}={raw!r}: expected {expect}")
            return value

        def choice(name: str, valid: Sequence[str], default: str) -> Any:
            value = get(name) or default
            if value not in valid:
                raise ValueError(f"--fairness-{name.replace('_', '-')}={value!r}; valid: {', '.join(valid)}")
            return value

        return cls(
            alpha=number("baseline_alpha", 0.05, lambda a: 0 < a < 0.5, "a number between 0 and 0.5, e.g. 0.05"),
            tolerance=number("baseline_tolerance", 0.0, lambda t: t >= 0, "a number >= 0 on the measure's scale"),
            method=choice("baseline_multiplicity", METHODS, "holm"),
            mode=choice("baseline_mode", MODES, "difference"),
            fail_on=choice("baseline_fail_on", FAIL_ON, "regression"),
            directory=get("baseline_dir") or "baselines",
            model=get("baseline_model") or None,
        )
