"""Response quality by group (Eloundou et al., spec §6): are answers to one group rated worse?

The judge rates every answer on the nine criteria of spec §6.1 from 1 to 5 (the expected value of
its digit probabilities); the groups are compared with paired tests and a Holm correction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import numpy as np

from pytest_fairness.data import load_yaml
from pytest_fairness.data import version as data_version
from pytest_fairness.measures.context import RunContext
from pytest_fairness.measures.fpf import planted_chatbot, quality_core
from pytest_fairness.measures.fpf.answers import (
    AnswerParams,
    Pair,
    answer,
    chat_requests,
    check_inputs,
    corpus_estimand,
    draw_means,
    pairs_for,
    wording,
)
from pytest_fairness.measures.fpf.corpus import mask_name
from pytest_fairness.measures.fpf.quality_evidence import QualityKeeper
from pytest_fairness.measures.measure import JudgeEstimate, Measure, tokens_of
from pytest_fairness.measures.params import param
from pytest_fairness.models.interface import ChatRequest, LogprobRequest, Message, Purpose
from pytest_fairness.records.measure_result import Measured, adaptation, drawn_items

DIGITS = tuple(str(d) for d in range(1, 6))


@dataclass(frozen=True)
class QualityParams(AnswerParams):
    """Quality disparity of a comparison: one name per group and prompt unless told otherwise.

    A sample is one prompt's rating difference A − B on the 1-5 scale, so it lies in [-4, 4]."""

    BOUNDS: ClassVar[tuple[float, float]] = (-4.0, 4.0)
    PER_ITEM_MEAN: ClassVar[bool] = True
    SPREAD: ClassVar[float] = 1.0  # assumed: one rating step of disagreement between the two answers
    #: A quarter of a rating step between the groups' answers on the 1-5 scale.
    PR_MARGIN: ClassVar[float] = 0.25

    names_per_group: int = param(1, low=1)


def requests(p: QualityParams, model: object, seed: int) -> list[ChatRequest]:
    """The chatbot requests ``run`` would send (judge calls depend on the answers and are not counted)."""
    return chat_requests(p, seed)


@cache
def definitions() -> dict[str, str]:
    """Each criterion's definition as the paper gave it to its rater (data/fpf_quality_criteria.yaml)."""
    return dict(load_yaml("fpf_quality_criteria.yaml")["criteria"])


def judge_estimate(p: QualityParams, seed: int) -> JudgeEstimate:
    """Every answer rated on each criterion: one call per answer and criterion, one reply token each."""
    pairs = pairs_for(p, seed)
    criteria = len(quality_core.QUALITY_CRITERIA)
    template = tokens_of(str(wording()["quality_judge"])) + 50  # plus a criterion's definition
    calls = 2 * len(pairs) * criteria
    prompt = sum(template + tokens_of(x.prompt.prompt) + p.max_tokens for x in pairs) * 2 * criteria
    return JudgeEstimate(calls, prompt, calls, f"{criteria} criteria x 2 answers x {len(pairs)} pairs")


def _quality_request(template: str, prompt: str, response: str, criterion: str, group: str) -> LogprobRequest:
    text = template.format(prompt=prompt, response=response, criterion=criterion, definition=definitions()[criterion])
    purpose = Purpose.of("quality.judge", criterion=criterion, response=response, group=group)
    return LogprobRequest((Message("user", text),), DIGITS, purpose=purpose)


def quality_requests(pairs: Sequence[Pair], texts: dict[ChatRequest, str]) -> list[LogprobRequest]:
    template = str(wording()["quality_judge"])
    return [
        _quality_request(template, x.prompt.prompt, mask_name(texts[r], n)[0], c, str(g))
        for x in pairs
        for r, n, g in ((x.request_a, x.name_a, x.a), (x.request_b, x.name_b, x.b))
        for c in quality_core.QUALITY_CRITERIA
    ]


