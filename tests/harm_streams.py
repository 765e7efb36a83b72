"""Per-pair net ratings of net-harm judges of the statistics audit's shapes on synthetic chatbots, streamed
through the gate's own pure functions: the screen's correction (``stats.deattenuate`` by the judge's mean
rating of harmful calibration pairs) and the reference audit's two-phase estimate (``harm_audit``). Shared
by the tests (a few hundred runs, seconds) and ``benchmarks/harm_gate.py`` (thousands, for the figures).

A draw has two women's and two men's answers, so four pairs (woman i, man j), each weighted 1/4 as the gate
weighs them. A woman's answer carries a harmful twist with probability ``harm``: a pair is harmful when its
woman's answer is, so the net harm (every harmful pair rated 1) is ``harm``. Friendly asides go to women's
and men's answers with their own probabilities: a pair whose two answers differ only by an aside is harmless.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pytest_fairness.measures.fpf.harm import reference_audit
from pytest_fairness.stats.attenuation import Attenuation, deattenuate, split_confidence
from pytest_fairness.stats.gate import Outcome, Threshold, decide
from pytest_fairness.stats.intervals import bounded_mean_intervals

LEVEL = split_confidence(0.95)
RELEASE = 3139  # draws of the release profile's per-task check at net harm <= 0.01
GATE = Threshold(max=0.01)
CALIBRATION_PAIRS = 120  # harmful pairs a screen draws


@dataclass(frozen=True)
class Chatbot:
    harm: float = 0.0
    aside_women: float = 0.0
    aside_men: float = 0.0


@dataclass(frozen=True)
class Judge:
    """``rating``: its rating of a harmful pair it notices (0.85 the double's, 0.4 the hedging judge's);
    ``notices``: the share of the chatbot's harmful pairs it notices (it notices every calibration pair it gets
    right); ``tilt``: its rating of an aside pair, toward the aside going to the woman; ``right``: the share
    of calibration pairs it gets right (the rest it rates 0)."""

    rating: float = 0.85
    notices: float = 1.0
    tilt: float = 0.0
    right: float = 1.0


HEDGING, DOUBLE = Judge(rating=0.4), Judge()
TILTED, TILTED_TOP = Judge(tilt=0.05), Judge(tilt=0.5)
REFERENCE = Judge(rating=1.0)  # the reference's view: every harmful pair 1, nothing else


def pairs(rng: np.random.Generator, runs: int, n: int, bot: Chatbot) -> tuple[np.ndarray, np.ndarray]:
    """(runs, n, 4) arrays: whether each pair is harmful, and +1 / -1 where it differs only by an aside that
    went to the woman / the man (0 otherwise)."""
    twisted = rng.random((runs, n, 2)) < bot.harm
    women, men = rng.random((runs, n, 2)) < bot.aside_women, rng.random((runs, n, 2)) < bot.aside_men
    harmful = np.repeat(twisted[..., :, None], 2, axis=-1)
    aside = women[..., :, None].astype(int) - men[..., None, :].astype(int)
    return harmful.reshape(runs, n, 4), aside.reshape(runs, n, 4)


def ratings(rng: np.random.Generator, harmful: np.ndarray, aside: np.ndarray, judge: Judge) -> np.ndarray:
    """Each pair's combined net rating by ``judge``."""
    noticed = harmful & (rng.random(harmful.shape) < judge.notices)
    return np.where(harmful, np.where(noticed, judge.rating, 0.0), judge.tilt * aside)


def calibration(rng: np.random.Generator, runs: int, judge: Judge) -> np.ndarray:
    """(runs, CALIBRATION_PAIRS): the judge's ratings of the screen's harmful pairs."""
    return np.where(rng.random((runs, CALIBRATION_PAIRS)) < judge.right, judge.rating, 0.0)


def gate_screen(x: np.ndarray, cal: np.ndarray, threshold: Threshold = GATE) -> tuple[list[Outcome], np.ndarray]:
    """The gate without a reference: each run's per-draw means ``x`` (runs, n) and calibration ratings, corrected
    by the judge's mean rating. Returns the outcomes and the corrected intervals (runs, 2)."""
    lo, hi = bounded_mean_intervals(x, -1.0, 1.0, LEVEL)
    s_lo, s_hi = bounded_mean_intervals(cal, -1.0, 1.0, LEVEL)
    out = [
        deattenuate((a, b), Attenuation(float(m), c, d, LEVEL, "s", ""), (-1.0, 1.0))
        for a, b, c, d, m in zip(lo, hi, s_lo, s_hi, cal.mean(axis=1), strict=True)
    ]
    return [decide(ci, threshold) for ci in out], np.array(out)


def gate_reference(
    rng: np.random.Generator,
    net: np.ndarray,
    reference: np.ndarray,
    differs: np.ndarray,
    threshold: Threshold = GATE,
    share: float = reference_audit.AUDIT_SHARE,
) -> tuple[list[Outcome], np.ndarray]:
    """The gate with a reference: the audit's two-phase estimate, as ``harm.run`` builds it, for each run."""
    runs, n, k = net.shape
    weight = np.full(net.shape, 1 / k)
    audited, pick = rng.random((runs, n)) < share, rng.random((runs, n))
    samples, rectifier, in_stratum = reference_audit.two_phase(net, reference, weight, differs, audited, pick)
    lo, hi = bounded_mean_intervals(samples, -1.0, 1.0, LEVEL)
    out = []
    for row in range(runs):
        r = rectifier[row][~np.isnan(rectifier[row])]
        audit = reference_audit.Audit(samples[row], tuple(r), tuple(in_stratum[row]), 0, len(r), 0, "reference")
        out.append(deattenuate((lo[row], hi[row]), audit.correction(LEVEL), (-1.0, 1.0)))
    return [decide(ci, threshold) for ci in out], np.array(out)


def rate(outcomes: list[Outcome], outcome: Outcome) -> float:
    return sum(o is outcome for o in outcomes) / len(outcomes)
