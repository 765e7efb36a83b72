"""Answer generation shared by the first-person fairness measures (net harm, quality, axes).

For every prompt the chatbot answers users with names from two groups (``names_per_group`` random
names each, temperature 0.8 by default, the name carried by a custom-instructions system message;
spec §3, §5.5). ``comparison`` picks the groups: ``gender`` (women vs men), a race (``asian``,
``black``, ``hispanic``: against White, gender-matched), or ``intersectional`` (women vs men
within each race). The parameters every such measure shares live in ``AnswerParams``.
"""

from __future__ import annotations

import os
import random
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any, ClassVar

import numpy as np

from pytest_fairness.data import load_yaml
from pytest_fairness.measures.fpf.corpus import (
    FpfPrompt,
    NameSets,
    build_messages,
    find_reveals,
    load_names,
    load_prompts,
    packaged_prompts,
    refusal_reason,
)
from pytest_fairness.measures.fpf.harm import net_harm_core
from pytest_fairness.measures.fpf.harm.net_harm_core import Group
from pytest_fairness.measures.params import Params, ParamsError, param
from pytest_fairness.models.interface import ChatRequest, Purpose
from pytest_fairness.models.runner import ProgressFn, Runner

COMPARISONS = ("gender", "asian", "black", "hispanic", "intersectional")
MECHANISMS = ("ci", "memory_approx")


@dataclass(frozen=True)
class AnswerParams(Params):
    """Which prompts are answered, for which groups' names, and how the chatbot is sampled."""

    NULL: ClassVar[float] = 0.0
    DEFAULT_SAMPLES: ClassVar[Mapping[str, int]] = {"quick": 6, "paper": 200}

    comparison: str = param(subject=True, choices=COMPARISONS)
    prompts: int = param(6, low=1, samples=True)
    task: str | None = param(None, doc="a task or domain of the hierarchy: only its prompts")
    prompts_file: str | os.PathLike[str] | None = param(
        None, doc="JSONL or CSV of first messages instead of the packaged corpus"
    )
    names_per_group: int = param(2, low=1, high=15, doc="distinct names per group; every cross pair is judged")
    mechanism: str = param("ci", choices=MECHANISMS)
    temperature: float = param(0.8, low=0, high=2)
    max_tokens: int = param(300, low=1)


def check_inputs(p: AnswerParams) -> None:
    """Read the prompt set a check names, so a bad suite fails at collection."""
    _pool(p)


@cache
def wording() -> dict[str, Any]:
    """Our wording of the judge prompts and group labels (data/harm_prompts.yaml)."""
    return load_yaml("harm_prompts.yaml")


@cache
def comparison_pairs(comparison: str) -> tuple[tuple[Group, Group], ...]:
    """The (A, B) group pairs a comparison averages over (spec §5.5); the same objects every time, so that a
    run's pairs and per-prompt records share them rather than each holding its own."""
    if comparison == "gender":
        return ((Group("female"), Group("male")),)
    if comparison == "intersectional":
        return tuple((Group("female", race), Group("male", race)) for race in net_harm_core.RACES)
    race = comparison.capitalize()
    return tuple((Group(g, race), Group(g, net_harm_core.REFERENCE_RACE)) for g in net_harm_core.GENDERS)


def comparison_groups(comparison: str) -> tuple[str, str]:
    """The two sides of a comparison in plural words, for questions about it as a whole."""
    if comparison in ("gender", "intersectional"):
        return "women", "men"
    return f"{comparison.capitalize()} people", f"{net_harm_core.REFERENCE_RACE} people"


def group_label(group: Group) -> str:
    """How the judge is told about a group ("woman", "Black man")."""
    word = wording()["labels"][group.gender]
    return f"{group.race} {word}" if group.race else str(word)


@dataclass(frozen=True)
class Pair:
    """One counterfactual pair: the same prompt answered for a name from A and a name from B."""

    prompt: FpfPrompt
    a: Group
    b: Group
    name_a: str
    name_b: str
    request_a: ChatRequest
    request_b: ChatRequest
    draw: int = 0  # which prompt draw of the run it belongs to


@dataclass(frozen=True)
class Draw:
    """One sampled prompt: the ``round``-th time its task was drawn past the end of its prompts."""

    prompt: FpfPrompt
    round: int = 0


def _pool(p: AnswerParams) -> list[FpfPrompt]:
    """The prompts a run draws from: of one task or domain when given, never one that reveals a group."""
    pool = list(load_prompts(p.prompts_file) if p.prompts_file else packaged_prompts())
    if p.task is not None:
        pool = [x for x in pool if p.task in (x.task, x.domain)]
        if not pool:
            raise ParamsError(f"no prompt of task or domain {p.task!r} in the prompt set")
    # The paper filters prompts, not answers (App. J): a prompt naming the user's group is no counterfactual.
    return [x for x in pool if not _reveals(x.prompt)]


