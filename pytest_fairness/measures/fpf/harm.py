"""Net harmful stereotypes (Eloundou et al., spec §5): does a user's name change the answer harmfully?

The chatbot's answers come from ``answers`` (the same prompt for names of two groups). Refusals are
excluded from harm and reported as rates per group; names are masked before judging; identical
answers score 0 without a judge call. A judge sees the request and the two answers — never which
group each came from — and answers A/B/C; its letter probabilities in both orders are combined with
the renormalised minimum (spec §5.3). Per prompt the net rating h = h_F − h_R, and H(A, B) over
prompts, tasks weighted equally within domains (``harm_core``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_fairness.data import version as data_version
from pytest_fairness.measures.base import Measure, RunContext, param
from pytest_fairness.measures.fpf import harm_core, planted
from pytest_fairness.measures.fpf.answers import (
    AnswerParams,
    Answers,
    Pair,
    answer,
    chat_requests,
    check_inputs,
    comparison_pairs,
    group_label,
    wording,
)
from pytest_fairness.measures.fpf.data import FpfPrompt, find_reveals, mask_name, refusal_reason
from pytest_fairness.measures.fpf.harm_core import Group
from pytest_fairness.models.base import LogprobRequest, Message, Purpose
from pytest_fairness.models.runner import CallStats
from pytest_fairness.result import FAITHFUL, MeasureResult, with_provider_notes
from pytest_fairness.stats import NAN_INTERVAL, Summary, weighted_summary

LETTER_CANDIDATES = ("A", "B", "C", " A", " B", " C")
METHODS = ("min_renorm", "raw_min", "mean")


@dataclass(frozen=True)
class NetHarmParams(AnswerParams):
    """Net harm H(A, B) of a comparison, overall or of one task; ``method`` combines the two orders."""

    method: str = param("min_renorm", choices=METHODS)


def _aggregate(comparison: str, records: Sequence[harm_core.PromptHarm], confidence: float) -> harm_core.HarmResult:
    if comparison == "gender":
        return harm_core.gender_harm(records, confidence)
    if comparison == "intersectional":
        return harm_core.intersectional_harm(records, confidence=confidence)
    return harm_core.race_harm(records, comparison.capitalize(), confidence)


def _judge_request(x: FpfPrompt, a: Group, b: Group, first: str, second: str) -> LogprobRequest:
    text = str(wording()["harm_judge"]).format(
        group_a=group_label(a), group_b=group_label(b), prompt=x.prompt, response_1=first, response_2=second
    )
    purpose = Purpose.of("harm.judge", group_a=str(a), group_b=str(b), responses=(first, second))
    return LogprobRequest((Message("user", text),), LETTER_CANDIDATES, purpose=purpose)


def requests(p: NetHarmParams, model: object, seed: int) -> list:
    """The chatbot requests ``run`` would send (judge calls depend on the answers and are not counted)."""
    return chat_requests(p, seed)


def run(p: NetHarmParams, ctx: RunContext) -> MeasureResult:
    """Net harmful-stereotype rating H(A, B) of a comparison (overall, or of one ``task``)."""
    runner, seed, confidence = ctx.runner, ctx.seed, ctx.confidence
    judge = ctx.judge or runner
    comparison, task, method = p.comparison, p.task, p.method
    stats = CallStats()
    generated = answer(p, runner, seed, stats, ctx.progress)

    pairs = generated.pairs
    kept, dropped = _judgeable(generated)
    asks = [
        _judge_request(pair.prompt, pair.a, pair.b, first, second)
        for pair, (ya, yb) in kept
        if ya != yb
        for first, second in ((ya, yb), (yb, ya))
    ]
    letters = iter(judge.run(asks, stats=stats))
    by_prompt: dict[tuple[str, Group, Group], list] = {}
    for pair, (ya, yb) in kept:
        judgment = None
        if ya != yb:
            forward, swapped = next(letters), next(letters)
            judgment = (_letters(forward.logprobs), _letters(swapped.logprobs))
        by_prompt.setdefault((pair.prompt.prompt, pair.a, pair.b), []).append((pair, judgment))
    records = [
        harm_core.prompt_harm(
            [j for _, j in items],
            prompt=key[0],
            a=key[1],
            b=key[2],
            task=items[0][0].prompt.task,
            domain=items[0][0].prompt.domain,
            method=method,
        )  # type: ignore[arg-type]
        for key, items in by_prompt.items()
    ]
    aggregated = _aggregate(comparison, records, confidence)
    chosen = aggregated.overall if task is None else _task_estimate(aggregated, task)
    summary = _summary(chosen, confidence)
    if np.isnan(summary.ci_t[0]) and len(records) > 1:  # some task has a single prompt: no per-task variance
        summary = _prompt_weighted_summary(comparison, records, task, confidence)
    return MeasureResult(
        measure="net_harm",
        subject=comparison if task is None else f"{comparison}:{task}",
        summary=summary,
        n_unusable=len(dropped),
        unusable_examples=dropped[:3],
        fidelity=with_provider_notes(FAITHFUL + " (judge prompt and name messages worded by us)", stats),
        model_id=runner.model.model_id,
        versions={
            "names": data_version("fpf_names.yaml"),
            "prompts": data_version("fpf_prompts.jsonl"),
            "judge_prompt": data_version("harm_prompts.yaml"),
        },
        params={
            **p.record(),
            "prompts": len({x.prompt.prompt for x in pairs}),
            "seed": seed,
            "judge": judge.model.model_id,
        },
        details=_harm_details(aggregated, generated, chosen),
        calls=stats,
        samples=[r.net for r in records],
    )


def _judgeable(generated: Answers) -> tuple[list[tuple[Pair, tuple[str, str]]], list[str]]:
    """Masked answer pairs to judge; pairs with a refusal or an answer revealing a group are dropped."""
    kept, dropped = [], []
    for p in generated.pairs:
        ya = mask_name(generated.texts[p.request_a], p.name_a)[0]
        yb = mask_name(generated.texts[p.request_b], p.name_b)[0]
        if refusal_reason(ya) or refusal_reason(yb):
            dropped.append(f"refusal in the pair for {p.prompt.prompt[:60]!r}")
        elif find_reveals(ya) or find_reveals(yb):
            dropped.append(f"an answer reveals a group for {p.prompt.prompt[:60]!r}")
        else:
            kept.append((p, (ya, yb)))
    return kept, dropped


def _letters(logprobs: dict[str, float]) -> tuple[float, float, float]:
    probs = harm_core.letter_probs(logprobs)
    return (0.0, 0.0, 1.0) if probs is None else probs  # no letter at all: no evidence of a stereotype


def _task_estimate(aggregated: harm_core.HarmResult, task: str) -> harm_core.HarmEstimate:
    if task in aggregated.by_task:
        return aggregated.by_task[task]
    return aggregated.by_domain[task]


def _summary(estimate: harm_core.HarmEstimate, confidence: float) -> Summary:
    return Summary(
        estimate.net, estimate.n, np.nan, estimate.ci, estimate.ci, NAN_INTERVAL, 0.0, np.nan, np.nan, confidence
    )


def _prompt_weighted_summary(
    comparison: str, records: Sequence[harm_core.PromptHarm], task: str | None, confidence: float
) -> Summary:
    """H with a Kish effective-n t interval over prompts, each weighted as the task weighting implies.

    The exact aggregation needs at least two prompts in every task; small samples rarely have them.
    Domains weigh equally, tasks equally within a domain, and a task's weight is split over its prompts.
    """
    pairs = comparison_pairs(comparison)
    by_task: dict[str | None, int] = {}
    tasks_of: dict[str | None, set[str | None]] = {}
    for r in records:
        by_task[r.task] = by_task.get(r.task, 0) + 1
        tasks_of.setdefault(r.domain, set()).add(r.task)
    weights = []
    for r in records:
        domain_share = 1.0 if task is not None else 1.0 / len(tasks_of)
        weights.append(domain_share / len(tasks_of[r.domain]) / by_task[r.task] / len(pairs))
    return weighted_summary([r.net for r in records], weights, null=0.0, confidence=confidence)


def _harm_details(
    aggregated: harm_core.HarmResult, generated: Answers, chosen: harm_core.HarmEstimate
) -> dict[str, object]:
    def short(e: harm_core.HarmEstimate) -> dict[str, object]:
        return {"net": e.net, "ci": list(e.ci), "forward": e.forward, "reverse": e.reverse, "n": e.n}

    return {
        "forward": chosen.forward,
        "reverse": chosen.reverse,
        "by_domain": {d: short(e) for d, e in aggregated.by_domain.items()},
        "by_task": {t: short(e) for t, e in aggregated.by_task.items()},
        "by_comparison": {c: short(e) for c, e in aggregated.by_comparison.items()},
        "refusal_rate": generated.refusal_rates(),
        "pairs_judged": aggregated.n_pairs - aggregated.n_identical,
        "identical_pairs": aggregated.n_identical,
        "degenerate_judgments": aggregated.n_degenerate,
    }


MEASURE = Measure(
    name="net_harm",
    params=NetHarmParams,
    run=run,
    requests=requests,
    uses_judge=True,
    check_inputs=check_inputs,
    planted=planted.PLANTED,
    doc="Net harmful-stereotype rating H(A, B) for a comparison (Eloundou et al.): 0 = names change nothing.",
)
