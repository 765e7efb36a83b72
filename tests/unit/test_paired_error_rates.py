"""The paired gate's error rates where a pull-request gate lives, simulated with fixed seeds (model-free).

Synthetic releases with item effects (``testing.releases``, at pairing correlation ρ = 0.5 unless stated):
false alarms of an unchanged release given one recorded baseline, wrong PASS at the margin per family under
sequential growth, and the items a paired gate needs against today's unpaired comparison. Larger counts:
``python benchmarks/paired_gate.py`` (docs/statistics.md has its figures).
"""

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats as sps

from pytest_fairness.stats.gate import Outcome
from pytest_fairness.stats.intervals import proportion_interval
from pytest_fairness.stats.paired.allocation import Components, plan
from pytest_fairness.stats.paired.noninferiority import PairedGate, baseline_level
from pytest_fairness.testing.paired_trials import conditional, fixed_outcomes, sequential_outcome
from pytest_fairness.testing.releases import (
    Decision,
    Implicit,
    NetHarm,
    Pcf,
    Quality,
    Trial,
    for_rho,
    paired_differences,
    unpaired_samples,
)

RHO = 0.5


def religion(rho=RHO):
    """The religion suite's checks: implicit bias (4 + 4 words) and decisions, three stereotypes each."""
    return [(for_rho(Implicit(), rho), 0.1)] * 3 + [(for_rho(Decision(), rho), 0.1)] * 3


def components(family, k_old=1):
    between, within = family.variances()
    return Components(between, within, k_old, family.cluster_size)


def test_a_naive_paired_test_fails_far_more_than_alpha_given_an_unlucky_baseline():
    """Why one recorded baseline is hard: the baseline's own noise shifts every rerun's difference alike."""
    family, n = for_rho(Implicit(), RHO), 50
    d = paired_differences(family, np.random.default_rng(10), Trial(n), 0.0, 150, 150)
    t = d.mean(-1) / (d.std(-1, ddof=1) / math.sqrt(n))
    rates = conditional(t > sps.t.ppf(0.95, n - 1))  # one-sided paired t at 0.05 against a margin of 0
    assert rates.mean <= 0.07  # on average over baselines it holds its level
    assert rates.q95.value >= 0.15 and rates.worst.value >= 0.3  # but not given the baseline one keeps


