"""The two-phase estimate (``stats.two_phase``): a cheap judge on every pair, a reference on the flagged ones and
on a known-probability sample of the clean ones. Its samples are unbiased for the reference's view whatever the
cheap judge does, stay within their stated bound, weigh the cheap judge only by earlier audits, and its gate
(the betting interval on them, at the whole confidence) wrongly passes a harm at the threshold at most as often
as its error allows, at a fixed size and at every look of a sequential run."""

from __future__ import annotations

import numpy as np
import pytest
from harm_streams import (
    BLIND,
    CHEAP,
    HEDGING,
    LEAN70,
    NOISE,
    NOISY_REFERENCE,
    TRIAGE,
    Chatbot,
    Judge,
    gate_reference,
    pairs,
    ratings,
    reference_samples,
)
from scipy import stats as sps

from pytest_fairness.stats import two_phase
from pytest_fairness.stats.confidence_sequence import confidence_sequence_path
from pytest_fairness.stats.gate import Outcome, Threshold


def _draws(seed: int, runs: int, n: int, bot: Chatbot, judge: Judge, k: int):
    rng = np.random.default_rng(seed)
    harmful, aside = pairs(rng, runs, n, bot, k)
    differs = np.ones(harmful.shape, dtype=bool)
    return rng, ratings(rng, harmful, aside, judge), ratings(rng, harmful, aside, NOISY_REFERENCE), differs


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("judge", [CHEAP, HEDGING, BLIND, LEAN70], ids=["honest", "hedging", "blind", "leaning"])
def test_the_samples_are_unbiased_for_the_references_view_whatever_the_cheap_judge(judge, k):
    bot = Chatbot(harm=0.05, aside_women=0.3, aside_men=0.6)
    rng, net, reference, differs = _draws(5, 400, 1000, bot, judge, k)
    z, _ = reference_samples(rng, net, reference, differs, 0.3)
    truth = reference.mean(axis=-1)  # each draw's own weighted mean as the reference rates it (weights 1/k²)
    gap = z.mean(axis=-1) - truth.mean(axis=-1)
    assert abs(gap.mean()) < 4 * gap.std(ddof=1) / np.sqrt(gap.size)


def test_the_samples_never_leave_the_stated_bound():
    # The extremes: every pair clean just under the triage, the reference at +-1, the smallest share, lambda at
    # its largest (the cheap judge's scores track the reference's exactly on earlier audits).
    design = two_phase.TwoPhaseDesign(TRIAGE, 0.1)
    rng = np.random.default_rng(0)
    n = 5000
    net = np.full((n, 1), TRIAGE - 1e-9) * rng.choice([-1, 1], (n, 1))
    reference = np.sign(net) * 1.0
    parts = two_phase.parts(
        net, reference, np.ones((n, 1)), np.ones((n, 1), bool), rng.random(n), rng.random(n), design
    )
    z = two_phase.samples(parts, design)
    assert np.abs(z).max() <= design.bound and np.abs(z).max() > 0.9 * design.bound
    assert design.bound == pytest.approx(TRIAGE + (1 + TRIAGE) / 0.1)
    assert two_phase.TwoPhaseDesign(TRIAGE, 1.0).bound == pytest.approx(1 + 2 * TRIAGE)


def test_the_cheap_judges_weight_uses_only_earlier_audits():
    design = two_phase.TwoPhaseDesign(TRIAGE, 0.5)
    rng, net, reference, differs = _draws(1, 1, 400, Chatbot(aside_women=0.5, aside_men=0.5), CHEAP, 1)
    coin, pick = rng.random(400), rng.random(400)
    base = two_phase.parts(net[0], reference[0], np.ones((400, 1)), differs[0], coin, pick, design)
    changed = reference[0].copy()
    changed[200:] = -changed[200:]  # the reference changes its mind on draw 200 and after
    later = two_phase.parts(net[0], changed, np.ones((400, 1)), differs[0], coin, pick, design)
    lam, lam_later = two_phase.cheap_weights(base), two_phase.cheap_weights(later)
    assert np.array_equal(lam[:201], lam_later[:201]) and not np.array_equal(lam, lam_later)
    assert lam[0] == 0 and (lam >= 0).all() and (lam <= design.lam_max).all()
    assert np.array_equal(two_phase.samples(base, design)[:200], two_phase.samples(later, design)[:200])


def test_no_units_give_no_weights_and_no_samples():
    design = two_phase.TwoPhaseDesign(TRIAGE, 0.4)
    empty = two_phase.joined([])  # e.g. a sequential run's first look before any draw is scored
    assert two_phase.cheap_weights(empty).shape == (0,)
    assert two_phase.samples(empty, design).shape == (0,)


def test_chunks_of_units_give_the_same_samples_bit_for_bit():
    design = two_phase.TwoPhaseDesign(TRIAGE, 0.4)
    rng, net, reference, differs = _draws(2, 1, 900, Chatbot(harm=0.02, aside_men=0.5), CHEAP, 2)
    coin, pick, weight = rng.random(900), rng.random(900), np.full((900, 4), 0.25)
    whole = two_phase.parts(net[0], reference[0], weight, differs[0], coin, pick, design)
    pieces = [
        two_phase.parts(net[0][s], reference[0][s], weight[s], differs[0][s], coin[s], pick[s], design)
        for s in (slice(0, 123), slice(123, 500), slice(500, 900))
    ]
    assert np.array_equal(two_phase.samples(whole, design), two_phase.samples(two_phase.joined(pieces), design))


@pytest.mark.heavy(4)
def test_a_harm_at_the_threshold_passes_at_most_as_often_as_the_gates_error_allows():
    t, runs = 0.02, 2000
    outcomes: list[Outcome] = []
    for start in range(0, runs, 500):
        rng, net, reference, differs = _draws(10 + start, 500, 1500, Chatbot(harm=t, aside_men=0.5), CHEAP, 1)
        outcomes += gate_reference(rng, net, reference, differs, Threshold(max=t), clean_share=0.3)[0]
    passed = sum(o is Outcome.PASS for o in outcomes)
    assert sps.binomtest(passed, runs).proportion_ci().high <= 0.05 and passed / runs <= 0.025 + 3 * 0.0035


@pytest.mark.heavy(15)
def test_the_confidence_sequence_on_the_samples_covers_at_every_look():
    design = two_phase.TwoPhaseDesign(TRIAGE, 0.4)
    rng, net, reference, differs = _draws(3, 300, 2000, Chatbot(harm=0.02, aside_women=0.5, aside_men=0.5), CHEAP, 1)
    z, _ = reference_samples(rng, net, reference, differs, 0.4)
    truth = 0.02 * (1 - NOISE / 4)  # the reference rates a harmful pair 1 less its clipped jitter on average
    missed = 0
    for row in z:
        path = confidence_sequence_path(row, -design.bound, design.bound, 0.05, sizes=[250, 500, 1000, 2000])
        missed += bool(((path[:, 0] > truth) | (path[:, 1] < truth)).any())
    assert sps.binomtest(missed, 300).proportion_ci().high <= 0.05
