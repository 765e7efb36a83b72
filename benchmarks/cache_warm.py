"""Cold against warm cache: the same suite run twice as whole `pytest` processes, side by side.

Each round runs the suite from an empty project with a fresh cache (cold: every model call made),
then again with that cache (warm: every call answered from sqlite). Reported: wall seconds of each,
median over rounds, and the ratio cold/warm.

    python benchmarks/cache_warm.py [--suite gender] [--model local] [--rounds 2]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite", default="gender")
    parser.add_argument("--model", default="local")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    cold, warm = [], []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            project = Path(tmp)
            (project / "pytest.ini").write_text("[pytest]\n")
            command = [
                sys.executable,
                "-m",
                "pytest",
                f"--fairness-suite={args.suite}",
                f"--fairness-model={args.model}",
                "-p",
                "no:cacheprovider",
                "-q",
            ]
            cold.append(timed(command, project))
            warm.append(timed(command, project))
    ratios = [c / w for c, w in zip(cold, warm, strict=True)]
    print(f"suite {args.suite} on {args.model}, {args.rounds} rounds (whole pytest processes)")
    print(f"cold  {statistics.median(cold):8.2f} s   (runs: {', '.join(f'{c:.2f}' for c in cold)})")
    print(f"warm  {statistics.median(warm):8.2f} s   (runs: {', '.join(f'{w:.2f}' for w in warm)})")
    print(f"cold/warm ratio  {statistics.median(ratios):.1f}x")


if __name__ == "__main__":
    main()
