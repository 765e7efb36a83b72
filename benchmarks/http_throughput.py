"""Harness throughput against the raw openai client, side by side, on the same loopback server.

The server (benchmarks/serve_fake.py, its own process) answers every chat completion after a fixed
latency. For each concurrency the raw ``AsyncOpenAI`` client (a semaphore and gather) and the
harness (the runner with its sqlite cache in rw mode, cold, so every call is made and stored) send
the same number of distinct requests, alternating A/B over several rounds; we report calls/s of
each and the median ratio harness/raw.

    python benchmarks/http_throughput.py [--latency 0.02] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from openai import AsyncOpenAI

from pytest_fairness.models.cache import ResponseCache
from pytest_fairness.models.interface import ChatRequest, Message
from pytest_fairness.models.openai import OpenAIModel
from pytest_fairness.models.runner import Runner

CALLS = {1: 100, 16: 800, 64: 2000}


async def raw_client(base_url: str, concurrency: int, n: int, tag: str) -> float:
    client = AsyncOpenAI(api_key="x", base_url=base_url, max_retries=0)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with semaphore:
            await client.chat.completions.create(
                model="fake", messages=[{"role": "user", "content": f"{tag} {i}"}], temperature=1.0, seed=1
            )

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    elapsed = time.perf_counter() - start
    await client.close()
    return n / elapsed


def harness(base_url: str, concurrency: int, n: int, tag: str, cache_dir: Path) -> float:
    model = OpenAIModel("fake", base_url, api_key="x", max_concurrency=concurrency)
    runner = Runner(model, ResponseCache(cache_dir / f"{tag}.sqlite"), max_concurrency=concurrency)
    requests = [ChatRequest((Message("user", f"{tag} {i}"),), temperature=1.0, seed=1) for i in range(n)]
    start = time.perf_counter()
    runner.run(requests)
    elapsed = time.perf_counter() - start
    assert runner.stats.calls == n
    runner.close()
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="calls per concurrency as a share of the table's")
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("serve_fake.py")), str(args.latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    base_url = server.stdout.readline().strip()  # type: ignore[union-attr]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            print(f"server latency {args.latency * 1000:.0f} ms, {args.rounds} alternating rounds")
            print(f"{'concurrency':>11}  {'calls':>5}  {'raw calls/s':>11}  {'harness calls/s':>15}  {'ratio':>6}")
            for concurrency, full in CALLS.items():
                n = max(concurrency, round(args.scale * full))
                raw, ours, ratios = [], [], []
                for r in range(args.rounds):
                    raw.append(asyncio.run(raw_client(base_url, concurrency, n, f"raw{concurrency}-{r}")))
                    ours.append(harness(base_url, concurrency, n, f"h{concurrency}-{r}", Path(tmp)))
                    ratios.append(ours[-1] / raw[-1])
                print(
                    f"{concurrency:>11}  {n:>5}  {statistics.median(raw):>11.1f}  {statistics.median(ours):>15.1f}"
                    f"  {statistics.median(ratios):>6.3f}"
                )
    finally:
        server.kill()


if __name__ == "__main__":
    main()
