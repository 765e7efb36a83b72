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


def summary_lines(records: Sequence[dict[str, Any]], association: dict[str, Any] | None = None) -> list[str]:
    """The whole terminal summary: table, model and fidelity notes, call accounting.

    ``association`` is the run's implicit→decision regression (see ``implicit_decision_association``),
    computed once by the caller because the JSON report shows it too.
    """
    if not records:
        return []
    lines = format_table(summary_rows(records))
    models = sorted({rec["result"]["model_id"] for rec in records})
    lines.append("")
    lines.append(f"model: {', '.join(models)}")
    for fidelity in sorted({rec["result"]["fidelity"] for rec in records}):
        checks = [rec["check"] for rec in records if rec["result"]["fidelity"] == fidelity]
        lines.append(f"fidelity {fidelity}: {', '.join(checks)}")
    versions = sorted({v for rec in records for v in rec["result"]["calls"]["model_versions"]})
    if versions:
        lines.append(f"model versions reported: {', '.join(versions)}")
    totals = cost_totals(records)
    lines.append(
        f"model calls: {totals['calls']}, cache hits: {totals['cache_hits']}, retries: {totals['retries']}, "
        f"tokens: {totals['prompt_tokens']} prompt + {totals['completion_tokens']} completion, "
        f"model time: {totals['seconds']:.1f}s"
    )
    for rec in records:
        lines += axes_lines(rec)
    if association and "coef" in association:
        lines.append(
            f"implicit→decision association: b = {association['coef']:.3f}, 95% CI "
            f"{interval_text(association['ci'])}, p = {association['p']:.3g}, n = {association['n']} decisions over "
            f"{association['stereotypes']} stereotypes ({association['predictor']})"
        )
    counts: dict[str, int] = {}
    for rec in records:
        counts[rec["outcome"]] = counts.get(rec["outcome"], 0) + 1
    lines.append("gates: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    return lines


def axes_lines(record: dict[str, Any]) -> list[str]:
    """The ranked axes of a bias_axes check, significant ones first."""
    res = record["result"]
    if res["measure"] != "bias_axes":
        return []
    groups = {"A": res["details"]["group_a"], "B": res["details"]["group_b"], None: "neither"}
    lines = [f"axes of difference for {record['check']} ({res['details']['questions_tested']} questions tested):"]
    for axis in res["details"]["axes"][:10]:
        harm = "n/a" if axis["harmfulness"] is None else f"{axis['harmfulness']:.1f}/5"
        leaning = axis["n_favour_a"] + axis["n_favour_b"]
        lines.append(
            f"  {'*' if axis['significant'] else ' '} {axis['question']} favours {groups[axis['favours']]}: "
            f"{axis['share_a']:.0%} of leaning pairs favour {groups['A']}, n={leaning}, "
            f"p_bonf {axis['p_bonferroni']:.2g}, harmfulness {harm}"
        )
    return lines


COST_COLUMNS = ("check", "calls", "cache hits", "retries", "prompt tok", "completion tok", "seconds")
COUNTERS = ("calls", "cache_hits", "retries", "prompt_tokens", "completion_tokens", "seconds")


def cost_totals(records: Sequence[dict[str, Any]]) -> dict[str, float]:
    return {name: sum(rec["result"]["calls"][name] for rec in records) for name in COUNTERS}


def cost_lines(records: Sequence[dict[str, Any]]) -> list[str]:
    """Per check and in total: what the run cost."""

    def row(label: str, calls: dict[str, Any]) -> tuple[str, ...]:
        return (label, *(str(calls[n]) for n in COUNTERS[:-1]), f"{calls['seconds']:.1f}")

    rows = [row(f"{rec['suite']}::{rec['check']}", rec["result"]["calls"]) for rec in records]
    rows.append(row("total", cost_totals(records)))
    return format_table(rows, COST_COLUMNS)


PLAN_COLUMNS = ("check", "requests", "already cached", "to call", "~prompt tokens", "≤completion tokens")


def plan_lines(plans: Sequence[dict[str, Any]]) -> list[str]:
    """The --fairness-plan table: what a run would call, and what the cache already holds."""

    def row(label: str, p: dict[str, Any]) -> tuple[str, ...]:
        to_call = p["requests"] - p["cached"]
        return (
            label,
            str(p["requests"]),
            str(p["cached"]),
            str(to_call),
            str(p["prompt_tokens"]),
            str(p["completion_tokens"]),
        )

    rows = [row(f"{p['suite']}::{p['check']}", p) for p in plans]
    keys = ("requests", "cached", "prompt_tokens", "completion_tokens")
    rows.append(row("total", {k: sum(p[k] for p in plans) for k in keys}))
    return format_table(rows, PLAN_COLUMNS)


def json_report(
    records: Sequence[dict[str, Any]], settings: dict[str, Any], association: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The canonical machine-readable record of a run."""
    from pytest_fairness import __version__

    return {
        "pytest_fairness": __version__,
        "settings": settings,
        "checks": list(records),
        "totals": cost_totals(records),
        "outcomes": {o: sum(r["outcome"] == o for r in records) for o in ("pass", "fail", "inconclusive")},
        "implicit_decision_association": association,
    }


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
