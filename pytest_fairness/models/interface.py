"""The one interface every model provider implements, and its request/response types.

A measure never talks to a provider: it builds requests, and the runner sends them through the
cache. Requests are frozen dataclasses so that their content can key the cache. Each also carries the
measure's ``Purpose``: metadata for test doubles and readers, kept out of the key, the payload and
equality, so attaching or rewording it never changes a cached or recorded result. Model specs are in
``models.spec``, the provider table in ``models.providers``.
"""

from __future__ import annotations

import abc
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cache
from typing import TYPE_CHECKING, Literal, Self

if TYPE_CHECKING:
    from pytest_fairness.models.spec import ModelSpec

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class Purpose:
    """What a measure asks a request for, and the facts it knows about it.

    ``task`` names the step ("implicit.list", "decision.relative", "harm.judge", ...); ``facts`` are
    hashable (key, value) pairs such as the stereotype, the group words or the answers a judge is shown.
    A test double answers by them instead of reading the prompt's wording.
    """

    task: str
    facts: tuple[tuple[str, object], ...] = ()

    @classmethod
    def of(cls, task: str, /, **facts: object) -> Purpose:
        return cls(task, tuple(facts.items()))

    def fact(self, key: str, default: object = None) -> object:
        return next((value for name, value in self.facts if name == key), default)


@cache
def _content(kind: type) -> tuple[str, ...]:
    """A request type's fields that make its content: all but the purpose."""
    return tuple(f.name for f in fields(kind) if f.name != "purpose")


