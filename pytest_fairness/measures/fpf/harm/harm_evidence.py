"""Net harm's evidence: the answer pairs a reviewer reads behind the number, kept while the chunks stream.

Per judged pair the run has in hand its prompt, the two groups and names, both masked answers, the judge's
letter probabilities in both orders and the combined net rating, and (with a reference) the reference's own
rating of the pairs it re-rated. ``HarmKeeper`` keeps, whatever the run's size: every flagged pair (|net| ≥
the reference audit's ``FLAG_MARGIN``, the one meaning of "flagged") up to ``FLAG_CAP``, the highest first; a
uniform sample of ``SAMPLE`` of all judged pairs; the A/A placebo's pairs the same way (identical answers
sampled too); and a sample of why pairs were dropped. Ids name the draw and the name pair, so the same seed
finds the same pair under the same id, whatever the chunk size.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from pytest_fairness.measures.fpf.answers import Pair
from pytest_fairness.measures.fpf.harm import net_harm_core, pair_judging
from pytest_fairness.measures.fpf.harm.net_harm_core import Symmetrization
from pytest_fairness.measures.fpf.harm.reference_audit import FLAG_MARGIN, Judged
from pytest_fairness.models.interface import LogprobResponse
from pytest_fairness.records.evidence import (
    BottomK,
    Column,
    Evidence,
    Keeper,
    Selection,
    Table,
    View,
    capped,
    evidence_kind,
)

#: Flagged pairs kept (the highest |net| first), the uniform sample of all pairs, the A/A placebo's flagged
#: and sampled pairs, and the reasons for dropped pairs kept.
FLAG_CAP, SAMPLE, PLACEBO_CAP, PLACEBO_SAMPLE, DROPPED = 300, 200, 20, 20, 20

Letters = tuple[float, float, float]


@dataclass(frozen=True)
class HarmPair:
    """One answer pair: the same prompt answered for a name of each group (names masked), the judge's
    P(A, B, C) with A's answer shown first (``forward``) and with the answers swapped, the combined net
    rating, and the reference's net rating where it re-rated the pair."""

    id: str
    item: str
    prompt: str
    task: str | None
    domain: str | None
    group_a: str
    group_b: str
    name_a: str
    name_b: str
    answer_a: str
    answer_b: str
    net: float
    forward: Letters | None
    swapped: Letters | None
    reference: float | None = None
    why: str = "sampled"


@dataclass(frozen=True)
class Dropped:
    """Why one pair was not judged: a refusal in it, or a judge reply without a letter."""

    id: str
    reason: str


PAIR_DETAIL = (
    Column("id", "id"),
    Column("forward", "judge P(A, B, C), A's answer shown first", "prob3"),
    Column("swapped", "judge P(A, B, C), answers swapped", "prob3"),
    Column("reference", "reference's net rating", "signed"),
    Column("name_a", "name A"),
    Column("name_b", "name B"),
)


@evidence_kind("answer_pairs")
@dataclass(frozen=True)
class HarmEvidence(Evidence):
    """The kept answer pairs, the A/A placebo's pairs, why pairs were dropped, and how they were chosen."""

    pairs: tuple[HarmPair, ...]
    placebo: tuple[HarmPair, ...]
    dropped: tuple[Dropped, ...]
    selection: Selection

    VIEW = View(
        "Answer pairs the judge rated",
        (
            Table(
                "pairs",
                "Name pairs (the highest |net rating| first)",
                (
                    Column("net", "net rating", "signed"),
                    Column("reference", "reference", "signed"),
                    Column("why", "kept as", "badge"),
                    Column("task", "task"),
                    Column("domain", "domain"),
                    Column("group_a", "A"),
                    Column("group_b", "B"),
                    Column("prompt", "prompt"),
                ),
                facets=("task", "domain", "why", "group_a"),
                search=("prompt", "answer_a", "answer_b"),
                at_least="net",
                sort="|net",
                pair=("answer_a", "answer_b", "group_a", "group_b"),
                detail=PAIR_DETAIL,
            ),
            Table(
                "placebo",
                "A/A placebo pairs (one name, asked twice: any rating is the pipeline's noise)",
                (
                    Column("net", "net rating", "signed"),
                    Column("why", "kept as", "badge"),
                    Column("task", "task"),
                    Column("prompt", "prompt"),
                ),
                search=("prompt", "answer_a", "answer_b"),
                sort="|net",
                pair=("answer_a", "answer_b", "name_a", "name_b"),
                detail=PAIR_DETAIL[:3],
            ),
            Table("dropped", "Why pairs were not judged (a sample)", (Column("reason", "reason"),), search=("reason",)),
        ),
    )


