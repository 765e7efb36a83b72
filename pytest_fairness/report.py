"""Renders check records for people: the terminal summary table and failure messages."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_fairness import sizing
from pytest_fairness.gate import OUTCOMES
from pytest_fairness.measures import MEASURES
from pytest_fairness.measures.base import MAX_SAMPLES
from pytest_fairness.record import CheckRecord


def _num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def interval_text(ci: Sequence[Any]) -> str:
    return f"[{_num(ci[0])}, {_num(ci[1])}]"


def confidence_label(records: Sequence[CheckRecord]) -> str:
    """ "95% CI" when every record shares one level (the usual case), else "CI"."""
    levels = {rec.confidence for rec in records}
    return f"{100 * levels.pop():.3g}% CI" if len(levels) == 1 else "CI"


def columns(records: Sequence[CheckRecord]) -> tuple[str, ...]:
    return ("check", "estimate", confidence_label(records), "n", "unusable", "threshold", "outcome")


def summary_rows(records: Sequence[CheckRecord]) -> list[tuple[str, ...]]:
    return [
        (
            rec.label,
            _num(rec.result.estimate),
            interval_text(rec.result.ci),
            str(rec.result.n),
            str(rec.result.n_unusable),
            rec.threshold_text,
            rec.outcome.replace("_", " ").upper(),
        )
        for rec in records
    ]


def format_table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return out


def summary_lines(records: Sequence[CheckRecord], analyses: Mapping[str, Any] | None = None) -> list[str]:
    """The whole terminal summary: table, model and fidelity notes, call accounting, and the lines
    each measure adds (its own details, and analyses across checks, computed once by the caller)."""
    if not records:
        return []
    lines = format_table(summary_rows(records), columns(records))
    models = sorted({rec.result.model_id for rec in records})
    lines.append("")
    lines.append(f"model: {', '.join(models)}")
    for fidelity in sorted({rec.result.fidelity for rec in records}):
        checks = [rec.label for rec in records if rec.result.fidelity == fidelity]
        lines.append(f"fidelity {fidelity}: {', '.join(checks)}")
    versions = sorted({v for rec in records for v in rec.result.calls.model_versions})
    if versions:
        lines.append(f"model versions reported: {', '.join(versions)}")
    totals = cost_totals(records)
    lines.append(
        f"model calls: {totals['calls']}, cache hits: {totals['cache_hits']}, retries: {totals['retries']}, "
        f"tokens: {totals['prompt_tokens']} prompt + {totals['completion_tokens']} completion, "
        f"model time: {totals['seconds']:.1f}s"
    )
    for rec in records:
        measure = MEASURES.get(rec.measure)
        if measure is not None and measure.summary_lines is not None:
            lines += measure.summary_lines(rec)
    for name, analysis in (analyses or {}).items():
        lines += analysis_lines(name, analysis)
    for rec in records:
        if rec.outcome in ("inconclusive", "cannot_serve"):
            lines.append(f"{rec.label}: {next_step(rec)}")
    counts: dict[str, int] = {}
    for rec in records:
        counts[rec.outcome] = counts.get(rec.outcome, 0) + 1
    lines.append("gates: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in sorted(counts.items())))
    return lines


def error_rate_line(session: Any) -> str:
    """What error rate the run's gates control, in words."""
    settings, checks = session.settings, session.family_size
    level = f"{100 * (1 - settings.confidence):g}%"
    if settings.multiplicity == "bonferroni" and checks > 1:
        return (
            f"gate error rate: the chance that any of the {checks} gates errs is at most {level} "
            f"(Bonferroni: each interval at {100 * session.gate_confidence:.3g}%)"
        )
    return (
        f"gate error rate: each gate errs with chance at most {level}; over {checks} gates that is not a bound "
        "for the run (--fairness-multiplicity=bonferroni gives one)"
    )


def session_analyses(records: Sequence[CheckRecord]) -> dict[str, Any]:
    """Analyses across a run's checks that registered measures provide, e.g. implicit→decision."""
    out: dict[str, Any] = {}
    for measure in MEASURES.values():
        for name, analysis in measure.analyses.items():
            result = analysis.compute(records)
            if result is not None:
                out[name] = result
    return out


