"""The evidence page (``--fairness-html=PATH``): one self-contained HTML file that drills from every number to
the answers behind it. No server, no network: it opens offline from an artefact's folder.

Per check: the verdict, interval, n, threshold and what a PASS certifies; a plot of the estimate against the
threshold (and the baseline's, in a pull request); the comparison with the baseline side by side, with the
paired difference against the margin and the items that moved most; and the measure's own evidence view,
declared by its evidence kind (``records.evidence.View``), so this page names no measure.

The run's records go into one ``<script type="application/json">`` element with every ``<`` escaped, so no
text of a run (an answer containing ``</script>``) can end it; the page script sets run texts as text only,
and a Content-Security-Policy allows nothing to be fetched. Per-sample arrays stay out (the page never reads
them). A page past ``BUDGET`` bytes drops sampled evidence items, the largest check first, and says so.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest_fairness.measures  # noqa: F401  (registers every built-in measure's evidence kind)
from pytest_fairness.config.options import Option
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.evidence import evidence_json, view_of
from pytest_fairness.report.output import Output, RunReport, Sinks, write_file
from pytest_fairness.report.status import STYLES
from pytest_fairness.report.svg_plots import bar_chart, check_plot, paired_plot
from pytest_fairness.util.serial import to_json

#: The most bytes a page may take before its sampled evidence is trimmed.
BUDGET = 10_000_000
#: What the page never reads of a result: per-sample arrays.
PER_SAMPLE = ("samples", "items", "item_samples")


class HtmlFile(Output):
    """``--fairness-html=PATH``: the run and the evidence behind each check, as one offline HTML file."""

    options = (Option("html", "write a self-contained HTML page of the run and each check's evidence to this path"),)

    def write(self, report: RunReport, sinks: Sinks) -> None:
        write_file(Path(report.option(self.options[0])), page(report))


def page(report: RunReport, budget: int = BUDGET) -> str:
    """The whole page of a run (at most ``budget`` bytes, its sampled evidence trimmed if need be)."""
    checks = [check_data(rec) for rec in report.records]
    run = run_data(report)
    payload = _payload(run, checks)
    text = _html(run, payload)
    if len(text.encode()) > budget:
        run["trimmed"] = _trim(checks, budget - (len(text.encode()) - len(payload.encode())))
        text = _html(run, _payload(run, checks))
    return text


def _html(run: dict[str, Any], payload: str) -> str:
    title = html.escape(f"Fairness run: {', '.join(run['suites']) or 'no checks'}")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{title}</title><style>{_asset('html_page.css')}</style></head><body>"
        f'<script type="application/json" id="fairness-data">{payload}</script>'
        f"<script>{_asset('html_page.js')}</script></body></html>\n"
    )


def run_data(report: RunReport) -> dict[str, Any]:
    """The header's facts: suites, model, judge, seed, profile, gate, and whether every check finished."""
    s, run = report.settings, report.run
    why = f"of {run.selected} selected checks, {run.errored} errored and {run.not_run} did not run"
    return {
        "suites": sorted({rec.suite for rec in report.records}),
        "model": s.model,
        "judge": s.judge,
        "seed": s.seed,
        "profile": s.profile,
        "gate": s.gate,
        "confidence": s.confidence,
        "status": run.status,
        "complete": run.complete,
        "why": f"{why}{'; ' + run.stopped if run.stopped else ''}; the checks below are what finished",
    }


def check_data(record: CheckRecord) -> dict[str, Any]:
    """One check as the page reads it: its record without per-sample arrays, its outcome's word and verdict,
    and its plots."""
    raw = record.to_dict()
    raw["result"] = {k: v for k, v in raw["result"].items() if k not in PER_SAMPLE}
    style = STYLES[record.outcome]
    plots: dict[str, Any] = {"small": check_plot(record, 220, 26, small=True), "full": check_plot(record)}
    if record.baseline is not None:
        plots["paired"] = paired_plot(record.baseline)
    evidence = evidence_json(record.result.evidence)
    view = None if evidence is None else view_of(str(evidence.get("kind")))
    if view is not None and evidence is not None:
        plots["charts"] = [bar_chart(evidence.get(c.source) or [], c) for c in view.charts]
    return {"label": record.label, "outcome_word": style.word, "verdict": style.verdict, **raw, "plots": plots}


def _payload(run: dict[str, Any], checks: list[dict[str, Any]]) -> str:
    views = {}
    for check in checks:
        kind = str((check["result"].get("evidence") or {}).get("kind"))
        view = view_of(kind)
        if view is not None:
            views[kind] = to_json(view)
    text = json.dumps({"run": run, "checks": checks, "views": views}, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c")  # nothing in the data can close the script element


def _trim(checks: list[dict[str, Any]], budget: int) -> str:
    """Drop sampled-only evidence items (the flagged ones stay), the largest check's first, until the page fits."""
    dropped = 0
    for check in sorted(checks, key=lambda c: -len(json.dumps(c["result"].get("evidence") or {}))):
        evidence = check["result"].get("evidence") or {}
        for key, value in evidence.items():
            if isinstance(value, list) and value and isinstance(value[0], dict) and "why" in value[0]:
                kept = [item for item in value if item.get("why") != "sampled"]
                dropped += len(value) - len(kept)
                check["trimmed"] = f"{len(value) - len(kept)} sampled {key} left out to keep the page small."
                evidence[key] = kept
        if len(_payload({}, checks).encode()) <= budget:
            break
    return f"The page left out {dropped} sampled evidence items to stay within {budget / 1e6:g} MB (the JSON has them)."


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
