"""``ci annotations REPORT.json`` and ``ci comment REPORT.md``: what a CI workflow builds from a run's reports,
GitHub annotations per check (workflow commands, one a line) and the one sticky pull-request comment."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    ci = commands.add_parser("ci", help="GitHub annotations and the sticky pull-request comment of a run")
    steps = ci.add_subparsers(dest="step", required=True)
    notes = steps.add_parser("annotations", help="GitHub annotations for the checks of a JSON report")
    notes.add_argument("report", type=Path)
    notes.set_defaults(run=annotations)
    body = steps.add_parser("comment", help="the sticky pull-request comment for a Markdown report")
    body.add_argument("markdown", type=Path)
    body.add_argument("--run-url", default=None, help="link to the workflow run (its artefacts)")
    body.add_argument(
        "--artifact-url", default=None, help="link to the uploaded artefact with the evidence page (fairness.html)"
    )
    body.set_defaults(run=comment)


def annotations(args: argparse.Namespace) -> int:
    from pytest_fairness.report import ci_workflow

    for line in ci_workflow.workflow_commands(json.loads(args.report.read_text())):
        print(line)
    return 0


def comment(args: argparse.Namespace) -> int:
    from pytest_fairness.report import ci_workflow

    sys.stdout.write(
        ci_workflow.comment(args.markdown.read_text(), run_url=args.run_url, artifact_url=args.artifact_url)
    )
    return 0
