"""Two-phase estimation: a cheap instrument on every unit, a strong reference on a sample of known probability.

A measure scored by a judge can certify what a stronger reference would say without paying the reference
for every item. For a unit d (a prompt draw) with items i (its answer pairs) of weights w_i summing to 1,
the cheap judge's score J_i and the reference's Y_i (read only where the reference was asked), both within
[-scale, scale]:

- items the cheap judge flags or is unsure of, |J_i| >= ``triage`` (R_d), are re-rated by the reference
  every time;
- of the other items (C_d, "clean", total weight W_C), one is audited in a share ``clean_share`` (π) of
  the units: a coin per unit that the models never see, and a pick with probability w_j / W_C.

The unit's sample is

    Z_d = Σ_{R_d} w_i Y_i + λ_d Σ_{C_d} w_i J_i + (ξ_d / π) · W_C · (Y_j − λ_d J_j)

with ξ_d the audit coin. Given the unit's answers and both judges' scores, the last term's expectation is
Σ_{C_d} w_i (Y_i − λ_d J_i), so E[Z_d] = E[Σ_i w_i Y_i] = θ, the reference's view, whatever the cheap judge
does (Horvitz–Thompson on a stratified sample). λ_d (prediction-powered inference with a power-tuned
weight, PPI++) is the regression of Y on J over the audits of *earlier* units only, clipped to [0, λ_max]:
it is fixed before unit d is seen, so E[Z_d | earlier units] = θ still holds and the samples are a
martingale-difference sequence around θ. λ = 1 is the difference estimator, λ = 0 plain Horvitz–Thompson.

Every Z_d lies within ±``TwoPhaseDesign.bound`` (known before the run), so the betting interval
(``intervals.bounded_mean_interval``: fixed n) and the confidence sequence
(``confidence_sequence.confidence_sequence``: every look) apply to Z unchanged, at the gate's whole
confidence: nothing is split between an estimate and a correction. The coins make the audit prefix-stable,
so a unit's Z is the same in any longer run, and in any chunking of it (``parts`` keeps a few numbers per
unit; ``samples`` forms Z at the end, in unit order).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

#: Largest weight of the cheap judge's scores (λ): 1 is the plain difference estimator.
LAMBDA_MAX = 1.0


@dataclass(frozen=True)
class TwoPhaseDesign:
    """Which items the reference sees: every one at least ``triage`` from 0 on the cheap judge's score, and one
    clean item in ``clean_share`` of the units; scores lie within ±``scale``; λ within [0, ``lam_max``]. A coder
    whose doubt decides the strata (``unsure``) has clean scores anywhere on the scale: its triage is the scale."""

    triage: float
    clean_share: float
    scale: float = 1.0
    lam_max: float = LAMBDA_MAX

    def __post_init__(self) -> None:
        if not 0 < self.clean_share <= 1:
            raise ValueError(f"clean_share must lie in (0, 1], got {self.clean_share}")
        if not 0 <= self.triage <= self.scale:
            raise ValueError(f"triage must lie in [0, {self.scale}], got {self.triage}")

    @property
    def bound(self) -> float:
        """The largest |Z_d|: a unit whose every item is clean and audited, its pick as far as it can be."""
        cheap = self.lam_max * self.triage
        return max(self.scale, cheap + (self.scale + cheap) / self.clean_share)


@dataclass(frozen=True)
class Parts:
    """Per unit (arrays of one length, in unit order), what Z needs: the re-rated items' weighted reference
    scores, the clean items' weighted cheap scores, the audited pick's Horvitz–Thompson factor ξ W_C / π
    (0 when the unit was not audited), and the pick's reference and cheap scores (0 when not audited)."""

    rerated: np.ndarray
    cheap: np.ndarray
    factor: np.ndarray
    audited_value: np.ndarray
    audited_cheap: np.ndarray

    def __len__(self) -> int:
        return int(self.rerated.size)

    @property
    def audited(self) -> np.ndarray:
        return self.factor > 0


