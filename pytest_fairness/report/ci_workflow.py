"""What a CI workflow builds from a run's reports: annotations per check, and one sticky PR comment.

The workflow in docs/ci/ stays thin: it runs pytest, then ``python -m pytest_fairness ci``, so what it
posts is tested here rather than in shell. The checks are read back as ``CheckRecord``s. Annotations point at
files in the repository: a check's suite file when the repository holds it, else the workflow file (a
built-in suite lies in the installed package). The comment never shows a broken image: a plot is a file of the
run's artefact, so the comment links to it. A run that wrote no report still gets a comment saying so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
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
    props = []
    if location:
        props.append(f"file={_escape_property(str(location['file']))}")
        if location.get("line"):
            props.append(f"line={int(location['line'])}")
    props.append(f"title={_escape_property(title)}")
    return f"::{level} {','.join(props)}::{_escape_data(message)}"


def in_repository(location: Mapping[str, Any] | None, fallback: str | None) -> Mapping[str, Any] | None:
    """Where an annotation points: the check's suite file when it lies in the repository (its path relative to
    the rootdir, which the workflow runs from), else the ``fallback`` file (the workflow's) without a line."""
    path = None if not location else str(location.get("file", ""))
    if path and not path.startswith(("/", "../")) and path != "..":
        return location
    return {"file": fallback} if fallback else None


def workflow_file(ref: str | None) -> str | None:
    """The workflow's file in the repository, from GitHub's ``GITHUB_WORKFLOW_REF``
    (``owner/repo/.github/workflows/fairness.yml@refs/pull/1/merge``)."""
    if not ref:
        return None
    path = ref.split("@", 1)[0].split("/", 2)
    return path[2] if len(path) == 3 else None


def not_started(report: Mapping[str, Any] | None, fallback: str | None) -> list[str]:
    """The one annotation of a run that could not start (or wrote no report), on the workflow file."""
    run = (report or {}).get("run") or {}
    if report is not None and run.get("status") != "not started":
        return []
    why = run.get("stopped") or "pytest wrote no report (see the log of the step that ran the suite)"
    return [_command("error", f"the fairness run could not start: {why}", "fairness", in_repository(None, fallback))]


def evidence_link(page: str, record: CheckRecord) -> str:
    """Where the evidence page shows a check, and its first kept item (the highest-rated flagged one, where the
    measure flags): ``fairness.html#check=LABEL&item=ID``. The id is stable across runs of one seed."""
    anchor = f"{page}#check={quote(record.label, safe='')}"
    raw = evidence_json(record.result.evidence) or {}
    first = next(
        (v[0] for v in raw.values() if isinstance(v, list) and v and isinstance(v[0], dict) and "id" in v[0]), None
    )
    return anchor if first is None else f"{anchor}&item={quote(str(first['id']), safe='')}"


def workflow_commands(report: Mapping[str, Any], fallback: str | None = None) -> list[str]:
    """One workflow command per failed, inconclusive or cannot-serve check, at its suite file's line (else on the
    ``fallback`` file: the workflow's), one per baseline comparison that fails the run, and one for a run that
    could not start. With an evidence page (the report's ``html``), each names where the page shows the check and
    its first evidence item."""
    checks = [
        (CheckRecord.from_dict(raw), in_repository(raw.get("location"), fallback)) for raw in report.get("checks", [])
    ]
    page = report.get("html")
    lines = not_started(report, fallback)
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


#: What a comment or a job summary says when the run wrote no Markdown report (pytest stopped before the plugin
#: could write it: a usage error, a crash, a missing install).
NO_REPORT = (
    "## Fairness report\n\n**The fairness run could not start**: it wrote no report (pytest stopped before the "
    "plugin could: a usage error, a crash, or pytest-fairness not installed). The log of the step that ran the suite "
    "says why.\n"
)
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def visible(markdown: str, artifact_url: str | None = None, run_url: str | None = None) -> str:
    """The Markdown with every image that GitHub cannot show (a file of the run, not a URL) turned into a link to
    the run's artefact, where the file is (else to the run; else its name in words): never a broken image."""

    def link(found: re.Match[str]) -> str:
        alt, target = found[1], found[2]
        if target.startswith(("http://", "https://")):
            return found[0]
        where = artifact_url or run_url
        name = target.rsplit("/", 2)[-2:]
        shown = f"{alt} (`{'/'.join(name)}` in the run's artefact)"
        return f"[{shown}]({where})" if where else shown

    return _IMAGE.sub(link, markdown)


def body(markdowns: Sequence[str | None], *, artifact_url: str | None = None, run_url: str | None = None) -> str:
    """The reports a comment or a job summary shows, one after the other: the run's report first (None: it wrote
    none, which is said), then any more (the baseline-diff table), with their plots turned into links."""
    first, *more = markdowns or [None]
    parts = [NO_REPORT if first is None else first, *(m for m in more if m)]
    return visible("\n".join(p.rstrip("\n") + "\n" for p in parts), artifact_url, run_url)


def comment(
    markdown: str | None, *, run_url: str | None = None, artifact_url: str | None = None, more: Sequence[str] = ()
) -> str:
    """The sticky comment: the marker, the Markdown report (None: the run wrote none, which is said) and ``more``
    (a baseline-diff table), cut to GitHub's limit, a link to the run, and a link to the uploaded artefact that
    holds the plots and the evidence page."""
    linked = run_url or artifact_url
    footer = f"\n\n[Full run, JSON, JUnit and plots]({linked})\n" if linked else ""
    if artifact_url:
        footer += (
            f"\nEvidence behind every number: `fairness.html` in [the fairness-report artefact]({artifact_url}) "
            "(unzip it and open the page offline; a check is `fairness.html#check=SUITE%3A%3ACHECK`).\n"
        )
    text = body([markdown, *more], artifact_url=artifact_url, run_url=run_url)
    room = COMMENT_LIMIT - len(MARKER) - len(footer) - 200
    text = text if len(text) <= room else text[:room] + "\n\n… (cut: the full report is an artefact)\n"
    return f"{MARKER}\n{text}{footer}"
