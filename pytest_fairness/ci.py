"""What a CI workflow builds from a run's reports: annotations per check, and one sticky PR comment.

The command line of ``report.ci``:

    python -m pytest_fairness.ci annotations fairness/report.json    # GitHub workflow commands, one a line
    python -m pytest_fairness.ci comment fairness/report.md           # the comment body, with its marker
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_fairness.report import ci


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
        for line in ci.workflow_commands(json.loads(args.report.read_text())):
            print(line)
    else:
        sys.stdout.write(ci.comment(args.markdown.read_text(), run_url=args.run_url))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