def coin(seed: int, *parts: object) -> float:
    """A uniform number in [0, 1) from a hash of ``seed`` and ``parts``: the audit's coins, never seen by a model,
    the same for a unit whatever else the run holds."""
    digest = hashlib.sha256(":".join(map(str, ("two-phase", seed, *parts))).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def strata(
    net: np.ndarray, differs: np.ndarray, design: TwoPhaseDesign, unsure: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(re-rated, clean) masks: differing items the cheap judge scored at least ``triage`` from 0 (or, given,
    those it was ``unsure`` of: a coder's own doubt), and the rest."""
    rerated = differs & (np.abs(net) >= design.triage if unsure is None else unsure)
    return rerated, differs & ~rerated


def picked(
    net: np.ndarray,
    weight: np.ndarray,
    differs: np.ndarray,
    audit: np.ndarray,
    pick: np.ndarray,
    design: TwoPhaseDesign,
    unsure: np.ndarray | None = None,
) -> np.ndarray:
    """The audited clean item of each unit (a mask shaped like ``net``): in units whose ``audit`` coin is below
    the clean share and that have clean items, the one ``pick`` lands on, with probability ∝ weight. Arrays
    are (..., units, items) with weight 0 for padding; ``audit`` and ``pick`` (..., units)."""
    _, clean = strata(net, differs, design, unsure)
    w = np.where(clean, weight, 0.0)
    total = w.sum(axis=-1, keepdims=True)
    cumulative = np.cumsum(w, axis=-1) / np.where(total > 0, total, 1.0)
    first = np.argmax(cumulative > pick[..., None], axis=-1)
    chosen = np.zeros(net.shape, dtype=bool)
    np.put_along_axis(chosen, first[..., None], True, axis=-1)
    return chosen & clean & ((audit < design.clean_share) & (total[..., 0] > 0))[..., None]


def asked(
    net: np.ndarray,
    weight: np.ndarray,
    differs: np.ndarray,
    audit: np.ndarray,
    pick: np.ndarray,
    design: TwoPhaseDesign,
    unsure: np.ndarray | None = None,
) -> np.ndarray:
    """Which items the reference is asked: every re-rated one and each audited unit's pick."""
    return strata(net, differs, design, unsure)[0] | picked(net, weight, differs, audit, pick, design, unsure)


def parts(
    net: np.ndarray,
    reference: np.ndarray,
    weight: np.ndarray,
    differs: np.ndarray,
    audit: np.ndarray,
    pick: np.ndarray,
    design: TwoPhaseDesign,
    unsure: np.ndarray | None = None,
) -> Parts:
    """Each unit's ``Parts`` (arrays (units, items)); ``reference`` is read only where ``asked`` says."""
    rerated, clean = strata(net, differs, design, unsure)
    chosen = picked(net, weight, differs, audit, pick, design, unsure)
    clean_weight = np.where(clean, weight, 0.0).sum(axis=-1)
    audited = chosen.any(axis=-1)
    return Parts(
        rerated=(weight * np.where(rerated, reference, 0.0)).sum(axis=-1),
        cheap=(weight * np.where(clean, net, 0.0)).sum(axis=-1),
        factor=np.where(audited, clean_weight / design.clean_share, 0.0),
        audited_value=np.where(chosen, reference, 0.0).sum(axis=-1),
        audited_cheap=np.where(chosen, net, 0.0).sum(axis=-1),
    )


def joined(pieces: list[Parts]) -> Parts:
    """Parts of consecutive runs of units (chunks, in order) as one."""
    if not pieces:
        empty = np.zeros(0)
        return Parts(empty, empty, empty, empty, empty)
    return Parts(*(np.concatenate([getattr(p, f) for p in pieces]) for f in Parts.__dataclass_fields__))


def cheap_weights(p: Parts, lam_max: float = LAMBDA_MAX) -> np.ndarray:
    """λ_d for every unit: Σ h y j / Σ h j² over the audits of the units before it (h their factor; 0 before
    any audit, or while the cheap scores of those audits are all 0), clipped to [0, ``lam_max``]. Arrays may
    hold many runs (..., units): λ runs along the last axis."""
    h = p.factor
    num = np.cumsum(h * p.audited_value * p.audited_cheap, axis=-1)
    den = np.cumsum(h * p.audited_cheap**2, axis=-1)
    lam = np.clip(np.where(den > 1e-12, num / np.where(den > 1e-12, den, 1.0), 0.0), 0.0, lam_max)
    if lam.shape[-1] == 0:
        return lam
    return np.concatenate([np.zeros((*lam.shape[:-1], 1)), lam[..., :-1]], axis=-1)


def samples(p: Parts, design: TwoPhaseDesign) -> np.ndarray:
    """Z_d for every unit, λ from earlier units only; each within ±``design.bound`` (clipped there against
    rounding alone)."""
    lam = cheap_weights(p, design.lam_max)
    z = p.rerated + lam * p.cheap + p.factor * (p.audited_value - lam * p.audited_cheap)
    return np.clip(z, -design.bound, design.bound)


def clean_spread(p: Parts) -> float:
    """The reference's RMS score on the audited clean items: what the two-phase gate's noise is made of (the
    measured counterpart of an assumed spread); NaN without an audit."""
    audited = p.audited
    return float(math.sqrt(np.mean(p.audited_value[audited] ** 2))) if audited.any() else math.nan


def sample_sd(truth: float, event_size: float, clean_sd: float, design: TwoPhaseDesign) -> float:
    """Assumed SD of one Z_d, for sizing: the reference's view of the unit (events of ``event_size`` at a mean
    of ``truth``) plus the audited pick's noise, inflated by 1/π (``clean_sd``: the reference's SD on a clean
    item; the cheap judge's weight is taken as 0 there, its worst case)."""
    return math.sqrt(event_size * abs(truth) + clean_sd**2 / design.clean_share)
