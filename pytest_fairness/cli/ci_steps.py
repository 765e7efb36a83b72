"""``ci annotations REPORT.json``, ``ci comment REPORT.md [MORE.md...]`` and ``ci summary``: what a CI workflow
builds from a run's reports, GitHub annotations per check (workflow commands, one a line), the one sticky
pull-request comment and the job summary. Each still says something when the run wrote no report: the run could
not start, and where to read why.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    ci = commands.add_parser("ci", help="GitHub annotations, the sticky pull-request comment and the job summary")
    steps = ci.add_subparsers(dest="step", required=True)
    notes = steps.add_parser("annotations", help="GitHub annotations for the checks of a JSON report")
    notes.add_argument("report", type=Path)
    notes.add_argument(
        "--workflow-file",
        default=None,
        help="the file annotations point at when a check's suite file is not in the repository (default: the "
        "workflow's own, from GITHUB_WORKFLOW_REF)",
    )
    notes.set_defaults(run=annotations)
    for name, help_text in (
        ("comment", "the sticky pull-request comment: the marker, the reports, a link to the run"),
        ("summary", "the job summary: the reports, their plots as links"),
    ):
        step = steps.add_parser(name, help=help_text)
        step.add_argument("markdown", type=Path, help="the run's Markdown report (--fairness-markdown)")
        step.add_argument("more", type=Path, nargs="*", help="more Markdown to add when it exists (a baseline diff)")
        step.add_argument("--run-url", default=None, help="link to the workflow run")
        step.add_argument(
            "--artifact-url", default=None, help="link to the run's uploaded artefact (its plots and the evidence page)"
        )
        step.set_defaults(run=comment if name == "comment" else summary)


def annotations(args: argparse.Namespace) -> int:
    from pytest_fairness.report import ci_workflow

    fallback = args.workflow_file or ci_workflow.workflow_file(os.environ.get("GITHUB_WORKFLOW_REF"))
    try:
        report = json.loads(args.report.read_text())
    except (OSError, ValueError):
        report = None
    lines = (
        ci_workflow.not_started(None, fallback) if report is None else ci_workflow.workflow_commands(report, fallback)
    )
    for line in lines:
        print(line)
    return 0


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def comment(args: argparse.Namespace) -> int:
    from pytest_fairness.report import ci_workflow

    more = [text for text in map(_read, args.more) if text]
    sys.stdout.write(
        ci_workflow.comment(
            _read(args.markdown), run_url=args.run_url, artifact_url=args.artifact_url or None, more=more
        )
    )
    return 0


def summary(args: argparse.Namespace) -> int:
    from pytest_fairness.report import ci_workflow

    reports = [_read(args.markdown), *(text for text in map(_read, args.more) if text)]
    sys.stdout.write(ci_workflow.body(reports, artifact_url=args.artifact_url or None, run_url=args.run_url))
    return 0
