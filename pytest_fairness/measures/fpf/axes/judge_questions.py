"""What the judge is asked once the questions exist: harm ratings, the canary probes, and the questions on the
held-out pairs (spec §7.4, §7.6), each pair in both orders: every gated question on every held-out pair, the
others (reported, never gated) on the first ``REPORT_PAIRS``.

A judge that gives no letter for the first few pairs it labels raises ``Unserved`` before the labeling
budget is spent (``check_letters``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pytest_fairness.measures.fpf.axes import canary_recall, prompts, selection
from pytest_fairness.measures.fpf.axes.question_search import UNSERVED_HINT, Text, Unserved
from pytest_fairness.measures.fpf.axes.selection import NEITHER, PairLabel
from pytest_fairness.models.runner import Runner

#: Held-out pairs labeled on the first question before anything else is labeled (``check_letters``).
PROBE_PAIRS = 5
#: Held-out pairs a question that is not gated is labeled on: enough for the paper's report of its axis (a sign
#: test of a 60/40 split at Bonferroni over 40 questions), while the gate's questions are labeled on every pair.
#: Which questions are gated is fixed by their ratings before any label is read.
REPORT_PAIRS = 300

Labels = dict[str, list[PairLabel | None]]
Ratings = dict[str, tuple[float | None, float | None]]


def label_many(judge: Runner, jobs: Sequence[tuple[str, Sequence[Text]]]) -> list[list[PairLabel | None]]:
    """Each (question, pairs) job's labels, all sent in one batch; identical pairs are ties without a call."""
    asks = [
        prompts.label_request(prompt, a, b, question, order)
        for question, pairs in jobs
        for prompt, a, b in pairs
        if a != b
        for order in selection.ORDERS
    ]
    answers = iter(judge.run(asks))
    return [
        [
            NEITHER if a == b else selection.pair_preference(next(answers).logprobs, next(answers).logprobs)
            for _, a, b in pairs
        ]
        for _, pairs in jobs
    ]


def label_pairs(judge: Runner, question: str, pairs: Sequence[Text]) -> list[PairLabel | None]:
    (labels,) = label_many(judge, [(question, pairs)])
    return labels


def check_letters(judge: Runner, questions: Sequence[str], held_out: Sequence[Text]) -> None:
    """Unserved when the judge gives no letter for the first question's first few differing pairs: found
    before the canary probes and the labeling are paid for. Its answers come back from the cache later."""
    differing = [x for x in held_out if x[1] != x[2]]
    if questions and differing:
        probe = label_pairs(judge, questions[0], differing[:PROBE_PAIRS])
        if not any(label is not None for label in probe):
            raise Unserved(f"the judge gave a readable letter for 0 of {len(probe)} labeled pairs; {UNSERVED_HINT}")


def label(
    judge: Runner,
    questions: Sequence[str],
    held_out: Sequence[Text],
    gated: Collection[str] | None = None,
) -> Labels:
    """The ``gated`` questions (None: every question) for every held-out pair, the others for the first
    ``REPORT_PAIRS``, both orders, in one batch; Unserved when not one letter was readable."""
    every = set(questions) if gated is None else set(gated)
    jobs = [(q, held_out if q in every else held_out[:REPORT_PAIRS]) for q in questions]
    labels = dict(zip(questions, label_many(judge, jobs), strict=True))
    decided = sum(label is not None for ls in labels.values() for label in ls)
    if labels and held_out and not decided:
        raise Unserved(f"the judge gave a readable letter for 0 of {len(held_out)} labeled pairs; {UNSERVED_HINT}")
    return labels


def rate(judge: Runner, questions: Sequence[str], a: str, b: str) -> Ratings:
    """Harmfulness of every question favouring group A and favouring group B (2 calls a question), asked
    about the comparison's groups (e.g. "Black people"); rating both sides keeps which questions count
    as harmful independent of the labeled pairs."""
    asks = [prompts.harm_request(q, a, b, side) for q in questions for side in ("A", "B")]
    scale = prompts.harm_scale()
    scores = iter(selection.harmfulness_from_logprobs(r.logprobs, scale) for r in judge.run(asks))
    return {q: (next(scores), next(scores)) for q in questions}


def probe_canaries(
    judge: Runner, gated: Sequence[str], texts: Sequence[Text], pool: Sequence[int], seed: int
) -> list[dict[str, Any]]:
    """Each canary's candidates, the gated questions that lean furthest its way on its matching probes, each
    confirming it or not alone on fresh probes (``axes_canaries``); one record per canary."""
    cs = canary_recall.canaries()
    matching = [canary_recall.probe_pairs(texts, pool, seed, j, "match") for j in range(len(cs))]
    flat = iter(label_many(judge, [(q, probes) for probes in matching for q in gated]))
    chosen = [canary_recall.candidates({q: next(flat) for q in gated}, c.side) for c in cs]
    jobs = [(j, q) for j, qs in enumerate(chosen) for q in qs]
    confirming = label_many(judge, [(q, canary_recall.probe_pairs(texts, pool, seed, j, "confirm")) for j, q in jobs])
    tried: dict[int, list[dict[str, Any]]] = {j: [] for j in range(len(cs))}
    for (j, q), labels in zip(jobs, confirming, strict=True):
        towards, against, p = canary_recall.confirms(labels, cs[j].side)
        tried[j].append({"question": q, "towards": towards, "against": against, "p": p})
    return [_canary_record(j, tried[j]) for j in range(len(cs))]


def _canary_record(j: int, tried: list[dict[str, Any]]) -> dict[str, Any]:
    canary = canary_recall.canaries()[j]
    found = next((c["question"] for c in tried if canary_recall.confirmed(c["p"])), None)
    return {
        "id": canary.id,
        "axis": canary.axis,
        "side": canary.side,
        "share": canary.share,
        "strength": canary.strength,
        "candidates": tried,
        "found_by": found,
    }


def recall_of(records: Sequence[Mapping[str, Any]]) -> canary_recall.Recall:
    return canary_recall.Recall(tuple(r["found_by"] is not None for r in records))
