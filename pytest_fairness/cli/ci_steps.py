"""``ci annotations REPORT.json``, ``ci comment REPORT.md [MORE.md...]``, ``ci summary`` and ``ci baselines-pr``:
what a CI workflow builds from a run's reports, GitHub annotations per check (workflow commands, one a line), the
one sticky pull-request comment and the job summary, each still saying something when the run wrote no report
(the run could not start, and where to read why); and the one way re-recorded baselines reach a branch, a pull
request from ``fairness-baselines/BRANCH`` (both CI workflows call it, so the rule lives here once).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
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
    pull = steps.add_parser(
        "baselines-pr", help="commit re-recorded baselines on fairness-baselines/BASE, open or update its pull request"
    )
    pull.add_argument("--base", default=os.environ.get("GITHUB_REF_NAME"), help="the branch (default GITHUB_REF_NAME)")
    pull.add_argument("--body-file", type=Path, required=True, help="the pull request's body (the baseline-diff table)")
    pull.add_argument("--dir", default="baselines", help="the baselines folder (default baselines)")
    pull.set_defaults(run=baselines_pr)


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


#: The branch a release's re-recorded baselines wait on for review: never the branch itself.
BASELINES_BRANCH = "fairness-baselines/{base}"
BOT = ("fairness-baselines", "fairness-baselines@users.noreply.github.com")


class _StepError(RuntimeError):
    """A git or gh command of the step failed: its command line and what it said."""


def _run(*command: str) -> str:
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        said = done.stderr.strip() or done.stdout.strip()
        raise _StepError(f"{' '.join(command)} failed ({done.returncode}): {said}")
    return done.stdout.strip()


def baselines_pr(args: argparse.Namespace) -> int:
    """Commit the baselines folder on ``fairness-baselines/BASE`` (force-pushed: it holds one proposal, the
    latest release's) and open its pull request into BASE, or update the open one's body; never a push to BASE.
    Nothing changed: no commit, no pull request."""
    if not args.base:
        print("ci baselines-pr: name the branch with --base (or run it where GITHUB_REF_NAME is set)", file=sys.stderr)
        return 2
    try:
        return _propose(args.base, args.dir, args.body_file)
    except _StepError as exc:
        print(f"ci baselines-pr: {exc}", file=sys.stderr)
        return 1


def _propose(base: str, folder: str, body: Path) -> int:
    branch, title = BASELINES_BRANCH.format(base=base), f"Re-record fairness baselines for {base}"
    _run("git", "checkout", "-q", "-B", branch)
    _run("git", "add", "--", folder)
    if subprocess.run(["git", "diff", "--cached", "--quiet"], check=False).returncode == 0:
        print("The baselines did not change: no pull request.")
        return 0
    _run("git", "-c", f"user.name={BOT[0]}", "-c", f"user.email={BOT[1]}", "commit", "-q", "-m", title)
    _run("git", "push", "-q", "--force", "origin", branch)
    found = ["--state", "open", "--json", "number", "--jq", ".[0].number"]
    number = _run("gh", "pr", "list", "--head", branch, "--base", base, *found)
    if number:
        _run("gh", "pr", "edit", number, "--body-file", str(body))
        print(f"Updated the baselines pull request #{number} ({branch} into {base}).")
    else:
        made = ["--head", branch, "--body-file", str(body), "--title", title]
        print(f"Opened the baselines pull request {_run('gh', 'pr', 'create', '--base', base, *made)}.")
    return 0
