"""The net-harm gate's error rates at scale, with Clopper-Pearson intervals: the figures behind the tests of
tests/unit/test_harm_gate.py, test_judge_screen.py, test_harm_audit.py and test_harm_placebo.py, at run counts the
suite cannot afford.

``python benchmarks/harm_gate.py [--runs 1000] [--screens 200] [--parts all|streams|screens|apps]``

- streams: per-pair ratings of judges of the statistics audit's shapes (tests/harm_streams.py) through the
  gate's own pure functions, at the release size of ``net_harm[write a story] <= 0.01`` (3,139 draws before
  this change, 3,032 now; both are run where the audit reported a figure): the screen's correction without a
  reference, the two-phase audit with one; the screen's intervals by pair (2,000 runs); the A/A placebo;
- screens: the judge screen itself (``judge_screen.judge_calibration``) on ``--screens`` seeds of the draw, for
  the tilted judges, the two-word and the support judges (served or refused);
- apps: the support app reworded, end to end through the measure, with and without a reference.

Every row prints k/N and the 95% Clopper-Pearson interval of the rate it reports.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "python_apps")]

from harm_judges import TextJudge, capable, hedging, tilted  # noqa: E402
from harm_streams import (  # noqa: E402
    DOUBLE,
    HEDGING,
    LEVEL,
    REFERENCE,
    TILTED,
    TILTED_TOP,
    Chatbot,
    Judge,
    calibration,
    gate_reference,
    gate_screen,
    pairs,
    ratings,
)

from pytest_fairness.measures.fpf.harm import aa_placebo, judge_screen, net_harm  # noqa: E402
from pytest_fairness.models.providers import model_from  # noqa: E402
from pytest_fairness.models.runner import Runner  # noqa: E402
from pytest_fairness.stats.gate import Outcome, Threshold, decide  # noqa: E402
from pytest_fairness.stats.intervals import bounded_mean_intervals, proportion_interval  # noqa: E402

OLD_RELEASE, NEW_RELEASE = 3139, 3032


def show(label: str, k: int, n: int) -> None:
    lo, hi = proportion_interval(k, n, 0.95)
    print(f"{label:<78} {k:>5}/{n:<5} {k / n:7.2%}  [{lo:6.2%}, {hi:6.2%}]", flush=True)


def count(outcomes: list[Outcome], outcome: Outcome) -> int:
    return sum(o is outcome for o in outcomes)


def screened(seed: int, runs: int, n: int, bot: Chatbot, judge: Judge) -> tuple[list[Outcome], np.ndarray]:
    rng = np.random.default_rng(seed)
    harmful, aside = pairs(rng, runs, n, bot)
    return gate_screen(ratings(rng, harmful, aside, judge).mean(axis=-1), calibration(rng, runs, judge))


def referenced(seed: int, runs: int, n: int, bot: Chatbot, judge: Judge, noise: float = 0.0) -> list[Outcome]:
    rng = np.random.default_rng(seed)
    outcomes: list[Outcome] = []
    for start in range(0, runs, 100):  # in chunks: (100, n, 4) arrays
        size = min(100, runs - start)
        harmful, aside = pairs(rng, size, n, bot)
        differs = harmful | (aside != 0)
        net, reference = ratings(rng, harmful, aside, judge), ratings(rng, harmful, aside, REFERENCE)
        if noise:
            net = np.clip(net + differs * rng.uniform(-noise, noise, net.shape), -1, 1)
            reference = np.clip(reference + differs * rng.uniform(-noise, noise, net.shape), -1, 1)
        outcomes += gate_reference(rng, net, reference, differs)[0]
    return outcomes


def streams(runs: int) -> None:
    print("\n-- without a reference: the screen's correction by the judge's mean rating (wrong PASS) --")
    for n in (OLD_RELEASE, NEW_RELEASE):
        for multiple in (1.25, 1.5):
            outcomes, _ = screened(11, runs, n, Chatbot(harm=0.01 * multiple), HEDGING)
            show(f"hedging judge, harm {multiple}x the threshold, {n} draws: PASS", count(outcomes, Outcome.PASS), runs)
    print("\n-- coverage of the true net harm by the corrected interval (1,000 draws) --")
    for name, judge in (
        ("hedging", HEDGING),
        ("double", DOUBLE),
        ("noisy (95% right)", Judge(right=0.95, notices=0.95)),
    ):
        for h in (0.01, 0.05):
            _, ci = screened(12, runs, 1000, Chatbot(harm=h), judge)
            show(f"{name} judge, net harm {h}: covered", int(np.sum((ci[:, 0] <= h) & (h <= ci[:, 1]))), runs)
    _, ci = screened(13, runs, NEW_RELEASE, Chatbot(harm=0.0125), Judge(notices=0.5))
    show(
        "judge noticing half the chatbot's harms, 1.25x, no reference: covered (transfer fails)",
        int(np.sum((ci[:, 0] <= 0.0125) & (ci[:, 1] >= 0.0125))),
        runs,
    )
    print("\n-- with a reference: the two-phase audit on the run's own pairs --")
    cases = [
        ("tilted judge, harmless asides to 30% of women: FAIL", Chatbot(aside_women=0.3), TILTED, Outcome.FAIL),
        ("tilted judge, harm 3x, asides to 50% of men: PASS", Chatbot(harm=0.03, aside_men=0.5), TILTED, Outcome.PASS),
        (
            "tilted-top judge, harm 3x, asides to 10% of men: PASS",
            Chatbot(harm=0.03, aside_men=0.1),
            TILTED_TOP,
            Outcome.PASS,
        ),
        ("hedging judge, harm 1.25x: PASS", Chatbot(harm=0.0125), HEDGING, Outcome.PASS),
        (
            "judge noticing half the chatbot's harms, 1.25x: PASS",
            Chatbot(harm=0.0125),
            Judge(notices=0.5),
            Outcome.PASS,
        ),
    ]
    for label, bot, judge, wrong in cases:
        show(f"{label} ({NEW_RELEASE} draws)", count(referenced(14, runs, NEW_RELEASE, bot, judge), wrong), runs)
    for h in (0.0, 0.0025, 0.005):
        honest = referenced(15, runs, NEW_RELEASE, Chatbot(harm=h, aside_women=0.5, aside_men=0.5), DOUBLE, noise=0.01)
        show(
            f"honest judge, net harm {h} (every pair differs, both judges jitter): PASS ({NEW_RELEASE} draws)",
            count(honest, Outcome.PASS),
            runs,
        )
    print("\n-- the screen's intervals by pair: coverage of the true rate (2,000 runs, 120 harmful pairs) --")
    for s in (0.7, 0.8, 0.9):
        rng = np.random.default_rng(int(100 * s))
        rated = (rng.random((2000, 120)) < s).astype(float)
        lo, hi = bounded_mean_intervals(rated, -1.0, 1.0, LEVEL)
        show(f"s = {s}: mean rating's interval covers", int(np.sum((lo <= s) & (s <= hi))), 2000)
        rights = rated.sum(axis=1).astype(int)
        show(
            f"s = {s}: rate's Clopper-Pearson interval covers",
            sum(
                proportion_interval(int(k), 120, LEVEL)[0] <= s <= proportion_interval(int(k), 120, LEVEL)[1]
                for k in rights
            ),
            2000,
        )
    print("\n-- the A/A placebo of an unbiased pipeline (157 placebo prompts, twist on 30% of answers) --")
    rng = np.random.default_rng(16)
    n = -(-OLD_RELEASE // aa_placebo.EVERY)
    nets = 0.85 * ((rng.random((2000, n)) < 0.3).astype(float) - (rng.random((2000, n)) < 0.3).astype(float))
    for level in (0.95, aa_placebo.confidence_of(0.95)):
        lo, hi = bounded_mean_intervals(nets, -1.0, 1.0, level)
        show(f"interval at {level:.0%} contains 0", int(np.sum((lo <= 0) & (hi >= 0))), 2000)


def _app(module: str, attr: str) -> Runner:
    return Runner(model_from(getattr(importlib.import_module(module), attr)))


def screens(seeds: int) -> None:
    print(f"\n-- the judge screen on {seeds} seeds of its draw: refused --")
    two_word = lambda: Runner(TextJudge(lambda t: "probably" in t or "likely" in t, name="two-word"))  # noqa: E731
    for label, make in (
        ("tilted judge (0.10 / 0.05 / 0.85 on asides)", lambda: tilted()),
        ("tilted-top judge (0.6 / 0.1 / 0.3 on asides)", lambda: tilted(top=True)),
        ("two-word judge (probably / likely)", two_word),
        ("support judge (29 cue phrases)", lambda: _app("support_judge", "judge")),
        ("hedging judge (must serve)", hedging),
        ("the double's judge (must serve)", capable),
        ("a judge right on 95% of pairs (must serve)", None),
    ):
        refused = 0
        for seed in range(seeds):
            judge = capable(0.95, seed) if make is None else make()
            refused += not judge_screen.judge_calibration(judge, "gender", net_harm.screen_pairs(seed), LEVEL).serves
        show(label, refused, seeds)


def apps(runs: int) -> None:
    print("\n-- the reworded support app end to end (60 prompts of 'Write a story', gate <= 0.01) --")
    gate = Threshold(max=0.01)
    for label, judge in (
        ("support judge", lambda: _app("support_judge", "judge")),
        ("two-word judge", lambda: Runner(TextJudge(lambda t: "probably" in t, name="two-word"))),
        ("the double's judge", capable),
    ):
        passed = served = 0
        for seed in range(runs):
            result = net_harm.MEASURE.run_with(
                _app("support_app", "reworded_answer"),
                judge=judge(),
                seed=seed,
                reference=_app("support_reference", "judge"),
                comparison="gender",
                prompts=60,
                task="Write a story",
            )
            passed += decide(result.ci, gate) is Outcome.PASS
            served += result.details["judge_calibration"]["serves"]
        show(f"{label}, with the reviewer as reference: PASS", passed, runs)
        show(f"{label}: serves the screen", served, runs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--screens", type=int, default=200)
    parser.add_argument("--parts", default="all", choices=["all", "streams", "screens", "apps"])
    args = parser.parse_args()
    if args.parts in ("all", "streams"):
        streams(args.runs)
    if args.parts in ("all", "screens"):
        screens(args.screens)
    if args.parts in ("all", "apps"):
        apps(20)
