"""Facts read through the project's public names: the built-in suites, the measures registry and its
``Params``, and the options as ``pytest --help`` gives them."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from typing import Any

from pytest_fairness.config import suite
from pytest_fairness.measures import MEASURES, Params, ParamsError


@cache
def checks(name: str) -> dict[str, suite.Check]:
    """A built-in suite's checks by id."""
    return {check.id: check for check in suite.load(name).checks}


def check(label: str) -> suite.Check:
    """A built-in check by its ``suite::id`` label."""
    name, _, check_id = label.partition("::")
    return checks(name)[check_id]


def params(measure: str) -> type[Params]:
    return MEASURES[measure].params


def param_default(measure: str, field: str) -> Any:
    for f in dataclasses.fields(params(measure)):
        if f.name == field:
            return f.default
    raise KeyError(f"{measure} has no parameter {field!r}")


def subjects(measure: str) -> list[str]:
    """What a measure's checks can be about (stereotypes, attributes, comparisons), as its error lists them."""
    field = next(f.name for f in dataclasses.fields(params(measure)) if f.metadata.get("subject"))
    try:
        MEASURES[measure].validate({field: "?"})
    except ParamsError as exc:
        found = re.search(r"(?:valid|defines):? (.+)$", str(exc))
        if found:
            return [word.strip() for word in found.group(1).split(",")]
    raise LookupError(f"{measure}: no list of valid {field}s in its error for an unknown one")


@dataclass(frozen=True)
class Option:
    flag: str  # --fairness-model, or --fairness-profile={quick,paper,release}
    help: str
    ini: str  # fairness_model


@cache
def pytest_help() -> str:
    """``pytest --help`` in an empty project, unwrapped."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")} | {"COLUMNS": "10000"}
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--help", "-p", "no:randomly"],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    return done.stdout


@cache
def options() -> tuple[Option, ...]:
    """The plugin's options, in the order pytest lists them, with their help and ini key."""
    text = pytest_help()
    group = text.split("LLM fairness checks (pytest-fairness):\n", 1)[1].split("\n\n", 1)[0]
    found: list[list[str]] = []
    for line in group.splitlines():
        m = re.match(r"  (--fairness-[\w-]+)(?:=(\{[^}]*\})|=\S+)?\s*(.*)$", line)
        if m:
            found.append([m.group(1) + (f"={m.group(2)}" if m.group(2) else ""), m.group(3).strip()])
        elif found:
            found[-1][1] = f"{found[-1][1]} {line.strip()}".strip()
    inis = set(re.findall(r"^  (fairness_\w+) \(", text, re.M))
    out = []
    for flag, help_text in found:
        ini = "fairness_" + flag.split("=")[0].removeprefix("--fairness-").replace("-", "_")
        out.append(Option(flag, help_text, ini if ini in inis else ""))
    return tuple(out)


def cli_status(*args: str) -> int:
    """The exit status of ``python -m <args>`` in an empty folder: what a command does, read from it."""
    with tempfile.TemporaryDirectory() as tmp:
        return subprocess.run([sys.executable, "-m", *args], cwd=tmp, capture_output=True).returncode