@cache
def _reveals(prompt: str) -> bool:
    """Whether a prompt states its user's group; remembered, as every check screens the same corpus."""
    return bool(find_reveals(prompt))


def sample_prompts(p: AnswerParams, seed: int) -> list[Draw]:
    """``prompts`` independent draws from the task hierarchy (``draws_of``), as a list."""
    return list(draws_of(p, seed))


def draws_of(p: AnswerParams, seed: int) -> Iterator[Draw]:
    """``prompts`` independent draws from the task hierarchy, one at a time: a domain uniformly, a task uniformly
    within it, then the task's next prompt in a seeded order (starting over, with new names, once exhausted).

    The mean over draws then estimates the paper's H, in which domains weigh equally and tasks equally
    within a domain, and a run of n draws is the first n of a run of more (prefix-stable), so sequential
    sampling reuses every answer already paid for.
    """
    tasks: dict[str | None, dict[str | None, list[FpfPrompt]]] = {}
    for x in _pool(p):
        tasks.setdefault(x.domain, {}).setdefault(x.task, []).append(x)
    if not tasks:
        return
    for domain in tasks.values():
        for task, prompts in domain.items():
            random.Random(f"harm:prompts:{seed}:{task}").shuffle(prompts)
    rng = random.Random(f"harm:draws:{seed}:{p.task}")
    used: dict[str | None, int] = {}
    for _ in range(p.prompts):
        domain = tasks[rng.choice(list(tasks))]
        task = rng.choice(list(domain))
        k = used[task] = used.get(task, -1) + 1
        prompts = domain[task]
        yield Draw(prompts[k % len(prompts)], k // len(prompts))


@lru_cache(maxsize=1)
def pairs_for(p: AnswerParams, seed: int) -> tuple[Pair, ...]:
    """Every (draw, group pair, name pair) of a run, with the two chat requests it needs.

    Each group gets ``names_per_group`` distinct names, each name one answer, and every cross pair of
    an A-name and a B-name is compared (spec §3.6, §5.5: two names per group, four pairs). The last
    draw is remembered: a check's plan reads it three times (its requests, its judge's and its
    reference's calls), then its run, and a release check has some 150,000 pairs.
    """
    return tuple(x for chunk in pairs_in_chunks(p, seed, None) for x in chunk)


def pairs_in_chunks(p: AnswerParams, seed: int, draws: int | None) -> Iterator[tuple[Pair, ...]]:
    """The run's pairs (as ``pairs_for``) ``draws`` prompt draws at a time, each chunk made when it is asked
    for (None: all in one chunk), so a run that answers and judges a chunk at a time never holds them all."""
    names, chunk = load_names(), []
    for d, draw in enumerate(draws_of(p, seed)):
        if draws is not None and d and d % draws == 0:
            yield tuple(chunk)
            chunk = []
        chunk += _draw_pairs(p, seed, d, draw, names)
    if chunk:
        yield tuple(chunk)


def _draw_pairs(p: AnswerParams, seed: int, d: int, draw: Draw, names: NameSets) -> list[Pair]:
    """The pairs of draw ``d``: every group pair of the comparison, every cross pair of their names."""
    x, again = draw.prompt, f":{draw.round}" if draw.round else ""
    out = []
    for a, b in comparison_pairs(p.comparison):
        chats = {}
        for group in (a, b):
            key = f"harm:{seed}:{x.prompt}:{a}:{b}:{group}{again}"
            for i, name in enumerate(draw_names(names.names(group), p.names_per_group, key)):
                chats[group, i] = (
                    name,
                    ChatRequest(
                        build_messages(x.prompt, name, mechanism=p.mechanism),  # type: ignore[arg-type]
                        temperature=p.temperature,
                        max_tokens=p.max_tokens,
                        seed=zlib.crc32(f"{seed}:{name}:{x.prompt}:{i}{again}".encode()),
                        sample_index=i,
                        purpose=_purpose(x, name, group),
                    ),
                )
        for i in range(p.names_per_group):
            for j in range(p.names_per_group):
                (name_a, request_a), (name_b, request_b) = chats[a, i], chats[b, j]
                out.append(Pair(x, a, b, name_a, name_b, request_a, request_b, d))
    return out


def corpus_estimand(p: AnswerParams, pairs: Sequence[Pair]) -> dict[str, object]:
    """What a run's interval is about, for its result's details: this prompt set, not the task's prompts.

    ``sample_prompts`` cycles through the few prompts a task has (about 33 per task in the packaged
    corpus: a per-task release run of 3,139 draws uses each about 95 times, with new names), and the
    interval treats the draws as independent. So it covers the mean over *these* prompts, weighted as
    drawn, with names and answers random; it does not cover the mean over all prompts users might send
    for the task, because the corpus's own prompt-to-prompt variation is not sampling noise to it
    (``tests/unit/test_estimand.py`` simulates both).
    """
    return estimand_of(p, len({x.prompt.prompt for x in pairs}), len({x.draw for x in pairs}))


def estimand_of(p: AnswerParams, distinct: int, draws: int) -> dict[str, object]:
    """``corpus_estimand`` of a run of ``draws`` prompt draws, ``distinct`` of them different."""
    where = f"of task or domain {p.task!r} " if p.task is not None else ""
    source = "the prompt file" if p.prompts_file is not None else "the packaged corpus"
    text = (
        f"the mean over the {distinct} distinct prompts {where}in {source}, weighted as drawn (domains equally, "
        "tasks equally within a domain, prompts equally within a task), each answered for names drawn at random; "
        "not the mean over every prompt users might send, whose spread beyond these prompts the interval omits"
    )
    return {"estimand": text, "distinct_prompts": distinct, "draws": draws}


def draw_names(pool: Sequence[str], n: int, key: str) -> list[str]:
    """The first ``n`` names of a shuffle of ``pool`` seeded by ``key``.

    Each group has its own shuffle, so its first name does not depend on ``n``: a run with one name per
    group (axes of difference) sends requests that a run with two (net harm) already sent, and the
    cache answers them.
    """
    order = list(pool)
    random.Random(key).shuffle(order)
    return order[:n]


def _purpose(x: FpfPrompt, name: str, group: Group) -> Purpose:
    """The user's name and group, and the task of the prompt answered."""
    return Purpose.of(
        "fpf.answer", name=name, group=str(group), gender=group.gender, race=group.race, task=x.task, domain=x.domain
    )


def chat_requests(p: AnswerParams, seed: int) -> list[ChatRequest]:
    """The chatbot requests of a run, each once (for --fairness-plan; judge calls are not counted)."""
    return _unique(pairs_for(p, seed))


def _unique(pairs: Sequence[Pair]) -> list[ChatRequest]:
    return list(dict.fromkeys(r for x in pairs for r in (x.request_a, x.request_b)))


def draw_means(values: Iterable[tuple[int, float]]) -> list[float]:
    """One sample per prompt draw: the mean of its values over the comparison's group pairs (e.g.
    female and male Black-vs-White), so that the plain mean over draws estimates the comparison's H."""
    by_draw: dict[int, list[float]] = {}
    for draw, value in values:
        by_draw.setdefault(draw, []).append(value)
    return [float(np.mean(v)) for v in by_draw.values()]


@dataclass
class Answers:
    """The chatbot's answers to every pair, and which of them were refusals, per group."""

    pairs: Sequence[Pair]
    texts: dict[ChatRequest, str]
    refusals: dict[str, list[bool]]

    def refusal_rates(self) -> dict[str, float]:
        return {g: sum(r) / len(r) for g, r in self.refusals.items()}


def answer(
    p: AnswerParams,
    runner: Runner,
    seed: int,
    progress: ProgressFn | None,
    extra: Callable[[Sequence[Pair]], Sequence[ChatRequest]] | None = None,
) -> Answers:
    """Sample the prompts, draw the names and have the chatbot answer every (prompt, name), and the ``extra``
    requests a measure derives from the pairs (in the same call: one batch in batch mode)."""
    return answer_pairs(pairs_for(p, seed), runner, progress, extra)


def answer_pairs(
    pairs: Sequence[Pair],
    runner: Runner,
    progress: ProgressFn | None,
    extra: Callable[[Sequence[Pair]], Sequence[ChatRequest]] | None = None,
) -> Answers:
    """Have the chatbot answer every (prompt, name) of ``pairs`` and the ``extra`` requests derived from them."""
    unique = _unique(pairs)
    asked = set(unique)
    unique += [r for r in (extra(pairs) if extra else ()) if r not in asked]
    texts = {r: out.text for r, out in zip(unique, runner.run(unique, progress=progress), strict=True)}
    refusals: dict[str, list[bool]] = {}
    for x in pairs:
        for group, request in ((x.a, x.request_a), (x.b, x.request_b)):
            refusals.setdefault(str(group), []).append(refusal_reason(texts[request]) is not None)
    return Answers(pairs, texts, refusals)


class ChunkProgress:
    """The progress of a run answered a chunk at a time: each chunk's ``(done, total)`` counted on from the chunks
    before it, out of the run's ``total`` requests (or more, should its chunks ask more)."""

    def __init__(self, progress: ProgressFn | None, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0

    def chunk(self) -> ProgressFn | None:
        """The progress of the next chunk; ask for it before the chunk's requests are sent."""
        if self.progress is None:
            return None
        before, progress = self.done, self.progress

        def tell(done: int, total: int, note: str = "") -> None:
            self.done = before + done
            progress(before + done, max(self.total, before + total), note)

        return tell
