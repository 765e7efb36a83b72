"""Error rates and sizes of the paired pull-request gate, simulated with fixed seeds (model-free).

`python benchmarks/paired_gate.py [SECTION|all] [--scale 1.0] [--write]`

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
- ``given-baseline``: what a pull request's PASS certifies given the one baseline a team keeps: per family, K0
  (one answer an item, and the release job's), and shape of a regression exactly at the margin on the
  baseline's items, the pooled wrong-PASS rate and its 95th percentile over baselines, the gate's against a
  PASS at alpha (the rule before) on the same reruns.
- ``pr-sizes``: the items and answers a pull request draws for 80% power to pass an unchanged release, with the
  planner before (its prompts at alpha) and now (every baseline prompt × K at the PASS level), simulated.
- ``verdicts``: a regression of twice the margin in a six-check run: how often each verdict word is reached, and
  the line the pull-request comment shows for it.
- ``resampled``: sequential pull requests against a model that does not reproduce its answers, the cache off:
  looks that keep the run's answers (the runner's memory), looks that re-draw them, and the guard.
- ``order``: a regression that lines up with the baseline's order of items, decided in that order and in the
  seeded random order.

``--scale`` multiplies every trial count (0.25 for a quick look). The figures in benchmarks/README.md come
from the sections at scale 1 (``power`` at 0.25); ``--write`` puts the tables of ``given-baseline``,
``pr-sizes``, ``verdicts`` and ``resampled`` into their ``<!--measured:benchmarks/paired_gate.py-->`` blocks in
benchmarks/README.md and docs/statistics.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy import stats as sps

from pytest_fairness.stats.gate import Outcome
from pytest_fairness.stats.paired.allocation import (
    Components,
    fewest_for_any_valid_test,
    fewest_for_identical,
    plan,
    plan_k,
)
from pytest_fairness.stats.paired.noninferiority import BASELINE_SHARE, PairedGate, baseline_level, decide_differences
from pytest_fairness.testing.paired_trials import (
    Rate,
    cluster_bootstrap,
    conditional,
    fixed_outcomes,
    given_baseline,
    sequential_outcome,
)
from pytest_fairness.testing.releases import (
    SHAPES,
    Decision,
    Family,
    Implicit,
    NetHarm,
    Pcf,
    Quality,
    Trial,
    at_margin_on_items,
    for_rho,
    item_samples,
    paired_differences,
    unpaired_samples,
)

ROOT = Path(__file__).resolve().parents[1]
ALPHA = 0.05
#: Both paired verdicts' level at ALPHA (PASS of a measure read exactly: ``exact_level``).
LEVEL = baseline_level(ALPHA)
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
    path = ROOT / "tests" / "unit" / "test_baseline_false_alarms.py"
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


#: Baselines simulated at once in the false-alarm rows.
CHUNK = 25


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
            alpha=LEVEL,
        )
        assert p is not None
        sizes.append(f"{p.clusters}×{p.samples_per_item}")
        rng = np.random.default_rng(100 + i)
        for start in range(0, baselines, CHUNK):  # a chunk of baselines at a time: memory stays small at scale 1
            rows = slice(start, min(start + CHUNK, baselines))
            trial = Trial(p.clusters, k_old, p.samples_per_item)
            d = paired_differences(check.family, rng, trial, 0.0, rows.stop - rows.start, reruns)
            passes, fail = fixed_outcomes(d, check.family.scale, PairedGate(check.margin, 1), checks=len(checks))
            fails[rows] |= fail
            not_pass[rows] |= ~passes
    print(f"religion suite, {label}; clusters×K per check {', '.join(sizes)}; PASS and FAIL level {LEVEL:g}")
    print(f"  runs that FAIL (a check shown worse than its margin, Holm): {conditional(fails)}")
    print(f"    over all trials: {Rate(int(fails.sum()), fails.size)}")
    print(f"  runs that do not PASS every check: {conditional(not_pass)}")
    print(f"    over all trials: {Rate(int(not_pass.sum()), not_pass.size)}")


# -- wrong PASS at the margin, sequential ---------------------------------------------------------------------


def wrong_pass(scale: float) -> None:
    """Per family, a regression exactly at the margin, grown through looks up to twice the planned size."""
    trials = _n(1000 * scale)
    for i, (name, check) in enumerate(design_checks().items()):
        gate = PairedGate(check.margin, 1, sequential=True, exact=isinstance(check.family, Pcf))
        p = plan(
            check.components(), check.margin, check.width, item_cost=1.0, sample_cost=1.0, alpha=gate.passing_level
        )
        assert p is not None
        looks = sorted({max(p.clusters // 2, 2), p.clusters, (3 * p.clusters) // 2, 2 * p.clusters})
        rng = np.random.default_rng(200 + i)
        shift = check.family.shift_for(check.margin)
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
    passes, _ = fixed_outcomes(d, check.family.scale, PairedGate(check.margin, 1, exact=isinstance(check.family, Pcf)))
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
    level = PairedGate(check.margin, 1, exact=isinstance(check.family, Pcf)).passing_level
    for k_old in (1, 4):
        planned = plan(
            check.components(k_old),
            check.margin,
            check.width,
            item_cost=ITEM_COST,
            sample_cost=SAMPLE_COST,
            alpha=level,
        )
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


# -- what a pull request's PASS certifies, given the one baseline a team keeps ------------------------------

#: The baseline sizes the sections draw (implicit: what the embedded model's release baselines hold; PCF: its
#: occupation list; decision and quality: a release-size baseline).
BASELINE_ITEMS = {"implicit": 303, "decision": 400, "quality": 400, "pcf": 257}
#: Tables ``--write`` puts into the pages, by section.
WRITTEN: dict[str, list[str]] = {}


def release_k0() -> int:
    """The answers per item the workflow's release job records (docs/ci/fairness.yml, read as the docs read it)."""
    sys.path.insert(0, str(ROOT / "docs"))
    from docgen.internals import release_k0 as read

    return read()


