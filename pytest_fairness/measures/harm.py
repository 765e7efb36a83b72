"""First-person fairness (Eloundou et al., spec §2-6): does a user's name change the answer harmfully?

For every prompt, the chatbot answers users with names from two groups (``names_per_group`` random
names each, temperature 0.8, the name carried by a custom-instructions system message). Refusals
are excluded from harm and reported as rates per group; names are masked before judging; identical
answers score 0 without a judge call. A judge sees the request and the two answers — never which
group each came from — and answers A/B/C; its letter probabilities in both orders are combined with
the renormalised minimum (spec §5.3). Per prompt the net rating h = h_F − h_R, and H(A, B) over
prompts, tasks weighted equally within domains (``harm_core``).

``comparison`` picks the groups: ``gender`` (women vs men), a race (``asian``, ``black``, ``hispanic``:
against White, gender-matched), or ``intersectional`` (women vs men within each race).

``quality`` (a second measure in this module) has the judge rate every answer on the nine criteria
of spec §6.1 from 1 to 5 and compares the groups with paired tests and a Holm correction.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np
import yaml

from pytest_fairness.measures import harm_core, quality_core
from pytest_fairness.measures.fpf_data import (
    FpfPrompt,
    build_messages,
    find_reveals,
    load_names,
    load_prompts,
    mask_name,
    packaged_prompts,
    refusal_reason,
)
from pytest_fairness.measures.harm_core import Group
from pytest_fairness.models.base import ChatModel, ChatRequest, LogprobRequest, Message
from pytest_fairness.models.runner import CallStats, ProgressFn, Runner
from pytest_fairness.result import FAITHFUL, MeasureResult, with_provider_notes
from pytest_fairness.stats import NAN_INTERVAL, Summary, summarize, weighted_summary
from pytest_fairness.stimuli import data_version

COMPARISONS = ("gender", "asian", "black", "hispanic", "intersectional")
LETTER_CANDIDATES = ("A", "B", "C", " A", " B", " C")
DIGITS = tuple(str(d) for d in range(1, 6))


@cache
def _wording() -> dict[str, object]:
    text = resources.files("pytest_fairness.data").joinpath("harm_prompts.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def comparison_pairs(comparison: str) -> list[tuple[Group, Group]]:
    """The (A, B) group pairs a comparison averages over (spec §5.5)."""
    if comparison == "gender":
        return [(Group("female"), Group("male"))]
    if comparison == "intersectional":
        return [(Group("female", race), Group("male", race)) for race in harm_core.RACES]
    race = comparison.capitalize()
    return [(Group(g, race), Group(g, harm_core.REFERENCE_RACE)) for g in harm_core.GENDERS]


def _aggregate(comparison: str, records: Sequence[harm_core.PromptHarm], confidence: float) -> harm_core.HarmResult:
    if comparison == "gender":
        return harm_core.gender_harm(records, confidence)
    if comparison == "intersectional":
        return harm_core.intersectional_harm(records, confidence=confidence)
    return harm_core.race_harm(records, comparison.capitalize(), confidence)


def _label(group: Group) -> str:
    labels = _wording()["labels"]
    word = labels[group.gender]  # type: ignore[index]
    return f"{group.race} {word}" if group.race else str(word)


@dataclass(frozen=True)
class _Pair:
    """One counterfactual pair: the same prompt answered for a name from A and a name from B."""

    prompt: FpfPrompt
    a: Group
    b: Group
    name_a: str
    name_b: str
    request_a: ChatRequest
    request_b: ChatRequest


def _prompts(prompts: int, seed: int, task: str | None, prompts_file: str | None) -> list[FpfPrompt]:
    pool = list(load_prompts(prompts_file) if prompts_file else packaged_prompts())
    if task is not None:
        pool = [p for p in pool if p.task == task or p.domain == task]
        if not pool:
            raise ValueError(f"no prompt of task or domain {task!r} in the prompt set")
    if prompts < len(pool):
        pool = random.Random(f"harm:prompts:{seed}:{task}").sample(pool, prompts)
    return pool


def _pairs(
    comparison: str,
    prompts: Sequence[FpfPrompt],
    names_per_group: int,
    seed: int,
    mechanism: str,
    temperature: float,
    max_tokens: int,
) -> list[_Pair]:
    names = load_names()
    out = []
    for x in prompts:
        for a, b in comparison_pairs(comparison):
            rng = random.Random(f"harm:{seed}:{x.prompt}:{a}:{b}")
            for i in range(names_per_group):
                name_a, name_b = rng.choice(names.names(a)), rng.choice(names.names(b))
                requests = [
                    ChatRequest(
                        build_messages(x.prompt, name, mechanism=mechanism),  # type: ignore[arg-type]
                        temperature=temperature,
                        max_tokens=max_tokens,
                        seed=zlib.crc32(f"{seed}:{name}:{x.prompt}:{i}".encode()),
                        sample_index=i,
                    )
                    for name in (name_a, name_b)
                ]
                out.append(_Pair(x, a, b, name_a, name_b, *requests))
    return out


def _judge_request(x: FpfPrompt, a: Group, b: Group, first: str, second: str) -> LogprobRequest:
    text = str(_wording()["harm_judge"]).format(
        group_a=_label(a), group_b=_label(b), prompt=x.prompt, response_1=first, response_2=second
    )
    return LogprobRequest((Message("user", text),), LETTER_CANDIDATES)


def check_params(
    *,
    comparison: str,
    prompts: int,
    names_per_group: int = 2,
    mechanism: str = "ci",
    max_tokens: int = 300,
    method: str = "min_renorm",
) -> None:
    """Raise ValueError naming a bad parameter; reads no file (``run`` loads the prompts once itself)."""
    if comparison not in COMPARISONS:
        raise ValueError(f"unknown comparison {comparison!r}; valid: {', '.join(COMPARISONS)}")
    for name, value in (("prompts", prompts), ("names_per_group", names_per_group), ("max_tokens", max_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    if method not in ("min_renorm", "raw_min", "mean"):
        raise ValueError(f"unknown method {method!r}; valid: min_renorm, raw_min, mean")
    if mechanism not in ("ci", "memory_approx"):
        raise ValueError(f"unknown mechanism {mechanism!r}; valid: ci, memory_approx")


def validate(
    *,
    comparison: str,
    prompts: int,
    task: str | None = None,
    prompts_file: str | None = None,
    names_per_group: int = 2,
    mechanism: str = "ci",
    temperature: float = 0.8,
    max_tokens: int = 300,
    method: str = "min_renorm",
) -> None:
    """Raise ValueError naming the bad parameter (and read a prompts file, so a bad suite fails early)."""
    check_params(
        comparison=comparison,
        prompts=prompts,
        names_per_group=names_per_group,
        mechanism=mechanism,
        max_tokens=max_tokens,
        method=method,
    )
    _prompts(prompts, 0, task, prompts_file)


def requests(
    model: ChatModel,
    *,
    comparison: str,
    prompts: int,
    seed: int = 0,
    task: str | None = None,
    prompts_file: str | None = None,
    names_per_group: int = 2,
    mechanism: str = "ci",
    temperature: float = 0.8,
    max_tokens: int = 300,
    **_: object,
) -> list[ChatRequest]:
    """The chatbot requests ``run`` would send (judge calls depend on the answers and are not counted)."""
    pairs = _pairs(
        comparison,
        _prompts(prompts, seed, task, prompts_file),
        names_per_group,
        seed,
        mechanism,
        temperature,
        max_tokens,
    )
    return list(dict.fromkeys(r for p in pairs for r in (p.request_a, p.request_b)))


@dataclass
class _Generated:
    pairs: list[_Pair]
    texts: dict[ChatRequest, str]
    refusals: dict[str, list[bool]]


def _generate(runner: Runner, pairs: list[_Pair], stats: CallStats, progress: ProgressFn | None) -> _Generated:
    unique = list(dict.fromkeys(r for p in pairs for r in (p.request_a, p.request_b)))
    texts = {
        r: response.text for r, response in zip(unique, runner.run(unique, stats=stats, progress=progress), strict=True)
    }
    refusals: dict[str, list[bool]] = {}
    for p in pairs:
        for group, request in ((p.a, p.request_a), (p.b, p.request_b)):
            refusals.setdefault(str(group), []).append(refusal_reason(texts[request]) is not None)
    return _Generated(pairs, texts, refusals)


def answer(
    runner: Runner,
    stats: CallStats,
    progress: ProgressFn | None,
    *,
    comparison: str,
    prompts: int,
    seed: int,
    task: str | None,
    prompts_file: str | None,
    names_per_group: int,
    mechanism: str,
    temperature: float,
    max_tokens: int,
) -> _Generated:
    """Sample the prompts, draw the names and have the chatbot answer every (prompt, name)."""
    pairs = _pairs(
        comparison,
        _prompts(prompts, seed, task, prompts_file),
        names_per_group,
        seed,
        mechanism,
        temperature,
        max_tokens,
    )
    return _generate(runner, pairs, stats, progress)


def run(
    runner: Runner,
    *,
    comparison: str,
    prompts: int,
    seed: int = 0,
    task: str | None = None,
    prompts_file: str | None = None,
    names_per_group: int = 2,
    mechanism: str = "ci",
    temperature: float = 0.8,
    max_tokens: int = 300,
    method: str = "min_renorm",
    judge: Runner | None = None,
    confidence: float = 0.95,
    progress: ProgressFn | None = None,
) -> MeasureResult:
    """Net harmful-stereotype rating H(A, B) of a comparison (overall, or of one ``task``)."""
    check_params(
        comparison=comparison,
        prompts=prompts,
        names_per_group=names_per_group,
        mechanism=mechanism,
        max_tokens=max_tokens,
        method=method,
    )
    judge = judge or runner
    stats = CallStats()
    generated = answer(
        runner,
        stats,
        progress,
        comparison=comparison,
        prompts=prompts,
        seed=seed,
        task=task,
        prompts_file=prompts_file,
        names_per_group=names_per_group,
        mechanism=mechanism,
        temperature=temperature,
        max_tokens=max_tokens,
    )
    pairs = generated.pairs
    kept, dropped = _judgeable(generated)
    asks = [
        _judge_request(p.prompt, p.a, p.b, first, second)
        for p, (ya, yb) in kept
        if ya != yb
        for first, second in ((ya, yb), (yb, ya))
    ]
    letters = iter(judge.run(asks, stats=stats))
    by_prompt: dict[tuple[str, Group, Group], list] = {}
    for p, (ya, yb) in kept:
        judgment = None
        if ya != yb:
            forward, swapped = next(letters), next(letters)
            judgment = (_letters(forward.logprobs), _letters(swapped.logprobs))
        by_prompt.setdefault((p.prompt.prompt, p.a, p.b), []).append((p, judgment))
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
            "comparison": comparison,
            "task": task,
            "prompts": len({p.prompt.prompt for p in pairs}),
            "names_per_group": names_per_group,
            "seed": seed,
            "method": method,
            "mechanism": mechanism,
            "judge": judge.model.model_id,
        },
        details=_harm_details(aggregated, generated, chosen),
        calls=stats,
        samples=[r.net for r in records],
    )


def _judgeable(generated: _Generated) -> tuple[list[tuple[_Pair, tuple[str, str]]], list[str]]:
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
    aggregated: harm_core.HarmResult, generated: _Generated, chosen: harm_core.HarmEstimate
) -> dict[str, object]:
    def short(e: harm_core.HarmEstimate) -> dict[str, object]:
        return {"net": e.net, "ci": list(e.ci), "forward": e.forward, "reverse": e.reverse, "n": e.n}

    return {
        "forward": chosen.forward,
        "reverse": chosen.reverse,
        "by_domain": {d: short(e) for d, e in aggregated.by_domain.items()},
        "by_task": {t: short(e) for t, e in aggregated.by_task.items()},
        "by_comparison": {c: short(e) for c, e in aggregated.by_comparison.items()},
        "refusal_rate": {g: float(np.mean(r)) for g, r in generated.refusals.items()},
        "pairs_judged": aggregated.n_pairs - aggregated.n_identical,
        "identical_pairs": aggregated.n_identical,
        "degenerate_judgments": aggregated.n_degenerate,
    }


# -- response quality (spec §6) ---------------------------------------------------------------------------


def quality_requests(pairs: Sequence[_Pair], texts: dict[ChatRequest, str]) -> list[LogprobRequest]:
    wording = str(_wording()["quality_judge"])
    return [
        LogprobRequest(
            (Message("user", wording.format(prompt=p.prompt.prompt, response=mask_name(texts[r], n)[0], criterion=c)),),
            DIGITS,
        )
        for p in pairs
        for r, n in ((p.request_a, p.name_a), (p.request_b, p.name_b))
        for c in quality_core.QUALITY_CRITERIA
    ]


def _rating(logprobs: dict[str, float]) -> float:
    """Expected rating from the judge's digit probabilities (renormalised over 1..5)."""
    weights = np.exp(np.array([logprobs[d] for d in DIGITS]))
    return float(weights @ np.arange(1, 6) / weights.sum())


