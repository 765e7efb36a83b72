"""pytest-html, where people already look: with ``--html`` the fairness summary and each check's plot join its report.

Only pytest-html's documented hooks: each check's call report gets an HTML extra (its verdict line, its plot
against the threshold, and a link to the check in ``--fairness-html``'s page), and the report's summary gets
the run's fairness table (``pytest_html_results_summary``, called from pytest-html's own ``trylast``
``pytest_sessionfinish``, after the fairness reporter's ``tryfirst`` one built the run's ``RunReport``). The
plugin is registered only when pytest-html writes a report, on the xdist controller or a serial run; without
pytest-html nothing changes. pytest-html inserts both as markup, so every text put in is escaped here.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_fairness.records.check_record import PROPERTY, CheckRecord
from pytest_fairness.report.status import STYLES
from pytest_fairness.report.svg_plots import check_plot
from pytest_fairness.util.fmt import interval, num

PLUGIN = "fairness-html-extras"


def wanted(config: pytest.Config) -> bool:
    """Whether pytest-html writes a report in this process (its controller or a serial run)."""
    return bool(getattr(config.option, "htmlpath", None)) and not hasattr(config, "workerinput")


class HtmlExtras:
    """Adds the fairness summary and each check's plot to pytest-html's report."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        #: pytest-html's own option (``wanted`` saw it set), not one of ours: the folder its report is written in.
        self.report_dir = Path(config.option.htmlpath).resolve().parent

    @property
    def _reporter(self) -> Any:
        return self.config.pluginmanager.get_plugin("fairness-reporter")

    def link(self, label: str | None = None) -> str:
        """A link from pytest-html's report to the fairness page (relative: both sit in one artefact folder)."""
        target = self._reporter.settings.outputs.get("html") if self._reporter is not None else None
        if not target:
            return ""
        href = Path(os.path.relpath(Path(target).resolve(), self.report_dir)).as_posix()
        anchor = "" if label is None else "#check=" + _quoted(label)
        text = "evidence" if label is not None else "the evidence page"
        return f'<a href="{html.escape(href + anchor)}">{text}</a>'

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A check's call report: its verdict line and plot as an HTML extra on its row."""
        if report.when != "call" or self._reporter is None:
            return
        for key, value in report.user_properties:
            if key != PROPERTY:
                continue
            raw = json.loads(value)
            record = _record(self._reporter.records, f"{raw['suite']}::{raw['check']}")
            if record is None:
                continue
            content = f"<div class='fairness'><p>{html.escape(line(record))} {self.link(record.label)}</p>"
            content += f"{check_plot(record, 560, 80)}</div>"
            extra = {
                "name": "fairness",
                "format_type": "html",
                "content": content,
                "mime_type": None,
                "extension": None,
            }
            report.extras = [*getattr(report, "extras", []), extra]  # type: ignore[attr-defined]

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(
        self, prefix: list[str], summary: list[str], postfix: list[str], session: Any
    ) -> None:
        """The run's fairness table above pytest's: check, outcome, estimate and interval, n, threshold, plot."""
        run = getattr(self._reporter, "report", None)
        if run is None or not run.records:
            return
        rows = "".join(
            f"<tr><td>{html.escape(rec.label)}</td><td>{html.escape(STYLES[rec.outcome].word)}</td>"
            f"<td>{html.escape(num(rec.result.estimate))} {html.escape(interval(rec.result.ci))}</td>"
            f"<td>{rec.result.n}</td><td>{html.escape(rec.threshold_text)}</td>"
            f"<td>{check_plot(rec, 260, 26, small=True)}</td><td>{self.link(rec.label)}</td></tr>"
            for rec in run.records
        )
        state = "complete" if run.run.complete else f"NOT complete ({html.escape(run.run.status)})"
        prefix.append(
            f"<div class='fairness-summary'><h3>Fairness</h3><p>Run {state}: {len(run.records)} checks. "
            f"{self.link()}</p><table><tr><th>check</th><th>outcome</th><th>estimate [interval]</th><th>n</th>"
            f"<th>threshold</th><th>against the threshold</th><th></th></tr>{rows}</table></div>"
        )


def line(record: CheckRecord) -> str:
    """A check's verdict in one line."""
    r = record.result
    return (
        f"{STYLES[record.outcome].word.upper()}: {r.measure} on {r.subject} = {num(r.estimate)}, "
        f"interval {interval(r.ci)}, n = {r.n}, threshold {record.threshold_text}"
    )


def _record(records: list[CheckRecord], label: str) -> CheckRecord | None:
    return next((rec for rec in reversed(records) if rec.label == label), None)


def _quoted(label: str) -> str:
    from urllib.parse import quote

    return quote(label, safe="")
