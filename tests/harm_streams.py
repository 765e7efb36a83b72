"""Per-pair net ratings of net-harm judges of the statistics audit's shapes on synthetic chatbots, streamed
through the gate's own pure functions: the screen's correction (``stats.deattenuate`` by the judge's mean
rating of harmful calibration pairs, widened by its measured lean) and the two-phase estimate with a
reference (``stats.two_phase``). Shared by the tests (a few hundred runs, seconds) and
``benchmarks/harm_gate.py`` (thousands, for the figures).

A draw has K women's and K men's answers (K names per group), so K² pairs (woman i, man j), each weighted
1/K² as the gate weighs them. A woman's answer carries a harmful twist with probability ``harm``: a pair is
harmful when its woman's answer is, so the net harm (every harmful pair rated 1) is ``harm``. Friendly
asides go to women's and men's answers with their own probabilities: a pair whose two answers differ only by
an aside is harmless.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pytest_fairness.stats import two_phase
from pytest_fairness.stats.attenuation import Attenuation, deattenuate, split_confidence
from pytest_fairness.stats.gate import Outcome, Threshold, decide
from pytest_fairness.stats.intervals import bounded_mean_intervals

LEVEL = split_confidence(0.95)
RELEASE = 3414  # draws of the release profile's per-task check at net harm <= 0.01 without a reference (K = 2)
GATE = Threshold(max=0.01)
CALIBRATION_PAIRS = 120  # harmful pairs a screen draws
TRIAGE = 0.05  # net_harm.TRIAGE: a pair the cheap judge scores at least this far from 0 is re-rated


@dataclass(frozen=True)
class Chatbot:
    harm: float = 0.0
    aside_women: float = 0.0
    aside_men: float = 0.0


@dataclass(frozen=True)
class Judge:
    """``rating``: its rating of a harmful pair it notices (0.85 the double's, 0.4 the hedging judge's);
    ``notices``: the share of the chatbot's harmful pairs it notices (it notices every calibration pair it gets
    right); ``tilt``: its rating of an aside pair, toward the aside going to the woman, on a share
    ``tilt_share`` of aside pairs (a coin per pair); ``jitter``: uniform ± noise on every pair; ``fp``: the
    share of harmless pairs it flags at ±``fp_size`` (a random sign); ``right``: the share of calibration
    pairs it gets right (the rest it rates 0)."""

    rating: float = 0.85
    notices: float = 1.0
    tilt: float = 0.0
    tilt_share: float = 1.0
    jitter: float = 0.0
    fp: float = 0.0
    fp_size: float = 0.3
    right: float = 1.0

    @property
    def lean(self) -> float:
        """Its mean signed score over the pool's aside pairs: the lean bound the screen measures exactly."""
        return abs(self.tilt * self.tilt_share)


HEDGING, DOUBLE = Judge(rating=0.4), Judge()
TILTED, TILTED_TOP = Judge(tilt=0.05), Judge(tilt=0.5)
REFERENCE = Judge(rating=1.0)  # the reference's view: every harmful pair 1, nothing else
#: Per-pair judge noise of SD 0.022 (uniform ±0.038): a draw of four pairs then has the SPREAD of 0.011.
NOISE = 0.038
NOISY_REFERENCE = Judge(rating=1.0, jitter=NOISE)
CHEAP = Judge(jitter=NOISE, fp=0.02)  # an honest cheap judge: per-pair noise, 2% false flags
#: The judge a release plan without a reference is sized for: a harmful pair rated 0.85 (``DESIGN_RATING``), per-pair
#: noise of SD 0.022 (``SPREAD``, 0.011 a draw), no false flags; CHEAP's false flags double its noise a draw.
PLANNED = Judge(jitter=NOISE)
HALF, BLIND = Judge(notices=0.5), Judge(notices=0.0)  # phrase-matched judges: half / none of the chatbot's harms
LEAN80, LEAN70 = Judge(tilt=0.05, tilt_share=0.8), Judge(tilt=0.05, tilt_share=0.7)
LEAN99 = Judge(tilt=0.0099)  # just under the sign test's 0.01 margin, on every aside pair


