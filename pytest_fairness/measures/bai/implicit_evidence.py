"""Implicit bias's evidence: each attribute word's pairings by group, and the answers behind them.

Built once a run has scored its iterations (``implicit.run``): per attribute word, how often the model paired
it with the stigma group's word and with the default group's, the share that follows the stereotype, and the
ids of the answers that did (at most ``WORD_ANSWERS``); and the answers themselves, every one up to
``ANSWERS`` (a uniform sample beyond). An answer's id is its item key (``<seed>:<iteration>``), so a pull
request's moved item opens the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_fairness.measures.bai.iat_stimuli import Stereotype
from pytest_fairness.records.evidence import BottomK, Column, Evidence, Selection, Table, View, evidence_kind

#: Answers kept (every one of a run up to this many, a uniform sample beyond), and answer ids kept per word.
ANSWERS, WORD_ANSWERS = 300, 20


@dataclass(frozen=True)
class WordPairing:
    """One attribute word: how often the model paired it with each group, and some answers that did."""

    id: str
    word: str
    side: str  # stigma | default: the side of the stereotype the word is consistent with
    with_stigma: int
    with_default: int
    consistent: float  # the share of its pairings that follow the stereotype
    answers: tuple[str, ...]


@dataclass(frozen=True)
class ImplicitAnswer:
    """One iteration: the prompt, the answer (the reply, or the forced choices made), the pairs read and
    the score, or why it could not be scored."""

    id: str
    prompt: str
    stigma_word: str
    default_word: str
    answer: str
    pairs: tuple[tuple[str, str], ...]
    score: float | None
    problem: str | None


@evidence_kind("word_pairings")
@dataclass(frozen=True)
class ImplicitEvidence(Evidence):
    stigma: str
    default: str
    words: tuple[WordPairing, ...]
    answers: tuple[ImplicitAnswer, ...]
    selection: Selection

    VIEW = View(
        "Word pairings by group",
        (
            Table(
                "words",
                "Attribute words (the most stereotype-consistent first)",
                (
                    Column("word", "word"),
                    Column("side", "stereotype side", "badge"),
                    Column("with_stigma", "paired with the stigma group", "num"),
                    Column("with_default", "paired with the default group", "num"),
                    Column("consistent", "stereotype-consistent share", "num"),
                ),
                facets=("side",),
                search=("word",),
                sort="-consistent",
                detail=(Column("answers", "answers that paired it", "refs:answers"),),
            ),
            Table(
                "answers",
                "Answers",
                (
                    Column("score", "score", "signed"),
                    Column("stigma_word", "stigma group word"),
                    Column("default_word", "default group word"),
                    Column("problem", "unusable because"),
                    Column("answer", "answer"),
                ),
                facets=("stigma_word", "default_word"),
                search=("answer", "prompt"),
                at_least="score",
                sort="-score",
                detail=(Column("id", "id"), Column("prompt", "prompt"), Column("pairs", "pairs read", "list")),
            ),
        ),
    )


@dataclass(frozen=True)
class Scored:
    """What ``implicit.run`` has of one iteration: its prompt's group words and text, the answer, the pairs
    read from it, and the score or the problem."""

    prompt: str
    stigma_word: str
    default_word: str
    answer: str
    pairs: Sequence[tuple[str, str]]
    score: float | None
    problem: str | None


def implicit_evidence(stereotype: Stereotype, scored: Sequence[Scored], seed: int) -> ImplicitEvidence:
    """The word pairings over every iteration, and the answers kept (all, or a uniform ``ANSWERS``)."""
    group_side, attr_side = stereotype.group_side(), stereotype.attribute_side()
    counts: dict[str, tuple[list[int], list[str]]] = {}
    sample: BottomK[ImplicitAnswer] = BottomK(ANSWERS, f"implicit:{seed}")
    for i, it in enumerate(scored):
        aid = f"{seed}:{i}"
        for attribute, group in it.pairs:
            cells, ids = counts.setdefault(attribute, ([0, 0], []))
            cells[0 if group_side[group] == "stigma" else 1] += 1
            if len(ids) < WORD_ANSWERS and aid not in ids:
                ids.append(aid)
        sample.offer(
            aid,
            lambda it=it, aid=aid: ImplicitAnswer(
                aid, it.prompt, it.stigma_word, it.default_word, it.answer, tuple(it.pairs), it.score, it.problem
            ),
        )
    words = []
    for word, ((stigma, default), ids) in sorted(counts.items()):
        side = attr_side[word]
        consistent = (stigma if side == "stigma" else default) / (stigma + default)
        words.append(WordPairing(f"word:{word}", word, side, stigma, default, consistent, tuple(ids)))
    answers = sorted(sample.items(), key=lambda a: int(a.id.rsplit(":", 1)[1]))
    rule = f"every answer up to {ANSWERS} (a uniform sample beyond); every attribute word's pairings over all answers"
    return ImplicitEvidence(
        stereotype.stigma_label,
        stereotype.default_label,
        tuple(words),
        tuple(answers),
        Selection(sample.offered, 0, 0, len(answers), rule),
    )
