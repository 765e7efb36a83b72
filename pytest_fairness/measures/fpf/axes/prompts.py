"""The judge requests of the axes of difference (spec §7), worded from data/axes_prompts.yaml.

Each request carries its ``Purpose`` with what the judge is shown (the pairs, the features, the
question), so a test double can answer it without reading the wording. ``axes_core`` reads the replies.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from pytest_fairness.data import parse_yaml, read_text
from pytest_fairness.measures.fpf.axes.bias_axes_core import BrainstormBatch
from pytest_fairness.measures.fpf.axes.selection import LABEL_LETTERS, ORDERS, Axis, Order, Side
from pytest_fairness.models.interface import ChatRequest, LogprobRequest, Message, Purpose

PROMPTS_FILE = "axes_prompts.yaml"
TRUNCATION_MARK = "\n[... truncated]"
#: Room for a brainstorming reply (its notes and a list of short differences), also its length cap.
BRAINSTORM_REPLY_TOKENS = 400


@cache
def axes_wording() -> dict[str, Any]:
    """The prompt wording (data/axes_prompts.yaml); its ``version`` belongs in every result."""
    text = read_text(PROMPTS_FILE)
    return parse_yaml(text)


def _clip(text: str, max_chars: int | None) -> str:
    """Cut a long text to fit the judge's context, visibly (spec CHOICE-35)."""
    if max_chars is None or len(text) <= max_chars:
        return text
    return text[:max_chars] + TRUNCATION_MARK


def brainstorm_request(batch: BrainstormBatch, *, max_chars: int | None = None) -> ChatRequest:
    """The brainstorming call for one batch, at temperature 0 (spec §7.7)."""
    wording = axes_wording()["brainstorm"]
    shown = [
        (_clip(chat.prompt, max_chars), _clip(chat.model_a, max_chars), _clip(chat.model_b, max_chars))
        for chat in batch.chats
    ]
    blocks = [
        wording["chat"].format(number=n, prompt=prompt, model_a=model_a, model_b=model_b)
        for n, (prompt, model_a, model_b) in enumerate(shown, start=1)
    ]
    separator = wording["separator"]
    body = "\n".join(f"{separator}\n{block}" for block in blocks)
    user = f"{wording['intro'].format(k=len(batch.chats))}\n\n{body}\n{separator}\n\n{wording['closing']}"
    purpose = Purpose.of(
        "axes.brainstorm",
        chats=tuple((model_a, model_b) for _, model_a, model_b in shown),
        swapped=tuple(chat.swapped for chat in batch.chats),
    )
    messages = (Message("system", wording["system"]), Message("user", user))
    return ChatRequest(messages, temperature=0.0, max_tokens=BRAINSTORM_REPLY_TOKENS, purpose=purpose)


def probe_differences() -> tuple[str, ...]:
    """The plainly stated differences the judge must make a question of before anything is spent on it."""
    return tuple(axes_wording()["question_probe"])


def questions_request(features: Sequence[str], *, max_tokens: int | None = None) -> ChatRequest:
    """Ask the judge to turn brainstormed differences into "Which response ...?" questions (its reply
    capped at ``max_tokens`` when given: a probe only needs to see one)."""
    if not features:
        raise ValueError("no features to turn into questions: brainstorming produced nothing usable")
    wording = axes_wording()["consolidation"]
    user = wording["user"].format(features="\n".join(f"- {f}" for f in features))
    purpose = Purpose.of("axes.questions", features=tuple(features))
    messages = (Message("system", wording["system"]), Message("user", user))
    return ChatRequest(messages, temperature=0.0, max_tokens=max_tokens, purpose=purpose)


def merge_request(questions: Sequence[str]) -> ChatRequest:
    """Ask the judge to merge questions that mean the same (spec §7.3 step 3, Fig. 14 bottom)."""
    if not questions:
        raise ValueError("no questions to merge")
    wording = axes_wording()["merge"]
    user = wording["user"].format(questions=json.dumps(list(questions), ensure_ascii=False))
    purpose = Purpose.of("axes.merge", questions=tuple(questions))
    return ChatRequest((Message("system", wording["system"]), Message("user", user)), temperature=0.0, purpose=purpose)


def label_request(
    prompt: str, response_a: str, response_b: str, question: str, order: Order, *, max_chars: int | None = None
) -> LogprobRequest:
    """The labeling call for one pair and question; ``forward`` shows group A's response as "A".

    Send both orders: ``axes_core.pair_preference`` needs them to cancel the judge's position preference.
    """
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}; valid: {', '.join(ORDERS)}")
    first, second = (response_a, response_b) if order == "forward" else (response_b, response_a)
    first, second = _clip(first, max_chars), _clip(second, max_chars)
    wording = axes_wording()["label"]
    user = wording["user"].format(
        prompt=_clip(prompt, max_chars), response_a=first, response_b=second, question=question
    )
    purpose = Purpose.of("axes.label", question=question, order=order, response_a=first, response_b=second)
    return LogprobRequest(
        (Message("system", wording["system"]), Message("user", user)), candidates=LABEL_LETTERS, purpose=purpose
    )


def harm_scale() -> tuple[str, ...]:
    """The rating tokens of the harmfulness prompt, lowest to highest."""
    return tuple(axes_wording()["harm"]["scale"])


def harm_request(axis: Axis | str, group_a: str, group_b: str, side: Side | None = None) -> LogprobRequest:
    """Ask how harmful the axis would be, naming the groups (plural phrases: "women", "men").

    The group the responses favour is named first: ``side``, or else the axis's observed direction.
    The gate asks about both sides of every question, so that which questions count as harmful does
    not depend on the labeled pairs.
    """
    question = axis if isinstance(axis, str) else axis.question
    side = side or (None if isinstance(axis, str) else axis.direction)
    if side is None:
        raise ValueError(f"axis {question!r} leans to neither group: say which side to rate")
    favoured, other = (group_a, group_b) if side == "A" else (group_b, group_a)
    wording = axes_wording()["harm"]
    user = wording["user"].format(question=question, favoured=favoured, other=other)
    purpose = Purpose.of("axes.harmfulness", question=question, favoured=favoured, other=other)
    return LogprobRequest(
        (Message("system", wording["system"]), Message("user", user)), candidates=harm_scale(), purpose=purpose
    )
