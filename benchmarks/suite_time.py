"""How long the project's tests take, tier by tier, and the fast loop: wall and CPU seconds, and the tests run.

``python benchmarks/suite_time.py`` runs each command below in turn from the repository's root and prints a
Markdown table; ``--write`` also puts it in docs/development.md (its ``<!--measured:...-->`` block), with
the machine's cores and the date. A timing belongs to its machine: run it again where it matters.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "development.md"
SCRIPT = "benchmarks/suite_time.py"
#: What is timed: the fast loop, each tier, and the whole suite as CI runs it.
COMMANDS = {
    "fast loop": "pytest tests/unit -n 2 -m 'not heavy'",
    "unit": "pytest tests/unit -n 2",
    "integration": "pytest tests/integration -n 2",
    "repo": "pytest tests/repo -n 2",
    "whole suite": "pytest tests -n 2",
}


def timed(command: str) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds of the command and its children, and pytest's closing counts."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(_argv(command), cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    counts = re.findall(r"(\d+ (?:passed|failed|skipped|error|errors|deselected))", done.stdout.splitlines()[-1])
    return wall, cpu, ", ".join(counts)


def _argv(command: str) -> list[str]:
    words = command.split(" -m ")
    head = words[0].split()
    marker = [] if len(words) == 1 else ["-m", words[1].strip("'")]
    return [sys.executable, "-m", *head, *marker, "-p", "no:randomly", "-q"]


def table() -> str:
    rows = ["| what | command | tests | wall | CPU |", "|---|---|---|---|---|"]
    for name, command in COMMANDS.items():
        wall, cpu, counts = timed(command)
        print(f"{name}: {wall:.0f} s wall, {cpu:.0f} s CPU ({counts})", file=sys.stderr)
        rows.append(f"| {name} | `{command}` | {counts} | {wall:.0f} s | {cpu:.0f} s |")
    when = datetime.date.today().isoformat()
    return "\n".join(rows) + f"\n\nMeasured on {when}, {os.cpu_count()} cores, by `python {SCRIPT} --write`."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"also write the table into {PAGE.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    text = table()
    print(text)
    if args.write:
        sys.path.insert(0, str(ROOT / "docs"))
        from docgen import markup

        PAGE.write_text(markup.measured(PAGE.read_text(), SCRIPT, text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