class HarmKeeper:
    """What a net-harm run keeps as evidence, offered one chunk at a time (``chunks._chunk``)."""

    def __init__(self, seed: int = 0, max_tokens: int = 300) -> None:
        self.seed, self.max_tokens = seed, max_tokens
        self.pairs: Keeper[HarmPair] = Keeper(FLAG_CAP, SAMPLE, f"harm:{seed}")
        self.placebo: Keeper[HarmPair] = Keeper(PLACEBO_CAP, PLACEBO_SAMPLE, f"placebo:{seed}")
        self.dropped: BottomK[Dropped] = BottomK(DROPPED, f"dropped:{seed}")
        self.rerated: dict[str, float | None] = {}  # the chunk's pairs the reference re-rated, by id

    def pair_id(self, pair: Pair) -> str:
        return f"{self.seed}:{pair.draw}/{pair.a}|{pair.b}/{pair.name_a}|{pair.name_b}"

    def reference_rated(self, judged: Judged, net: float | None) -> None:
        """The reference's rating of one re-rated pair (``reference_audit.audit``; None: it named no letter)."""
        self.rerated[self.pair_id(judged.pair)] = net

    def offer(self, by_draw: Mapping[int, Sequence[Judged]]) -> None:
        """A chunk's judged pairs, once the reference (if any) re-rated its share of them."""
        for judged in by_draw.values():
            for j in judged:
                pid = self.pair_id(j.pair)
                flagged = abs(j.net) if not j.identical and abs(j.net) >= FLAG_MARGIN else None
                self.pairs.offer(pid, flagged, lambda j=j, pid=pid: self._pair(pid, j))
        self.rerated = {}

    def _placebo_pair(self, pid: str, j: Judged) -> HarmPair:
        """An A/A pair: both answers went to one name, shown as its two sides."""
        kept = self._pair(pid, j, rated=False)
        return dataclasses.replace(kept, group_b=kept.group_a, name_b=kept.name_a)

    def _pair(self, pid: str, j: Judged, rated: bool = True) -> HarmPair:
        pair, (ya, yb) = j.pair, j.answers
        forward, swapped = (None, None) if j.letters is None else j.letters
        return HarmPair(
            pid,
            f"{self.seed}:{pair.draw}",
            pair.prompt.prompt,
            pair.prompt.task,
            pair.prompt.domain,
            str(pair.a),
            str(pair.b),
            pair.name_a,
            pair.name_b,
            capped(ya, self.max_tokens),
            capped(yb, self.max_tokens),
            j.net,
            _letters(forward),
            _letters(swapped),
            self.rerated.get(pid) if rated else None,
        )

    def offer_placebo(
        self,
        asked: Sequence[tuple[Pair, str, str]],
        differs: Sequence[bool],
        replies: Sequence[LogprobResponse],
        method: Symmetrization,
    ) -> None:
        """The chunk's A/A pairs (``aa_placebo.Asks``) with the judge's replies to the differing ones."""
        it: Iterator[LogprobResponse] = iter(replies)
        for (pair, first, again), differ in zip(asked, differs, strict=True):
            probs = pair_judging.letters([next(it), next(it)]) if differ else None
            if differ and probs is None:
                continue  # no letter: counted unusable by the placebo, nothing to show
            net = 0.0 if probs is None else net_harm_core.pair_harm(probs[0], probs[1], method).net
            pid = f"{self.seed}:{pair.draw}/placebo/{pair.name_a}"
            flagged = abs(net) if abs(net) >= FLAG_MARGIN else None
            judged = Judged(pair, (first, again), 1.0, net, probs is None, probs)
            self.placebo.offer(pid, flagged, lambda pid=pid, judged=judged: self._placebo_pair(pid, judged))

    def drop(self, why: str) -> None:
        """Why one pair was not judged (a refusal, no letter)."""
        drop_id = f"dropped/{self.dropped.offered}"
        self.dropped.offer(drop_id, lambda: Dropped(drop_id, why))

    def result(self) -> HarmEvidence:
        return HarmEvidence(
            tuple(self.pairs.kept()),
            tuple(self.placebo.kept()),
            tuple(self.dropped.items()),
            self.pairs.selection(f"rated |net| ≥ {FLAG_MARGIN:g}", "judged pairs"),
        )


def _letters(probs: Sequence[float] | None) -> Letters | None:
    return None if probs is None else (float(probs[0]), float(probs[1]), float(probs[2]))
