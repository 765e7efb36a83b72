"""Reading OpenAI-format replies: chat and text completions, their log-probs and echoed prompts.

Servers that call themselves OpenAI-compatible answer a little differently: a chat-shaped body at
``/v1/completions``, a choice without its message, log-probs of another shape, a body that is no object
at all. Each reader takes the SDK's object or a plain dict (litellm and batch files give dicts) and
returns what it needs, or raises one error naming the model, the endpoint and what was missing:
``TransientError`` for a reply without choices (an error page from a proxy, an overloaded server: worth
another try), ``PermanentError`` for a reply of the wrong shape (the same server answers the same way
again: the fix is another server or endpoint). No reader lets an ``AttributeError`` of ours escape.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_fairness.models.interface import ChatResponse, LogprobResponse, PermanentError, TransientError, join_notes

CHAT, TEXT = "/v1/chat/completions", "/v1/completions"


@dataclass(frozen=True)
class Where:
    """Which model's reply to which endpoint is read, for the errors that name them."""

    model_id: str
    endpoint: str

    def wrong(self, what: str) -> PermanentError:
        """A reply of the wrong shape: the same server would answer the same way again."""
        return PermanentError(
            f"{self.model_id}: {self.endpoint} answered {what}; the server does not answer {self.endpoint} in the "
            "OpenAI format: point the spec at a server (or endpoint) that does"
        )


def read_field(obj: Any, name: str) -> Any:
    """A field of an SDK object or of a plain dict; None when absent (or when ``obj`` has no fields)."""
    if isinstance(obj, dict):
        return obj.get(name)
    if obj is None or isinstance(obj, str | bytes | int | float | list | tuple):
        return None
    return getattr(obj, name, None)


def _glimpse(raw: Any) -> str:
    """What a reply held instead, in a few words (its keys, or its type)."""
    fields = raw if isinstance(raw, dict) else getattr(raw, "__dict__", None)
    if isinstance(fields, dict):
        keys = [k for k, v in fields.items() if v is not None and not k.startswith("_")]
        return f"its fields: {', '.join(keys[:8]) or 'none'}"
    return f"a JSON {type(raw).__name__}"


def choices(raw: Any, where: Where) -> list[Any]:
    """The reply's choices; TransientError when it has none (a body that is no completion at all)."""
    found = read_field(raw, "choices")
    if not isinstance(found, list) or not found:
        raise TransientError(f"{where.model_id}: {where.endpoint} answered without choices ({_glimpse(raw)})")
    return found


