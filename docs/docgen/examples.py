"""Command examples the pages show: each is run for real, in a fresh folder, and its output shown.

An example is a few steps (a ``pytest`` or ``python`` command each) with the files they need; a step
shows its command and, through ``show``, the part of its output the page explains. Durations and the
machine's temporary paths are masked, so that the output is the same on every machine. A step
declares the exit status it must end with: an example that starts to behave differently fails the docs
test instead of documenting the new behaviour unnoticed.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from docgen import markup

ROOT = Path(__file__).resolve().parents[2]
#: What every example's pytest runs leave out: plugins of this checkout's dev set-up that a user lacks, and
#: live progress lines, which appear only when a check outlasts their interval (a slow machine's timing).
ADDOPTS = "-p no:randomly -p no:cacheprovider -p no:hypothesispytest --fairness-progress=off"
#: A section line of pytest's terminal output: "==== fairness summary ====", "---- fairness cost ----".
SECTION = re.compile(r"^([=_-])\1{2,} .* \1{3,}$")
MASKS = (
    # "=== 3 failed in 1.59s ===", "in 65.02s (0:01:05)": durations go; a section line is centred again
    (re.compile(r" in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d\))?(?= =+$|$)"), ""),
    (re.compile(r", model time: \d+(?:\.\d+)?s"), ""),
)


#: What a step shows of its output (stdout and stderr together, masked).
Show = Callable[[str], str]


def quiet(output: str) -> str:
    """Show the command only."""
    return ""


@dataclass(frozen=True)
class Step:
    args: tuple[str, ...]
    show: Show | None = quiet  # None: run it, show nothing (a preparation the page describes in words)
    expect: int = 0  # the exit status it must end with
    program: str = "pytest"  # or "python": the args follow ``python``

    def argv(self) -> list[str]:
        return [sys.executable, *(["-m", "pytest"] if self.program == "pytest" else []), *self.args]

    def shown(self) -> str:
        return "$ " + _wrap([self.program, *(_quote(arg) for arg in self.args)])


@dataclass(frozen=True)
class Example:
    steps: tuple[Step, ...]
    #: File name -> where its text comes from: ``("page.md", "name")`` a page's <!--file:name--> block,
    #: ``("tests/...",)`` a file of this checkout.
    files: tuple[tuple[str, tuple[str, ...]], ...] = ()
    fence: str = "console"

    def key(self) -> tuple[object, ...]:
        """What a run depends on: examples that differ only in what they show share one run."""
        return self.files, tuple((step.program, step.args, step.expect) for step in self.steps)


def _quote(arg: str) -> str:
    """An argument as a user types it: ``--opt='a?b=1'`` rather than ``'--opt=a?b=1'``."""
    name, eq, value = arg.partition("=")
    if eq and name.startswith("-") and shlex.quote(value) != value:
        return f"{name}={shlex.quote(value)}"
    return shlex.quote(arg)


def _wrap(words: list[str], width: int = 100) -> str:
    lines = [words[0]]
    for word in words[1:]:
        if len(lines[-1]) + 1 + len(word) > width:
            lines[-1] += " \\"
            lines.append("    " + word)
        else:
            lines[-1] += " " + word
    return "\n".join(lines)


def _file_text(source: tuple[str, ...]) -> str:
    if len(source) == 2:
        return markup.file_block((ROOT / source[0]).read_text(), source[1])
    return (ROOT / source[0]).read_text()


def _mask(text: str, folder: Path) -> str:
    text = text.replace(str(folder) + os.sep, "").replace(str(folder), ".")
    lines = []
    for line in text.splitlines():
        masked = line
        for pattern, repl in MASKS:
            masked = pattern.sub(repl, masked)
        if masked != line and SECTION.match(line):  # a section line that lost its duration: centre it again
            inner = masked.strip("=").strip()
            masked = f" {inner} ".center(len(line), "=")
        lines.append(masked.rstrip())
    return "\n".join(lines)


def run(example: Example) -> tuple[str, ...]:
    """Every step's output (runs are shared by examples with the same steps and files)."""
    return _run(example.key())


