"""The terminal: the summary table, cost and plan tables, baseline verdicts, and failure messages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pytest_fairness.baseline import RunDecision
from pytest_fairness.measures import MEASURES, sizing
from pytest_fairness.measures.params import MAX_SAMPLES
from pytest_fairness.measures.sizing import Power
from pytest_fairness.models.deadline import SETTLE_SECONDS
from pytest_fairness.planning.plan import Dollars, Plan, PlanRow, Who, total_usd
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.explain import explain as explain_comparison
from pytest_fairness.report.analyses import analysis_lines
from pytest_fairness.report.gate_table import gate_table
from pytest_fairness.report.status import STYLES, UNDECIDED
from pytest_fairness.report.tally import COUNTERS, RunState, cost_totals, outcome_counts, run_totals
from pytest_fairness.stats.gate import GateFamily, Outcome
from pytest_fairness.util.fmt import interval, num, shared_ci_label, spend_text, text_table, usd


def confidence_label(records: Sequence[CheckRecord]) -> str:
    """ "95% CI" when every record shares one level (the usual case), else "CI"."""
    return shared_ci_label([rec.confidence for rec in records])


def summary_lines(
    records: Sequence[CheckRecord], analyses: Mapping[str, Any] | None = None, run: RunState | None = None
) -> list[str]:
    """The whole terminal summary: table, model and fidelity notes, call accounting (with ``run``: all the run
    asked, its pre-flight included), and the lines each measure adds (its own details, and analyses across
    checks, computed once by the caller)."""
    if not records:
        return []
    table = gate_table(records)
    lines = text_table([row.cells(str, lambda o: STYLES[o].word.upper()) for row in table.rows], table.columns)
    models = sorted({rec.result.model_id for rec in records})
    lines.append("")
    lines.append(f"model: {', '.join(models)}")
    for fidelity in sorted({rec.result.fidelity for rec in records}):
        checks = [rec.label for rec in records if rec.result.fidelity == fidelity]
        lines.append(f"fidelity {fidelity}: {', '.join(checks)}")
    versions = sorted({v for rec in records for v in rec.result.calls.model_versions})
    if versions:
        lines.append(f"model versions reported: {', '.join(versions)}")
    totals = run_totals(records, run)
    lines.append(
        f"model calls: {totals['calls']}{before_first_check(run)}, cache hits: {totals['cache_hits']}, "
        f"retries: {totals['retries']}, "
        f"tokens: {totals['prompt_tokens']} prompt + {totals['completion_tokens']} completion, "
        f"model time: {totals['seconds']:.1f}s, spend: ${spend_text(totals)}"
    )
    for rec in records:
        measure = MEASURES.get(rec.measure)
        if measure is not None and measure.summary_lines is not None:
            lines += measure.summary_lines(rec)
    for name, analysis in (analyses or {}).items():
        lines += analysis_lines(name, analysis)
    for rec in records:
        if rec.outcome in UNDECIDED:
            lines.append(f"{rec.label}: {next_step(rec)}")
    counts = sorted((o.value, n) for o, n in outcome_counts(records).items() if n)
    lines.append("gates: " + ", ".join(f"{n} {STYLES[Outcome(o)].word}" for o, n in counts))
    return lines


def before_first_check(run: RunState | None) -> str:
    """How many of the run's calls it made before its first check (pre-flight, replay check), in words."""
    calls = int(run.preflight.get("calls", 0)) if run is not None else 0
    return f" ({calls} before the first check: pre-flight and replay check)" if calls else ""


def error_rate_line(family: GateFamily) -> str:
    """What error rate the run's gates control, in words."""
    level, checks = f"{100 * (1 - family.confidence):g}%", family.size
    if family.multiplicity == "bonferroni" and checks > 1:
        return (
            f"gate error rate: the chance that any of the {checks} gates errs is at most {level} "
            f"(Bonferroni: each interval at {100 * family.gate_confidence:.3g}%)"
        )
    return (
        f"gate error rate: each gate errs with chance at most {level}; over {checks} gates that is not a bound "
        "for the run (--fairness-multiplicity=bonferroni gives one)"
    )


COST_COLUMNS = ("check", "calls", "cache hits", "retries", "prompt tok", "completion tok", "seconds", "spend $")


def cost_lines(records: Sequence[CheckRecord], run: RunState | None = None) -> list[str]:
    """Per check and in total: what the run cost, in calls, tokens, time and dollars (with ``run``: a row for what
    it asked before its first check, in the total too)."""

    def row(label: str, calls: Mapping[str, Any]) -> tuple[str, ...]:
        counts = (str(calls[n]) for n in COUNTERS[: COUNTERS.index("seconds")])
        return (label, *counts, f"{calls['seconds']:.1f}", spend_text(calls))

    rows = [row(rec.label, cost_totals([rec])) for rec in records]
    if run is not None and run.preflight:
        rows.append(row("before the first check", {name: run.preflight.get(name, 0) for name in COUNTERS}))
    rows.append(row("total", cost_totals(records) if run is None else run_totals(records, replace(run, unfinished=()))))
    return text_table(rows, COST_COLUMNS)


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