def _number(value: Any, where: Where, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise where.wrong(f"{what} {value!r}, which is not a number") from None
    if math.isnan(number):
        raise where.wrong(f"{what} NaN")
    return number


def _count(value: Any) -> int:
    """A token count as a server reported it (a missing or garbled count is 0: usage never fails a call)."""
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0


def usage(raw: Any) -> tuple[int, int]:
    found = read_field(raw, "usage")
    return _count(read_field(found, "prompt_tokens")), _count(read_field(found, "completion_tokens"))


def version(raw: Any) -> str | None:
    parts = [read_field(raw, "model"), read_field(raw, "system_fingerprint")]
    return " ".join(str(p) for p in parts if p) or None


def chat_text(choice: Any, where: Where) -> str:
    """A chat choice's reply text ("" for a message without content, as a refusal or a tool call has)."""
    message = read_field(choice, "message")
    if message is None:
        if isinstance(read_field(choice, "text"), str):
            raise where.wrong("a text completion (choices[0].text) where a chat message (choices[0].message) belongs")
        raise where.wrong(f"a choice without a message ({_glimpse(choice)})")
    content = read_field(message, "content")
    if content is not None and not isinstance(content, str):
        raise where.wrong(f"a message whose content is a {type(content).__name__}, not text")
    return content or ""


def completion_text(choice: Any, where: Where) -> str:
    """A text completion choice's text."""
    text = read_field(choice, "text")
    if isinstance(text, str):
        return text
    if read_field(choice, "message") is not None:
        raise where.wrong("a chat message (choices[0].message) where a text completion (choices[0].text) belongs")
    raise where.wrong(f"a choice without its text ({_glimpse(choice)})")


def parse_chat(raw: Any, where: Where) -> ChatResponse:
    choice = choices(raw, where)[0]
    finish = read_field(choice, "finish_reason")
    prompt_tokens, completion_tokens = usage(raw)
    return ChatResponse(
        text=chat_text(choice, where),
        finish_reason=finish if isinstance(finish, str) else None,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        model_version=version(raw),
    )


def _first_token_top(choice: Any, where: Where) -> dict[str, float] | None:
    """The first generated token's top log-probs in a chat choice, keyed by stripped token text; None without."""
    logprobs = read_field(choice, "logprobs")
    if logprobs is None:
        return None
    content = read_field(logprobs, "content")
    if content is not None and not isinstance(content, list):
        raise where.wrong(f"log-probs whose content is a {type(content).__name__}, not a list of tokens")
    if content:
        entries = read_field(content[0], "top_logprobs") or []
        if not isinstance(entries, list):
            raise where.wrong(f"top_logprobs that are a {type(entries).__name__}, not a list")
        pairs = [(read_field(e, "token"), read_field(e, "logprob")) for e in entries]
    else:  # some servers list them as text completions do: one {token: log-prob} per position
        tops = read_field(logprobs, "top_logprobs")
        first = tops[0] if isinstance(tops, list) and tops else None
        pairs = list(first.items()) if isinstance(first, dict) else []
    top: dict[str, float] = {}
    for token, value in pairs:
        if not isinstance(token, str):
            raise where.wrong(f"a top_logprobs entry whose token is {token!r}, not text")
        logprob = _number(value, where, f"the log-prob of {token!r} as")
        text = token.strip()  # " a" and "a" both name the word
        top[text] = max(top.get(text, -math.inf), logprob)
    return top or None


def parse_top_logprobs(raw: Any, candidates: Sequence[str], where: Where) -> LogprobResponse | None:
    """Candidates' log-probs from a chat reply's first token's top list; None when the server sent none."""
    choice = choices(raw, where)[0]
    chat_text(choice, where)  # a chat reply, or the error naming what it is instead
    top = _first_token_top(choice, where)
    if top is None:
        return None
    floor = min(top.values())
    out: dict[str, float] = {}
    notes = set()
    for candidate in candidates:
        word = candidate.strip()
        if word in top:
            out[candidate] = top[word]
            continue
        starts = [lp for token, lp in top.items() if token and word.startswith(token)]
        if starts:
            out[candidate] = max(starts)
            notes.add("a multi-token candidate scored by its first token")
        else:
            out[candidate] = floor
            notes.add(f"a candidate missing from the top {len(top)} log-probs given their smallest as an upper bound")
    prompt_tokens, completion_tokens = usage(raw)
    return LogprobResponse(out, not notes, prompt_tokens, version(raw), join_notes(*sorted(notes)), completion_tokens)


def sampled_logprobs(raw: Any, candidates: Sequence[str], where: Where) -> LogprobResponse:
    """Estimate candidates' probabilities from how often sampled replies start with each one.

    Add-half smoothing keeps an unseen candidate finite; the estimate is labelled as sampled.
    """
    read = chat_text if where.endpoint == CHAT else completion_text
    replies = [read(c, where).strip() for c in choices(raw, where)]
    counts: Counter[str] = Counter()
    for reply in replies:
        matches = [c for c in candidates if c.strip() and reply.startswith(c.strip())]
        if matches:
            counts[max(matches, key=lambda c: len(c.strip()))] += 1
    total = max(len(replies), 1)
    out = {c: math.log((counts[c] + 0.5) / (total + 0.5 * len(candidates))) for c in candidates}
    prompt_tokens, completion_tokens = usage(raw)
    note = "no log-probs from the server: probabilities estimated from sampled replies"
    return LogprobResponse(out, False, prompt_tokens, version(raw), note, completion_tokens, total)


def _text_logprobs(choice: Any, where: Where) -> tuple[list[str], list[float | None], list[dict[str, float]]] | None:
    """A text completion choice's tokens, their log-probs and each one's listed alternatives; None without."""
    completion_text(choice, where)  # a text completion, or the error naming what it is instead
    logprobs = read_field(choice, "logprobs")
    if logprobs is None:
        return None
    tokens, values = read_field(logprobs, "tokens"), read_field(logprobs, "token_logprobs")
    tops = read_field(logprobs, "top_logprobs")
    for name, value in (("tokens", tokens), ("token_logprobs", values), ("top_logprobs", tops)):
        if value is not None and not isinstance(value, list):
            raise where.wrong(f"log-probs whose {name} are a {type(value).__name__}, not a list")
    if tokens is not None and not all(isinstance(t, str) for t in tokens):
        raise where.wrong("log-probs whose tokens are not all text")
    if tops is not None and not all(t is None or isinstance(t, dict) for t in tops):
        raise where.wrong("top_logprobs that are not a list of {token: log-prob} objects")
    numbers = [None if v is None else _number(v, where, "a token log-prob") for v in values or []]
    listed = [{str(t): _number(v, where, f"the log-prob of {t!r}") for t, v in (x or {}).items()} for x in tops or []]
    return list(tokens or []), numbers, listed


def next_token_top(raw: Any, where: Where) -> dict[str, float] | None:
    """The first generated token's top log-probs from a text completion, keyed by exact token text.

    Unlike the chat route nothing is stripped: " he" and "he" are different tokens. The generated
    token's own log-prob is added (it is exact whether or not the server lists it).
    """
    found = _text_logprobs(choices(raw, where)[0], where)
    if found is None:
        return None
    tokens, values, tops = found
    top = dict(tops[0]) if tops else {}
    if tokens and values and values[0] is not None:
        top[tokens[0]] = values[0]
    return top or None


@dataclass(frozen=True)
class Echo:
    """An echoed prompt: its tokens' texts, where each starts in the prompt, and each one's log-prob."""

    tokens: tuple[str, ...]
    starts: tuple[int, ...]
    logprobs: tuple[float | None, ...]
    prompt_tokens: int = 0
    tops: tuple[dict[str, float], ...] = ()  # each token's listed alternatives, when the server sent them

    def span(self, start: int, end: int) -> range | None:
        """Indices of the tokens covering text[start:end] exactly; None when a token straddles an edge."""
        bounds = (*self.starts, self.starts[-1] + len(self.tokens[-1])) if self.tokens else (0,)
        if start not in bounds or end not in bounds:
            return None
        return range(bounds.index(start), bounds.index(end))


def echo_of(choice: Any, prompt: str, prompt_tokens: int, where: Where) -> Echo | None:
    """The prompt's tokens and log-probs from one ``echo`` completion choice; None when the server did not echo
    them (or echoed another text).

    Token offsets are rebuilt from the token texts (a leading special token such as BOS, absent from
    the prompt text, is skipped) rather than trusted from ``text_offset``.
    """
    found = _text_logprobs(choice, where)
    if found is None:
        return None
    tokens, values, tops = found
    if not tokens or len(values) != len(tokens):
        return None
    for skip in range(min(3, len(tokens))):
        if "".join(tokens[skip:]).startswith(prompt):
            break
    else:
        return None
    starts, at = [], 0
    for token in tokens[skip:]:
        starts.append(at)
        at += len(token)
    listed = tuple(tops[skip:]) if len(tops) == len(tokens) else ()
    return Echo(tuple(tokens[skip:]), tuple(starts), tuple(values[skip:]), prompt_tokens, listed)


def parse_echo(raw: Any, prompt: str, where: Where) -> Echo | None:
    """The prompt's echo from a completion of one prompt (see ``echo_of``)."""
    return echo_of(choices(raw, where)[0], prompt, usage(raw)[0], where)


def parse_echoes(raw: Any, prompts: Sequence[str], where: Where) -> list[Echo | None] | None:
    """Each prompt's echo from one completion of a list of prompts, matched by each choice's ``index``; None when
    the reply does not answer each prompt once (a server that took only the first, or joined them). The
    reply's prompt tokens are counted once, on the first echo."""
    found = choices(raw, where)
    indices = [read_field(c, "index") for c in found]
    if sorted(i for i in indices if isinstance(i, int)) != list(range(len(prompts))):
        return None
    by_index = dict(zip(indices, found, strict=True))
    total = usage(raw)[0]
    return [echo_of(by_index[i], p, total if i == 0 else 0, where) for i, p in enumerate(prompts)]