@cache
def _run(key: tuple[object, ...]) -> tuple[str, ...]:
    """Every step's output, in a fresh folder that is an empty pytest project of its own."""
    files, steps = key
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OPENAI_", "FAIRNESS_"))}
    env |= {"PYTEST_ADDOPTS": ADDOPTS, "COLUMNS": "80", "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory(prefix="fairness-docs-") as tmp:
        folder = Path(tmp).resolve()
        (folder / "pytest.ini").write_text("[pytest]\n")
        for name, source in files:  # type: ignore[attr-defined]
            (folder / name).write_text(_file_text(source))
        results = []
        for program, args, expect in steps:  # type: ignore[attr-defined]
            step = Step(args, program=program, expect=expect)
            done = subprocess.run(
                step.argv(), cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            if done.returncode != expect:
                raise AssertionError(
                    f"{step.shown()} ended with status {done.returncode}, not {expect}:\n{done.stdout[-3000:]}"
                )
            results.append(_mask(done.stdout, folder))
        return tuple(results)


def render(name: str) -> str:
    """The fenced block of example ``name``: each shown step's command and the part of its output it shows."""
    example = EXAMPLES[name]
    parts = []
    for step, output in zip(example.steps, run(example), strict=True):
        if step.show is None:
            continue
        shown = step.show(output)
        parts.append(step.shown() + ("\n" + shown if shown else ""))
    return f"```{example.fence}\n" + "\n".join(parts).rstrip("\n") + "\n```"


# -- picking the part of an output a page explains -----------------------------------------------------


def cut(start: str, stop: str | None = None, *, stop_before: bool = False) -> Show:
    """The lines from the first matching ``start`` to the next matching ``stop`` (to the section's end if None)."""

    def show(output: str) -> str:
        lines = output.splitlines()
        begin = next(i for i, line in enumerate(lines) if re.search(start, line))
        end = len(lines)
        for i in range(begin + 1, len(lines)):
            if (stop is None and SECTION.match(lines[i])) or (stop is not None and re.search(stop, lines[i])):
                end = i if stop_before or stop is None else i + 1
                break
        return "\n".join(lines[begin:end]).rstrip("\n")

    return show


def lines(pattern: str) -> Show:
    """Every line matching ``pattern``."""
    return lambda output: "\n".join(line for line in output.splitlines() if re.search(pattern, line))


def last_line(output: str) -> str:
    return output.splitlines()[-1]


def joined(*shows: Show) -> Show:
    """Several parts of one output, with "..." where lines were left out between them."""
    return lambda output: "\n...\n".join(show(output) for show in shows)


# -- the examples --------------------------------------------------------------------------------------

IAT_04 = "--fairness-model=synthetic:iat?bias=0.4"
RELEASE_MODELS = ("--fairness-model=openai:gpt-4o-mini", "--fairness-judge=openai:gpt-4o")
#: A cheap judge and a strong reference (the two-phase plan of docs/release-runs.md).
REFERENCE_MODELS = (
    "--fairness-model=openai:gpt-4o-mini",
    "--fairness-judge=openai:gpt-4o-mini",
    "--fairness-judge-reference=openai:gpt-4o",
)
RELIGION_IAT = ("--fairness-suite=religion", "-k", "implicit", "--fairness-baseline-model=acme-chat")
RECORD = ("--fairness-baselines", "--snapshot-update", "-n", "0")
#: The non-inferiority example's margin, on the implicit-bias scale.
NI_MARGIN = 0.25
NI = (
    "--fairness-seed=1",
    "--fairness-profile=paper",
    "--fairness-baselines",
    "--fairness-baseline-mode=noninferiority",
)
NI_GATE = (*RELIGION_IAT, *NI, f"--fairness-baseline-tolerance={NI_MARGIN:g}")
SUMMARY = cut(r"=+ fairness summary =+", r"^$", stop_before=True)
BASELINES = cut(r"-+ fairness baselines -+")
PRINT_RUN = 'import json; print(json.dumps(json.load(open("out/report.json"))["run"]))'


def _mixed(run: Show | None = None, report: Show | None = None, annotations: Show | None = None) -> Example:
    """The run of reading-a-run.md's mixed.yaml, its JSON report and its CI annotations, each shown or not:
    the pages' views of it share one run."""
    reported = ("--fairness-suite=mixed.yaml", "--fairness-model=synthetic:iat?bias=0.9&unusable=0.6")
    return Example(
        (
            Step((*reported, "--fairness-report=out/report.json"), run, expect=1),
            Step(("-c", PRINT_RUN), report, program="python"),
            Step(("-m", "pytest_fairness", "ci", "annotations", "out/report.json"), annotations, program="python"),
        ),
        (("mixed.yaml", ("docs/reading-a-run.md", "mixed.yaml")),),
    )


EXAMPLES: dict[str, Example] = {
    "first-run": Example(
        (
            Step(
                ("--fairness-suite=gender", "-k", "implicit", IAT_04, "--fairness-sequential"),
                joined(lines(r"^fairness/"), SUMMARY, lines(r"^gates:"), last_line),
                expect=1,
            ),
        )
    ),
    "collect": Example(
        (Step(("--fairness-suite=gender", "--collect-only", "-q"), joined(lines(r"^fairness/"), last_line)),)
    ),
    "bad-suite": Example(
        (Step(("--fairness-suite=typo.yaml", "--collect-only", "-q"), lines(r"^ERROR"), expect=4),),
        (("typo.yaml", ("docs/gating-a-model.md", "typo.yaml")),),
    ),
    "mixed-header": _mixed(run=lines(r"^fairness: ")),
    "mixed-counts": _mixed(run=joined(lines(r"^fairness/"), last_line)),
    "mixed-json-run": _mixed(report=lines("")),
    "ci-annotations": _mixed(run=quiet, annotations=lines("")),
    "app": Example(
        (
            Step(
                (
                    "--fairness-suite=gender",
                    "-k",
                    "net_harm",
                    "--fairness-sequential",
                    "--fairness-model=python:my_app:answer",
                    "--fairness-judge=python:my_judge:judge",
                    "--fairness-judge-reference=python:my_reviewer:judge",
                ),
                joined(SUMMARY, lines(r"^model versions|^gates:")),
                expect=1,
            ),
        ),
        (
            ("my_app.py", ("docs/gating-an-app.md", "my_app.py")),
            ("my_judge.py", ("tests/python_apps/support_judge.py",)),
            ("my_reviewer.py", ("tests/python_apps/support_reference.py",)),
        ),
    ),
    "plan": Example(
        (
            Step(
                ("--fairness-suite=gender", "--fairness-profile=release", *RELEASE_MODELS, "--fairness-plan"),
                cut(r"=+ fairness plan", r"^=+ no tests ran", stop_before=True),
            ),
        )
    ),
    "plan-reference": Example(
        (
            Step(
                ("--fairness-suite=gender", "--fairness-profile=release", *REFERENCE_MODELS, "--fairness-plan"),
                cut(r"=+ fairness plan", r"^=+ no tests ran", stop_before=True),
            ),
        )
    ),
    "plan-sequential": Example(
        (
            Step(
                (
                    "--fairness-suite=gender",
                    "--fairness-profile=release",
                    *REFERENCE_MODELS,
                    "--fairness-sequential",
                    "--fairness-plan",
                ),
                cut(r"^sequential growth", r"^=+ no tests ran", stop_before=True),
            ),
        )
    ),
    "budget": Example(
        (
            Step(
                ("--fairness-suite=gender", "--fairness-profile=paper", *RELEASE_MODELS, "--fairness-budget=5"),
                cut(r"stopped before the first check", r"Within the budget"),
                expect=2,
            ),
        )
    ),
    "baseline-regression": Example(
        (
            Step((*RELIGION_IAT, "--fairness-model=synthetic:iat?bias=0.2", *RECORD), expect=1),
            Step(
                (*RELIGION_IAT, "--fairness-model=synthetic:iat?bias=0.9", "--fairness-baselines"), BASELINES, expect=1
            ),
        )
    ),
    "noninferiority": Example(
        (
            Step(
                (*RELIGION_IAT, "--fairness-model=synthetic:iat?bias=0.2", "--fairness-profile=paper", *RECORD),
                expect=1,
            ),
            Step((*NI_GATE, "--fairness-model=synthetic:iat?bias=0.2"), BASELINES, expect=1),
            Step((*NI_GATE, "--fairness-model=synthetic:iat?bias=0.6"), BASELINES, expect=1),
        )
    ),
}