def _pct(x: float) -> str:
    return f"{x:.2%}" if 0 < x < 0.01 else f"{x:.1%}"


def given_baseline_section(scale: float) -> None:
    """Per family, K0 and shape of a regression exactly at the margin on the baseline's items: the pull request as
    the plugin runs it (every baseline item × the planner's K, PASS at the level, seeded random order), and a
    PASS at alpha on the same reruns (the rule before)."""
    baselines, reruns = _n(200 * scale), _n(100 * scale)
    boot = np.random.default_rng(0)
    rows = []
    for name, items in BASELINE_ITEMS.items():
        check = design_checks()[name]
        exact = isinstance(check.family, Pcf)
        for k_old in (None,) if exact else (1, release_k0()):
            for shape in SHAPES:
                rng = np.random.default_rng(zlib.crc32(f"{name}:{k_old}:{shape}".encode()))
                before = PairedGate(check.margin, 1, pass_alpha=ALPHA)
                found = given_baseline(
                    check.family, check.margin, shape, items, k_old or 1, baselines, reruns, rng, twin=before
                )
                (plo, phi), (qlo, qhi) = cluster_bootstrap(found.events, boot)
                rates = found.per_baseline
                assert found.twin is not None
                old = conditional(found.twin)
                ks = np.bincount(found.ks)
                k = int(np.argmax(ks)) if not exact else 1
                run = f"{items} × K {k}" + (
                    "" if ks[k] == baselines else f" ({ks[k]}/{baselines}; K {found.ks.min()}-{found.ks.max()})"
                )
                rows.append(
                    f"| {name} | {'exact' if exact else k_old} | {shape} | {run} | {found.pooled} "
                    f"(bootstrap [{_pct(plo)}, {_pct(phi)}]) | {_pct(rates.q95.value)} (bootstrap "
                    f"[{_pct(qlo)}, {_pct(qhi)}]) | {_pct(rates.worst.value)} | {_pct(old.mean)} / "
                    f"{_pct(old.q95.value)} / {_pct(old.worst.value)} |"
                )
                print(rows[-1], flush=True)
    header = (
        f"| family | K0 | regression at the margin | run (items × K) | wrong PASS, pooled (CP; cluster bootstrap) "
        f"| 95th percentile of baselines | worst baseline | PASS at alpha {ALPHA:g} on the same reruns: pooled / "
        "95th pct / worst |\n|---|---|---|---|---|---|---|---|"
    )
    note = (
        f"\n\n{baselines} recorded baselines × {reruns} reruns a row (PCF, read exactly: one rerun, its verdict is "
        f"fixed given the baseline and the release), seeded; PASS at {LEVEL:g} ({min(ALPHA, BASELINE_SHARE):g} "
        f"read exactly), K from the planner on each recorded baseline; `python benchmarks/paired_gate.py "
        f"given-baseline --scale {scale:g}`."
    )
    WRITTEN["given-baseline"] = [header, *rows, note]


