"""Markdown for pull-request comments: the run's gates, and a release-vs-release comparison.

The table says the same as the terminal summary, in words a reviewer can act on (no emoji: they
read poorly in e-mail notifications and screen readers). Plots (``plots.py``) are optional.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_fairness.baseline import STATUSES, Comparison, RunDecision
from pytest_fairness.config.options import Option
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.explain import explain
from pytest_fairness.report.gate_table import gate_table
from pytest_fairness.report.output import Output, RunReport, Sinks, write_file
from pytest_fairness.report.plots import plot_section
from pytest_fairness.report.status import STYLES
from pytest_fairness.report.tally import RunState, cost_totals, outcome_counts, run_totals
from pytest_fairness.report.terminal import abandoned_line
from pytest_fairness.stats.gate import Outcome
from pytest_fairness.util.fmt import interval, num, shared_ci_label, spend_text


class MarkdownFile(Output):
    """``--fairness-markdown=PATH``: the pull-request summary; ``--fairness-plots=DIR`` adds a plot per measure."""

    options = (
        Option("markdown", "write a Markdown summary for pull-request comments to this path"),
        Option("plots", "write per-measure PNG plots (bars with CIs) to this folder and link them from the Markdown"),
    )

    def write(self, report: RunReport, sinks: Sinks) -> None:
        markdown, plots = (report.option(option) for option in self.options)
        text = markdown_report(
            report.records, plots_dir=Path(plots) if plots else None, run=report.run, baselines=report.decision
        )
        write_file(Path(markdown), text)


def outcome_words(outcome: Outcome) -> str:
    """An outcome in a table cell: a failure in bold capitals, an undecided one with why, in brief (a threshold's
    verdict on a pull request says the margin was not shown, failing or not)."""
    shown = STYLES[outcome]
    hint = f" ({shown.hint})" if shown.hint else ""
    if shown.level == "error":
        return f"**{shown.word.upper()}**{hint}"
    return f"{shown.word}{hint}"


def _headline(counts: dict[Outcome, int]) -> str:
    """``Gates: 1 failed, 0 inconclusive, 5 passed.``; a pull request's threshold verdicts and the checks the model
    cannot serve only when there are any."""
    parts = [f"{counts[Outcome.FAIL]} failed"]
    if counts[Outcome.BEYOND_THRESHOLD]:
        parts.append(f"{counts[Outcome.BEYOND_THRESHOLD]} beyond threshold")
    parts.append(f"{counts[Outcome.INCONCLUSIVE]} inconclusive")
    if counts[Outcome.WITHIN_THRESHOLD]:
        parts.append(f"{counts[Outcome.WITHIN_THRESHOLD]} within threshold (margin not shown)")
    parts.append(f"{counts[Outcome.PASS]} passed")
    cannot_serve = counts[Outcome.CANNOT_SERVE]
    return f"Gates: {', '.join(parts)}" + (f", {cannot_serve} the model cannot serve." if cannot_serve else ".")


def _cell(text: Any) -> str:
    """A table cell: pipes would end the cell (``|x| ≤ 0.1``), newlines the row."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]


def _notes(records: Sequence[CheckRecord], run: RunState | None) -> list[str]:
    lines = ["", "**Fidelity to the papers**", ""]
    for fidelity in sorted({rec.result.fidelity for rec in records}):
        checks = ", ".join(dict.fromkeys(rec.check for rec in records if rec.result.fidelity == fidelity))
        lines.append(f"- {fidelity}: {checks}")
    lines += ["", *_accounting(run_totals(records, run))]
    lines += [
        "",
        *_table(
            ["check", "calls", "cache hits", "spend $"],
            [
                [f"`{rec.label}`", rec.result.calls.calls, rec.result.calls.cache_hits, spend_text(cost_totals([rec]))]
                for rec in records
            ],
        ),
    ]
    return lines


def _accounting(calls: dict[str, float]) -> list[str]:
    """The run's spend in one line (its unfinished checks' calls included)."""
    return [
        f"**Accounting**: {calls['calls']} model calls, {calls['cache_hits']} answered from the cache, "
        f"{calls['retries']} retries ({calls['rate_limited']} after HTTP 429); "
        f"{calls['prompt_tokens']} prompt + {calls['completion_tokens']} completion "
        f"tokens; {calls['seconds']:.1f} s of model time; spend ${spend_text(calls)} at standard rates.",
    ]


def _unfinished(run: RunState | None) -> list[str]:
    """Every selected check that did not finish: its state, why, and what it spent before it stopped."""
    if run is None or not run.unfinished:
        return []
    rows = [
        [f"`{check.check}`", check.state, check.reason or "-", int(check.spent.get("calls", 0))]
        for check in run.unfinished
    ]
    return ["", "**Checks that did not finish**", "", *_table(["check", "state", "reason", "calls"], rows)]


