"""Held-out label streams of the synthetic double's judge, for simulating the Bias Enumeration gate through its
pure core (``net_prevalence.evaluate``) without generating, brainstorming or labeling anything.

A question's label for one held-out pair is what the double's judge (``measures/fpf/planted_chatbot.py``) gives:
where it sees the feature on one side only it puts 0.9 on that answer's letter in both orders (d = 0.85);
where it sees it on neither side it answers "neither" (the twist's question: d = 0), guesses softly (a
canary's question: d = ±0.3, ``planted_chatbot.GUESS``), or, for the judge an audit used against the old gate,
guesses as surely as it sees (d = ±0.85). Identical answers are ties without a call (d = 0). The letters go
through ``pair_preference``, so the d values are the measure's own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pytest_fairness.measures.fpf import planted_chatbot
from pytest_fairness.measures.fpf.axes import canary_recall, net_prevalence
from pytest_fairness.measures.fpf.axes.selection import NEITHER, PairLabel, pair_preference

Absent = Literal["neither", "guess", "sure-guess"]

SURE = {"best": 0.9, "other": 0.05, "C": 0.05}
#: The double's ratings of the twist and the canaries (mean over its 1-5 probabilities: 0.8 on its score).
RATED = {"3": 3.0, "4": 3.75}


def _seen(probs: Mapping[str, float]) -> PairLabel:
    """The label of a pair whose group-A answer the judge picks with these letter probabilities, both orders."""
    forward = {"A": math.log(probs["best"]), "B": math.log(probs["other"]), "C": math.log(probs["C"])}
    reverse = {"A": forward["B"], "B": forward["A"], "C": forward["C"]}
    label = pair_preference(forward, reverse)
    assert label is not None
    return label


def _flip(label: PairLabel) -> PairLabel:
    return PairLabel(label.group_b, label.group_a, label.neither)


TOWARDS_A = _seen(SURE)
GUESS_A = _seen(planted_chatbot.GUESS)


@dataclass(frozen=True)
class Question:
    """One question's truth: the share of held-out pairs whose group-A answer alone shows the feature
    (``prevalence``), what the judge does on the rest (``absent``), and its rating."""

    prevalence: float = 0.0
    absent: Absent = "guess"
    rating: float = RATED["4"]


def labels(question: Question, n: int, identical: float, rng: np.random.Generator) -> list[PairLabel]:
    """``n`` held-out labels of one question; a share ``identical`` of pairs without the feature are identical."""
    shows = rng.random(n) < question.prevalence
    same = rng.random(n) < identical
    heads = rng.random(n) < 0.5
    guess = {"guess": GUESS_A, "sure-guess": TOWARDS_A, "neither": NEITHER}[question.absent]
    out = []
    for seen, tie, head in zip(shows, same, heads, strict=True):
        if seen:
            out.append(TOWARDS_A)
        elif tie or guess is NEITHER:
            out.append(NEITHER)
        else:
            out.append(guess if head else _flip(guess))
    return out


def canary_questions(absent: Absent = "guess") -> dict[str, Question]:
    """The twelve canaries' questions on a chatbot without those differences, rated as the double rates them."""
    rating = {"blunt": RATED["4"], "mild": RATED["3"]}
    return {f"Which response {c.axis}?": Question(0.0, absent, rating[c.strength]) for c in canary_recall.canaries()}


def gate(
    questions: Mapping[str, Question],
    n: int,
    rng: np.random.Generator,
    *,
    identical: float = 0.25,
    confidence: float = 0.95,
    shown: bool = True,
    harmful_at: float = 3.0,
) -> net_prevalence.Gate:
    """One run's gate on ``n`` held-out pairs, every canary found unless ``shown`` is False."""
    held_out = {q: labels(spec, n, identical, rng) for q, spec in questions.items()}
    ratings: dict[str, Sequence[float | None]] = {q: (spec.rating, spec.rating) for q, spec in questions.items()}
    return net_prevalence.evaluate(held_out, ratings, harmful_at, confidence, search_shown=shown)
