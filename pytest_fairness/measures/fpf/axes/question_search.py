"""The search of the axes of difference (spec §7.2-7.3): brainstorm batches, then questions, asked of the judge.

A judge that cannot do a step (no readable question made of a few plainly stated differences, asked before
any chatbot answer is generated; no readable brainstorm list in the first batches; no readable question of
its own brainstorm; or a context too small for one pair) raises ``Unserved`` saying why, before the
labeling budget is spent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_fairness.measures.fpf.axes import bias_axes_core, prompts
from pytest_fairness.models.interface import PermanentError, estimate_tokens
from pytest_fairness.models.runner import Runner

#: Brainstorming batches sent before the rest, as many at a time as the judge answers at once, until one
#: is readable: when none of them is, the judge cannot serve.
PROBE_BATCHES = 3
#: Reply tokens for the question probe (``probe_questions``): its reply is only read for whether it holds
#: a question at all.
PROBE_QUESTION_TOKENS = 256
#: Most times a brainstorm pair is shown, on average: ``t`` is capped at this many views of the pool, so a
#: small run does not pay for hundreds of batches of the same few pairs.
VIEWS_PER_PAIR = 2
UNSERVED_HINT = "point --fairness-judge at a model that can compare long answers"

Text = tuple[str, str, str]  # (prompt, group A's answer, group B's answer), names masked


class Unserved(Exception):
    """The judge cannot do a step; the message says why, with its usable rate, and what to do."""


@dataclass(frozen=True)
class Brainstorm:
    """What the brainstorm produced: the questions to test and how they were found."""

    questions: list[str]
    details: dict[str, Any]
    notes: tuple[str, ...] = ()


def _batch_tokens(texts: Sequence[Text], pool: Sequence[int]) -> Any:
    """Tokens of a brainstorming request of ``size`` pairs, the longest ones, plus room for its reply."""
    longest = sorted(pool, key=lambda i: -sum(map(len, texts[i])))

    def tokens(size: int) -> int:
        batch = bias_axes_core.sample_batches(texts, size, 1, 0, indices=longest[:size], orientation="fixed")[0]
        return estimate_tokens(prompts.brainstorm_request(batch)) + prompts.BRAINSTORM_REPLY_TOKENS

    return tokens


def _is_context_error(exc: BaseException) -> bool:
    """A provider's "prompt too long" (openai's context_length_exceeded, llama.cpp's context errors)."""
    text = str(exc).casefold()
    return "context" in text and any(w in text for w in ("length", "exceed", "window", "too long", "n_ctx"))


def brainstorm(
    judge: Runner, texts: Sequence[Text], pool: Sequence[int], rng: np.random.Generator, *, k: int, t: int, m: int
) -> Brainstorm:
    """Steps 2-3: features from at most ``t`` batches of ``k`` pairs of ``pool``, then at most ``m``
    questions; Unserved when the judge cannot."""
    if not pool:  # every answer pair is identical: no difference to name
        return Brainstorm([], {"batches": 0, "every_pair_identical": True})
    size, notes = _fit_k(judge, texts, pool, k)
    batches = min(t, max(1, math.ceil(VIEWS_PER_PAIR * len(pool) / size)))
    if batches < t:
        notes.append(f"t capped at {batches}: the {len(pool)} brainstorm pairs shown about {VIEWS_PER_PAIR} times each")
    parsed, size = _batches_that_fit(judge, texts, pool, size, batches, rng, notes)
    readable = sum(bool(x.features) for x in parsed)
    details = {
        "k": size,
        "t": batches,
        "batches": len(parsed),
        "readable_batches": readable,
        "features_brainstormed": sum(len(x.features) for x in parsed),
        "features_too_long": sum(x.n_too_long for x in parsed),
    }
    if not readable:
        raise Unserved(
            f"the judge gave a readable list of differences for 0 of {len(parsed)} brainstorm batches; {UNSERVED_HINT}"
        )
    features = bias_axes_core.consolidate([f for x in parsed for f in x.features])
    questions = _questions(judge, features, f"{len(features)} brainstormed differences", m)
    if len(questions) > 1:  # the judge merges questions that ask the same thing (spec §7.3 step 3)
        (merged,) = judge.run([prompts.merge_request(questions)])
        questions = bias_axes_core.order_questions(bias_axes_core.parse_questions(merged.text), cap=m) or questions
    return Brainstorm(questions, details, tuple(notes))