def markdown_report(
    records: Sequence[CheckRecord],
    *,
    plots_dir: str | Path | None = None,
    image_base: str | None = None,
    title: str = "Fairness report",
    run: RunState | None = None,
    baselines: RunDecision | None = None,
) -> str:
    """A PR-comment summary of check records; with ``plots_dir``, one PNG per measure written there.

    Images are referenced as ``plots_dir/<measure>.png`` (relative paths resolve from where the
    Markdown is saved), or under ``image_base`` when the PNGs are uploaded elsewhere, e.g. as CI artefacts.
    ``run`` flags an errored or interrupted run at the top and lists the checks that did not finish (its spend
    counts theirs); ``baselines`` adds the run's baseline verdicts.
    """
    warning = _run_warning(run)
    if not records and (run is None or not run.unfinished):
        return f"## {title}\n\n{warning}No fairness checks ran.\n"
    if not records:
        lines = [f"## {title}", "", warning.strip(), *_unfinished(run), "", *_accounting(run_totals(records, run))]
        return "\n".join(lines) + "\n"
    models = sorted({rec.result.model_id for rec in records})
    counts, table = outcome_counts(records), gate_table(records)
    lines = [
        f"## {title}",
        "",
        *([warning.strip(), ""] if warning else []),
        f"Model: {', '.join(f'`{m}`' for m in models)}",
        "",
        _headline(counts),
        "",
        *_table(table.columns, [row.cells(lambda c: f"`{c}`", outcome_words) for row in table.rows]),
        *_unfinished(run),
        *_notes(records, run),
    ]
    if baselines is not None:
        lines += ["", *_baseline_section(baselines)]
    if plots_dir is not None:
        lines += ["", *plot_section(records, Path(plots_dir), image_base)]
    return "\n".join(lines) + "\n"


def _run_warning(run: RunState | None, who: str = "Run") -> str:
    """A bold first line when the run did not finish every selected check (and a line on the calls it gave up on at
    the end); empty for a complete run that left none."""
    if run is None:
        return ""
    if run.status == "planned":
        return "**Planned only** (`--fairness-plan`): no check was run.\n\n"
    if run.status == "collected":
        return "**Collected only** (`--collect-only`): no check was run.\n\n"
    warning = ""
    if not run.complete:
        warning = (
            f"**{who} {run.status}**: of {run.selected} selected checks, {run.errored} errored "
            f"and {run.not_run} did not run; the results below are incomplete.\n\n"
        )
    if run.abandoned:
        warning += f"{abandoned_line(run)}.\n\n"
    return warning


def _verdict(decision: RunDecision) -> str:
    verdict = decision.verdict()
    return f"**{verdict}**" if decision.failing else verdict


def _baseline_section(decision: RunDecision) -> list[str]:
    """The run's baseline verdicts: the rate it controls, every counted change explained, the verdict."""
    lines = ["**Baselines**", "", decision.headline() + ".", ""]
    rows = [
        [
            f"`{c.check}`",
            f"{num(c.old)} → {num(c.new)}",
            num(c.difference, "+.3f"),
            num(c.p_adjusted, ".2g"),
            _status(c),
        ]
        for c in decision.comparisons
    ]
    if rows:  # per check, so a reviewer reads the regression next to the baseline file's diff
        lines += [*_table(["check", "baseline → this run", "difference", "adjusted p", "verdict"], rows), ""]
    if decision.shown:
        lines += [*(f"- {_cell(explain(c))}" for c in decision.shown), ""]
    return [*lines, _verdict(decision)]


def _status(c: Comparison) -> str:
    return f"**{c.status.upper()}**" if c.alarm else c.status


def comparison_markdown(
    comparisons: Sequence[Comparison],
    old_label: str,
    new_label: str,
    *,
    decision: RunDecision | None = None,
    new_run: RunState | None = None,
) -> str:
    """The release-vs-release table for a PR comment, with every counted change explained below it.

    ``decision`` (the comparisons adjusted together) adds the rate controlled and the verdict;
    ``new_run`` flags a new run that errored or was interrupted.
    """
    counts = {s: sum(c.status == s for c in comparisons) for s in STATUSES}
    rows = [
        [
            f"`{c.check}`",
            num(c.old),
            num(c.new),
            num(c.difference, "+.3f"),
            "n/a" if c.ci is None else interval(c.ci, "+.3f"),
            num(c.p, ".2g"),
            num(c.p_adjusted, ".2g"),
            _status(c),
        ]
        for c in comparisons
    ]
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    ci_header = shared_ci_label([round(c.interval_level, 6) for c in comparisons if c.ci is not None])
    warning = _run_warning(new_run, "New run")
    lines = [
        "## Fairness: release comparison",
        "",
        *([warning.strip(), ""] if warning else []),
        f"Old: `{old_label}`; new: `{new_label}`. {summary or 'no checks'}.",
        *(["", decision.headline() + "."] if decision is not None else []),
        "",
        *_table(["check", "old", "new", "difference", ci_header, "p", "adjusted p", "status"], rows),
    ]
    explained = [c for c in comparisons if not c.matches]
    if explained:
        lines += ["", "**What changed**", ""] + [f"- {_cell(explain(c))}" for c in explained]
    if decision is not None:
        lines += ["", _verdict(decision)]
    return "\n".join(lines) + "\n"
