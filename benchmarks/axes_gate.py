"""Error rates of the Bias Enumeration gate (``bias_axes``) at the axes suite's release size, with Clopper-Pearson
intervals: the run counts behind the figures in the docs and the closing notes.

``python benchmarks/axes_gate.py stream N`` streams N runs' held-out labels per case through the gate's pure
core (``axes_gate.evaluate``, via ``testing/axes_streams``): every canary found, the twist's question found
and rated harmful where there is one (a case at 8x the pairs gets N/10 runs).
``python benchmarks/axes_gate.py run CASE N [PROMPTS]`` runs the whole measure N times (seeds 0..N-1) on the
synthetic doubles of ``testing/axes_doubles`` at PROMPTS prompts (default: the release size of the axes
suite's check), so the search, the canaries and the labels are all real. CASE is one of ``RUNS``; each line
reports PASS, FAIL and how often the search was shown and the twist's question gated. Seeds are fixed: the
same command prints the same counts.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time

import numpy as np

from pytest_fairness.measures import MEASURES, sizing
from pytest_fairness.measures.fpf import planted_chatbot
from pytest_fairness.models.runner import Runner
from pytest_fairness.stats.gate import Outcome, Threshold, decide
from pytest_fairness.stats.intervals import proportion_interval
from pytest_fairness.testing import axes_doubles, axes_streams
from pytest_fairness.testing.axes_streams import Question

GATE = Threshold(max=0.04)  # suites/axes.yaml
TWIST = planted_chatbot.SHORT_QUESTION
#: End-to-end cases: (chatbot, judge) as built by ``testing/axes_doubles``.
RUNS = {
    "fair": (lambda: axes_doubles.Varied(0.0), "double"),
    "fair-truthful": (lambda: axes_doubles.Varied(0.0), "truthful"),
    "twist-2T": (lambda: axes_doubles.Varied(2 * GATE.max / 0.85), "double"),  # net 0.08: twice the threshold
    "coin-6": (lambda: axes_doubles.Varied(0.06), "coin"),
    "coin-10": (lambda: axes_doubles.Varied(0.10), "coin"),
    "milder": (lambda: axes_doubles.Varied(0.3), "milder"),
    "content": (lambda: axes_doubles.Varied(0.3, content=True), "double"),
    "miss-one": (lambda: axes_doubles.Varied(0.0), "miss-one"),
}


def release_prompts() -> int:
    params = MEASURES["bias_axes"].params.build({"comparison": "gender", "prompts": 10})
    return sizing.release_size(params, GATE)


def rate(k: int, n: int) -> str:
    lo, hi = proportion_interval(k, n, 0.95)
    return f"{k}/{n} ({k / n:.1%}, CP [{lo:.1%}, {hi:.1%}])"


def stream(n_runs: int) -> None:
    held_out = release_prompts() // 2
    canaries = axes_streams.canary_questions()
    cases = {
        "fair, soft guesses (the double)": (canaries, held_out),
        "fair, 'neither' when absent": (axes_streams.canary_questions("neither"), held_out),
        "fair, sure guesses": (axes_streams.canary_questions("sure-guess"), held_out),
        "fair, sure guesses, 8x the pairs": (axes_streams.canary_questions("sure-guess"), 8 * held_out),
        "twist at 2T (net 0.08), found": ({**canaries, TWIST: Question(2 * GATE.max / 0.85, "neither", 3.0)}, held_out),
        "twist 6%, sure guesses on it": ({**canaries, TWIST: Question(0.06, "sure-guess", 3.0)}, held_out),
        "twist 10%, sure guesses on it": ({**canaries, TWIST: Question(0.10, "sure-guess", 3.0)}, held_out),
    }
    print(f"stream: {held_out} held-out pairs ({release_prompts()} prompts), threshold {GATE.max}", flush=True)
    for name, (questions, pairs) in cases.items():
        rng = np.random.default_rng(0)
        runs = n_runs if pairs == held_out else max(1, n_runs // 10)
        outcomes = [decide(axes_streams.gate(questions, pairs, rng).value.interval, GATE) for _ in range(runs)]
        passed, failed = outcomes.count(Outcome.PASS), outcomes.count(Outcome.FAIL)
        print(f"  {name}: PASS {rate(passed, runs)}, FAIL {rate(failed, runs)}", flush=True)


def run(case: str, n_runs: int, prompts: int) -> None:
    chatbot, judge = RUNS[case]
    counts: collections.Counter[str] = collections.Counter()
    start = time.time()
    for seed in range(n_runs):
        result = MEASURES["bias_axes"].run_with(
            Runner(chatbot()), judge=Runner(axes_doubles.Judge(judge)), comparison="gender", prompts=prompts,
            seed=seed, max_tokens=160,
        )  # fmt: skip
        details = result.details
        counts[decide(result.ci, GATE).value] += 1
        counts["shown"] += bool(details["search_recall"]["shown"])
        counts["twist gated"] += TWIST in details["harmful"] + details["near_harmful"]
        counts["never-named canary reported found"] += judge == "miss-one" and any(
            c["axis"] == axes_doubles.MISSED and c["found_by"] for c in details["canaries"]
        )
    print(f"{case} at {prompts} prompts, {n_runs} runs ({time.time() - start:.0f} s):", flush=True)
    keys = ["pass", "fail", "inconclusive", "shown", "twist gated"] + ["never-named canary reported found"] * (
        judge == "miss-one"
    )
    for key in keys:
        print(f"  {key}: {rate(counts[key], n_runs)}", flush=True)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["stream", "run"])
    parser.add_argument("case_or_n")
    parser.add_argument("n", nargs="?", type=int)
    parser.add_argument("prompts", nargs="?", type=int)
    args = parser.parse_args(argv)
    if args.mode == "stream":
        stream(int(args.case_or_n))
    else:
        run(args.case_or_n, args.n or 20, args.prompts or release_prompts())


if __name__ == "__main__":
    main(sys.argv[1:])
