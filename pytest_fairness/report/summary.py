"""The terminal summary: the plan, why checks are undecided, the gates, cost, baselines and waiting batches.

Written in pytest's terminal summary from the ``RunReport``, with the lines ``report.terminal`` renders.
"""

from __future__ import annotations

from pytest_fairness.models.batch import PENDING_EXIT
from pytest_fairness.report import terminal
from pytest_fairness.report.output import Output, RunReport, Sinks, Terminal
from pytest_fairness.report.status import OWN_CATEGORY, STYLES
from pytest_fairness.report.tally import NOT_RUN_ON_PURPOSE


class TerminalSummary(Output):
    """The run in pytest's terminal summary."""

    when = "terminal_summary"

    def write(self, report: RunReport, sinks: Sinks) -> None:
        out = sinks.terminal
        if out is None:
            return
        if report.plan is not None and report.plan.rows:
            out.write_sep("=", "fairness plan (no model was called)")
            for line in terminal.plan_lines(report.plan):
                out.write_line(line)
        undecided = [rec for rec in report.records if rec.outcome in OWN_CATEGORY]
        if undecided:  # pytest lists only failed tests under FAILURES: say why these are undecided
            words = [
                STYLES[o].word.replace(" ", "-") for o in OWN_CATEGORY if any(rec.outcome is o for rec in undecided)
            ]
            out.write_sep("=", f"{', '.join(words[:-1])}{' and ' if len(words) > 1 else ''}{words[-1]} checks")
            for rec in undecided:
                out.write_sep("_", rec.label)
                out.write_line(terminal.explain(rec))
        _gates(report, out)
        _baselines(report, out)
        if report.shard is not None:
            shard = report.shard
            out.write_sep("-", "fairness shard")
            out.write_line(
                f"shard {shard['index']}/{shard['count']} of run {shard['run']} (partition {shard['partition']}): "
                f"{len(shard['checks'])} of the run's {len(shard['run_checks'])} checks; baselines and the run's "
                "verdict are decided by python -m pytest_fairness merge"
            )
        if report.pending:
            out.write_sep("-", "fairness batches")
            for message in dict.fromkeys(entry["message"] for entry in report.pending):
                out.write_line(message, yellow=True)
            out.write_line(f"exit status {PENDING_EXIT}: {report.run.stopped}", yellow=True, bold=True)


def _gates(report: RunReport, out: Terminal) -> None:
    """The summary table and what it rests on, and the cost; or one line on a run that stopped short."""
    run = report.run
    incomplete = not run.complete and run.status not in NOT_RUN_ON_PURPOSE
    if report.records:
        out.write_sep("=", "fairness summary")
        if incomplete:
            out.write_line(terminal.run_status_line(run), red=True, bold=True)
        for line in terminal.summary_lines(report.records, report.analyses):
            out.write_line(line)
        out.write_line(terminal.error_rate_line(report.family))
        out.write_sep("-", "fairness cost")
        for line in terminal.cost_lines(report.records):
            out.write_line(line)
    elif incomplete:  # nothing ran (e.g. stopped at start): one line, the message above says why
        out.write_line(terminal.run_status_line(run), red=True, bold=True)
    if run.abandoned:
        out.write_line(terminal.abandoned_line(run), yellow=True)


def _baselines(report: RunReport, out: Terminal) -> None:
    """The run's baseline verdicts, or what --snapshot-update recorded (or why it recorded nothing)."""
    if report.updating and (report.records or report.run.selected):
        out.write_sep("-", "fairness baselines")
        if not report.settings.baselines:
            out.write_line(
                "nothing recorded: --snapshot-update records fairness baselines only with --fairness-baselines "
                "(add it, or set fairness_baselines = true in the ini file)",
                yellow=True,
            )
            return
        out.write_line(
            f"{len(report.records)} baseline(s) recorded under {report.settings.baseline.directory}/ from this run "
            "(every selected check, whether or not it still matched)"
        )
        return
    if report.decision is None:
        return
    out.write_sep("-", "fairness baselines")
    for line in terminal.baseline_lines(report.decision):
        out.write_line(line, red=line.startswith("the run fails"))
