"""The plugin's own cost per pytest run, this checkout against another one, side by side.

``python benchmarks/plugin_overhead.py OTHER [--rounds 8]`` runs, alternating A/B per round from an empty
project, (1) collecting the gender suite and (2) running its implicit-bias checks on the synthetic double
(cache off), once with this checkout's package and once with OTHER's (a checkout or an exported tree of
another commit), each put first on ``PYTHONPATH``, and prints each median and this/other. A restructure
of the plugin should keep both ratios near 1.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "collect the gender suite": ["--collect-only", "-q"],
    "run its 4 implicit-bias checks": ["-k", "implicit", "--fairness-cache-mode=off", "-q"],
}
COMMON = ["--fairness-suite=gender", "--fairness-model=synthetic:iat?bias=0.3", "-p", "no:randomly"]


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", *COMMON, *args], cwd=cwd, env=env, capture_output=True, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="the other checkout (its pytest_fairness/ is imported instead)")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    this_root = Path(__file__).resolve().parent.parent
    roots = {"this": this_root, "other": args.other.resolve()}
    envs = {name: {**os.environ, "PYTHONPATH": str(root)} for name, root in roots.items()}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        for label, command in COMMANDS.items():
            seconds: dict[str, list[float]] = {name: [] for name in envs}
            for _ in range(args.rounds):
                for name, env in envs.items():
                    seconds[name].append(timed(command, root, env))
            this, other = (statistics.median(seconds[name]) for name in ("this", "other"))
            medians = f"this {this:.2f} s, other {other:.2f} s (medians of {args.rounds})"
            print(f"{label}: {medians}, this/other {this / other:.3f}", flush=True)


if __name__ == "__main__":
    main()
