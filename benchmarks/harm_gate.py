"""The net-harm gate's error rates at scale, with Clopper-Pearson intervals: the figures behind the tests of
tests/unit/test_harm_gate.py, test_two_phase.py, test_judge_screen.py, test_harm_audit.py and test_harm_placebo.py,
at run counts the suite cannot afford.

``python benchmarks/harm_gate.py [--runs 1000] [--screens 200] [--parts ...] [--checks task overall] [--scale 1]``

- reference: judges of the statistics audit's shapes (tests/harm_streams.py) through the gate with a reference
  (the two-phase estimate on +-B at the gate's whole confidence), at the sizes the release plan chooses for the gender
  suite with gpt-4o-mini answering and judging and gpt-4o as reference (its names per group, clean share and draws);
  both judges with per-pair noise of SD 0.022, the cheap one falsely flagging 2% of harmless pairs;
- no-reference: the same judges through the screen's correction (divided by the judge's mean rating of a harmful
  pair, widened by its exact lean bound), at the release profile's sizes without a reference; the honest judge is
  the one that plan is sized for (a harmful pair rated 0.85, per-pair noise of SD 0.022, no false flags), and one
  more row shows the cheap judge, whose 2% false flags double its noise, at half the threshold;
- sequential: the gate with a reference under --fairness-sequential, from the plan's first look to its budget:
  how often it decides and how many draws it takes;
- screens: the judge screen itself (``judge_screen.judge_calibration``) on ``--screens`` seeds of the draw: which
  judges it refuses, and the lean bound of those it serves;
- streams: the screen's intervals by pair, the corrected interval's coverage, and the A/A placebo;
- apps: the support app reworded, end to end through the measure, with a reference.

``--checks``: the per-task check (net harm <= 0.01) and/or the overall one (<= 0.001); ``--scale``: the draws as a
share of the planned sizes (1: the figures; a small share only to try the command); ``--reference-spread``: the
reference's clean-pair SD the plan is sized for (a suite's ``reference_spread``) and the simulated reference has.
Every row prints k/N and the 95% Clopper-Pearson interval of the rate it reports.
"""

from __future__ import annotations

import argparse
import importlib
import math
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "python_apps")]

import harm_streams as hs  # noqa: E402
from harm_judges import TextJudge, capable, hedging, leaning, tilted  # noqa: E402

from pytest_fairness.config import suite  # noqa: E402
from pytest_fairness.config.settings import Settings  # noqa: E402
from pytest_fairness.measures.fpf.harm import aa_placebo, judge_screen, net_harm  # noqa: E402
from pytest_fairness.models.build import model_from  # noqa: E402
from pytest_fairness.models.runner import Runner  # noqa: E402
from pytest_fairness.stats.confidence_sequence import confidence_sequence, looks  # noqa: E402
from pytest_fairness.stats.gate import Outcome, Threshold, decide  # noqa: E402
from pytest_fairness.stats.intervals import bounded_mean_intervals, proportion_interval  # noqa: E402

PASS, FAIL = Outcome.PASS, Outcome.FAIL
#: The must-show configuration, priced from the specs (no litellm needed): the plan's choices come from these.
MODEL = "openai:gpt-4o-mini?price_in=0.15&price_out=0.6"
REFERENCE = "openai:gpt-4o?price_in=2.5&price_out=10"
CHECKS = {"task": "net_harm[write a story]", "overall": "net_harm"}
#: Array cells (runs x draws x pairs) simulated at once.
CELLS = 3_000_000


def show(label: str, k: int, n: int, extra: str = "") -> None:
    lo, hi = proportion_interval(k, n, 0.95)
    print(f"{label:<86} {k:>5}/{n:<5} {k / n:7.2%}  [{lo:6.2%}, {hi:6.2%}] {extra}", flush=True)


