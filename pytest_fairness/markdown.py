"""Markdown for pull-request comments: the run's gates, and a release-vs-release comparison.

The table says the same as the terminal summary, in words a reviewer can act on (no emoji: they
read poorly in e-mail notifications and screen readers). Plots are optional: with matplotlib, one
PNG per measure in the style of the papers' figures (a bar per check from the no-bias value to the
estimate, its confidence interval, and the check's threshold marked), referenced from the Markdown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_fairness.baseline import Comparison, RunDecision
from pytest_fairness.record import CheckRecord
from pytest_fairness.report import columns, confidence_label

OUTCOME_WORDS = {
    "pass": "pass",
    "fail": "**FAIL**",
    "inconclusive": "inconclusive (needs more samples)",
    "cannot_serve": "cannot serve (too few usable answers)",
}
PLOTS_HINT = "pip install 'pytest-fairness[plots]'"
COLOURS = {"pass": "#55A868", "fail": "#C44E52", "inconclusive": "#8C8C8C"}


def _num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _cell(text: Any) -> str:
    """A table cell: pipes would end the cell (``|x| ≤ 0.1``), newlines the row."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]


def _label(rec: CheckRecord, many_suites: bool) -> str:
    return rec.label if many_suites else rec.check


def _gate_rows(records: Sequence[CheckRecord]) -> list[list[str]]:
    return [
        [
            f"`{rec.label}`",
            _num(rec.result.estimate),
            f"[{_num(rec.result.ci[0])}, {_num(rec.result.ci[1])}]",
            str(rec.result.n),
            str(rec.result.n_unusable),
            rec.threshold_text,
            OUTCOME_WORDS.get(rec.outcome, rec.outcome),
        ]
        for rec in records
    ]


def _notes(records: Sequence[CheckRecord]) -> list[str]:
    lines = ["", "**Fidelity to the papers**", ""]
    for fidelity in sorted({rec.result.fidelity for rec in records}):
        checks = ", ".join(dict.fromkeys(rec.check for rec in records if rec.result.fidelity == fidelity))
        lines.append(f"- {fidelity}: {checks}")
    calls = {k: sum(getattr(rec.result.calls, k) for rec in records) for k in _COUNTERS}
    lines += [
        "",
        f"**Accounting**: {calls['calls']} model calls, {calls['cache_hits']} answered from the cache, "
        f"{calls['retries']} retries; {calls['prompt_tokens']} prompt + {calls['completion_tokens']} completion "
        f"tokens; {calls['seconds']:.1f} s of model time.",
    ]
    return lines


_COUNTERS = ("calls", "cache_hits", "retries", "prompt_tokens", "completion_tokens", "seconds")


def markdown_report(
    records: Sequence[CheckRecord],
    *,
    plots_dir: str | Path | None = None,
    image_base: str | None = None,
    title: str = "Fairness report",
    run: Mapping[str, Any] | None = None,
    baselines: RunDecision | None = None,
) -> str:
    """A PR-comment summary of check records; with ``plots_dir``, one PNG per measure written there.

    Images are referenced as ``plots_dir/<measure>.png`` (relative paths resolve from where the
    Markdown is saved), or under ``image_base`` when the PNGs are uploaded elsewhere, e.g. as CI artefacts.
    ``run`` (the JSON report's ``run`` section) flags an errored or interrupted run at the top;
    ``baselines`` adds the run's baseline verdicts.
    """
    warning = _run_warning(run)
    if not records:
        return f"## {title}\n\n{warning}No fairness checks ran.\n"
    models = sorted({rec.result.model_id for rec in records})
    counts = {o: sum(rec.outcome == o for rec in records) for o in ("fail", "cannot_serve", "inconclusive", "pass")}
    header = list(columns(records))
    lines = [
        f"## {title}",
        "",
        *([warning.strip(), ""] if warning else []),
        f"Model: {', '.join(f'`{m}`' for m in models)}",
        "",
        f"Gates: {counts['fail']} failed, {counts['inconclusive']} inconclusive, {counts['pass']} passed"
        + (f", {counts['cannot_serve']} the model cannot serve." if counts["cannot_serve"] else "."),
        "",
        *_table(header, _gate_rows(records)),
        *_notes(records),
    ]
    if baselines is not None:
        lines += ["", *_baseline_section(baselines)]
    if plots_dir is not None:
        lines += ["", *_plot_section(records, Path(plots_dir), image_base)]
    return "\n".join(lines) + "\n"


def _run_warning(run: Mapping[str, Any] | None) -> str:
    """A bold first line when the run did not finish every selected check; empty for a complete run."""
    if run is None or run.get("status") in ("complete", None):
        return ""
    if run.get("status") == "planned":
        return "**Planned only** (`--fairness-plan`): no check was run.\n\n"
    return (
        f"**Run {run['status']}**: of {run.get('selected', 0)} selected checks, {run.get('errored', 0)} errored "
        f"and {run.get('not_run', 0)} did not run; the results below are incomplete.\n\n"
    )


def _baseline_section(decision: RunDecision) -> list[str]:
    """The run's baseline verdicts: the rate it controls, every counted change explained, the verdict."""
    lines = ["**Baselines**", "", decision.headline() + ".", ""]
    shown = [c for c in decision.comparisons if c.status not in ("unchanged", "non-inferior") or c.inputs_changed]
    if shown:
        lines += [*(f"- {_cell(c.explanation)}" for c in shown), ""]
    verdict = decision.verdict()
    return [*lines, f"**{verdict}**" if decision.failing else verdict]