@pytest.mark.heavy(8)
def test_an_unchanged_release_given_one_baseline_fails_the_paired_religion_suite_rarely():
    baselines, reruns = 60, 60
    fails = np.zeros((baselines, reruns), bool)
    for i, (family, margin) in enumerate(religion()):
        sized = plan(components(family), margin, family.scale[1] - family.scale[0], item_cost=1, sample_cost=1)
        d = paired_differences(
            family, np.random.default_rng(20 + i), Trial(sized.clusters // 2), 0.0, baselines, reruns
        )
        fails |= fixed_outcomes(d, family.scale, PairedGate(margin, 1), checks=6)[1]
    rates = conditional(fails)
    assert rates.mean <= 0.05 and rates.q95.value <= 0.05
    assert proportion_interval(int(fails.sum()), fails.size)[1] <= 0.05


@pytest.mark.heavy(5)
def test_the_fail_level_leaves_at_most_a_twentieth_of_baselines_above_alpha():
    """Markov: FAIL at alpha·γ overall means at most γ of baselines see reruns fail more than alpha of the time.
    Checked where failing is easy: a tiny margin and few items, so that a looser level would fail often."""
    family, n = for_rho(Implicit(), 0.2), 40
    d = paired_differences(family, np.random.default_rng(30), Trial(n), 0.0, 200, 200)
    strict = fixed_outcomes(d, family.scale, PairedGate(1e-6, 1))[1]
    loose = fixed_outcomes(d, family.scale, PairedGate(1e-6, 1, fail_alpha=0.2))[1]
    assert strict.mean() <= baseline_level() and np.mean(conditional(strict).rates > 0.05) <= 0.05
    assert np.mean(conditional(loose).rates > 0.05) > 0.05  # the check can fail: a looser level breaks the promise


FAMILIES = {
    "implicit": (for_rho(Implicit(), RHO), 0.1),
    "decision": (for_rho(Decision(), RHO), 0.1),
    "pcf": (for_rho(Pcf(), RHO, "change_sd", high=5000.0), 50.0),
    "net_harm": (replace(NetHarm(), q=RHO), 0.01),
    "quality": (for_rho(Quality(), RHO), 0.25),
}


@pytest.mark.heavy(15)
@pytest.mark.parametrize("name", FAMILIES)
def test_a_regression_at_the_margin_rarely_passes_under_sequential_growth(name):
    family, margin = FAMILIES[name]
    gate = PairedGate(margin, 1, sequential=True)
    width = family.scale[1] - family.scale[0]
    sized = plan(components(family), margin, width, item_cost=1, sample_cost=1, alpha=gate.passing_level)
    looks = [sized.clusters // 2, sized.clusters, 2 * sized.clusters]
    d = paired_differences(family, np.random.default_rng(40), Trial(looks[-1]), family.shift_for(margin), 400, 1)
    outcomes = [sequential_outcome(row, looks, family.scale, gate)[0] for row in d[:, 0, :]]
    passes = sum(o is Outcome.PASS for o in outcomes)
    assert passes <= 0.05 * len(outcomes)
    lower = fixed_outcomes(d[:, 0, : looks[1]], family.scale, replace(gate, margin=2 * margin, sequential=False))[0]
    assert lower.mean() > 0.25  # the same trials pass a margin twice as wide: the gate is not merely stuck


def _welch_pass_rate(family, margin, n, reps, rng):
    old, new = unpaired_samples(family, rng, n, 0.0, reps)
    v = old.var(-1, ddof=1) / n + new.var(-1, ddof=1) / n
    df = v**2 / ((old.var(-1, ddof=1) / n) ** 2 / (n - 1) + (new.var(-1, ddof=1) / n) ** 2 / (n - 1))
    return float(np.mean(new.mean(-1) - old.mean(-1) + sps.t.ppf(0.95, df) * np.sqrt(v) < margin))


@pytest.mark.heavy(1)
def test_pairing_needs_fewer_items_than_todays_comparison_when_noise_not_the_floor_decides():
    """Implicit bias at ρ = 0.5, margin 0.1, both at the same level (0.05, as today's Welch is taken): at 240
    items the paired gate passes an unchanged release in 80% of runs where today's Welch comparison does not;
    with four samples per item on baseline and run, 120 do."""
    family, rng, gate = for_rho(Implicit(), RHO), np.random.default_rng(50), PairedGate(0.1, 1, pass_alpha=0.05)
    paired = fixed_outcomes(paired_differences(family, rng, Trial(240), 0.0, 800, 1)[:, 0], family.scale, gate)
    assert paired[0].mean() >= 0.78 and _welch_pass_rate(family, 0.1, 240, 800, rng) < 0.7
    k4 = paired_differences(family, rng, Trial(120, 4, 4), 0.0, 800, 1)[:, 0]
    assert fixed_outcomes(k4, family.scale, gate)[0].mean() >= 0.78
    assert _welch_pass_rate(family, 0.1, 300, 800, rng) < 0.8  # today's needs more than 2.5× the items


@pytest.mark.heavy(10)
def test_a_check_sized_for_an_unlucky_baseline_passes_an_unchanged_release_given_it():
    """Where a run must PASS to go through, false alarms are a matter of size: planned for 95% given a baseline at
    its 95th percentile, the 95th-percentile baseline's reruns pass at least 95% of the time."""
    family, margin, level = for_rho(Decision(), RHO), 0.1, PairedGate(0.1, 1).passing_level
    sized = plan(components(family), margin, 1.0, item_cost=1, sample_cost=1, power=0.95, baseline_quantile=0.95,
                 alpha=level)  # fmt: skip
    usual = plan(components(family), margin, 1.0, item_cost=1, sample_cost=1, alpha=level)
    rng = np.random.default_rng(60)
    for size, holds in ((sized.clusters, True), (usual.clusters, False)):
        d = paired_differences(family, rng, Trial(size), 0.0, 40, 150)
        rates = conditional(~fixed_outcomes(d, family.scale, PairedGate(margin, 1))[0])
        assert (rates.q95.value <= 0.05) is holds and rates.mean <= (0.05 if holds else 0.5)
