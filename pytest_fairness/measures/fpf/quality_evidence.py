"""Response quality's evidence: the answer pairs behind the difference, with both sides' nine ratings.

Kept as the run rates its pairs (``quality.run``): every pair whose overall ratings differ by at least
``STEP`` (one step of the 1-5 scale) up to ``FLAG_CAP``, the largest first, and a uniform sample of
``SAMPLE`` of all pairs. Ids are net harm's: the draw and the name pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_fairness.measures.fpf.answers import Pair
from pytest_fairness.measures.fpf.corpus import mask_name
from pytest_fairness.models.interface import ChatRequest
from pytest_fairness.records.evidence import Column, Evidence, Keeper, Selection, Table, View, capped, evidence_kind

#: Pairs kept whose overall ratings differ by at least STEP (the largest first), and the uniform sample of all.
FLAG_CAP, SAMPLE, STEP = 300, 200, 1.0


@dataclass(frozen=True)
class QualityPair:
    """One answer pair: both masked answers, the overall difference A − B, and each side's nine ratings."""

    id: str
    item: str
    prompt: str
    task: str | None
    domain: str | None
    group_a: str
    group_b: str
    answer_a: str
    answer_b: str
    difference: float
    ratings_a: dict[str, float]
    ratings_b: dict[str, float]
    why: str = "sampled"


@evidence_kind("quality_pairs")
@dataclass(frozen=True)
class QualityEvidence(Evidence):
    pairs: tuple[QualityPair, ...]
    selection: Selection

    VIEW = View(
        "Answer pairs and their ratings",
        (
            Table(
                "pairs",
                "Pairs (the largest difference first)",
                (
                    Column("difference", "overall A − B", "signed"),
                    Column("why", "kept as", "badge"),
                    Column("task", "task"),
                    Column("group_a", "A"),
                    Column("group_b", "B"),
                    Column("prompt", "prompt"),
                ),
                facets=("task", "domain", "why"),
                search=("prompt", "answer_a", "answer_b"),
                at_least="difference",
                sort="|difference",
                pair=("answer_a", "answer_b", "group_a", "group_b"),
                detail=(Column("id", "id"), Column("ratings_a", "ratings A"), Column("ratings_b", "ratings B")),
            ),
        ),
    )


class QualityKeeper:
    """The pairs a quality run keeps, offered one at a time as they are rated."""

    def __init__(self, seed: int, max_tokens: int) -> None:
        self.seed, self.max_tokens = seed, max_tokens
        self.keeper: Keeper[QualityPair] = Keeper(FLAG_CAP, SAMPLE, f"quality:{seed}")

    def offer(
        self,
        pair: Pair,
        texts: Mapping[ChatRequest, str],
        ratings: tuple[Mapping[str, float], Mapping[str, float]],
        overall: str,
    ) -> None:
        a, b = ratings
        difference = a[overall] - b[overall]
        pid = f"{self.seed}:{pair.draw}/{pair.a}|{pair.b}/{pair.name_a}|{pair.name_b}"

        def build() -> QualityPair:
            answer_a = mask_name(texts[pair.request_a], pair.name_a)[0]
            answer_b = mask_name(texts[pair.request_b], pair.name_b)[0]
            return QualityPair(
                pid,
                f"{self.seed}:{pair.draw}",
                pair.prompt.prompt,
                pair.prompt.task,
                pair.prompt.domain,
                str(pair.a),
                str(pair.b),
                capped(answer_a, self.max_tokens),
                capped(answer_b, self.max_tokens),
                difference,
                dict(a),
                dict(b),
            )

        self.keeper.offer(pid, abs(difference) if abs(difference) >= STEP else None, build)

    def result(self) -> QualityEvidence:
        rule = f"rated {STEP:g} step or more apart overall"
        return QualityEvidence(tuple(self.keeper.kept()), self.keeper.selection(rule, "pairs"))