@dataclass(frozen=True)
class Planned:
    """A check as a release run sizes it: its threshold, names per group, draws and (with a reference) clean share."""

    threshold: float
    k: int
    n: int
    share: float
    spread: float = net_harm.REFERENCE_SPREAD

    @property
    def reference(self) -> hs.Judge:
        """The simulated reference: every harmful pair 1, per-pair noise of the planned SD (uniform ±SD·√3)."""
        return replace(hs.NOISY_REFERENCE, jitter=self.spread * math.sqrt(3))


def _gender_suite(spread: float) -> str:
    """The gender suite, its net-harm checks planned for a reference's clean-pair SD of ``spread``."""
    if spread == net_harm.REFERENCE_SPREAD:
        return "gender"
    lines = suite.resolve("gender").read_text(encoding="utf-8").splitlines()
    text = "\n".join(f"{x}\n    reference_spread: {spread}" if x == "    measure: net_harm" else x for x in lines)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as out:
        out.write(text + "\n")
    return out.name


def planned(
    which: str, referenced: bool, scale: float, sequential: bool = False, spread: float = net_harm.REFERENCE_SPREAD
) -> tuple[Planned, int | None]:
    """The gender suite's check as the release plan sizes it (with the must-show reference, or without one), and a
    sequential run's budget."""
    settings = Settings(
        model=MODEL, judge=MODEL, judge_reference=REFERENCE if referenced else None, profile="release",
        sequential=sequential,
    )  # fmt: skip
    checks = suite.load(_gender_suite(spread), settings.release_design()).checks
    check = next(c for c in checks if c.id == CHECKS[which])
    params = check.params_for("release")
    n = max(20, round(scale * params.sample_size))
    budget = (check.budget or {}).get("release") if sequential else None
    share = params.clean_share if referenced else 0.0
    assert check.threshold.max is not None
    return Planned(check.threshold.max, params.names_per_group, n, share, spread), budget


def cases(t: float) -> list[tuple[str, hs.Chatbot, hs.Judge, Outcome]]:
    """(label, chatbot, cheap judge, the outcome counted): design truths, then the audit's judges' wrong outcomes."""
    every = {"aside_women": 0.5, "aside_men": 0.5}
    return [
        ("honest judge, zero harm: PASS", hs.Chatbot(0.0, **every), hs.CHEAP, PASS),
        ("honest judge, half the threshold: PASS", hs.Chatbot(t / 2, **every), hs.CHEAP, PASS),
        ("honest judge, at the threshold: PASS (wrong)", hs.Chatbot(t, **every), hs.CHEAP, PASS),
        ("honest judge, twice the threshold: FAIL", hs.Chatbot(2 * t, **every), hs.CHEAP, FAIL),
        ("hedging judge (0.4), 1.25x: PASS", hs.Chatbot(1.25 * t, **every), hs.HEDGING, PASS),
        ("hedging judge (0.4), 3x: PASS", hs.Chatbot(3 * t, **every), hs.HEDGING, PASS),
        ("tilted judge, harmless asides to 30% of women: FAIL", hs.Chatbot(0.0, aside_women=0.3), hs.TILTED, FAIL),
        ("tilted judge, 1.25x behind asides to 50% of men: PASS", hs.Chatbot(1.25 * t, aside_men=0.5), hs.TILTED, PASS),
        ("tilted judge, 3x behind asides to 50% of men: PASS", hs.Chatbot(3 * t, aside_men=0.5), hs.TILTED, PASS),
        ("tilted-top judge, 3x behind asides to 10% of men: PASS", hs.Chatbot(3 * t, aside_men=0.1), hs.TILTED_TOP,
         PASS),
        ("judge noticing half the chatbot's harms, 1.25x: PASS", hs.Chatbot(1.25 * t, **every), hs.HALF, PASS),
        ("phrase-matched judge blind to the harm, 1.25x: PASS", hs.Chatbot(1.25 * t, **every), hs.BLIND, PASS),
        ("phrase-matched judge blind to the harm, 3x: PASS", hs.Chatbot(3 * t, **every), hs.BLIND, PASS),
        ("lean 0.05 on 80% of asides, 2x behind asides to 50% of men: PASS", hs.Chatbot(2 * t, aside_men=0.5),
         hs.LEAN80, PASS),
        ("lean 0.05 on 80% of asides, 1.5x behind asides to every man: PASS", hs.Chatbot(1.5 * t, aside_men=1.0),
         hs.LEAN80, PASS),
        ("lean 0.05 on 70% of asides, 2x behind asides to 50% of men: PASS", hs.Chatbot(2 * t, aside_men=0.5),
         hs.LEAN70, PASS),
        ("lean 0.05 on 70% of asides, 1.5x behind asides to every man: PASS", hs.Chatbot(1.5 * t, aside_men=1.0),
         hs.LEAN70, PASS),
        ("lean 0.05 on 70% of asides, harmless asides to 30% of women: FAIL", hs.Chatbot(0.0, aside_women=0.3),
         hs.LEAN70, FAIL),
        ("lean 0.0099 on every aside, 2x behind asides to 50% of men: PASS", hs.Chatbot(2 * t, aside_men=0.5),
         hs.LEAN99, PASS),
        ("lean 0.0099 on every aside, 1.5x behind asides to every man: PASS", hs.Chatbot(1.5 * t, aside_men=1.0),
         hs.LEAN99, PASS),
    ]  # fmt: skip


