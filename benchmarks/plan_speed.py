"""The release plan of the gender suite (``--fairness-plan``), this checkout against another one, side by side.

``python benchmarks/plan_speed.py OTHER [--rounds 3]`` prices the gender suite at the release profile for a
priced model and judge (as docs/release-runs.md does; no model is called) from an empty project, alternating
this checkout's package and OTHER's (a checkout or an exported tree of another commit) per round, each put
first on ``PYTHONPATH``. It prints each median, this/other, and whether the two printed the same plan.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMAND = [
    "--fairness-suite=gender",
    "--fairness-profile=release",
    "--fairness-model=openai:gpt-4o-mini",
    "--fairness-judge=openai:gpt-4o",
    "--fairness-plan",
    "-p",
    "no:randomly",
    "-p",
    "no:cacheprovider",
]
#: The plan is the output between its header and pytest's closing line (which holds the time).
PLAN = re.compile(r"^=+ fairness plan.*?(?=^=+ (?:no tests ran|\d+ deselected))", re.M | re.S)


def timed(cwd: Path, env: dict[str, str], select: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    command = [sys.executable, "-m", "pytest", *COMMAND, *select]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    plan = PLAN.search(done.stdout)
    if plan is None:
        raise SystemExit(f"no plan in the output (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return seconds, plan.group(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="the other checkout (its pytest_fairness/ is imported instead)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-k", dest="select", help="plan only the checks this pytest -k expression selects")
    args = parser.parse_args()
    select = ["-k", args.select] if args.select else []
    roots = {"this": Path(__file__).resolve().parent.parent, "other": args.other.resolve()}
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OPENAI_", "FAIRNESS_"))}
    envs = {name: {**base, "PYTHONPATH": str(root), "COLUMNS": "200"} for name, root in roots.items()}
    seconds: dict[str, list[float]] = {name: [] for name in envs}
    plans: dict[str, set[str]] = {name: set() for name in envs}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        for round_ in range(args.rounds):
            order = list(envs) if round_ % 2 == 0 else list(reversed(envs))
            for name in order:
                took, plan = timed(root, envs[name], select)
                seconds[name].append(took)
                plans[name].add(plan)
                print(f"round {round_ + 1}, {name}: {took:.1f} s", flush=True)
    this, other = (statistics.median(seconds[name]) for name in ("this", "other"))
    same = len(plans["this"] | plans["other"]) == 1
    print(
        f"release plan of the gender suite: this {this:.1f} s, other {other:.1f} s (medians of {args.rounds}), "
        f"this/other {this / other:.3f}; the same plan printed: {'yes' if same else 'NO'}"
    )
    if not same:  # e.g. a reworded note: show what differs
        a, b = (sorted(plans[name])[0].splitlines() for name in ("other", "this"))
        print("\n".join(difflib.unified_diff(a, b, "other", "this", n=0, lineterm="")))


if __name__ == "__main__":
    main()
