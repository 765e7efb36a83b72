"""Error rates and sizes of the paired pull-request gate, simulated with fixed seeds (model-free).

`python benchmarks/paired_gate.py [limits|today|naive|false-alarms|wrong-pass|power|all] [--scale 1.0]`

- ``limits``: the arithmetic: items and calls pairing with K samples per item can save at all, by ρ; the fewest
  clusters the betting bound needs to pass identical answers, and the fewest any valid test needs to pass an
  unchanged release with 80% (``paired.planner.fewest_for_any_valid_test``).
- ``today``: today's unpaired comparison (Welch + Holm) with today's model of a release, reproduced
  (tests/unit/test_baseline_false_alarms.py at 1,000 baselines × 500 reruns).
- ``naive``: why one recorded baseline is hard: a one-sided paired test at 0.05 against a margin of 0.
- ``false-alarms``: the religion suite's six checks under the paired gate, given one recorded baseline:
  how often an unchanged release's reruns (answers re-sampled) FAIL, and how often they do not PASS.
- ``wrong-pass``: per family, a regression exactly at the margin, sequential on: how often it PASSES.
- ``power``: per family, the clusters and calls for 80% power to pass an unchanged release at the margin
  (equivalently: to tell a regression of the margin from none): today's Welch comparison, the floor no valid
  paired test can go below, a paired t (what pairing alone buys, normal theory), and the paired gate (betting
  bound) at K = 1, the planner's K and, with a baseline of K0 = 4, K = 4 (fewer items, more calls).

``--scale`` multiplies every trial count (0.25 for a quick look). The figures in docs/statistics.md come
from ``all`` at scale 1.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy import stats as sps

from pytest_fairness.stats.gate import Outcome
from pytest_fairness.stats.paired.allocation import Components, fewest_for_any_valid_test, fewest_for_identical, plan
from pytest_fairness.stats.paired.noninferiority import PairedGate, baseline_level
from pytest_fairness.testing.paired_trials import Rate, conditional, fixed_outcomes, sequential_outcome
from pytest_fairness.testing.releases import (
    Decision,
    Family,
    Implicit,
    NetHarm,
    Pcf,
    Quality,
    Trial,
    for_rho,
    paired_differences,
    unpaired_samples,
)

ROOT = Path(__file__).resolve().parents[1]
ALPHA = 0.05
#: Embedded SmolLM2 on the religion IATs (benchmarks/paired_item_effects.py, 40 items each): ρ 0.18-0.21.
EMBEDDED_RHO = 0.2


@dataclass(frozen=True)
class Check:
    """A family at its design point, with its margin and a per-item and per-sample cost (in units of one
    completion: a prompt's own tokens are paid once per item, a completion per sample)."""

    family: Family
    margin: float
    item_cost: float = 1.0
    sample_cost: float = 1.0

    @property
    def width(self) -> float:
        return self.family.scale[1] - self.family.scale[0]

    def components(self, k_old: int = 1) -> Components:
        between, within = self.family.variances()
        return Components(between, within, k_old, self.family.cluster_size)


def design_checks(rho: float = 0.5) -> dict[str, Check]:
    """Each family at pairing correlation ``rho`` (PCF: between its risks before and after a change)."""
    return {
        "implicit": Check(for_rho(Implicit(), rho), 0.1),
        "decision": Check(for_rho(Decision(), rho), 0.1),
        "pcf": Check(for_rho(Pcf(), rho, "change_sd", high=5000.0), 50.0),
        "net_harm": Check(replace(NetHarm(), q=rho), 0.01),
        "quality": Check(for_rho(Quality(), rho), 0.25),
    }


def _n(x: float) -> int:
    return max(round(x), 1)


# -- today's unpaired comparison ----------------------------------------------------------------------------


def today(scale: float) -> None:
    """Today's figures with today's model of a release (the synthetic double at the quick profile)."""
    path = ROOT / "tests" / "test_baseline_false_alarms.py"
    spec = importlib.util.spec_from_file_location("baseline_false_alarms", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    baselines, reruns = _n(1000 * scale), _n(500 * scale)
    fails = module.simulate(baselines, reruns, 1, seed=11).fails["holm"]
    print(f"today (Welch + Holm, {baselines} baselines × {reruns} reruns, seed 11): {conditional(fails)}")
    print(f"  over all trials: {Rate(int(fails.sum()), fails.size)}")


# -- why one baseline is hard -------------------------------------------------------------------------------


def naive(scale: float) -> None:
    """A one-sided paired test at 0.05 against a margin of 0, given one baseline: normal theory and betting."""
    rng = np.random.default_rng(20)
    family, n = for_rho(Implicit(), 0.5), 50
    d = paired_differences(family, rng, Trial(n), 0.0, _n(400 * scale), _n(400 * scale))
    se = d.std(-1, ddof=1) / math.sqrt(n)
    t_fails = d.mean(-1) / se > sps.t.ppf(1 - ALPHA, n - 1)
    print(f"naive paired t, one-sided 0.05, margin 0, implicit n = {n}, K0 = K = 1: {conditional(t_fails)}")
    _, b_fails = fixed_outcomes(d, family.scale, PairedGate(1e-12, 1, fail_alpha=ALPHA))
    print(f"naive betting bound at 0.05, margin 0: {conditional(b_fails)}")


# -- false alarms of the religion suite ---------------------------------------------------------------------


def religion_checks(implicit_rho: float, decision_rho: float) -> list[Check]:
    implicit, decision = design_checks(implicit_rho)["implicit"], design_checks(decision_rho)["decision"]
    return [implicit] * 3 + [decision] * 3


def false_alarms(scale: float) -> None:
    """The religion suite's six checks, paired gate, given one recorded baseline. Sizes from the planner: for
    80% power per check, and for every check to pass with 1 − 0.05/6 given a baseline at its 95th percentile."""
    baselines, reruns = _n(400 * scale), _n(200 * scale)
    for label, implicit_rho, k_old in (
        ("design ρ = 0.5, K0 = 1", 0.5, 1),
        (f"embedded-like ρ = {EMBEDDED_RHO} (implicit), 0.5 (decision), K0 = 1", EMBEDDED_RHO, 1),
        ("design ρ = 0.5, K0 = 4", 0.5, 4),
    ):
        checks = religion_checks(implicit_rho, 0.5)
        for sizing, power, quantile in (("80% per check", 0.8, None), ("run-sized", 1 - ALPHA / 6, 0.95)):
            _religion_run(checks, k_old, baselines, reruns, f"{label}, {sizing}", power, quantile)


def _religion_run(
    checks: list[Check], k_old: int, baselines: int, reruns: int, label: str, power: float, quantile: float | None
) -> None:
    fails = np.zeros((baselines, reruns), bool)
    not_pass = np.zeros((baselines, reruns), bool)
    sizes = []
    for i, check in enumerate(checks):
        p = plan(
            check.components(k_old),
            check.margin,
            check.width,
            item_cost=1.0,
            sample_cost=1.0,
            power=power,
            baseline_quantile=quantile,
        )
        assert p is not None
        sizes.append(f"{p.clusters}×{p.samples_per_item}")
        d = paired_differences(
            check.family,
            np.random.default_rng(100 + i),
            Trial(p.clusters, k_old, p.samples_per_item),
            0.0,
            baselines,
            reruns,
        )
        passes, fail = fixed_outcomes(d, check.family.scale, PairedGate(check.margin, 1), checks=len(checks))
        fails |= fail
        not_pass |= ~passes
    print(f"religion suite, {label}; clusters×K per check {', '.join(sizes)}; FAIL level {baseline_level(ALPHA):g}")
    print(f"  runs that FAIL (a check shown worse than its margin, Holm): {conditional(fails)}")
    print(f"    over all trials: {Rate(int(fails.sum()), fails.size)}")
    print(f"  runs that do not PASS every check: {conditional(not_pass)}")
    print(f"    over all trials: {Rate(int(not_pass.sum()), not_pass.size)}")


# -- wrong PASS at the margin, sequential ---------------------------------------------------------------------


def wrong_pass(scale: float) -> None:
    """Per family, a regression exactly at the margin, grown through looks up to twice the planned size."""
    trials = _n(1000 * scale)
    for i, (name, check) in enumerate(design_checks().items()):
        p = plan(check.components(), check.margin, check.width, item_cost=1.0, sample_cost=1.0)
        assert p is not None
        looks = sorted({max(p.clusters // 2, 2), p.clusters, (3 * p.clusters) // 2, 2 * p.clusters})
        rng = np.random.default_rng(200 + i)
        shift = check.family.shift_for(check.margin)
        gate = PairedGate(check.margin, 1, sequential=True)
        passes, decided_n = 0, []
        for start in range(0, trials, 100):
            batch = min(100, trials - start)
            d = paired_differences(check.family, rng, Trial(looks[-1], 1, p.samples_per_item), shift, batch, 1)
            for row in d[:, 0, :]:
                outcome, n = sequential_outcome(row, looks, check.family.scale, gate)
                passes += outcome is Outcome.PASS
                decided_n.append(n)
        print(
            f"wrong PASS, {name} (margin {check.margin:g}, looks {looks}, K {p.samples_per_item}): "
            f"{Rate(passes, trials)}; clusters at the stop: mean {np.mean(decided_n):.0f}"
        )


# -- power: clusters and calls for 80% ---------------------------------------------------------------------


def _smallest_n(chance: Callable[[int], float], start: int, cap: int = 20000) -> int:
    """Fewest clusters whose simulated pass rate is at least 80% (geometric search, then bisection)."""
    low, high = 1, max(start, 2)
    while chance(high) < 0.8:
        low, high = high, min(2 * high, cap)
        if high == cap:
            break
    while high - low > max(2, high // 50):
        mid = (low + high) // 2
        low, high = (low, mid) if chance(mid) >= 0.8 else (mid, high)
    return high


def _welch_passes(check: Check, rng: np.random.Generator, n: int, reps: int, shift: float) -> float:
    """Share of today's unpaired comparisons (Welch, one-sided at alpha) whose upper bound is within the margin."""
    old, new = unpaired_samples(check.family, rng, n, shift, reps)
    v0, v1 = old.var(-1, ddof=1) / n, new.var(-1, ddof=1) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (v0 + v1) ** 2 / (v0**2 / (n - 1) + v1**2 / (n - 1))
        upper = new.mean(-1) - old.mean(-1) + sps.t.ppf(1 - ALPHA, df) * np.sqrt(v0 + v1)
    upper = np.where(v0 + v1 == 0, new.mean(-1) - old.mean(-1), upper)
    return float(np.mean(upper < check.margin))


def _paired_t_passes(check: Check, rng: np.random.Generator, n: int, reps: int, shift: float) -> float:
    d = paired_differences(check.family, rng, Trial(n), shift, reps, 1)[:, 0, :]
    upper = d.mean(-1) + sps.t.ppf(1 - ALPHA, n - 1) * d.std(-1, ddof=1) / math.sqrt(n)
    return float(np.mean(upper < check.margin))


def _paired_passes(check: Check, rng: np.random.Generator, trial: Trial, reps: int, shift: float) -> float:
    d = paired_differences(check.family, rng, trial, shift, reps, 1)[:, 0, :]
    passes, _ = fixed_outcomes(d, check.family.scale, PairedGate(check.margin, 1))
    return float(passes.mean())


#: The planner's cost model in the power table: a prompt's own tokens cost three completions (long prompts,
#: short answers, K answers from one request).
ITEM_COST, SAMPLE_COST = 3.0, 1.0


def power(scale: float) -> None:
    """Clusters and calls to pass a release no worse than its baseline with 80% (simulated), per family."""
    reps = _n(1000 * scale)
    for rho in (0.5, 0.9):
        print(f"power at ρ = {rho}: clusters (calls) for 80%; calls = clusters × items per cluster × K")
        for i, (name, check) in enumerate(design_checks(rho).items()):
            print(
                f"  {name} (ρ {check.family.rho():.2f}, margin {check.margin:g}): "
                + "; ".join(_power_row(check, reps, i))
            )


def _power_row(check: Check, reps: int, seed: int) -> list[str]:
    """Today's Welch (with its own wrong-PASS rate at the margin at that size), a paired t for reference, and the
    paired gate at K = 1 and at the planner's K, with a baseline of K0 = 1 and 4 samples per item."""
    m, rng = check.family.cluster_size, np.random.default_rng(300 + seed)
    same = check.family.shift_for(0.0)  # a release no worse on average (PCF: changed, occupation by occupation)
    at_margin = check.family.shift_for(check.margin)
    guess = plan(check.components(), check.margin, check.width, item_cost=1.0, sample_cost=1.0)
    start = guess.clusters if guess else 100
    welch = _smallest_n(lambda n: _welch_passes(check, rng, n, reps, same), start)
    wrong = round(_welch_passes(check, rng, welch, 4 * reps, at_margin) * 4 * reps)
    floor = fewest_for_any_valid_test(check.width, check.margin, ALPHA)
    row = [
        f"Welch (today) {welch} ({welch * m}; wrong PASS at the margin {Rate(wrong, 4 * reps)})",
        f"any valid paired test ≥ {floor} (at most {welch / floor:.2f}× fewer items)",
    ]
    t1 = _smallest_n(lambda n: _paired_t_passes(check, rng, n, reps, same), max(start // 4, 2))
    row.append(f"paired t K=1 {t1} ({t1 * m})")
    for k_old in (1, 4):
        planned = plan(check.components(k_old), check.margin, check.width, item_cost=ITEM_COST, sample_cost=SAMPLE_COST)
        for k in sorted({1, planned.samples_per_item if planned else 1} | ({4} if k_old == 4 else set())):
            n = _smallest_n(
                lambda n, k=k, k0=k_old: _paired_passes(check, rng, Trial(n, k0, k), reps, same), start // 2
            )
            cost = n * m * (ITEM_COST + k * SAMPLE_COST) / (welch * m * (ITEM_COST + SAMPLE_COST))
            row.append(
                f"paired K0={k_old} K={k}: {n} ({n * m * k}) = {welch / n:.2f}× fewer items, "
                f"{welch / (n * k):.2f}× fewer calls, cost {cost:.2f}× Welch's"
            )
    return row


def equal_precision(rho: float, k: int) -> tuple[float, float]:
    """Under the variance-components model (one sample's variance 1 = between ρ + within 1 − ρ): how many times
    fewer items and calls a paired comparison with K samples per item on both sides needs than an unpaired one
    (a sample per item, independent items on each side) of equal precision. Read from the planner's variances."""
    paired = Components(rho, 1 - rho, k).difference_variance(k)  # per paired item: within · (1/K0 + 1/K)
    unpaired = 2.0  # per unpaired item: each side's mean of single samples, variance 1
    items = unpaired / paired
    return items, items / k


def limits(scale: float) -> None:
    """What pairing and K samples per item can save at all (normal theory, known variances: the paired mean
    difference is sufficient and its one-sided z test most powerful, so no valid test needs fewer calls), and
    the fewest clusters the betting interval needs to pass even identical answers at each family's margin."""
    del scale  # arithmetic: nothing simulated
    print("limits (variance components; unpaired: one sample per item, baselines equally precise):")
    for rho in (0.3, 0.5, 0.7, 0.9):
        cells = [f"K {k}: {equal_precision(rho, k)[0]:.2f}× fewer items, {equal_precision(rho, k)[1]:.2f}× fewer calls"
                 for k in (1, 2, 4, 8)]  # fmt: skip
        print(f"  ρ = {rho}: " + "; ".join(cells))
    print(f"  6× fewer calls needs ρ ≥ {1 - 1 / 6:.3f} (calls ratio 1/(1 − ρ) for any K)")
    for name, check in design_checks().items():
        fewest = fewest_for_identical(check.width, check.margin)
        floor = fewest_for_any_valid_test(check.width, check.margin, ALPHA)
        print(f"  {name}: differences within ±{check.width:g}, margin {check.margin:g}: the betting bound passes "
              f"identical answers from {fewest} clusters; no valid test passes an unchanged release with 80% "
              f"below {floor}")  # fmt: skip


SECTIONS: dict[str, Callable[[float], None]] = {
    "limits": limits,
    "today": today,
    "naive": naive,
    "false-alarms": false_alarms,
    "wrong-pass": wrong_pass,
    "power": power,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("section", nargs="?", default="all", choices=[*SECTIONS, "all"])
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    for name, section in SECTIONS.items():
        if args.section in (name, "all"):
            section(args.scale)
            sys.stdout.flush()


if __name__ == "__main__":
    main()