def run_quality(
    runner: Runner,
    *,
    comparison: str,
    prompts: int,
    seed: int = 0,
    task: str | None = None,
    prompts_file: str | None = None,
    names_per_group: int = 1,
    mechanism: str = "ci",
    temperature: float = 0.8,
    max_tokens: int = 300,
    judge: Runner | None = None,
    confidence: float = 0.95,
    progress: ProgressFn | None = None,
) -> MeasureResult:
    """Quality disparity: overall-quality difference A − B (1..5 scale), per-criterion paired tests in details."""
    check_params(
        comparison=comparison,
        prompts=prompts,
        names_per_group=names_per_group,
        mechanism=mechanism,
        max_tokens=max_tokens,
    )
    judge = judge or runner
    stats = CallStats()
    generated = answer(
        runner,
        stats,
        progress,
        comparison=comparison,
        prompts=prompts,
        seed=seed,
        task=task,
        prompts_file=prompts_file,
        names_per_group=names_per_group,
        mechanism=mechanism,
        temperature=temperature,
        max_tokens=max_tokens,
    )
    pairs = generated.pairs
    scores = iter(judge.run(quality_requests(pairs, generated.texts), stats=stats))
    ratings = []
    for p in pairs:
        for group in (p.a, p.b):
            criteria = {c: _rating(next(scores).logprobs) for c in quality_core.QUALITY_CRITERIA}
            ratings.append(quality_core.Rating(p.prompt.prompt, str(group), criteria))
    a, b = str(pairs[0].a), str(pairs[0].b)
    disparity = quality_core.quality_disparity(ratings, a, b)
    per_prompt = _paired_quality(ratings, a, b, quality_core.QUALITY_CRITERIA[0])
    return MeasureResult(
        measure="quality_disparity",
        subject=comparison,
        summary=summarize(per_prompt, null=0.0, confidence=confidence, seed=seed),
        n_unusable=0,
        unusable_examples=[],
        fidelity=with_provider_notes(
            FAITHFUL + " (judge ratings read as expected values of 1-5 digit probabilities)", stats
        ),
        model_id=runner.model.model_id,
        versions={"prompts": data_version("fpf_prompts.jsonl"), "judge_prompt": data_version("harm_prompts.yaml")},
        params={"comparison": comparison, "prompts": prompts, "seed": seed, "judge": judge.model.model_id},
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
            "refusal_rate": {g: float(np.mean(r)) for g, r in generated.refusals.items()},
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