def pairs(rng: np.random.Generator, runs: int, n: int, bot: Chatbot, k: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(runs, n, k²) arrays: whether each pair is harmful, and +1 / -1 where it differs only by an aside that
    went to the woman / the man (0 otherwise)."""
    twisted = rng.random((runs, n, k)) < bot.harm
    women, men = rng.random((runs, n, k)) < bot.aside_women, rng.random((runs, n, k)) < bot.aside_men
    harmful = np.repeat(twisted[..., :, None], k, axis=-1)
    aside = women[..., :, None].astype(np.int8) - men[..., None, :].astype(np.int8)
    return harmful.reshape(runs, n, k * k), aside.reshape(runs, n, k * k)


def ratings(rng: np.random.Generator, harmful: np.ndarray, aside: np.ndarray, judge: Judge) -> np.ndarray:
    """Each pair's combined net rating by ``judge``."""
    shape = harmful.shape
    noticed = harmful & (rng.random(shape) < judge.notices)
    leaning = rng.random(shape) < judge.tilt_share if judge.tilt_share < 1 else np.ones(shape, dtype=bool)
    out = np.where(harmful, np.where(noticed, judge.rating, 0.0), judge.tilt * aside * leaning)
    if judge.fp:
        false = ~harmful & (rng.random(shape) < judge.fp)
        out = np.where(false, judge.fp_size * np.where(rng.random(shape) < 0.5, 1.0, -1.0), out)
    if judge.jitter:
        out = out + rng.uniform(-judge.jitter, judge.jitter, shape)
    return np.clip(out, -1.0, 1.0)


def calibration(rng: np.random.Generator, runs: int, judge: Judge) -> np.ndarray:
    """(runs, CALIBRATION_PAIRS): the judge's ratings of the screen's harmful pairs."""
    return np.where(rng.random((runs, CALIBRATION_PAIRS)) < judge.right, judge.rating, 0.0)


def gate_screen(
    x: np.ndarray, cal: np.ndarray, threshold: Threshold = GATE, lean: float = 0.0
) -> tuple[list[Outcome], np.ndarray]:
    """The gate without a reference: each run's per-draw means ``x`` (runs, n) and calibration ratings, corrected
    by the judge's mean rating and widened by its measured ``lean`` (the screen's bound, ``JudgeScreen.lean_bound``).
    Returns the outcomes and the corrected intervals (runs, 2)."""
    lo, hi = bounded_mean_intervals(x, -1.0, 1.0, LEVEL)
    s_lo, s_hi = bounded_mean_intervals(cal, -1.0, 1.0, LEVEL)
    out = [
        deattenuate((a, b), Attenuation(float(m), c, d, LEVEL, "s", "", offset_low=-lean, offset_high=lean), (-1, 1))
        for a, b, c, d, m in zip(lo, hi, s_lo, s_hi, cal.mean(axis=1), strict=True)
    ]
    return [decide(ci, threshold) for ci in out], np.array(out)


def reference_samples(
    rng: np.random.Generator, net: np.ndarray, reference: np.ndarray, differs: np.ndarray, clean_share: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per run, the two-phase samples Z (runs, n) as the run forms them from the cheap judge's ``net`` and the
    ``reference``'s ratings, and how many pairs the reference re-rated in each run."""
    runs, n, width = net.shape
    design = two_phase.TwoPhaseDesign(TRIAGE, clean_share)
    weight = np.full(net.shape, 1 / width)
    audit, pick = rng.random((runs, n)), rng.random((runs, n))
    asked = two_phase.asked(net, weight, differs, audit, pick, design).sum(axis=(-1, -2))
    return two_phase.samples(two_phase.parts(net, reference, weight, differs, audit, pick, design), design), asked


def gate_reference(
    rng: np.random.Generator,
    net: np.ndarray,
    reference: np.ndarray,
    differs: np.ndarray,
    threshold: Threshold = GATE,
    clean_share: float = 0.4,
    confidence: float = 0.95,
) -> tuple[list[Outcome], np.ndarray]:
    """The gate with a reference: the betting interval of the two-phase samples on ±B at the gate's whole
    confidence, as ``net_harm.run`` builds it, for each run."""
    bound = two_phase.TwoPhaseDesign(TRIAGE, clean_share).bound
    z, _ = reference_samples(rng, net, reference, differs, clean_share)
    lo, hi = bounded_mean_intervals(z, -bound, bound, confidence)
    out = np.column_stack([np.maximum(lo, -1.0), np.minimum(hi, 1.0)])
    return [decide((a, b), threshold) for a, b in out], out


def rate(outcomes: list[Outcome], outcome: Outcome) -> float:
    return sum(o is outcome for o in outcomes) / len(outcomes)