def pr_sizes(scale: float) -> None:
    """Items and answers for 80% power to pass an unchanged release, the planner before (its prompts at alpha, the
    baseline's first ones) and now (every baseline prompt × K at the PASS level), from the family's variance
    components, with the simulated chance at that size (a fresh baseline each trial)."""
    trials = _n(1000 * scale)
    rows = []
    for name in ("implicit", "decision", "quality"):
        check, items = design_checks()[name], BASELINE_ITEMS[name]
        for k_old in (1, release_k0()):
            components = check.components(k_old)
            cells = []
            old = plan(components, check.margin, check.width, item_cost=0.0, sample_cost=1.0, available=items)
            new = plan_k(components, items, check.margin, check.width, alpha=LEVEL)
            before = PairedGate(check.margin, 1, pass_alpha=ALPHA)
            sizes = [None if old is None else (old.clusters, old.samples_per_item, before)]
            sizes.append((items, new.k, PairedGate(check.margin, 1)))
            for size in sizes:
                if size is None:
                    cells.append("no plan reaches 80%")
                    continue
                n, k, gate = size
                rng = np.random.default_rng(zlib.crc32(f"{name}:{k_old}:{n}:{k}".encode()))
                d = paired_differences(check.family, rng, Trial(n, k_old, k), 0.0, trials, 1)[:, 0, :]
                passed = int(fixed_outcomes(d, check.family.scale, gate)[0].sum())
                cells.append(f"{n} × {k} = {n * k:,} answers: {Rate(passed, trials)}")
            rows.append(f"| {name} | {k_old} | {cells[0]} | {cells[1]}{'' if new.reached else ' (short of 80%)'} |")
            print(rows[-1], flush=True)
    header = (
        f"| family | K0 | before: the planner's prompts × K, PASS at {ALPHA:g} | now: every baseline prompt × K, "
        f"PASS at {LEVEL:g} |\n|---|---|---|---|"
    )
    note = (
        f"\n\nSimulated chance to pass an unchanged release, {trials} trials a cell with a fresh baseline each "
        f"(CP intervals), at the planner's sizes from each family's variance components (ρ 0.5; baselines of "
        f"{', '.join(f'{n} {f}' for f, n in BASELINE_ITEMS.items() if f != 'pcf')} items); `python "
        f"benchmarks/paired_gate.py pr-sizes --scale {scale:g}`."
    )
    WRITTEN["pr-sizes"] = [header, *rows, note]


def verdicts(scale: float) -> None:
    """One implicit check of a six-check run (the FAIL level split over six): its paired verdict and its
    threshold's, at twice the margin and unchanged; the words a pull request reaches, and its comment's line."""
    from pytest_fairness.stats.gate import Threshold, decide
    from pytest_fairness.stats.intervals import bounded_mean_intervals

    runs, checks = _n(1000 * scale), 6
    check, items, k_old = design_checks()["implicit"], BASELINE_ITEMS["implicit"], release_k0()
    family = check.family
    rows = []
    for multiple in (2.0, 0.0):
        rng = np.random.default_rng(46 + int(multiple))
        latent = family.latent(rng, (runs, items))
        recorded = family.scores(rng, latent, 0.0, k_old).mean(-1)[..., 0]
        new = family.scores(rng, latent, family.shift_for(multiple * check.margin), 1).mean(-1)[..., 0]
        passes, fails = fixed_outcomes(new - recorded, family.scale, PairedGate(check.margin, 1), checks=checks)
        lo, hi = bounded_mean_intervals(new, *family.scale, 0.95)  # the threshold reads the run's own interval
        for top in (0.5, 0.2):
            counts: dict[str, int] = {}
            for p, f, low, high in zip(passes, fails, lo, hi, strict=True):
                threshold = decide((float(low), float(high)), Threshold(max=top))
                word = _verdict_word(p, f, threshold, checks)
                counts[word] = counts.get(word, 0) + 1
            cells = "; ".join(f"{w} {Rate(n, runs)}" for w, n in sorted(counts.items(), key=lambda kv: -kv[1]))
            rows.append(f"| {multiple:g} × the margin | ≤ {top:g} | {cells} |")
            print(rows[-1], flush=True)
    header = "| truth | threshold | verdicts reached |\n|---|---|---|"
    note = (
        f"\n\n{runs} runs a row, one implicit check of a six-check run (its FAIL level split over six), a baseline of "
        f"{items} items × K0 {k_old}, the run every item × K 1; `python benchmarks/paired_gate.py verdicts --scale "
        f"{scale:g}`. The comment's gate-table line of such a check:\n\n{_comment_line()}"
    )
    WRITTEN["verdicts"] = [header, *rows, note]