def plan_lines(plan: Plan) -> list[str]:
    """The --fairness-plan table: what a run would call, and what the cache already holds.

    ``shared`` requests are sent by an earlier check too (the cache answers the repeat): they count
    there, so the total is of distinct requests.
    """

    def row(
        label: str, power: Power | None, requests: int, shared: str, cached: int, new: int, tokens: tuple[int, int]
    ) -> tuple[str, ...]:
        chance, needed = (None, None) if power is None else (power.chance, power.needed)
        return (
            label,
            "" if power is None else str(power.n),
            "" if chance is None else f"{chance:.0%}",
            "" if power is None else "?" if chance is None else f">{MAX_SAMPLES}" if needed is None else str(needed),
            str(requests),
            shared,
            str(cached),
            str(new - cached),
            *(str(t) for t in tokens),
        )

    rows = [
        row(r.label, r.power, r.requests, str(r.shared), r.cached, r.new, (r.prompt_tokens, r.completion_tokens))
        for r in plan.rows
    ]
    distinct, cached = sum(r.new for r in plan.rows), sum(r.cached for r in plan.rows)
    tokens = (sum(r.prompt_tokens for r in plan.rows), sum(r.completion_tokens for r in plan.rows))
    rows.append(row("total (distinct)", None, distinct, "", cached, distinct, tokens))
    return [
        *text_table(rows, PLAN_COLUMNS),
        "",
        "P(decide): the chance that n samples decide the gate at each of the measure's design truths (the smallest; "
        "docs/statistics.md, Sample sizes), at its assumed spread and usable rate; n for 80%: the samples that "
        "would (the release profile's sizing). '?': the measure assumes no spread.",
        "",
        *plan_dollar_lines(plan),
        *(f"  {r.label}: {r.paired}" for r in plan.rows if r.paired),
        *growth_lines(plan),
    ]


def growth_lines(plan: Plan) -> list[str]:
    """Under --fairness-sequential, each two-phase check's growth: its budget, the chance it decides within it,
    the dollars expected at zero harm and at each design truth, and the most it can cost; then the totals."""
    grown = [r for r in plan.rows if r.growth is not None]
    if not grown:
        return []

    def money(d: Dollars) -> str:
        return f"${usd(d.standard)} (${usd(d.batch)} batch)"

    lines = ["", "sequential growth (a two-phase check stops at the first look that decides; its budget caps it):"]
    for r in grown:
        g = r.growth
        assert g is not None
        expected = "; ".join(
            f"at {'zero harm' if t == 0 else f'{t:g}'} {g.expected[t]} samples, {money(g.expected_usd[t])}"
            for t in g.expected
        )
        lines.append(
            f"  {r.label}: first look {g.first}, budget {g.budget}, decides within it with {g.decided:.0%} at "
            f"the design truths; expected: {expected}; at most {money(g.most_usd)}"
        )
    others = [r for r in plan.rows if r.growth is None]
    fixed = Dollars(total_usd(others), total_usd(others, rate="batch"))
    for what, pick in (("at zero harm", lambda g: g.expected_usd[0.0]), ("at most", lambda g: g.most_usd)):
        parts = [pick(r.growth) for r in grown if r.growth is not None]
        total = [None if fixed.at(rate) is None or any(p.at(rate) is None for p in parts) else
                 fixed.at(rate) + sum(p.at(rate) or 0.0 for p in parts) for rate in ("standard", "batch")]  # fmt: skip
        lines.append(f"  the plan {what}: {money(Dollars(*total))} (the other checks at their size)")
    return lines


PLAN_DOLLAR_COLUMNS = (
    "check",
    "model $",
    "model $ batch",
    "judge calls (est.)",
    "judge $ (est.)",
    "judge $ batch",
    "check $",
    "check $ batch",
)


