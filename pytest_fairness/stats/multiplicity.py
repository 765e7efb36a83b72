"""Multiple-comparison adjustments for the p-values of one run.

A run compares many checks with their baselines; testing each at ``alpha`` makes a false alarm
somewhere in the run likely (29 checks at 0.05: 1 - 0.95**29 = 77%). Adjusted p-values restore
control over the whole run: Holm bounds the family-wise error rate (the chance of any false alarm),
Benjamini-Hochberg the false-discovery rate (the expected share of false alarms among the flagged
checks). A check counts when its adjusted p is below ``alpha``. Pure functions on plain floats.

Bonferroni (``adjust(..., "bonferroni")``) is here too, for measures that correct a few tests of their
own (the quality measure's nine criteria); a run's baseline comparisons offer only ``METHODS``, since
Holm controls the same rate and is never less powerful.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

Method = Literal["holm", "bh", "none"]
#: The run-level choices (baseline comparisons, the compare CLI).
METHODS: tuple[Method, ...] = ("holm", "bh", "none")
#: Every method ``adjust`` knows: the run-level ones and Bonferroni.
Correction = Literal["holm", "bonferroni", "bh", "none"]
CORRECTIONS: tuple[Correction, ...] = ("holm", "bonferroni", "bh", "none")

#: What each method controls, in the words the summary prints.
CONTROLS: dict[str, str] = {
    "holm": "family-wise error rate",
    "bonferroni": "family-wise error rate",
    "bh": "false-discovery rate",
    "none": "per-comparison error rate only",
}
NAMES: dict[str, str] = {
    "holm": "Holm",
    "bonferroni": "Bonferroni",
    "bh": "Benjamini-Hochberg",
    "none": "no multiplicity correction",
}


def _check(p_values: Sequence[float]) -> None:
    for p in p_values:
        if not 0.0 <= p <= 1.0:  # also rejects NaN
            raise ValueError(f"p-values must lie in [0, 1], got {p!r}")


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order.

    Sorted ascending, the i-th smallest (0-based) gets ``(m - i) * p``, made non-decreasing along the
    order and capped at 1. Valid under any dependence between the tests.
    """
    _check(p_values)
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def bonferroni(p_values: Sequence[float]) -> list[float]:
    """Bonferroni adjusted p-values, in the input order: ``m * p`` capped at 1. Valid under any dependence."""
    _check(p_values)
    m = len(p_values)
    return [min(1.0, m * float(p)) for p in p_values]


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg step-up adjusted p-values (q-values), in the input order.

    Sorted ascending, the k-th smallest (1-based) gets ``m / k * p``, made non-increasing from the
    largest down and capped at 1. Controls the false-discovery rate for independent or positively
    dependent tests.
    """
    _check(p_values)
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i], reverse=True)
    adjusted = [0.0] * m
    running = 1.0
    for position, index in enumerate(order):
        rank = m - position
        running = min(running, m / rank * p_values[index])
        adjusted[index] = running
    return adjusted


def adjust(p_values: Sequence[float], method: Correction) -> list[float]:
    """Adjusted p-values by ``method`` (``none`` returns them unchanged)."""
    if method == "holm":
        return holm(p_values)
    if method == "bonferroni":
        return bonferroni(p_values)
    if method == "bh":
        return benjamini_hochberg(p_values)
    if method == "none":
        _check(p_values)
        return [float(p) for p in p_values]
    raise ValueError(f"unknown multiplicity method {method!r}; valid: {', '.join(CORRECTIONS)}")


def describe(method: Correction, alpha: float) -> str:
    """The rate a run controls, for the summary: ``family-wise error rate controlled at 0.05 (Holm)``."""
    if method == "none":
        return f"each comparison tested at {alpha:g} on its own, no multiplicity correction"
    return f"{CONTROLS[method]} controlled at {alpha:g} ({NAMES[method]})"