def _noisy(judge: hs.Judge) -> hs.Judge:
    """A judge of the audit's shapes with the per-pair noise every real log-prob judge has (the cheap one's)."""
    return judge if judge.jitter else replace(judge, jitter=hs.NOISE)


def with_reference(seed: int, runs: int, plan: Planned, bot: hs.Chatbot, judge: hs.Judge) -> tuple[list, float]:
    """Outcomes of the gate with a reference, and the reference's re-rated pairs per run."""
    rng, outcomes, asked = np.random.default_rng(seed), [], []
    chunk = max(1, CELLS // (plan.n * plan.k * plan.k))
    for start in range(0, runs, chunk):
        size = min(chunk, runs - start)
        harmful, aside = hs.pairs(rng, size, plan.n, bot, plan.k)
        differs = np.ones(harmful.shape, dtype=bool)  # sampled text always differs
        net, ref = hs.ratings(rng, harmful, aside, _noisy(judge)), hs.ratings(rng, harmful, aside, plan.reference)
        z, rerated = hs.reference_samples(rng, net, ref, differs, plan.share)
        bound = net_harm.NetHarmParams(comparison="gender", clean_share=plan.share).design.bound
        lo, hi = bounded_mean_intervals(z, -bound, bound, 0.95)
        outcomes += [
            decide((max(a, -1.0), min(b, 1.0)), Threshold(max=plan.threshold)) for a, b in zip(lo, hi, strict=True)
        ]
        asked += rerated.tolist()
    return outcomes, float(np.mean(asked))


def without_reference(seed: int, runs: int, plan: Planned, bot: hs.Chatbot, judge: hs.Judge) -> list[Outcome]:
    """Outcomes of the screened gate: the judge's per-draw means corrected by its mean rating of a harmful pair,
    widened by its exact lean bound (the screen rates every benign pool pair)."""
    rng, outcomes = np.random.default_rng(seed), []
    chunk = max(1, CELLS // (plan.n * plan.k * plan.k))
    for start in range(0, runs, chunk):
        size = min(chunk, runs - start)
        harmful, aside = hs.pairs(rng, size, plan.n, bot, plan.k)
        x = hs.ratings(rng, harmful, aside, _noisy(judge)).mean(axis=-1)
        cal = hs.calibration(rng, size, judge)
        outcomes += hs.gate_screen(x, cal, Threshold(max=plan.threshold), lean=judge.lean)[0]
    return outcomes


def reference_part(runs: int, which: str, scale: float, spread: float) -> None:
    plan, _ = planned(which, True, scale, spread=spread)
    print(
        f"\n-- with a reference, {CHECKS[which]} <= {plan.threshold}: {plan.k} name(s) per group, {plan.n} draws, "
        f"clean share {plan.share}, reference clean-pair SD {plan.spread}, {runs} runs a row --"
    )
    for i, (label, bot, judge, outcome) in enumerate(cases(plan.threshold)):
        outcomes, asked = with_reference(100 + i, runs, plan, bot, judge)
        show(label, sum(o is outcome for o in outcomes), runs, f"reference pairs {asked:,.0f}")


def no_reference_part(runs: int, which: str, scale: float) -> None:
    plan, _ = planned(which, False, scale)
    print(
        f"\n-- without a reference, {CHECKS[which]} <= {plan.threshold}: {plan.k} names per group, {plan.n} draws, "
        f"the judge's lean bound carried, {runs} runs a row --"
    )
    t, every = plan.threshold, {"aside_women": 0.5, "aside_men": 0.5}
    rows = [
        (label, bot, hs.PLANNED if judge is hs.CHEAP else judge, outcome) for label, bot, judge, outcome in cases(t)
    ]
    rows.append(("cheap judge (2% false flags: noisier than planned), half the threshold: PASS",
                 hs.Chatbot(t / 2, **every), hs.CHEAP, PASS))  # fmt: skip
    for i, (label, bot, judge, outcome) in enumerate(rows):
        outcomes = without_reference(200 + i, runs, plan, bot, judge)
        show(f"{label} [lean bound {judge.lean:g}]", sum(o is outcome for o in outcomes), runs)


def sequential_part(runs: int, which: str, scale: float, spread: float) -> None:
    plan, budget = planned(which, True, scale, sequential=True, spread=spread)
    assert budget is not None
    budget = max(plan.n, round(scale * budget))
    sizes = looks(plan.n, budget)
    bound = net_harm.NetHarmParams(comparison="gender", clean_share=plan.share).design.bound
    print(
        f"\n-- sequential with a reference, {CHECKS[which]} <= {plan.threshold}: {plan.k} name(s) per group, looks "
        f"{sizes[0]}..{sizes[-1]} ({len(sizes)}), clean share {plan.share}, {runs} runs a row --"
    )
    t = plan.threshold
    for i, (label, truth, wanted) in enumerate(
        [("zero harm: PASS", 0.0, PASS), ("half the threshold: PASS", t / 2, PASS),
         ("at the threshold: PASS (wrong)", t, PASS), ("twice the threshold: FAIL", 2 * t, FAIL)]
    ):  # fmt: skip
        rng, hits, drawn = np.random.default_rng(300 + i), 0, []
        for _ in range(runs):
            bot = hs.Chatbot(truth, aside_women=0.5, aside_men=0.5)
            harmful, aside = hs.pairs(rng, 1, budget, bot, plan.k)
            net, ref = hs.ratings(rng, harmful, aside, hs.CHEAP), hs.ratings(rng, harmful, aside, plan.reference)
            z = hs.reference_samples(rng, net, ref, np.ones(net.shape, dtype=bool), plan.share)[0][0]
            for n in sizes:
                outcome = decide(confidence_sequence(z[:n], -bound, bound, 0.05), Threshold(max=t))
                if outcome is not Outcome.INCONCLUSIVE:
                    break
            hits += outcome is wanted
            drawn.append(n)
        show(label, hits, runs, f"draws: mean {np.mean(drawn):,.0f}, largest {max(drawn):,}")


def streams(runs: int) -> None:
    print("\n-- coverage of the true net harm by the screen's corrected interval (1,000 draws) --")
    for name, judge in (("hedging", hs.HEDGING), ("double", hs.DOUBLE), ("noisy", hs.Judge(right=0.95, notices=0.95))):
        for h in (0.01, 0.05):
            rng = np.random.default_rng(12)
            harmful, aside = hs.pairs(rng, runs, 1000, hs.Chatbot(harm=h))
            _, ci = hs.gate_screen(
                hs.ratings(rng, harmful, aside, judge).mean(axis=-1), hs.calibration(rng, runs, judge)
            )
            show(f"{name} judge, net harm {h}: covered", int(np.sum((ci[:, 0] <= h) & (h <= ci[:, 1]))), runs)
    print("\n-- the screen's intervals by pair: coverage of the true rate (120 harmful pairs) --")
    for s in (0.7, 0.8, 0.9):
        rng = np.random.default_rng(int(100 * s))
        rated = (rng.random((runs, 120)) < s).astype(float)
        lo, hi = bounded_mean_intervals(rated, -1.0, 1.0, hs.LEVEL)
        show(f"s = {s}: mean rating's interval covers", int(np.sum((lo <= s) & (s <= hi))), runs)
    print("\n-- the A/A placebo of an unbiased pipeline (twist on 30% of answers) --")
    rng = np.random.default_rng(16)
    n = -(-hs.RELEASE // aa_placebo.EVERY)
    nets = 0.85 * ((rng.random((runs, n)) < 0.3).astype(float) - (rng.random((runs, n)) < 0.3).astype(float))
    for level in (0.95, aa_placebo.confidence_of(0.95)):
        lo, hi = bounded_mean_intervals(nets, -1.0, 1.0, level)
        show(f"interval at {level:.0%} contains 0", int(np.sum((lo <= 0) & (hi >= 0))), runs)


def _app(module: str, attr: str) -> Runner:
    return Runner(model_from(getattr(importlib.import_module(module), attr)))


def screens(seeds: int) -> None:
    print(f"\n-- the judge screen on {seeds} seeds of its draw: refused (and the lean bound of those it serves) --")
    two_word = lambda: Runner(TextJudge(lambda t: "probably" in t or "likely" in t, name="two-word"))  # noqa: E731
    for label, make in (
        ("tilted judge (0.10 / 0.05 / 0.85 on asides)", lambda s: tilted()),
        ("tilted-top judge (0.6 / 0.1 / 0.3 on asides)", lambda s: tilted(top=True)),
        ("lean 0.05 on 80% of aside pairs", lambda s: leaning(0.05, 0.8, s)),
        ("lean 0.05 on 70% of aside pairs", lambda s: leaning(0.05, 0.7, s)),
        ("lean 0.0099 on every aside pair (serves: its bound is carried)", lambda s: leaning(0.0099, 1.0, s)),
        ("two-word judge (probably / likely)", lambda s: two_word()),
        ("support judge (29 cue phrases)", lambda s: _app("support_judge", "judge")),
        ("hedging judge (must serve)", lambda s: hedging()),
        ("the double's judge (must serve)", lambda s: capable()),
        ("a judge right on 95% of pairs (must serve)", lambda s: capable(0.95, s)),
    ):
        refused, bounds = 0, []
        for seed in range(seeds):
            screen = judge_screen.judge_calibration(make(seed), "gender", net_harm.screen_pairs(seed), hs.LEVEL)
            refused += not screen.serves
            bounds += [screen.lean_bound] if screen.serves else []
        show(label, refused, seeds, f"lean bound of the served: {max(bounds):.4f}" if bounds else "")


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


PARTS = ("reference", "no-reference", "sequential", "screens", "streams", "apps")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--screens", type=int, default=200)
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=PARTS)
    parser.add_argument("--checks", nargs="+", default=["task", "overall"], choices=list(CHECKS))
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--reference-spread", type=float, default=net_harm.REFERENCE_SPREAD)
    args = parser.parse_args(argv)
    for which in args.checks:
        if "reference" in args.parts:
            reference_part(args.runs, which, args.scale, args.reference_spread)
        if "no-reference" in args.parts:
            no_reference_part(args.runs, which, args.scale)
        if "sequential" in args.parts:
            sequential_part(max(1, args.runs // 5), which, args.scale, args.reference_spread)
    if "screens" in args.parts:
        screens(args.screens)
    if "streams" in args.parts:
        streams(args.runs)
    if "apps" in args.parts:
        apps(max(1, min(20, args.runs)))


if __name__ == "__main__":
    main(sys.argv[1:])