def _verdict_word(passes: bool, fails: bool, threshold: object, checks: int) -> str:
    """The pull-request gate's word for one simulated check (``pr_gate.pr_verdict`` on its paired outcome)."""
    from pytest_fairness.baseline.pr_gate import pr_verdict
    from pytest_fairness.records.comparison import Comparison
    from pytest_fairness.report.status import STYLES
    from pytest_fairness.stats.gate import Outcome
    from pytest_fairness.stats.paired.noninferiority import PairedComparison

    outcome = Outcome.FAIL if fails else Outcome.PASS if passes else Outcome.INCONCLUSIVE
    evidence = PairedComparison(outcome, 0.1, 1, (0.0, 0.0), (0.0, 0.0), 1.0, 0.0 if fails else 1.0, LEVEL, 1, 1,
                                None, 1.0, None, "betting interval", pass_alpha=LEVEL)  # fmt: skip
    comparison = Comparison("c", "undecided", before=None, after=None, difference=None, ci=None, p=None,
                            tolerance=0.0, alpha=ALPHA, paired=evidence)  # fmt: skip
    return STYLES[pr_verdict(threshold, comparison, False, checks).outcome].word.upper()  # type: ignore[arg-type]


def _comment_line() -> str:
    """The Markdown gate-table row of a check a pull request found WITHIN THRESHOLD, rendered by the report."""
    from pytest_fairness.records.check_record import CheckRecord
    from pytest_fairness.records.measure_result import MeasureResult
    from pytest_fairness.report.markdown import markdown_report
    from pytest_fairness.stats.gate import Outcome, Threshold
    from pytest_fairness.stats.intervals import summarize

    samples = list(np.clip(np.random.default_rng(1).normal(0.4, 0.5, 303), -1, 1))
    result = MeasureResult("implicit_bias", "islam", summarize(samples, 0.0, interval="bounded", bounds=(-1, 1)), 0,
                           [], "faithful", "my-model", {}, {}, samples=samples)  # fmt: skip
    record = CheckRecord("religion", "implicit_bias[islam]", Outcome.WITHIN_THRESHOLD, Threshold(max=0.5), result)
    return next(line for line in markdown_report([record]).splitlines() if "implicit_bias[islam]" in line)


def resampled(scale: float) -> None:
    """Sequential pull requests at a regression exactly at the margin (implicit bias, a 303-item baseline), a model
    that does not reproduce an answer from its seed and the cache off: looks that keep the run's answers (the
    runner's memory, what the plugin does), looks that re-draw every answer, and the guard that stops at the
    first look whose earlier items re-scored (the plugin's fallback, were the memory not to hold them)."""
    from pytest_fairness.baseline.pr_gate import pr_sizes as looks_of
    from pytest_fairness.run.growth import SEQUENTIAL_GROWTH

    trials = _n(3000 * scale)
    check, items = design_checks()["implicit"], BASELINE_ITEMS["implicit"]
    family, gate = check.family, PairedGate(check.margin, 1, sequential=True)
    fewest = fewest_for_identical(check.width, check.margin, gate.passing_level)
    looks = [n for n in looks_of(20, items, SEQUENTIAL_GROWTH) if n >= fewest]
    shift = family.shift_for(check.margin)
    rows = []
    for k_old in (1, release_k0()):
        rng = np.random.default_rng(400 + k_old)
        wins = {"kept (the runner's memory)": 0, "re-drawn at every look": 0, "re-drawn, guarded": 0}
        for _ in range(trials):
            latent = family.latent(rng, (1, items))
            recorded = family.scores(rng, latent, 0.0, k_old).mean(-1)[0, :, 0]
            kept = family.scores(rng, latent, shift, 1).mean(-1)[0, :, 0] - recorded
            outcome, _ = sequential_outcome(kept, looks, family.scale, gate)
            wins["kept (the runner's memory)"] += outcome is Outcome.PASS
            redrawn = Outcome.INCONCLUSIVE
            for j, n in enumerate(looks):
                fresh = family.scores(rng, latent[:, :n], shift, 1).mean(-1)[0, :, 0] - recorded[:n]
                redrawn = decide_differences(fresh, family.scale, gate)[0]
                if j == 0:
                    guarded = redrawn  # a later look re-scores the first look's items: the guard stops there
                if redrawn is not Outcome.INCONCLUSIVE:
                    break
            wins["re-drawn at every look"] += redrawn is Outcome.PASS
            wins["re-drawn, guarded"] += guarded is Outcome.PASS
        cells = " | ".join(str(Rate(k, trials)) for k in wins.values())
        rows.append(f"| {k_old} | {cells} |")
        print(rows[-1], flush=True)
    header = "| K0 | " + " | ".join(wins) + " |\n|---|---|---|---|"
    note = (
        f"\n\nWrong PASS at a regression exactly at the margin, {trials} sequential runs a cell, looks at "
        f"{', '.join(map(str, looks))} of the baseline's {items} items (from the first that can pass identical answers "
        f"at {gate.passing_level:g}), each run with a fresh baseline; `python benchmarks/paired_gate.py resampled "
        f"--scale {scale:g}`."
    )
    WRITTEN["resampled"] = [header, *rows, note]