def analysis_lines(name: str, result: Any) -> list[str]:
    for measure in MEASURES.values():
        if name in measure.analyses:
            return measure.analyses[name].lines(result)
    return []


COST_COLUMNS = ("check", "calls", "cache hits", "retries", "prompt tok", "completion tok", "seconds")
COUNTERS = ("calls", "cache_hits", "retries", "prompt_tokens", "completion_tokens", "seconds")


def cost_totals(records: Sequence[CheckRecord]) -> dict[str, float]:
    return {name: sum(getattr(rec.result.calls, name) for rec in records) for name in COUNTERS}


def cost_lines(records: Sequence[CheckRecord]) -> list[str]:
    """Per check and in total: what the run cost."""

    def row(label: str, calls: Mapping[str, Any]) -> tuple[str, ...]:
        return (label, *(str(calls[n]) for n in COUNTERS[:-1]), f"{calls['seconds']:.1f}")

    rows = [row(rec.label, {n: getattr(rec.result.calls, n) for n in COUNTERS}) for rec in records]
    rows.append(row("total", cost_totals(records)))
    return format_table(rows, COST_COLUMNS)


PLAN_COLUMNS = (
    "check",
    "n",
    "P(decide)",
    "n for 80%",
    "requests",
    "shared",
    "already cached",
    "to call",
    "~prompt tokens",
    "≤completion tokens",
)


def plan_lines(plans: Sequence[dict[str, Any]]) -> list[str]:
    """The --fairness-plan table: what a run would call, and what the cache already holds.

    ``shared`` requests are sent by an earlier check too (the cache answers the repeat): they count
    there, so the total is of distinct requests.
    """

    def row(label: str, p: dict[str, Any], shared: str) -> tuple[str, ...]:
        new = p["requests"] - p.get("shared", 0)
        power = p.get("power") or {}
        chance, needed = power.get("chance"), power.get("needed")
        return (
            label,
            str(power.get("n", "")),
            "" if chance is None else f"{chance:.0%}",
            "" if not power else "?" if chance is None else f">{MAX_SAMPLES}" if needed is None else str(needed),
            str(p["requests"]),
            shared,
            str(p["cached"]),
            str(new - p["cached"]),
            str(p["prompt_tokens"]),
            str(p["completion_tokens"]),
        )

    rows = [row(f"{p['suite']}::{p['check']}", p, str(p.get("shared", 0))) for p in plans]
    total = {k: sum(p[k] for p in plans) for k in ("cached", "prompt_tokens", "completion_tokens")}
    total["requests"] = sum(p["requests"] - p.get("shared", 0) for p in plans)
    rows.append(row("total (distinct)", total, ""))
    return [
        *format_table(rows, PLAN_COLUMNS),
        "",
        "P(decide): the chance that n samples decide the gate at each of the measure's design truths (the smallest; "
        "README, Sample sizes), at its assumed spread and usable rate; n for 80%: the samples that would (the "
        "release profile's sizing). "
        "'?': the measure assumes no spread.",
    ]