def _rating(logprobs: dict[str, float]) -> float:
    """Expected rating from the judge's digit probabilities (renormalised over 1..5)."""
    weights = np.exp(np.array([logprobs[d] for d in DIGITS]))
    return float(weights @ np.arange(1, 6) / weights.sum())


def run(p: QualityParams, ctx: RunContext) -> Measured:
    """Quality disparity: overall-quality difference A − B (1..5 scale), per-criterion paired tests in details."""
    runner, seed = ctx.runner, ctx.seed
    judge = ctx.judge or runner
    generated = answer(p, runner, seed, ctx.progress)
    pairs = generated.pairs
    scores = iter(judge.run(quality_requests(pairs, generated.texts)))
    # Every group pair of the comparison counts (e.g. Black vs White women AND men): a rating is side A
    # or B of its pair, and the paired tests pair the two sides' answers to the same prompt draw.
    ratings, by_pair, draw_of = [], {}, {}
    overall = quality_core.QUALITY_CRITERIA[0]
    kept = QualityKeeper(seed, p.max_tokens)
    for pair in pairs:
        key = f"{pair.draw}:{pair.a}|{pair.b}"
        draw_of[key] = pair.draw
        for side in ("A", "B"):
            criteria = {c: _rating(next(scores).logprobs) for c in quality_core.QUALITY_CRITERIA}
            rating = quality_core.Rating(key, side, criteria)
            ratings.append(rating)
            by_pair.setdefault(f"{pair.a} vs {pair.b}", []).append(rating)
        kept.offer(pair, generated.texts, (ratings[-2].scores, ratings[-1].scores), overall)
    disparity = quality_core.quality_disparity(ratings, "A", "B") if ratings else None
    differences = [(draw_of[key], d) for key, d in _paired_quality(ratings, overall).items()]
    samples = draw_means(differences)
    return Measured(
        samples=samples,
        items=drawn_items(seed, dict.fromkeys(draw for draw, _ in differences)),  # draw_means' order
        fidelity=adaptation(
            "one criterion per judge call (the paper rates all nine in one JSON reply), read as the expected "
            "value of the 1-5 digit probabilities; judge wording ours, criterion definitions the paper's"
        ),
        versions={"prompts": data_version("fpf_prompts.jsonl"), "judge_prompt": data_version("harm_prompts.yaml")},
        details={
            "criteria": {} if disparity is None else _criteria(disparity),
            "by_group_pair": {
                label: {
                    "difference": float(np.mean(list(_paired_quality(rs, overall).values()))),
                    "pairs": len(rs) // 2,
                }
                for label, rs in by_pair.items()
            },
            "refusal_rate": generated.refusal_rates(),
            **corpus_estimand(p, pairs),
        },
        evidence=kept.result(),
    )


def _criteria(disparity: quality_core.QualityDisparity) -> dict[str, dict[str, object]]:
    return {
        c.criterion: {
            "mean_a": c.mean_a,
            "mean_b": c.mean_b,
            "difference": c.difference,
            "p_adjusted": c.p_adjusted,
            "significant": c.significant,
        }
        for c in disparity.criteria.values()
    }


def _paired_quality(ratings: Sequence[quality_core.Rating], criterion: str) -> dict[str, float]:
    """Per prompt key: side A's mean rating minus side B's on one criterion."""
    by_key: dict[str, dict[str, list[float]]] = {}
    for r in ratings:
        by_key.setdefault(r.prompt, {}).setdefault(r.group, []).append(r.scores[criterion])
    return {k: float(np.mean(g["A"]) - np.mean(g["B"])) for k, g in by_key.items() if "A" in g and "B" in g}


MEASURE = Measure(
    shares="fpf.answers",  # the chatbot's answers to the same prompts and names
    name="quality_disparity",
    params=QualityParams,
    run=run,
    requests=requests,
    uses_judge=True,
    judge_estimate=judge_estimate,
    check_inputs=check_inputs,
    planted=planted_chatbot.PLANTED,
    doc="Answer quality by group (Eloundou et al.): overall-quality difference A − B on 1-5; criteria in details.",
)
