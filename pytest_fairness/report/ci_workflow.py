"""What a CI workflow builds from a run's reports: annotations per check, and one sticky PR comment.

The workflow in docs/ci/ stays thin: it runs pytest, then ``python -m pytest_fairness ci``, so what it
posts is tested here rather than in shell. The checks are read back as ``CheckRecord``s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from pytest_fairness.baseline import FAILING, FAILING_ON_CHANGE
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.evidence import evidence_json
from pytest_fairness.records.explain import explain
from pytest_fairness.report.status import STYLES
from pytest_fairness.util.fmt import interval, num

#: First line of the pull-request comment: how the workflow finds its own comment to update, not add.
MARKER = "<!-- pytest-fairness -->"
#: GitHub refuses comments longer than this many characters.
COMMENT_LIMIT = 65_000


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(level: str, message: str, title: str, location: Mapping[str, Any] | None) -> str:
    props = [f"file={_escape_property(str(location['file']))}", f"line={int(location['line'])}"] if location else []
    props.append(f"title={_escape_property(title)}")
    return f"::{level} {','.join(props)}::{_escape_data(message)}"


def evidence_link(page: str, record: CheckRecord) -> str:
    """Where the evidence page shows a check, and its first kept item (the highest-rated flagged one, where the
    measure flags): ``fairness.html#check=LABEL&item=ID``. The id is stable across runs of one seed."""
    anchor = f"{page}#check={quote(record.label, safe='')}"
    raw = evidence_json(record.result.evidence) or {}
    first = next(
        (v[0] for v in raw.values() if isinstance(v, list) and v and isinstance(v[0], dict) and "id" in v[0]), None
    )
    return anchor if first is None else f"{anchor}&item={quote(str(first['id']), safe='')}"


def workflow_commands(report: Mapping[str, Any]) -> list[str]:
    """One workflow command per failed, inconclusive or cannot-serve check, at its suite file's line, and one
    per baseline comparison that fails the run. With an evidence page (the report's ``html``), each names where
    the page shows the check and its first evidence item."""
    checks = [(CheckRecord.from_dict(raw), raw.get("location")) for raw in report.get("checks", [])]
    page = report.get("html")
    lines = []
    for record, location in checks:
        shown, result = STYLES[record.outcome], record.result
        if shown.level is None:
            continue
        message = (
            f"{shown.word.upper()}: estimate {num(result.estimate)}, CI {interval(result.ci)}, n={result.n}, "
            f"threshold {record.threshold_text}"
        )
        if result.unserved:
            message += f"; {result.unserved}"
        if page:
            message += f"; evidence: {evidence_link(page, record)}"
        lines.append(_command(shown.level, message, f"fairness {record.label}", location))
    failing = FAILING_ON_CHANGE if (report.get("baselines") or {}).get("fail_on") == "change" else FAILING
    for record, location in checks:
        comparison = record.baseline
        if comparison is not None and comparison.status in failing:
            message = explain(comparison) or comparison.status
            lines.append(_command("error", message, f"fairness baseline {record.label}", location))
    return lines


def comment(markdown: str, *, run_url: str | None = None, artifact_url: str | None = None) -> str:
    """The sticky comment: the marker, the Markdown report (cut to GitHub's limit), a link to the run, and a link
    to the uploaded artefact that holds the evidence page."""
    footer = f"\n\n[Full run, JSON, JUnit and plots]({run_url})\n" if run_url else ""
    if artifact_url:
        footer += (
            f"\nEvidence behind every number: `fairness.html` in [the fairness-report artefact]({artifact_url}) "
            "(unzip it and open the page offline; a check is `fairness.html#check=SUITE%3A%3ACHECK`).\n"
        )
    room = COMMENT_LIMIT - len(MARKER) - len(footer) - 200
    body = markdown if len(markdown) <= room else markdown[:room] + "\n\n… (cut: the full report is an artefact)\n"
    return f"{MARKER}\n{body}{footer}"
