"""The one formatter of numbers, dollars, intervals, confidence labels and plain-text tables.

Every output (terminal, Markdown, the compare CLI, baseline explanations) formats through here, so a
missing value reads "n/a" everywhere and a format change is made once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

MISSING = "n/a"


def finite(value: Any) -> float | None:
    """A finite number as float; None for anything else (missing, NaN, infinite, text): strict JSON's number."""
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def num(value: float | None, spec: str = ".3f") -> str:
    """A number in a format spec (``".3f"``, ``"+.3g"``, ``".2g"``); ``n/a`` for a missing or NaN value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return format(value, spec)


def usd(value: float | None) -> str:
    """Dollars for tables: cents, or four decimals below a cent; "unknown" without a price."""
    if value is None:
        return "unknown"
    return f"{value:,.2f}" if value >= 0.01 or value == 0 else f"{value:.4f}"


def spend_text(calls: Mapping[str, Any]) -> str:
    """Dollars spent at standard rates, and how many calls had no price (their cost is not in the sum)."""
    unpriced = int(calls.get("unpriced", 0))
    return usd(calls.get("usd", 0.0)) + (f" + {unpriced} unpriced" if unpriced else "")


def interval(ci: Sequence[float | None], spec: str = ".3f") -> str:
    """``[low, high]`` in one number format."""
    return f"[{num(ci[0], spec)}, {num(ci[1], spec)}]"


def ci_label(confidence: float, spec: str = "g") -> str:
    """``95% CI`` for a confidence level (``spec`` ``".3g"`` rounds a Bonferroni level to a column header)."""
    return f"{format(100 * confidence, spec)}% CI"


def shared_ci_label(levels: Sequence[float], spec: str = ".3g") -> str:
    """The CI column header: its level when every row shares one (the usual case), else plain ``CI``."""
    distinct = set(levels)
    return ci_label(distinct.pop(), spec) if len(distinct) == 1 else "CI"


def text_table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> list[str]:
    """Left-aligned columns with a dashed rule under the header, for a terminal."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return out
