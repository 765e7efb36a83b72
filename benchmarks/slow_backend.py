"""A slow but working backend: a run with every default against the same run at ``?concurrency=1``.

    python benchmarks/slow_backend.py [--scale 20] [--rounds 3] [-k "decision_bias and (career or science)"]

A synchronous chatbot (``tests/python_apps/adapter.py``: a plain function that builds an ``openai.OpenAI``
client per call) behind the tests' fake server answering one request at a time, as llama.cpp's server does,
one reply in ten taking 1.5 deadlines. Times are the defaults' divided by ``--scale``: the 60 s default
deadline, a 5 s reply and a 90 s slow one. Each run is a whole ``pytest`` process on the gender suite's
checks selected by ``-k``, cache off; the two alternate per round, so drift on a shared machine hits both
alike. Target: the default run takes at most 1.5x the one-at-a-time run (median over rounds), every check
ends with an outcome and the server answered every request it got (none still open at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fake_openai import FakeOpenAI, is_probe

TESTS = Path(__file__).resolve().parent.parent / "tests"


def run(folder: Path, server: FakeOpenAI, spec: str, checks: str) -> tuple[float, dict[str, Any]]:
    """(seconds, the JSON report) of one pytest process against ``server``."""
    report = folder / "report.json"
    env = {**os.environ, "ADAPTER_URL": server.base_url}
    args = [sys.executable, "-m", "pytest", "--fairness-suite=gender", "-k", checks, f"--fairness-model={spec}"]
    args += ["--fairness-cache-mode=off", f"--fairness-report={report}", "-p", "no:randomly", "-q"]
    start = time.perf_counter()
    subprocess.run(args, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start, json.loads(report.read_text())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-k", dest="checks", default="decision_bias and (career or science)")
    args = parser.parse_args()
    deadline, reply, slow = 60 / args.scale, 5 / args.scale, 90 / args.scale
    app = f"python:adapter:reply?timeout={deadline:g}"
    specs = {"every default": app, "?concurrency=1": f"{app}&concurrency=1"}
    times: dict[str, list[float]] = {name: [] for name in specs}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copy(TESTS / "python_apps" / "adapter.py", folder / "adapter.py")
        (folder / "pytest.ini").write_text("[pytest]\n")
        for _ in range(args.rounds):
            for name, spec in specs.items():
                with FakeOpenAI(serial=True, latency=reply, slow_every=10, slow_seconds=slow) as server:
                    took, report = run(folder, server, spec, args.checks)
                    left = server.open
                    received = sum(not is_probe(r) for r in server.requests)
                checks = report["checks"]
                outcomes = sorted(str(c["outcome"]) for c in checks)
                totals = report["totals"]
                print(
                    f"{name:15} {took:7.1f} s  checks {outcomes}  requests {received} = calls {totals['calls']} "
                    f"+ late {totals['late']}; still open at the server {left}"
                )
                times[name].append(took)
    ratio = statistics.median(times["every default"]) / statistics.median(times["?concurrency=1"])
    print(f"deadline {deadline:g} s, replies {reply:g} s, one in ten {slow:g} s, {args.rounds} rounds")
    print(f"every default / ?concurrency=1 (median wall time): {ratio:.3f} (target <= 1.5)")


if __name__ == "__main__":
    main()
