"""What a CI workflow builds from a run's reports: annotations per check, and one sticky PR comment.

The workflow in docs/ci/ stays thin: it runs pytest, then these commands, so what it posts is tested
here rather than in shell.

    python -m pytest_fairness.ci annotations fairness/report.json    # GitHub workflow commands, one a line
    python -m pytest_fairness.ci comment fairness/report.md           # the comment body, with its marker
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_fairness.baseline import FAILING, FAILING_ON_CHANGE
from pytest_fairness.report.format import interval, num, words

#: First line of the pull-request comment: how the workflow finds its own comment to update, not add.
MARKER = "<!-- pytest-fairness -->"
#: GitHub refuses comments longer than this many characters.
COMMENT_LIMIT = 65_000
#: Annotation level per outcome; a passing check gets none.
LEVELS = {"fail": "error", "inconclusive": "warning", "cannot_serve": "warning"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(level: str, message: str, title: str, location: Mapping[str, Any] | None) -> str:
    props = [f"file={_escape_property(str(location['file']))}", f"line={int(location['line'])}"] if location else []
    props.append(f"title={_escape_property(title)}")
    return f"::{level} {','.join(props)}::{_escape_data(message)}"


def annotations(report: Mapping[str, Any]) -> list[str]:
    """One workflow command per failed, inconclusive or cannot-serve check, at its suite file's line, and one
    per baseline comparison that fails the run."""
    lines = []
    for check in report.get("checks", []):
        label = f"{check['suite']}::{check['check']}"
        location = check.get("location")
        level = LEVELS.get(check["outcome"])
        if level is None:
            continue
        result = check["result"]
        message = (
            f"{words(check['outcome']).upper()}: estimate {num(result.get('estimate'))}, "
            f"CI {interval(result.get('ci') or (None, None))}, n={result.get('n')}, threshold {check['threshold_text']}"
        )
        if result.get("unserved"):
            message += f"; {result['unserved']}"
        lines.append(_command(level, message, f"fairness {label}", location))
    baselines = report.get("baselines") or {}
    failing = FAILING_ON_CHANGE if baselines.get("fail_on") == "change" else FAILING
    for check in report.get("checks", []):
        comparison = check.get("baseline") or {}
        if comparison.get("status") in failing:
            label = f"{check['suite']}::{check['check']}"
            message = str(comparison.get("explanation") or comparison["status"])
            lines.append(_command("error", message, f"fairness baseline {label}", check.get("location")))
    return lines


def comment(markdown: str, *, run_url: str | None = None) -> str:
    """The sticky comment: the marker, the Markdown report (cut to GitHub's limit) and a link to the run."""
    footer = f"\n\n[Full run, JSON, JUnit and plots]({run_url})\n" if run_url else ""
    room = COMMENT_LIMIT - len(MARKER) - len(footer) - 200
    body = markdown if len(markdown) <= room else markdown[:room] + "\n\n… (cut: the full report is an artefact)\n"
    return f"{MARKER}\n{body}{footer}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_fairness.ci", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    notes = commands.add_parser("annotations", help="GitHub annotations for the checks of a JSON report")
    notes.add_argument("report", type=Path)
    body = commands.add_parser("comment", help="the sticky pull-request comment for a Markdown report")
    body.add_argument("markdown", type=Path)
    body.add_argument("--run-url", default=None, help="link to the workflow run (its artefacts)")
    args = parser.parse_args(argv)
    if args.command == "annotations":
        for line in annotations(json.loads(args.report.read_text())):
            print(line)
    else:
        sys.stdout.write(comment(args.markdown.read_text(), run_url=args.run_url))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
