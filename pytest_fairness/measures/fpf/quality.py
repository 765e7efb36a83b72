"""Response quality by group (Eloundou et al., spec §6): are answers to one group rated worse?

The judge rates every answer on the nine criteria of spec §6.1 from 1 to 5 (the expected value of
its digit probabilities); the groups are compared with paired tests and a Holm correction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pytest_fairness.data import version as data_version
from pytest_fairness.measures.base import Measure, RunContext, param
from pytest_fairness.measures.fpf import planted, quality_core
from pytest_fairness.measures.fpf.answers import AnswerParams, Pair, answer, chat_requests, check_inputs, wording
from pytest_fairness.measures.fpf.data import mask_name
from pytest_fairness.models.base import ChatRequest, LogprobRequest, Message, Purpose
from pytest_fairness.models.runner import CallStats
from pytest_fairness.result import FAITHFUL, MeasureResult, with_provider_notes

DIGITS = tuple(str(d) for d in range(1, 6))


@dataclass(frozen=True)
class QualityParams(AnswerParams):
    """Quality disparity of a comparison: one name per group and prompt unless told otherwise.

    A sample is one prompt's rating difference A − B on the 1-5 scale, so it lies in [-4, 4]."""

    BOUNDS: ClassVar[tuple[float, float]] = (-4.0, 4.0)

    names_per_group: int = param(1, low=1)


def requests(p: QualityParams, model: object, seed: int) -> list[ChatRequest]:
    """The chatbot requests ``run`` would send (judge calls depend on the answers and are not counted)."""
    return chat_requests(p, seed)


def _quality_request(template: str, prompt: str, response: str, criterion: str, group: str) -> LogprobRequest:
    text = template.format(prompt=prompt, response=response, criterion=criterion)
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


def run(p: QualityParams, ctx: RunContext) -> MeasureResult:
    """Quality disparity: overall-quality difference A − B (1..5 scale), per-criterion paired tests in details."""
    runner, seed = ctx.runner, ctx.seed
    judge = ctx.judge or runner
    stats = CallStats()
    generated = answer(p, runner, seed, stats, ctx.progress)
    pairs = generated.pairs
    scores = iter(judge.run(quality_requests(pairs, generated.texts), stats=stats))
    ratings = []
    for pair in pairs:
        for group in (pair.a, pair.b):
            criteria = {c: _rating(next(scores).logprobs) for c in quality_core.QUALITY_CRITERIA}
            ratings.append(quality_core.Rating(pair.prompt.prompt, str(group), criteria))
    a, b = str(pairs[0].a), str(pairs[0].b)
    disparity = quality_core.quality_disparity(ratings, a, b)
    per_prompt = _paired_quality(ratings, a, b, quality_core.QUALITY_CRITERIA[0])
    return MeasureResult(
        measure="quality_disparity",
        subject=p.comparison,
        summary=QualityParams.summarize(per_prompt, ctx),
        n_unusable=0,
        unusable_examples=[],
        fidelity=with_provider_notes(
            FAITHFUL + " (judge ratings read as expected values of 1-5 digit probabilities)", stats
        ),
        model_id=runner.model.model_id,
        versions={"prompts": data_version("fpf_prompts.jsonl"), "judge_prompt": data_version("harm_prompts.yaml")},
        params={**p.record(), "seed": seed, "judge": judge.model.model_id},
        details={
            "criteria": {
                c.criterion: {
                    "mean_a": c.mean_a,
                    "mean_b": c.mean_b,
                    "difference": c.difference,
                    "p_adjusted": c.p_adjusted,
                    "significant": c.significant,
                }
                for c in disparity.criteria.values()
            },
            "refusal_rate": generated.refusal_rates(),
        },
        calls=stats,
        samples=per_prompt,
    )


def _paired_quality(ratings: Sequence[quality_core.Rating], a: str, b: str, criterion: str) -> list[float]:
    """Per prompt: group A's mean rating minus group B's on one criterion."""
    by_prompt: dict[str, dict[str, list[float]]] = {}
    for r in ratings:
        by_prompt.setdefault(r.prompt, {}).setdefault(r.group, []).append(r.scores[criterion])
    return [float(np.mean(g[a]) - np.mean(g[b])) for g in by_prompt.values() if a in g and b in g]


MEASURE = Measure(
    name="quality_disparity",
    params=QualityParams,
    run=run,
    requests=requests,
    uses_judge=True,
    check_inputs=check_inputs,
    planted=planted.PLANTED,
    doc="Answer quality by group (Eloundou et al.): overall-quality difference A − B on 1-5; criteria in details.",
)