def _fit_k(judge: Runner, texts: Sequence[Text], pool: Sequence[int], k: int) -> tuple[int, list[str]]:
    """The batch size that fits the judge's context (Unserved when not even one pair does), with a note
    when it shrank."""
    context = judge.model.context_tokens
    size = bias_axes_core.fit_k(min(k, len(pool)), _batch_tokens(texts, pool), context)
    if size == 0:
        raise Unserved(
            f"one pair of answers does not fit the judge's {context}-token context with room for its reply; "
            f"{UNSERVED_HINT} (or one with a larger context)"
        )
    if size == k:
        return size, []
    fits = size < min(k, len(pool))
    why = f"to fit the judge's {context}-token context" if fits else f"as only {len(pool)} pairs brainstorm"
    return size, [f"k shrank from {k} to {size} {why}"]


def _batches_that_fit(
    judge: Runner,
    texts: Sequence[Text],
    pool: Sequence[int],
    k: int,
    t: int,
    rng: np.random.Generator,
    notes: list[str],
) -> tuple[list[bias_axes_core.FeatureParse], int]:
    """The brainstorm's replies, halving ``k`` (and saying so in ``notes``) while the provider refuses a
    batch as too long; the ``k`` that was used."""
    while True:
        try:
            return _brainstorm_batches(judge, texts, pool, k, t, rng), k
        except (PermanentError, ValueError) as exc:  # the provider's own count of tokens says it does not fit
            if not _is_context_error(exc) or k == 1:
                raise
            notes.append(f"k shrank from {k} to {k // 2} after the judge refused a batch as too long")
            k //= 2


def _brainstorm_batches(
    judge: Runner,
    texts: Sequence[Text],
    pool: Sequence[int],
    k: int,
    t: int,
    rng: np.random.Generator,
) -> list[bias_axes_core.FeatureParse]:
    """The first batches until one is readable (as many at a time as the judge answers at once), then the
    rest: a judge that lists no difference is found before it brainstorms the other batches. Every batch is
    drawn first, so the batches do not depend on how many the judge answers at once."""
    batches = bias_axes_core.sample_batches(texts, k, t, rng, indices=pool)
    first, step = batches[:PROBE_BATCHES], judge.at_once() or PROBE_BATCHES
    parsed: list[bias_axes_core.FeatureParse] = []
    while len(parsed) < len(first) and not any(x.features for x in parsed):
        replies = judge.run([prompts.brainstorm_request(b) for b in first[len(parsed) : len(parsed) + step]])
        parsed += [bias_axes_core.read_features(r.text) for r in replies]
    rest = batches[len(parsed) :]
    if not any(x.features for x in parsed) or not rest:
        return parsed
    replies = judge.run([prompts.brainstorm_request(b) for b in rest])
    return parsed + [bias_axes_core.read_features(r.text) for r in replies]


def probe_questions(judge: Runner) -> None:
    """Unserved when the judge makes no readable question of a few plainly stated differences (one call, its
    reply capped): found before the chatbot answers, brainstorms and labels are paid for. Its reply is not
    used, so a judge that passes is asked everything else exactly as it would be without the probe."""
    differences = prompts.probe_differences()
    what = f"{len(differences)} plainly stated example differences (the question probe)"
    _questions(judge, differences, what, max_tokens=PROBE_QUESTION_TOKENS)


def _questions(
    judge: Runner, features: Sequence[str], what: str, cap: int | None = None, max_tokens: int | None = None
) -> list[str]:
    """The judge's 'Which response ...?' questions for these differences, shortest first (at most ``cap``);
    Unserved, naming ``what`` it was given, when it writes none."""
    (reply,) = judge.run([prompts.questions_request(features, max_tokens=max_tokens)])
    questions = bias_axes_core.order_questions(bias_axes_core.parse_questions(reply.text), cap=cap)
    if not questions:
        raise Unserved(f"the judge turned {what} into no readable 'Which response ...?' question; {UNSERVED_HINT}")
    return questions
