"""The reference audit of net harm (``--fairness-judge-reference``): the net harm as a stronger reference rates it.

The primary (cheap) judge rates every answer pair; a reference (a stronger model, a ``python:`` function, or
a team's labels) re-rates every pair the judge flagged or was unsure of (|combined score| ≥ ``TRIAGE``) and,
in a share ``clean_share`` of the draws, one of the pairs the judge called clean, chosen at random with
probability ∝ its weight (hash coins per draw, which no model sees). Each draw then gives one two-phase
sample (``stats.two_phase``): the reference's scores where it was asked, the judge's elsewhere, and the
audited pick's difference weighted by 1/π (Horvitz–Thompson), with the judge's weight λ tuned on earlier
draws' audits (PPI++). Its expectation is the draw's net harm *as the reference rates it*, whatever the
judge's errors on this chatbot's answers, and it lies within ±B (B = 2.7 at a share of 0.4), so the gate's
one interval, at its whole confidence, is the betting interval of these samples (a confidence sequence under
--fairness-sequential). A bad judge costs reference calls (its flags are re-rated) or power, never validity.

The audit keeps a few numbers per draw (``two_phase.Parts``); the samples are formed once, in draw order, at
the end (λ of a draw reads only the draws before it), so any chunking gives the same samples bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_fairness.measures.fpf.answers import Pair
from pytest_fairness.measures.fpf.harm import pair_judging
from pytest_fairness.measures.fpf.harm.net_harm_core import Symmetrization
from pytest_fairness.models.runner import Runner
from pytest_fairness.stats import two_phase
from pytest_fairness.stats.attenuation import Attenuation
from pytest_fairness.stats.two_phase import TwoPhaseDesign

#: A pair whose combined score is at least this far from 0 counts as flagged or unsure and is always re-rated.
TRIAGE = 0.05
#: "Flagged" wherever a run shows its pairs (the evidence keeps every one): the pairs the reference always re-rates.
FLAG_MARGIN = TRIAGE
#: Default share of the draws with clean differing pairs whose one such pair the reference re-rates (the
#: ``clean_share`` parameter, when the release plan does not choose it).
CLEAN_SHARE = 0.4


@dataclass(frozen=True)
class Judged:
    """One answer pair of the run: its pair, the masked answers, its weight in its draw's sample, and the
    primary judge's combined net (0 for identical answers, ``identical`` then True)."""

    pair: Pair
    answers: tuple[str, str]
    weight: float
    net: float
    identical: bool
    #: The judge's letter probabilities in both orders (None for identical answers): kept as evidence.
    letters: tuple[tuple[float, ...], tuple[float, ...]] | None = None


@dataclass(frozen=True)
class Audit:
    """What the reference saw of some draws: per draw the two-phase parts, and counts of the pairs it re-rated
    because the judge flagged them or was unsure (``rerated``), of the clean pairs it audited (``audited``) and
    of its replies without a letter (``unreadable``); ``pairs``: the differing pairs of those draws."""

    parts: two_phase.Parts
    rerated: int
    audited: int
    unreadable: int
    pairs: int
    reference: str
    design: TwoPhaseDesign

    def samples(self) -> np.ndarray:
        """One two-phase sample per draw, in draw order: the gate's samples, within ±``design.bound``."""
        return two_phase.samples(self.parts, self.design)

    def correction(self, confidence: float) -> Attenuation:
        """How the gate reads the samples: nothing to correct or split (they estimate the reference's view
        directly), on their own range ±B; void when the reference gave no letter for a pair it was asked."""
        void = (
            f"the reference {self.reference} gave no A/B/C letter for {self.unreadable} audited pairs (a labels: "
            "reference lists the pairs it has no label for in FILE.todo.jsonl, to label and append to FILE)"
            if self.unreadable
            else ""
        )
        bound = self.design.bound
        return Attenuation(
            1.0,
            1.0,
            1.0,
            confidence,
            f"two-phase estimate with the reference {self.reference}",
            f"({self.rerated} flagged or unsure pairs and {self.audited} clean pairs re-rated; samples within "
            f"±{bound:.2f})",
            void=void,
            sample_bounds=(-bound, bound),
        )

    def to_dict(self) -> dict[str, object]:
        """The audit as the result's ``reference_audit``: the design, what was re-rated, and the noise measured."""
        lam = two_phase.cheap_weights(self.parts, self.design.lam_max)
        return {
            "reference": self.reference,
            "triage": self.design.triage,
            "clean_share": self.design.clean_share,
            "bound": self.design.bound,
            "flagged_pairs_rerated": self.rerated,
            "clean_pairs_audited": self.audited,
            "rerated_share": self.rerated / self.pairs if self.pairs else None,
            "unreadable": self.unreadable,
            "judge_weight": float(lam[-1]) if lam.size else 0.0,
            "clean_pair_spread": two_phase.clean_spread(self.parts),
        }


def audit(
    draws: Mapping[int, Sequence[Judged]],
    reference: Runner,
    settings: tuple[str, Symmetrization, int, TwoPhaseDesign],
    width: int = 1,
    rated: Callable[[Judged, float | None], None] | None = None,
) -> Audit:
    """Re-rate every flagged or unsure pair and one clean pair of each audited draw with the reference;
    ``settings``: the comparison, the symmetrization, the seed and the design. ``width``: the most pairs a draw
    can have, so that a draw's numbers do not depend on which draws are audited with it (a run audits a chunk
    at a time). ``rated`` is told each re-rated pair's reference rating (the run's evidence)."""
    comparison, method, seed, design = settings
    keys, width = list(draws), max([width, *(len(pairs) for pairs in draws.values())])
    shape = (len(keys), width)
    net, weight, differs = np.zeros(shape), np.zeros(shape), np.zeros(shape, dtype=bool)
    for row, d in enumerate(keys):
        for col, j in enumerate(draws[d]):
            net[row, col], weight[row, col], differs[row, col] = j.net, j.weight, not j.identical
    coin = np.array([two_phase.coin(seed, "audit", d) for d in keys])
    pick = np.array([two_phase.coin(seed, "pick", d) for d in keys])
    rows, cols = np.nonzero(two_phase.asked(net, weight, differs, coin, pick, design))
    asked = list(zip(rows.tolist(), cols.tolist(), strict=True))
    pairs = [draws[keys[row]][col] for row, col in asked]
    requests = [
        r for j in pairs for r in pair_judging.both_orders(j.pair.prompt, j.pair.a, j.pair.b, *j.answers, comparison)
    ]
    replies = iter(reference.run(requests))
    scores = [pair_judging.combined([next(replies), next(replies)], method) for _ in pairs]
    seen = np.full(shape, np.nan)
    for (row, col), judged, score in zip(asked, pairs, scores, strict=True):
        seen[row, col] = 0.0 if score is None else score.net
        if rated is not None:
            rated(judged, None if score is None else score.net)
    rerated = int(two_phase.strata(net, differs, design)[0].sum())
    return Audit(
        two_phase.parts(net, seen, weight, differs, coin, pick, design),
        rerated,
        len(pairs) - rerated,
        sum(score is None for score in scores),
        int(differs.sum()),
        reference.model.model_id,
        design,
    )


def joined(audits: Sequence[Audit], design: TwoPhaseDesign, reference: str) -> Audit:
    """The audits of a run's chunks (in draw order) as one audit of the whole run."""
    return Audit(
        two_phase.joined([a.parts for a in audits]),
        sum(a.rerated for a in audits),
        sum(a.audited for a in audits),
        sum(a.unreadable for a in audits),
        sum(a.pairs for a in audits),
        reference,
        design,
    )
