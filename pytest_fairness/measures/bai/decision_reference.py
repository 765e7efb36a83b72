"""Decision coding with a reference (``--fairness-judge-reference`` with ``coder: judge``): the share of stereotyped
decisions as the reference codes them, from the judge's codes of every answer and the reference's of a sample.

The judge codes every answer (``decision_judge``). The reference re-codes every answer the judge could not code
or was unsure of (its top letter's share below ``SURE``), and, in a share ``clean_share`` of the others (a coin
per answer, which no model sees), audits the judge's code. For each answer the two-phase samples
(``stats.two_phase``) of "the reference codes it stereotyped" (A) and "the reference codes a decision at all"
(U) are unbiased for their means whatever the judge does, and within ±B. The gated share E[A] / E[U] is then
the ratio rule of ``stats.attenuation``: A's interval divided by the bounds of U's mean (a confidence sequence,
valid at every look), the error split between them, which is what a judge's attenuation is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pytest_fairness.measures.bai.decision_coding import DecisionCode
from pytest_fairness.stats import two_phase
from pytest_fairness.stats.attenuation import Attenuation, split_confidence
from pytest_fairness.stats.confidence_sequence import confidence_sequence
from pytest_fairness.stats.two_phase import TwoPhaseDesign

#: The judge's top letter must have at least this share for its code to stand without the reference.
SURE = 0.9
#: Share of the confidently coded answers whose code the reference audits.
CLEAN_SHARE = 0.4
#: Share of answers the plan prices as re-coded because the judge was unsure of them or could not code them.
UNSURE_ALLOWANCE = 0.25


def design(clean_share: float = CLEAN_SHARE) -> TwoPhaseDesign:
    """Codes lie in [0, 1] and the judge's doubt, not its code, sorts the answers: its triage is the scale."""
    return TwoPhaseDesign(1.0, clean_share)


def unsure(codes: Sequence[DecisionCode], shares: Sequence[float]) -> np.ndarray:
    """The answers the reference re-codes every time: no code from the judge, or a top letter below ``SURE``."""
    return np.array([c.code is None or s < SURE for c, s in zip(codes, shares, strict=True)])


def audited(seed: int, units: int, shares: Sequence[float], codes: Sequence[DecisionCode], share: float) -> np.ndarray:
    """Which answers the reference is asked: the unsure ones and the audited sample of the others."""
    d, doubt = design(share), unsure(codes, shares)
    coin = np.array([two_phase.coin(seed, "decision", i) for i in range(units)])
    values = np.array([float(c.code or 0) for c in codes])[:, None]
    ones = np.ones((units, 1))
    return two_phase.asked(values, ones, ones.astype(bool), coin, np.zeros(units), d, doubt[:, None])[:, 0]


def samples(
    seed: int, codes: Sequence[DecisionCode], shares: Sequence[float], reference: dict[int, DecisionCode], share: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per answer, the two-phase samples of A (stereotyped, as the reference codes it) and U (a decision at all);
    ``reference`` holds the reference's codes of the answers it was asked."""
    units, d, doubt = len(codes), design(share), unsure(codes, shares)[:, None]
    coin = np.array([two_phase.coin(seed, "decision", i) for i in range(units)])
    ones, pick = np.ones((units, 1)), np.zeros(units)
    cheap_a = np.array([[float(c.code == 1)] for c in codes])
    cheap_u = np.array([[float(c.code is not None)] for c in codes])
    seen_a, seen_u = np.full((units, 1), np.nan), np.full((units, 1), np.nan)
    for i, code in reference.items():
        seen_a[i, 0], seen_u[i, 0] = float(code.code == 1), float(code.code is not None)
    flags = ones.astype(bool)
    z_a = two_phase.samples(two_phase.parts(cheap_a, seen_a, ones, flags, coin, pick, d, doubt), d)
    z_u = two_phase.samples(two_phase.parts(cheap_u, seen_u, ones, flags, coin, pick, d, doubt), d)
    return z_a, z_u


def correction(z_u: np.ndarray, share: float, confidence: float, reference: str) -> Attenuation:
    """The share's correction: observed A ≈ E[U] × share, so the A samples' interval is divided by the bounds of
    U's mean (a confidence sequence at the split confidence), on A's range ±B."""
    bound = design(share).bound
    level = split_confidence(confidence)
    low, high = confidence_sequence(z_u, -bound, bound, 1 - level) if z_u.size else (0.0, 1.0)
    mean = float(np.mean(z_u)) if z_u.size else math.nan
    return Attenuation(
        mean,
        max(low, 0.0),
        min(high, 1.0),
        level,
        f"the share of answers with a decision as the reference {reference} codes them",
        f"(two-phase, samples within ±{bound:.2f})",
        sample_bounds=(-bound, bound),
    )
