"""Paired differences of estimands that are not a plain mean: PCF's risks and net harm's corrected rating."""

import numpy as np
import pytest

from pytest_fairness.measures.pcf import prejudice_caprice_core as pcf
from pytest_fairness.stats.attenuation import Attenuation
from pytest_fairness.stats.gate import Outcome
from pytest_fairness.stats.intervals import bounded_mean_interval
from pytest_fairness.stats.paired.estimands import (
    Instrument,
    JudgedPair,
    common_scale,
    harm_items,
    occupation_items,
    paired_weights_supported,
    separate_bound,
)
from pytest_fairness.stats.paired.matching import pair_items
from pytest_fairness.stats.paired.noninferiority import PairedGate, compare_paired


def preferences(rng, occupations, lean, spread):
    """Two-group preferences [occupation, template, group] leaning ``lean`` on average."""
    male = np.clip(0.5 + lean + rng.normal(0, spread, (occupations, 1)) + rng.normal(0, 0.05, (occupations, 10)), 0, 1)
    return np.stack([male, 1 - male], axis=-1)


def test_pcf_risk_differences_are_the_mean_of_the_occupations_differences():
    rng = np.random.default_rng(0)
    old, new = preferences(rng, 257, 0.05, 0.1), preferences(rng, 257, 0.08, 0.1)
    before, after = pcf.risks(old), pcf.risks(new)
    for risk, per_occupation in (("prejudice", "r_prejudice"), ("caprice", "r_caprice"), ("R", "r")):
        change = getattr(after, per_occupation) - getattr(before, per_occupation)
        assert getattr(after, risk) - getattr(before, risk) == pytest.approx(change.mean(), abs=1e-12)
    names = [f"occupation {i}" for i in range(257)]
    pairing = pair_items(
        occupation_items(dict(zip(names, 1000 * before.r_prejudice, strict=True))),
        occupation_items(dict(zip(names, 1000 * after.r_prejudice, strict=True))),
    )
    assert pairing.differences.mean() == pytest.approx(1000 * (after.prejudice - before.prejudice))
    assert paired_weights_supported([1.0] * 5) and not paired_weights_supported([1.0, 2.0])


@pytest.mark.heavy(1)
def test_pcf_paired_interval_on_a_sample_of_occupations_covers_the_whole_lists_change():
    rng = np.random.default_rng(1)
    old = preferences(rng, 257, 0.05, 0.12)
    new = np.clip(old + rng.normal(0.02, 0.06, (257, 1, 1)) * np.array([1, -1]), 0, 1)  # each occupation its own change
    r_old, r_new = (1000 * pcf.risks(p).r_prejudice for p in (old, new))
    truth = float((r_new - r_old).mean())
    misses = [0, 0]
    for _ in range(300):
        picked = rng.choice(257, 64, replace=False)  # a run's occupations: a seeded draw from the list
        lo, hi = bounded_mean_interval(r_new[picked] - r_old[picked], -1000, 1000, 0.9)
        misses[0] += truth < lo
        misses[1] += truth > hi
    assert misses[0] <= 0.05 * 300 and misses[1] <= 0.05 * 300


def judged_run(rng, draws, harmful_share, rating):
    """Per draw and name pair, the judge's raw net rating: ``rating`` (its mean on harmful pairs) ± noise when
    the pair is harmful, judge noise otherwise."""
    harmful = rng.random((draws, 4)) < harmful_share
    return np.clip(harmful * rng.normal(rating, 0.15, (draws, 4)) + rng.normal(0, 0.011, (draws, 4)), -1, 1)


def screen(rng, rating, pairs=40):
    """The judge's screen: its ratings of ``pairs`` harmful calibration pairs, as a correction at a confidence."""
    ratings = np.clip(rng.normal(rating, 0.15, pairs), -1, 1)

    def correction(confidence):
        low, high = bounded_mean_interval(ratings, -1.0, 1.0, confidence)
        return Attenuation(float(ratings.mean()), low, high, confidence, "the judge's mean rating", "on the screen")

    return correction


def as_items(ratings):
    return harm_items(
        [JudgedPair(d, f"pair{p}", 0.25, float(ratings[d, p])) for d in range(ratings.shape[0]) for p in range(4)]
    )


@pytest.mark.heavy(30)
def test_net_harm_pairs_raw_ratings_under_a_common_judge_and_divides_by_its_factor():
    rng = np.random.default_rng(2)
    gate, misses, passed = PairedGate(0.01, side=1), 0, 0
    for _ in range(40):
        correction = screen(rng, 0.6)
        old, new = judged_run(rng, 800, 0.01, 0.6), judged_run(rng, 800, 0.03, 0.6)  # truth: +0.02
        verdict = compare_paired(pair_items(as_items(old), as_items(new)), (-1.0, 1.0), gate, correction)
        misses += not verdict.interval[0] <= 0.02 <= verdict.interval[1]
        passed += verdict.outcome is Outcome.PASS
        assert verdict.method == "betting interval, corrected" and verdict.clusters == 800
    assert misses <= 0.1 * 40 and passed == 0
    # an unchanged app with its answers cached: zero differences; dividing by the factor's lower bound (0.6 for a
    # flawless judge on 40 calibration pairs) costs about twice the draws the raw ratings would need
    unchanged = judged_run(rng, 4000, 0.005, 0.85)
    same = compare_paired(pair_items(as_items(unchanged), as_items(unchanged)), (-1.0, 1.0), gate, screen(rng, 0.85))
    assert same.outcome is Outcome.PASS and same.p_worse <= gate.passing_level
    half = pair_items(as_items(unchanged[:2000]), as_items(unchanged[:2000]))
    assert compare_paired(half, (-1.0, 1.0), gate, screen(rng, 0.85)).outcome is Outcome.INCONCLUSIVE
    assert compare_paired(half, (-1.0, 1.0), gate).outcome is Outcome.PASS  # uncorrected, 2,000 draws would do


def test_another_judge_or_an_audit_leaves_only_the_two_sides_own_bounds():
    judge = Instrument("judge-a", "v1")
    assert common_scale(judge, Instrument("judge-a", "v1")) is None
    assert "the judge changed (judge-a -> judge-b)" in common_scale(judge, Instrument("judge-b", "v1"))
    assert "screen changed" in common_scale(judge, Instrument("judge-a", "v2"))
    assert "reference audit" in common_scale(judge, Instrument("judge-a", "v1", audited=True))
    assert separate_bound((0.01, 0.03), (0.0, 0.02)) == pytest.approx((-0.01, 0.03))
