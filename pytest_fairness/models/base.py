"""The one interface every model provider implements, its request/response types, and model specs.

A measure never talks to a provider: it builds requests, and the runner sends them through the
cache. Requests are frozen dataclasses so that their whole content can key the cache.
"""

from __future__ import annotations

import abc
from dataclasses import asdict, dataclass, field
from typing import Literal
from urllib.parse import parse_qsl

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion. ``sample_index`` tells apart repeated draws of the same prompt."""

    messages: tuple[Message, ...]
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    sample_index: int = 0

    def payload(self) -> dict[str, object]:
        return {"kind": "chat", **asdict(self)}


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

    def payload(self) -> dict[str, object]:
        return {"kind": "logprobs", **asdict(self)}


@dataclass(frozen=True)
class ChatResponse:
    text: str
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_version: str | None = None


@dataclass(frozen=True)
class LogprobResponse:
    """Log-probability per candidate.

    ``exact`` is False when a provider had to approximate (for example probabilities estimated by
    sampling); ``note`` then says how. ``route`` names how an HTTP provider read the values
    (``"echo"``, ``"top_logprobs"`` or ``"sampled"``); empty for providers with a single route.
    """

    logprobs: dict[str, float]
    exact: bool = True
    prompt_tokens: int = 0
    model_version: str | None = None
    note: str = ""
    completion_tokens: int = 0
    samples: int = 0  # > 0 when estimated from this many sampled replies instead of read exactly
    route: str = ""


class TransientError(Exception):
    """A failure worth retrying: rate limit, server error, timeout, dropped connection, bad body.

    ``retry_after`` carries the server's Retry-After, in seconds, when it sent one.
    """

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentError(Exception):
    """A failure that retrying cannot fix (bad key, unknown model, invalid request); says the fix."""


class ChatModel(abc.ABC):
    """A model the measures can ask for chat completions and candidate log-probabilities."""

    provider: str
    name: str
    #: Whether the model can follow a multi-line, list-format instruction. Tiny models cannot, and
    #: measures then prefer their log-prob routes.
    follows_list_instructions: bool = True
    #: Most requests worth having in flight at once; the runner never exceeds it.
    max_concurrency: int = 16

    @property
    def model_id(self) -> str:
        """Stable identity for cache keys and results: provider plus the exact model."""
        return f"{self.provider}:{self.name}"

    @abc.abstractmethod
    async def chat(self, request: ChatRequest) -> ChatResponse: ...

    @abc.abstractmethod
    async def logprobs(self, request: LogprobRequest) -> LogprobResponse: ...

    def close(self) -> None:  # noqa: B027 - optional hook, most providers hold nothing
        """Release resources (model weights, connections)."""


class ModelSpecError(ValueError):
    """A ``--fairness-model`` / ``--fairness-judge`` string that cannot be used."""


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec: ``provider[:target][?key=value&...]``."""

    provider: str
    target: str = ""
    options: dict[str, str] = field(default_factory=dict)
    raw: str = ""


PROVIDERS = ("local", "openai", "litellm", "synthetic")
SPEC_HELP = (
    "use 'local' (the embedded SmolLM2), 'local:/path/model.gguf', 'openai:MODEL' or 'openai:MODEL@BASE_URL', "
    "'litellm:PROVIDER/MODEL', or 'synthetic:iat?bias=0.4' (a test double with a planted bias)"
)


def parse_model_spec(spec: str) -> ModelSpec:
    """Split a model spec string; raise ModelSpecError naming the problem and the fix."""
    raw = spec
    spec = spec.strip()
    if not spec:
        raise ModelSpecError(f"empty model spec: {SPEC_HELP}")
    head, _, query = spec.partition("?")
    provider, _, target = head.partition(":")
    provider = provider.strip().lower()
    if provider not in PROVIDERS:
        raise ModelSpecError(
            f"unknown model provider {provider!r} in {raw!r}; valid providers: {', '.join(PROVIDERS)}. {SPEC_HELP}"
        )
    for pair in filter(None, query.split("&")):
        if "=" not in pair:
            raise ModelSpecError(f"option {pair!r} in model spec {raw!r} must look like key=value")
    options = dict(parse_qsl(query, keep_blank_values=True))
    return ModelSpec(provider=provider, target=target.strip(), options=options, raw=raw)


def load_model(spec: str | ModelSpec) -> ChatModel:
    """Instantiate the provider a spec names. Heavy imports happen only for the chosen provider."""
    parsed = parse_model_spec(spec) if isinstance(spec, str) else spec
    if parsed.provider == "local":
        from pytest_fairness.models.local import LocalModel

        return LocalModel.from_spec(parsed)
    if parsed.provider == "openai":
        from pytest_fairness.models.openai import OpenAIModel

        return OpenAIModel.from_spec(parsed)
    if parsed.provider == "litellm":
        from pytest_fairness.models.litellm import LiteLLMModel

        return LiteLLMModel.from_spec(parsed)
    from pytest_fairness.models.synthetic import SyntheticModel

    return SyntheticModel.from_spec(parsed)
