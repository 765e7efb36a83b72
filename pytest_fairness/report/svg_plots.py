"""Inline SVG plots of a check, for the HTML page and pytest-html: no library, no file, every label escaped.

- ``check_plot``: the estimate and its interval against the threshold's allowed range (shaded), the
  no-bias value (dashed), and in a pull request the baseline's estimate and interval below it (grey);
- ``paired_plot``: the paired difference (run − baseline) and its interval against the margin on the
  harmful side (shaded);
- ``bar_chart``: one row per item with a bar per value (the papers' per-occupation figure).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.comparison import Comparison
from pytest_fairness.records.evidence import Chart
from pytest_fairness.report.status import STYLES
from pytest_fairness.util.fmt import finite, num

SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" aria-label="{label}">'
ALLOWED, LIMIT, NULL, INK, MUTED, HARMFUL = "#e9f6ec", "#c0392b", "#555", "#1d2329", "#6b747d", "#fbe3e3"


def _marks(*values: Any) -> list[float]:
    """The values that can be drawn: numbers, finite."""
    return [float(v) for v in values if isinstance(v, int | float) and finite(v) is not None]


#: Numbers on a plot: three significant figures (util/fmt's one formatter, at the spec a plot has room for).
_short = partial(num, spec=".3g")


class _Scale:
    """Values to x positions between ``left`` and ``right``, padded so no mark sits on an edge."""

    def __init__(self, values: list[float], left: float, right: float) -> None:
        lo, hi = min(values), max(values)
        pad = (hi - lo) * 0.08 or abs(hi) * 0.1 or 1.0
        self.lo, self.hi, self.left, self.right = lo - pad, hi + pad, left, right

    def __call__(self, value: float) -> float:
        return self.left + (value - self.lo) / (self.hi - self.lo) * (self.right - self.left)


def check_plot(record: CheckRecord, width: int = 640, height: int = 92, small: bool = False) -> str:
    """The check's estimate and interval against its threshold (and its baseline's, in a comparison)."""
    r, t = record.result, record.threshold
    est, (lo, hi), null = r.estimate, r.ci, r.summary.null
    low, high = (None, None) if t is None else (t.min, t.max)
    before = None if record.baseline is None else record.baseline.before
    b_est, (b_lo, b_hi) = (None, (None, None)) if before is None else (before.estimate, before.ci)
    values = _marks(est, lo, hi, low, high, null, b_est, b_lo, b_hi)
    label = html.escape(
        f"{record.label}: {_short(est)} [{_short(lo)}, {_short(hi)}], threshold {record.threshold_text}"
    )
    parts = [SVG.format(w=width, h=height, label=label)]
    if not values:
        return parts[0] + "</svg>"
    x = _Scale(values, 6, width - 6)
    mid = height * (0.36 if before is not None and not small else 0.5)
    a = x(low) if low is not None else 0.0
    b = x(high) if high is not None else float(width)
    parts.append(f'<rect x="{a:.1f}" y="0" width="{max(b - a, 0):.1f}" height="{height}" fill="{ALLOWED}"/>')
    for bound in _marks(low, high):
        parts.append(_vline(x(bound), height, LIMIT, 2))
        if not small:
            parts.append(_text(x(bound) + 3, 11, f"threshold {_short(bound)}", LIMIT, width))
    if _marks(null):
        parts.append(_vline(x(null), height, NULL, 1, dashed=True))
    colour = STYLES[record.outcome].plot
    parts.append(_whisker(x, lo, hi, est, mid, colour, 3 if small else 4))
    if not small:
        parts.append(
            _text(x(est) if _marks(est) else 6, mid - 9, f"{_short(est)} [{_short(lo)}, {_short(hi)}]", colour, width)
        )
        if _marks(b_est):
            parts.append(_whisker(x, b_lo, b_hi, b_est, height * 0.74, "#8a939c", 3))
            parts.append(_text(x(b_est), height * 0.74 + 16, f"baseline {_short(b_est)}", MUTED, width))
        parts.append(_text(6, height - 3, _short(x.lo), MUTED) + _text(width - 6, height - 3, _short(x.hi), MUTED, 1))
    parts.append("</svg>")
    return "".join(parts)


def paired_plot(comparison: Comparison, width: int = 640, height: int = 70) -> str:
    """The paired difference and its interval against the margin on the harmful side (shaded); "" unpaired."""
    p = comparison.paired
    if p is None or comparison.difference is None:
        return ""
    diff, (lo, hi) = comparison.difference, p.interval
    sides = (p.side,) if p.side else (1, -1)
    x = _Scale(_marks(diff, lo, hi, 0.0, *(s * p.margin for s in sides)), 6, width - 6)
    label = html.escape(f"run − baseline {_short(diff)} [{_short(lo)}, {_short(hi)}], margin {p.margin:g}")
    parts = [SVG.format(w=width, h=height, label=label)]
    for side in sides:
        bound = x(side * p.margin)
        start, end = (bound, width) if side > 0 else (0.0, bound)
        parts.append(f'<rect x="{start:.1f}" y="0" width="{end - start:.1f}" height="{height}" fill="{HARMFUL}"/>')
        parts.append(_vline(bound, height, LIMIT, 2))
        parts.append(_text(bound + 3, 11, f"margin {_short(side * p.margin)}", LIMIT, width))
    parts.append(_vline(x(0.0), height, NULL, 1, dashed=True))
    parts.append(_whisker(x, lo, hi, diff, height * 0.5, INK, 4))
    parts.append(
        _text(x(diff), height * 0.5 - 9, f"run − baseline {_short(diff)} [{_short(lo)}, {_short(hi)}]", INK, width)
    )
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(rows: Sequence[Mapping[str, Any]], chart: Chart, top: int = 40, width: int = 760) -> str:
    """One row per item, the highest first value first (at most ``top``), with a bar for each value."""

    def first(row: Mapping[str, Any]) -> float:
        return float(row.get(chart.values[0]) or 0.0)

    rows = sorted(rows, key=lambda r: -first(r))[:top]
    step, label_w, colours = 16, 210, ("#3b6ea8", "#e0a040", "#7a9a4a")
    peak = max([float(r.get(v) or 0.0) for r in rows for v in chart.values] + [1e-12])
    room = width - label_w - 60
    legend = ", ".join(f"{v} ({c})" for v, c in zip(chart.values, ("blue", "orange", "green"), strict=False))
    shown = f" (the {top} highest of {len(rows)})" if len(rows) > top else ""
    parts = [
        SVG.format(w=width, h=step * len(rows) + 30, label=html.escape(chart.title)),
        _text(0, 12, f"{chart.title}{shown}: {legend}", INK),
    ]
    for i, row in enumerate(rows):
        y = 22 + i * step
        lean = f" → {row.get(chart.lean)}" if chart.lean else ""
        parts.append(_text(0, y + 11, f"{row.get(chart.label)}{lean}"[:34], INK))
        for j, value in enumerate(chart.values):
            w = float(row.get(value) or 0.0) / peak * room
            parts.append(
                f'<rect x="{label_w}" y="{y + j * 6:.1f}" width="{w:.1f}" height="6" fill="{colours[j % 3]}"/>'
            )
        parts.append(_text(label_w + first(row) / peak * room + 4, y + 8, _short(first(row)), MUTED))
    parts.append("</svg>")
    return "".join(parts)


def _vline(x: float, height: float, colour: str, stroke: int, dashed: bool = False) -> str:
    dash = ' stroke-dasharray="3 3"' if dashed else ""
    return f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height}" stroke="{colour}" stroke-width="{stroke}"{dash}/>'


def _whisker(x: _Scale, lo: Any, hi: Any, est: Any, y: float, colour: str, r: int) -> str:
    out = ""
    if len(_marks(lo, hi)) == 2:
        tick = '<line x1="{0:.1f}" x2="{0:.1f}" y1="{1:.1f}" y2="{2:.1f}" stroke="{3}" stroke-width="2"/>'
        ends = "".join(tick.format(x(v), y - r, y + r, colour) for v in (lo, hi))
        out += f'<line x1="{x(lo):.1f}" x2="{x(hi):.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="{colour}" stroke-width="2"/>'
        out += ends
    if _marks(est):
        out += f'<circle cx="{x(est):.1f}" cy="{y:.1f}" r="{r}" fill="{colour}"/>'
    return out


def _text(x: float, y: float, text: str, colour: str, width: float = 0) -> str:
    """A label at x, ended there instead when it would run past ``width`` (1: always ended at x)."""
    end = width == 1 or (width and x + 6.5 * len(text) > width)
    anchor = ' text-anchor="end"' if end else ""
    x = x - 3 if end and width != 1 else x
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="11" font-family="sans-serif" fill="{colour}"{anchor}>'
        f"{html.escape(text)}</text>"
    )
