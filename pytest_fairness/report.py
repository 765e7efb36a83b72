"""Renders check records for people: the terminal summary table and failure messages."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

COLUMNS = ("check", "estimate", "95% CI", "n", "unusable", "threshold", "outcome")


def _num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def interval_text(ci: Sequence[Any]) -> str:
    return f"[{_num(ci[0])}, {_num(ci[1])}]"


def summary_rows(records: Sequence[dict[str, Any]]) -> list[tuple[str, ...]]:
    rows = []
    for rec in records:
        res = rec["result"]
        rows.append(
            (
                f"{rec['suite']}::{rec['check']}",
                _num(res["estimate"]),
                interval_text(res["ci"]),
                str(res["n"]),
                str(res["n_unusable"]),
                rec["threshold_text"],
                rec["outcome"].upper(),
            )
        )
    return rows


def format_table(rows: Sequence[Sequence[str]], header: Sequence[str] = COLUMNS) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return out


def summary_lines(records: Sequence[dict[str, Any]]) -> list[str]:
    """The whole terminal summary: table, model and fidelity notes, call accounting."""
    if not records:
        return []
    lines = format_table(summary_rows(records))
    models = sorted({rec["result"]["model_id"] for rec in records})
    lines.append("")
    lines.append(f"model: {', '.join(models)}")
    for fidelity in sorted({rec["result"]["fidelity"] for rec in records}):
        checks = [rec["check"] for rec in records if rec["result"]["fidelity"] == fidelity]
        lines.append(f"fidelity {fidelity}: {', '.join(checks)}")
    calls = sum(rec["result"]["calls"]["calls"] for rec in records)
    hits = sum(rec["result"]["calls"]["cache_hits"] for rec in records)
    seconds = sum(rec["result"]["calls"]["seconds"] for rec in records)
    lines.append(f"model calls: {calls}, cache hits: {hits}, model time: {seconds:.1f}s")
    counts: dict[str, int] = {}
    for rec in records:
        counts[rec["outcome"]] = counts.get(rec["outcome"], 0) + 1
    lines.append("gates: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    return lines


def explain(record: dict[str, Any]) -> str:
    """Why a check failed or was inconclusive, in one readable paragraph."""
    res = record["result"]
    lo, hi = res["ci"]
    verdict = {
        "fail": "the whole confidence interval lies outside the allowed range",
        "inconclusive": "the confidence interval straddles the threshold: more samples are needed to decide",
        "pass": "the whole confidence interval lies within the allowed range",
    }[record["outcome"]]
    lines = [
        f"{record['check']}: {record['outcome'].upper()} ({verdict})",
        f"  estimate {_num(res['estimate'])}, 95% CI [{_num(lo)}, {_num(hi)}], n={res['n']}, "
        f"unusable={res['n_unusable']}; threshold {record['threshold_text']}",
        f"  model {res['model_id']}; {res['fidelity']}",
    ]
    for example in res["unusable_examples"]:
        lines.append(f"  unusable example: {example}")
    return "\n".join(lines)