def json_report(
    records: Sequence[CheckRecord],
    settings: dict[str, Any],
    analyses: Mapping[str, Any] | None = None,
    *,
    run: Mapping[str, Any] | None = None,
    baselines: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The canonical machine-readable record of a run.

    ``run`` says whether every selected check finished (see ``RunTally``), so that an errored or
    interrupted run is never read as a clean one; ``baselines`` holds the run's adjusted baseline
    decisions (``baseline.RunDecision.to_dict``) when checks were compared with baselines.
    """
    from pytest_fairness import __version__
    from pytest_fairness.record import SCHEMA_VERSION

    out: dict[str, Any] = {
        "pytest_fairness": __version__,
        "schema": SCHEMA_VERSION,
        "settings": settings,
    }
    if run is not None:
        out["run"] = dict(run)
    out |= {
        "checks": [rec.to_dict() for rec in records],
        "totals": cost_totals(records),
        "outcomes": {o: sum(r.outcome == o for r in records) for o in OUTCOMES},
        "analyses": dict(analyses or {}),
    }
    if baselines is not None:
        out["baselines"] = dict(baselines)
    return out


RunStatus = Literal["complete", "errored", "interrupted", "planned"]


@dataclass
class RunTally:
    """Which selected checks finished, errored or never ran: what tells a broken run from a clean one.

    Fed from pytest's reports: a check is *finished* when it produced a record (whatever its gate or
    baseline said), *errored* when its setup or call failed without one (a crash, a provider error),
    and *not run* when the run stopped before it.
    """

    selected: int = 0
    finished: set[str] = field(default_factory=set)
    errored: set[str] = field(default_factory=set)
    interrupted: bool = False
    stopped: str = ""
    planned: bool = False  # --fairness-plan: priced, deliberately not run

    @property
    def not_run(self) -> int:
        return max(0, self.selected - len(self.finished | self.errored))

    @property
    def status(self) -> RunStatus:
        if self.interrupted:
            return "interrupted"
        if self.planned:
            return "planned"
        if self.errored or self.stopped:
            return "errored"
        return "interrupted" if self.not_run else "complete"  # stopped early, e.g. by -x

    def to_dict(self, records: Sequence[CheckRecord]) -> dict[str, Any]:
        """The JSON report's ``run`` section; gate outcomes count the checks that finished."""
        out: dict[str, Any] = {
            "status": self.status,
            "selected": self.selected,
            "passed": sum(r.outcome == "pass" for r in records),
            "failed": sum(r.outcome == "fail" for r in records),
            "inconclusive": sum(r.outcome == "inconclusive" for r in records),
            "cannot_serve": sum(r.outcome == "cannot_serve" for r in records),
            "errored": len(self.errored),
            "not_run": self.not_run,
        }
        if self.stopped:
            out["stopped"] = self.stopped
        return out


def baseline_lines(decision: Any) -> list[str]:
    """The run's baseline verdicts (a ``baseline.RunDecision``): the rate it controls, what counted, the verdict."""
    lines = [decision.headline()]
    shown = [c for c in decision.comparisons if c.status not in ("unchanged", "non-inferior") or c.inputs_changed]
    lines += [c.explanation for c in shown]
    if decision.absorbed:
        lines.append(
            f"{decision.absorbed} comparison(s) significant on their own are within the run's sampling noise "
            "after the correction (see the JSON report's 'baselines' section)"
        )
    lines.append(decision.verdict())
    return lines


def run_status_line(run: Mapping[str, Any]) -> str:
    """One sentence on an incomplete run, e.g. ``run interrupted: 3 of 29 selected checks not run, ...``."""
    parts = [f"{run.get('errored', 0)} errored", f"{run.get('not_run', 0)} not run"]
    line = f"run {run.get('status')}: of {run.get('selected', 0)} selected checks, {', '.join(parts)}"
    if run.get("stopped"):
        line += f" (stopped: {run['stopped']})"
    return line + "; the results below cover only the checks that finished"


def explain(record: CheckRecord) -> str:
    """Why a check failed or was inconclusive, in one readable paragraph."""
    res = record.result
    lo, hi = res.ci
    verdict = {
        "fail": "the whole confidence interval lies outside the allowed range",
        "inconclusive": "the confidence interval straddles the threshold: more samples are needed to decide",
        "pass": "the whole confidence interval lies within the allowed range",
        "cannot_serve": "too few usable answers for the measure to mean anything",
    }[record.outcome]
    lines = [
        f"{record.check}: {record.outcome.replace('_', ' ').upper()} ({verdict})",
        f"  estimate {_num(res.estimate)}, {confidence_label([record])} [{_num(lo)}, {_num(hi)}], n={res.n}, "
        f"unusable={res.n_unusable}; threshold {record.threshold_text}",
        f"  model {res.model_id}; {res.fidelity}",
    ]
    for example in res.unusable_examples:
        lines.append(f"  unusable example: {example}")
    if record.outcome in ("inconclusive", "cannot_serve"):
        lines.append(f"  {next_step(record)}")
    return "\n".join(lines)


def next_step(record: CheckRecord) -> str:
    """What would decide an undecided check: a model that can serve it, or how many more samples."""
    res = record.result
    if record.outcome == "cannot_serve":
        return f"{res.unserved} (README: When a model cannot serve a measure)"
    hint = res.details.get("to_decide")
    return sizing.more_samples_text(hint) if isinstance(hint, dict) else "more samples are needed to decide"
