"""A GitHub Actions runner's part in the CI kit's tests: a workflow's steps read from docs/ci/, each step's
shell script run as the runner runs it (``bash -e``, its env), with this interpreter as ``python``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from paths import REPO


class Workflow:
    """One workflow file of the CI kit (``docs/ci/NAME``)."""

    def __init__(self, name: str) -> None:
        self.path = REPO / "docs" / "ci" / name

    @property
    def document(self) -> dict[str, Any]:
        return yaml.safe_load(self.path.read_text())

    def steps(self, job: str) -> list[dict[str, Any]]:
        return self.document["jobs"][job]["steps"]

    def step(self, job: str, name: str) -> dict[str, Any]:
        """The job's first step whose name starts with ``name``."""
        return next(s for s in self.steps(job) if s.get("name", "").startswith(name))

    def run(self, job: str, name: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """A step's shell script as the runner runs it (``bash -e``), in ``cwd`` with ``env``."""
        script = self.step(job, name)["run"]
        return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True)

    def env(self, home: Path, run_id: str, **variables: str) -> dict[str, str]:
        """What a runner gives the workflow's steps: the workflow's own env block, this interpreter first on
        PATH as ``python``, the GitHub variables the steps read, and ``variables``."""
        bindir = home / "bin"
        bindir.mkdir(exist_ok=True)
        python = bindir / "python"  # a wrapper, not a symlink: a venv's interpreter finds its packages by its path
        python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        python.chmod(0o755)
        # pytester's and xdist's own variables stay out: a workflow's step runs an ordinary pytest.
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        return env | {
            **self.document.get("env", {}),
            "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(REPO),
            "GITHUB_STEP_SUMMARY": str(home / "summary.md"),
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_REPOSITORY": "team/model",
            "GITHUB_RUN_ID": run_id,
            **variables,
        }
