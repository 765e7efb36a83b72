"""Adaptive concurrency against a fixed cap, side by side, under a server's rate limit and ``pytest -n 4``.

The tests' fake OpenAI-compatible server (tests/fake_openai.py, on loopback in this process) answers
each chat completion after a fixed latency, at most ``--rate`` requests per second (sliding one-second
window); over that it answers 429 at once with a Retry-After saying when a slot frees, and every answer
carries ``x-ratelimit-*-requests`` headers. The same four-check suite runs as a whole ``pytest -n 4``
process with a fresh cache, once with the provider's adaptive limit shared by the workers (the default)
and once with today's fixed cap per process (``?adaptive=0``), alternating over rounds; each run gets
its own server so the counts are its own.

    python benchmarks/rate_limits.py [--rate 40] [--latency 0.1] [--samples 100] [--rounds 2] [--no-headers]

With ``--no-headers`` the server says nothing but Retry-After on its 429s, so the adaptive side has only
its AIMD limit to go by.

Reported per mode (median over rounds): checks errored (a request gave up after its retries), calls
answered out of those the suite needs, requests the server saw, the share of them answered 429, the
seconds from the first request of a check to the last (the part the rate limit governs), and wall time
(which adds pytest's and four workers' start-up).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fake_openai import FakeOpenAI, is_probe, measure_requests

STEREOTYPES = ("career", "science", "power", "sexuality")
MODES = {"fixed": "&adaptive=0", "adaptive": ""}


def suite(samples: int) -> str:
    checks = "".join(
        f"  - measure: implicit_bias\n    stereotype: {s}\n    samples: {samples}\n    threshold: {{max: 0.5}}\n"
        for s in STEREOTYPES
    )
    return f"suite: limited\nchecks:\n{checks}"


def run_once(mode: str, args: argparse.Namespace) -> dict[str, float]:
    """One ``pytest -n 4`` run of the suite against its own rate-limited server, in a fresh project."""
    fake = FakeOpenAI(latency=args.latency, rate=args.rate, rate_headers=not args.no_headers)
    with tempfile.TemporaryDirectory() as tmp, fake as server:
        project = Path(tmp)
        (project / "limited.yaml").write_text(suite(args.samples))
        (project / "pytest.ini").write_text("[pytest]\n")
        spec = f"openai:fake@{server.base_url}?concurrency={args.cap}{MODES[mode]}"
        command = [sys.executable, "-m", "pytest", "--fairness-suite=limited.yaml", f"--fairness-model={spec}"]
        command += ["--fairness-report=out.json", "-n", "4", "-p", "no:randomly", "-p", "no:cacheprovider", "-q"]
        start = time.perf_counter()
        subprocess.run(command, cwd=project, capture_output=True, text=True, env=os.environ.copy(), check=False)
        wall = time.perf_counter() - start
        report = json.loads((project / "out.json").read_text())
        sent = len(measure_requests(server))
        arrived = [t for t, r in zip(server.arrived, server.requests, strict=True) if not is_probe(r)]
        return {
            "errored": report["run"]["errored"],
            "calls": report["totals"]["calls"],
            "sent": sent,
            "429": server.over_rate,
            "share": server.over_rate / max(sent, 1),
            "span": max(arrived) - min(arrived),
            "wall": wall,
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=40.0, help="requests per second the server answers")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per answered request")
    parser.add_argument("--samples", type=int, default=100, help="requests per check (four checks)")
    parser.add_argument("--cap", type=int, default=16, help="the provider's ?concurrency=")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-headers", action="store_true", help="the server sends no x-ratelimit-* headers")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for r in range(args.rounds):
        for mode in MODES if r % 2 == 0 else reversed(MODES):  # alternate, so drift hits both alike
            runs[mode].append(run_once(mode, args))
            print(f"round {r + 1} {mode}: {runs[mode][-1]}", file=sys.stderr)
    needed = len(STEREOTYPES) * args.samples
    print(
        f"pytest -n 4, four checks x {args.samples} requests; server: {args.rate:g} requests/s, "
        f"{args.latency * 1000:.0f} ms each{', no x-ratelimit headers' if args.no_headers else ''}; "
        f"?concurrency={args.cap}; median of {args.rounds} rounds"
    )
    header = ("mode", "checks errored", "calls answered", "sent", "429s", "429 share", "first-last request s", "wall s")
    print("  ".join(f"{h:>9}" for h in header))
    for mode, found in runs.items():
        med = {k: statistics.median(run[k] for run in found) for k in found[0]}
        answered = f"{med['calls']:g}/{needed}"
        row = (mode, f"{med['errored']:g}", answered, f"{med['sent']:g}", f"{med['429']:g}", f"{med['share']:.1%}")
        print("  ".join(f"{cell:>9}" for cell in (*row, f"{med['span']:.1f}", f"{med['wall']:.1f}")))


if __name__ == "__main__":
    main()
