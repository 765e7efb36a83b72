"""``python -m pytest_fairness <command>`` as a shell runs it, and the older spellings kept as its aliases."""

import subprocess
import sys

import pytest
from release_reports import V2, record, write_report


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, check=False, timeout=120)


@pytest.fixture
def releases(tmp_path):
    v1 = write_report(tmp_path / "v1.json", [record("career", 0.1, 1), record("science", 0.0, 2)])
    v2 = write_report(tmp_path / "v2.json", [record("career", 0.6, 7, model=V2), record("science", 0.0, 8, model=V2)])
    return str(v1), str(v2)


def test_the_help_lists_every_command():
    done = _run("pytest_fairness", "--help")
    assert done.returncode == 0
    for command in ("merge", "cache", "compare", "ci", "history"):
        assert command in done.stdout


def test_compare_exits_1_on_a_regression(releases):
    done = _run("pytest_fairness", "compare", *releases)
    assert done.returncode == 1, done.stderr
    assert "REGRESSED" in done.stdout


@pytest.mark.parametrize(
    ("alias", "args"),
    [("compare", ()), ("ci", ("annotations",)), ("history", ())],
)
def test_an_older_spelling_runs_the_same_command(alias, args, releases, tmp_path):
    """``python -m pytest_fairness.compare`` and the others, as workflows copied before the one command line
    call them: the same output and exit status as ``python -m pytest_fairness <command>``."""
    given = {"compare": releases, "ci": (releases[0],), "history": (str(tmp_path),)}[alias]
    new, old = _run("pytest_fairness", alias, *args, *given), _run(f"pytest_fairness.{alias}", *args, *given)
    assert (old.returncode, old.stdout) == (new.returncode, new.stdout)
    assert new.returncode in (0, 1), new.stderr
