"""Peak memory of the release-size overall net-harm check on the synthetic doubles, at its size and at a multiple.

    python benchmarks/harm_memory.py [--scales 1 4] [--biases 0 0.3]

Each (bias, scale) runs in a fresh process: the gender suite's ``net_harm`` check at the release profile's size
times the scale, on ``synthetic:harm?bias=B`` as model and judge (the judge screen, generation, both orders of
every pair, the A/A placebo), cache off. At bias 0 every pair is identical (the samples constant); at 0.3 the
answers differ and the samples vary, which the summary's intervals (the bootstrap's resamples) must hold in
flat memory too. The process's peak RSS (``ru_maxrss``) is what it printed. Target (flat memory): at each bias,
the peaks at 1x and 4x within 25% of each other.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = """
import json, resource, sys, time
from pytest_fairness.models.cache import CacheMode
from pytest_fairness.run.session import FairnessSession
from pytest_fairness.config.settings import Settings
from pytest_fairness.config.suite import load

check = next(c for c in load("gender").checks if c.id == "net_harm")
prompts = round(check.sample_size("release") * float(sys.argv[1]))
model = f"synthetic:harm?bias={sys.argv[2]}"
session = FairnessSession(Settings(model=model, profile="release", cache_mode=CacheMode.OFF))
start = time.perf_counter()
result = session.run_params(check.measure, check.params.with_samples(prompts))
print(json.dumps({"prompts": prompts, "calls": result.calls.calls, "seconds": time.perf_counter() - start,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scales", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--biases", type=float, nargs="+", default=[0.0, 0.3])
    args = parser.parse_args()
    for bias in args.biases:
        rows = []
        for scale in args.scales:
            command = [sys.executable, "-c", CHILD, str(scale), f"{bias:g}"]
            row = json.loads(
                subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines()[-1]
            )
            rows.append(row)
            print(
                f"bias {bias:g}, {scale:g}x: {row['prompts']:,} prompts, {row['calls']:,} calls, "
                f"{row['seconds']:.0f} s, peak RSS {row['peak_mb']:,.0f} MB",
                flush=True,
            )
        if len(rows) > 1:
            ratio = rows[-1]["peak_mb"] / rows[0]["peak_mb"]
            print(
                f"bias {bias:g}: peak RSS at {args.scales[-1]:g}x / at {args.scales[0]:g}x: {ratio:.2f} "
                "(target: within 25%)"
            )


if __name__ == "__main__":
    main()