def _payload(kind: str, request: ChatRequest | LogprobRequest) -> dict[str, object]:
    """The request's content, without its purpose (which must not change a cache key): its fields in order,
    each message a mapping. Built field by field, not by ``dataclasses.asdict``: a release plan keys some
    300,000 requests, and asdict's deep copies of every string were most of its time."""
    data: dict[str, object] = {"kind": kind}
    for name in _content(type(request)):
        value = getattr(request, name)
        data[name] = tuple({"role": m.role, "content": m.content} for m in value) if name == "messages" else value
    return data


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion. ``sample_index`` tells apart repeated draws of the same prompt."""

    messages: tuple[Message, ...]
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    sample_index: int = 0
    purpose: Purpose | None = field(default=None, compare=False)

    def payload(self) -> dict[str, object]:
        return _payload("chat", self)


def resampled(request: ChatRequest | LogprobRequest, k: int) -> ChatRequest | LogprobRequest:
    """The ``k``-th re-sample of a request (``samples_per_item``): a chat request with its own seed, derived from
    its seed, sample index and ``k`` (so its cache key differs and a seeded model answers anew); ``k`` 0 and
    log-probability requests (deterministic: one answer however often asked) are returned as they are."""
    if k == 0 or not isinstance(request, ChatRequest):
        return request
    seed = zlib.crc32(f"{request.seed}:{request.sample_index}:resample {k}".encode())
    return replace(request, seed=seed)


@dataclass(frozen=True)
class LogprobRequest:
    """Log-probability of each candidate as the start of the assistant's reply.

    ``prefix`` is assistant text already written before the candidates (for example an opening
    quote); candidates are scored as its continuation. With no ``messages`` the request is a plain
    text continuation, without any chat template: ``prefix`` is the whole text (PCF probes this way).
    """

    messages: tuple[Message, ...]
    candidates: tuple[str, ...]
    prefix: str = ""
    purpose: Purpose | None = field(default=None, compare=False)

    def payload(self) -> dict[str, object]:
        return _payload("logprobs", self)


@dataclass(frozen=True)
class ChatResponse:
    """A reply; ``note`` says how it was not what the request asked (an app that ignored its sampling settings)."""

    text: str
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_version: str | None = None
    note: str = ""


@dataclass(frozen=True)
class LogprobResponse:
    """Log-probability per candidate.

    ``exact`` is False when a provider had to approximate (for example probabilities estimated by
    sampling); ``note`` then says how, its approximations joined by ``join_notes``. ``route`` names how
    an HTTP provider read the values (``"echo"``, ``"top_logprobs"`` or ``"sampled"``); empty for
    providers with a single route.
    """

    logprobs: dict[str, float]
    exact: bool = True
    prompt_tokens: int = 0
    model_version: str | None = None
    note: str = ""
    completion_tokens: int = 0
    samples: int = 0  # > 0 when estimated from this many sampled replies instead of read exactly
    route: str = ""


def join_notes(*notes: str) -> str:
    """A response's approximations as its one ``note`` (``split_notes`` reads them back, so a run lists each
    once however its responses combine them)."""
    return "; ".join(note for note in notes if note)


def split_notes(note: str) -> list[str]:
    """The approximations ``join_notes`` put in one note."""
    return [part for part in note.split("; ") if part]


def estimate_tokens(request: ChatRequest | LogprobRequest) -> int:
    """Rough prompt size: about four characters a token, as tokenizers of English average."""
    text = "".join(m.content for m in request.messages)
    if isinstance(request, LogprobRequest):
        text += request.prefix + "".join(request.candidates)
    return len(text) // 4 + 4 * len(request.messages)


class TransientError(Exception):
    """A failure worth retrying: rate limit, server error, timeout, dropped connection, bad body.

    ``retry_after`` carries the server's Retry-After, in seconds, when it sent one.
    """

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RateLimited(TransientError):
    """The server answered 429: retried like any transient error, and also what adaptive concurrency reacts to
    (``models.ratelimit``) and what the run counts as rate-limited answers."""

    #: Set when an adaptive limit already holds every request to the account back for the server's wait:
    #: the retry then waits exactly that long, without a backoff of its own on top.
    paced: bool = False


class PermanentError(Exception):
    """A failure that retrying cannot fix (bad key, unknown model, invalid request); says the fix."""


class CannotServe(PermanentError):
    """The model cannot answer this kind of request at all (e.g. exact token probabilities from a chat-only
    app): the measure that sent it ends "cannot serve" with this reason instead of failing the run."""


class ChatModel(abc.ABC):
    """A model the measures can ask for chat completions and candidate log-probabilities.

    This is also the public interface a team implements to gate its own application
    (``python:MODULE:ATTR``): ``chat`` is required; ``logprobs`` is optional (without it, measures are
    served from replies, or end "cannot serve"); ``name``, ``version`` and ``max_concurrency`` have defaults.
    """

    provider: str
    name: str = ""
    #: What changes when the model does (weights, app code): part of a Python app's identity and cache key.
    version: str | None = None
    #: Whether the model can follow a multi-line, list-format instruction. Tiny models cannot, and
    #: measures then prefer their log-prob routes.
    follows_list_instructions: bool = True
    #: Most requests worth having in flight at once; the runner never exceeds it.
    max_concurrency: int = 16
    #: Tokens the model's context holds (prompt and reply together), or None when unknown. Measures that
    #: send long prompts (e.g. batches of answers to compare) shrink them to fit.
    context_tokens: int | None = None
    #: Most log-prob requests worth handing over in one ``logprobs_many`` call. Above 1 the runner groups
    #: consecutive requests that share a conversation, so the provider can evaluate it once for all.
    logprob_batch: int = 1

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> Self:
        """The model a spec names (``models.providers`` calls it for the provider the spec names); a provider
        raises ``ModelSpecError`` naming the problem and the fix. An app built in Python needs none."""
        raise TypeError(f"{cls.__name__} cannot be built from a model spec: it defines no from_spec")

    @property
    def model_id(self) -> str:
        """Stable identity for cache keys and results: provider plus the exact model."""
        return f"{self.provider}:{self.name}"

    @abc.abstractmethod
    async def chat(self, request: ChatRequest) -> ChatResponse: ...

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        """Each candidate's log-probability; optional (every built-in provider has it, an app may not)."""
        raise CannotServe(f"{type(self).__name__} offers no token log-probabilities")

    async def logprobs_many(self, requests: Sequence[LogprobRequest]) -> list[LogprobResponse]:
        """Answer several requests, in order; each answer must be what ``logprobs`` gives for it alone.
        Providers that can batch override this; the default asks one at a time."""
        return [await self.logprobs(request) for request in requests]

    #: Whether ``count_tokens`` uses the model's own tokenizer (plans say which token counts are estimates).
    counts_tokens: bool = False

    def count_tokens(self, request: ChatRequest | LogprobRequest) -> int | None:
        """The request's prompt tokens by the model's own tokenizer; None when the plugin has none for it."""
        return None

    async def settle(self, grace: float) -> int:
        """At the end of a run: wait up to ``grace`` seconds for calls still in flight (a call past its deadline
        runs on), then cancel them; how many were cancelled. Models that never leave a call running have none."""
        return 0

    def close(self) -> None:  # noqa: B027 - optional hook, most providers hold nothing
        """Release resources (model weights, connections)."""