def _plot_section(records: Sequence[CheckRecord], plots_dir: Path, image_base: str | None) -> list[str]:
    figure_class = _figure_class()
    if figure_class is None:
        return [f"Plots skipped: matplotlib is not installed (`{PLOTS_HINT}` adds it)."]
    plots_dir.mkdir(parents=True, exist_ok=True)
    by_measure: dict[str, list[CheckRecord]] = {}
    for rec in records:
        by_measure.setdefault(rec.measure, []).append(rec)
    lines = ["**Plots**", ""]
    for measure, group in sorted(by_measure.items()):
        name = f"{measure}.png"
        plot_measure(group, plots_dir / name, figure_class)
        where = f"{image_base.rstrip('/')}/{name}" if image_base else (plots_dir / name).as_posix()
        lines.append(f"![{measure}: estimates with confidence intervals]({where})")
    return lines


def _figure_class() -> Any:
    """matplotlib's Figure, or None without matplotlib; pyplot is avoided so no global backend is set."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure


def plot_measure(records: Sequence[CheckRecord], path: Path, figure_class: Any = None) -> None:
    """Horizontal bars from the no-bias value to each check's estimate, with CI whiskers and thresholds."""
    figure_class = figure_class or _figure_class()
    plotted = [r for r in records if all(math.isfinite(v) for v in (r.result.estimate, *r.result.ci))]
    many_suites = len({r.suite for r in records}) > 1
    null = records[0].result.summary.null
    null = 0.0 if math.isnan(null) else null
    fig = figure_class(figsize=(8, 1.4 + 0.45 * max(len(plotted), 1)))
    ax = fig.subplots()
    ys = list(range(len(plotted)))[::-1]
    for y, rec in zip(ys, plotted, strict=True):
        est, (lo, hi) = rec.result.estimate, rec.result.ci
        ax.barh(y, est - null, left=null, height=0.6, color=COLOURS.get(rec.outcome, "#8C8C8C"))
        ax.errorbar(est, y, xerr=[[est - lo], [hi - est]], fmt="none", ecolor="black", capsize=3, linewidth=1)
        for bound in (rec.threshold.get("min"), rec.threshold.get("max")):
            if bound is not None:
                ax.plot([bound, bound], [y - 0.4, y + 0.4], color="#C44E52", linewidth=2.5, label="threshold")
    ax.axvline(null, color="black", linestyle="--", linewidth=1, label=f"no bias ({null:g})")
    ax.set_yticks(ys, [_label(r, many_suites) for r in plotted])
    ax.set_xlabel(f"estimate with {confidence_label(records)}")
    ax.set_title(records[0].measure)
    from matplotlib.patches import Patch

    handles, labels = ax.get_legend_handles_labels()
    legend = dict(zip(labels, handles, strict=True))
    for outcome in dict.fromkeys(r.outcome for r in plotted):
        legend[outcome] = Patch(color=COLOURS.get(outcome, "#8C8C8C"))
    ax.legend(legend.values(), legend.keys(), fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.use_sticky_edges = False  # keep a margin around the no-bias line when every bar starts there
    ax.margins(x=0.05)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def comparison_markdown(
    comparisons: Sequence[Comparison],
    old_label: str,
    new_label: str,
    *,
    decision: RunDecision | None = None,
    new_run: Mapping[str, Any] | None = None,
) -> str:
    """The release-vs-release table for a PR comment, with every counted change explained below it.

    ``decision`` (the comparisons adjusted together) adds the rate controlled and the verdict;
    ``new_run`` flags a new run that errored or was interrupted.
    """
    counts = {s: sum(c.status == s for c in comparisons) for s in _STATUSES}
    rows = [
        [
            f"`{c.check}`",
            _num(c.old),
            _num(c.new),
            "n/a" if c.difference is None else f"{c.difference:+.3f}",
            "n/a" if c.ci is None else f"[{c.ci[0]:+.3f}, {c.ci[1]:+.3f}]",
            "n/a" if c.p is None else f"{c.p:.2g}",
            "n/a" if c.p_adjusted is None else f"{c.p_adjusted:.2g}",
            f"**{c.status.upper()}**" if c.status in _ALARMS else c.status,
        ]
        for c in comparisons
    ]
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    levels = {round(c.interval_level, 6) for c in comparisons if c.ci is not None}
    ci_header = f"{100 * levels.pop():.3g}% CI" if len(levels) == 1 else "CI"
    lines = [
        "## Fairness: release comparison",
        "",
        *([_run_warning(new_run).strip().replace("**Run", "**New run"), ""] if _run_warning(new_run) else []),
        f"Old: `{old_label}`; new: `{new_label}`. {summary or 'no checks'}.",
        *(["", decision.headline() + "."] if decision is not None else []),
        "",
        *_table(["check", "old", "new", "difference", ci_header, "p", "adjusted p", "status"], rows),
    ]
    explained = [c for c in comparisons if c.status not in ("unchanged", "non-inferior") or c.inputs_changed]
    if explained:
        lines += ["", "**What changed**", ""] + [f"- {_cell(c.explanation)}" for c in explained]
    if decision is not None:
        lines += ["", f"**{decision.verdict()}**" if decision.failing else decision.verdict()]
    return "\n".join(lines) + "\n"


_STATUSES = ("regressed", "not non-inferior", "improved", "changed", "new", "missing", "non-inferior", "unchanged")
_ALARMS = ("regressed", "not non-inferior", "changed", "missing")