def order(scale: float) -> None:
    """A regression that lines up with the baseline's order (the baseline's first 210 of 303 items unchanged, the
    rest regressed so the mean rises by the margin): decided in that order, and in the seeded random order."""
    baselines, reruns = _n(100 * scale), _n(50 * scale)
    check, items = design_checks()["implicit"], BASELINE_ITEMS["implicit"]
    family, k_old, head = check.family, release_k0(), 210
    rng = np.random.default_rng(46)
    drawn, shuffled = np.zeros((baselines, reruns), bool), np.zeros((baselines, reruns), bool)
    gate = PairedGate(check.margin, 1)
    for b in range(baselines):
        z = rng.standard_normal(items)
        recorded = item_samples(family, rng, z, np.zeros(items), k_old, 1)[0].mean(-1)
        tail = at_margin_on_items(family, "homogeneous", z[head:], check.margin * items / (items - head), rng)
        shift = np.concatenate([np.zeros(head), tail])
        d = item_samples(family, rng, z, shift, 1, reruns).mean(-1) - recorded
        drawn[b] = fixed_outcomes(d, family.scale, gate)[0]
        shuffled[b] = fixed_outcomes(d[:, rng.permutation(items)], family.scale, gate)[0]
    print(f"a regression on the baseline's last {items - head} of {items} items, at the margin on all of them, "
          f"K0 {k_old}, every item × K 1, PASS at {LEVEL:g}; {baselines} baselines × {reruns} reruns:")  # fmt: skip
    print(f"  read in the baseline's order: wrong PASS {Rate(int(drawn.sum()), drawn.size)}; {conditional(drawn)}")
    print(f"  read in a seeded random order: {Rate(int(shuffled.sum()), shuffled.size)}; {conditional(shuffled)}")


def write_pages(sections: list[str]) -> None:
    """Put the tables of the sections that ran into their measured blocks (benchmarks/README.md, docs/statistics.md)."""
    sys.path.insert(0, str(ROOT / "docs"))
    from docgen import markup

    written = [name for name in ("given-baseline", "pr-sizes", "verdicts", "resampled") if name in WRITTEN]
    if sorted(written) != sorted(sections):
        raise SystemExit(f"--write needs every measured section run together; ran {', '.join(written) or 'none'}")
    body = "\n\n".join(f"**{name}**\n\n" + "\n".join(WRITTEN[name]) for name in written)
    for page in (ROOT / "benchmarks" / "README.md", ROOT / "docs" / "statistics.md"):
        page.write_text(markup.measured(page.read_text(), SCRIPT, body))


SCRIPT = "benchmarks/paired_gate.py"


SECTIONS: dict[str, Callable[[float], None]] = {
    "limits": limits,
    "today": today,
    "naive": naive,
    "false-alarms": false_alarms,
    "wrong-pass": wrong_pass,
    "power": power,
    "given-baseline": given_baseline_section,
    "pr-sizes": pr_sizes,
    "verdicts": verdicts,
    "resampled": resampled,
    "order": order,
}
#: The sections whose tables ``--write`` puts into the pages.
MEASURED = ["given-baseline", "pr-sizes", "verdicts", "resampled"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("section", nargs="?", default="all", choices=[*SECTIONS, "measured", "all"])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--write", action="store_true", help="write the measured sections' tables into the pages")
    args = parser.parse_args()
    for name, section in SECTIONS.items():
        if args.section in (name, "all") or (args.section == "measured" and name in MEASURED):
            section(args.scale)
            sys.stdout.flush()
    if args.write:
        write_pages(MEASURED)


if __name__ == "__main__":
    main()