def plan_dollar_lines(plan: Plan) -> list[str]:
    """The plan's dollars per check and in total, for the model and the judge, at standard and batch rates,
    with where each price comes from and what is estimated."""
    if not plan.rows:
        return []

    def row(label: str, part: Sequence[PlanRow]) -> tuple[str, ...]:
        judges = [r.judge for r in part if r.judge is not None]
        judged = any(j.requests != 0 for j in judges)
        counts = [j.requests for j in judges]
        calls = "?" if None in counts else str(sum(c or 0 for c in counts)) if any(counts) else "-"
        return (
            label,
            usd(total_usd(part, "model")),
            usd(total_usd(part, "model", "batch")),
            calls,
            usd(total_usd(part, "judge")) if judged else "-",
            usd(total_usd(part, "judge", "batch")) if judged else "-",
            usd(total_usd(part)),
            usd(total_usd(part, rate="batch")),
        )

    rows = [row(r.label, [r]) for r in plan.rows]
    rows.append(row("total $", plan.rows))
    counted = all(r.tokens_counted for r in plan.rows)
    lines = [*text_table(rows, PLAN_DOLLAR_COLUMNS), ""]
    priced: tuple[Who, ...] = ("model", "judge") if plan.judged else ("model",)
    priced += ("reference",) if any(r.reference is not None for r in plan.rows) else ()
    lines += [f"price of the {who} {plan.prices[who].spec}: {plan.prices[who].text}" for who in priced]
    tokens = "counted with the model's own tokenizer" if counted else "at ~4 characters a token"
    lines.append(
        f"estimated: prompt tokens {tokens}"
        + "; completion tokens at each request's max_tokens (so dollars are an upper bound); cached requests cost "
        "nothing; judge calls from each measure's structure (they depend on the answers), not checked against "
        "the cache, standard rates unless 'batch'; 'unknown': no price (give ?price_in=&price_out= per million "
        "tokens in the model spec)"
    )
    lines += [
        f"  judge calls of {r.label}: {r.judge.how}" for r in plan.rows if r.judge is not None and r.judge.requests != 0
    ]
    lines += [
        f"  reference calls of {r.label} (in check $): {r.reference.requests}, {r.reference.how}, "
        f"${usd(r.usd('reference'))}"
        for r in plan.rows
        if r.reference is not None
    ]
    return lines


def baseline_lines(decision: RunDecision) -> list[str]:
    """The run's baseline verdicts: the rate it controls, what counted, the verdict."""
    lines = [decision.headline(), *(explain_comparison(c) for c in decision.shown)]
    if decision.absorbed:
        lines.append(
            f"{decision.absorbed} comparison(s) significant on their own are within the run's sampling noise "
            "after the correction (see the JSON report's 'baselines' section)"
        )
    lines.append(decision.verdict())
    return lines


def run_status_line(run: RunState) -> str:
    """One sentence on an incomplete run, e.g. ``run interrupted: 3 of 29 selected checks not run, ...``."""
    if run.status == "not started":  # pytest ends with the reason ("stopped before the first check: ...")
        return f"the run could not start: none of its {run.selected} selected checks ran (the reason is below)"
    line = f"run {run.status}: of {run.selected} selected checks, {run.errored} errored, {run.not_run} not run"
    if run.stopped:
        line += f" (stopped: {run.stopped})"
    return line + "; the results below cover only the checks that finished"


def abandoned_line(run: RunState) -> str:
    """One sentence on the calls given up on at the end of the run ("" when there were none)."""
    if not run.abandoned:
        return ""
    calls = "1 model call was" if run.abandoned == 1 else f"{run.abandoned} model calls were"
    return (
        f"{calls} still in flight when the run ended and got no answer within a {SETTLE_SECONDS:g}s grace: "
        "given up on (their results were not used; a server may still be working on them)"
    )


def explain(record: CheckRecord) -> str:
    """Why a check failed or was inconclusive, in one readable paragraph."""
    res = record.result
    lines = [
        f"{record.check}: {STYLES[record.outcome].word.upper()} ({STYLES[record.outcome].verdict})",
        f"  estimate {num(res.estimate)}, {confidence_label([record])} {interval(res.ci)}, n={res.n}, "
        f"unusable={res.n_unusable}; threshold {record.threshold_text}",
        f"  model {res.model_id}; {res.fidelity}",
    ]
    gate = res.details.get("pr_gate")
    if isinstance(gate, dict):
        alone = STYLES[Outcome(gate["threshold"])].word.upper()
        beside = "" if gate.get("basis") == "threshold" else f" (the threshold alone: {alone})"
        lines.append(f"  pull-request gate: {gate['why']}{beside}")
    if record.baseline is not None and (record.baseline.paired is not None or gate):
        lines.append(f"  {explain_comparison(record.baseline)}")
    for example in res.unusable_examples:
        lines.append(f"  unusable example: {example}")
    if record.outcome in UNDECIDED:
        lines.append(f"  {next_step(record)}")
    return "\n".join(lines)


def next_step(record: CheckRecord) -> str:
    """What would decide an undecided check: a model that can serve it, or how many more samples."""
    res = record.result
    if record.outcome is Outcome.CANNOT_SERVE:
        return f"{res.unserved} (docs/gating-a-model.md: When a model cannot serve a measure)"
    hint = res.to_decide
    return "more samples are needed to decide" if hint is None else sizing.more_samples_text(hint)
