"""Any OpenAI-compatible chat endpoint: OpenAI itself, vLLM, TGI, llama.cpp server, Ollama.

``openai:MODEL`` talks to the OpenAI API with the key in ``OPENAI_API_KEY``;
``openai:MODEL@http://host:port/v1`` talks to any compatible server (a key is optional there).

Errors are sorted for the runner: rate limits, 5xx, timeouts, dropped connections and malformed
bodies are transient (retried); other 4xx are permanent and fail at once with the fix. The API key
never enters a cache key, a result or an error message.

Log-probabilities come from the first reply token's ``top_logprobs``. That is exact for a candidate
whose text is one token and appears there; otherwise the provider says how it approximated:
a multi-token candidate is scored by its first token, a candidate missing from the top list gets
the smallest listed log-probability as an upper bound, and a server that returns no log-probs at
all is sampled ``n`` times and the candidates' shares are used.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pytest_fairness.models.base import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    LogprobRequest,
    LogprobResponse,
    Message,
    ModelSpec,
    ModelSpecError,
    PermanentError,
    TransientError,
)

OPTIONS = ("timeout", "concurrency", "samples", "top_logprobs", "instruct")
TOP_LOGPROBS = 20  # the most the OpenAI API returns


class OpenAIModel(ChatModel):
    provider = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_concurrency: int = 16,
        samples: int = 20,
        top_logprobs: int = TOP_LOGPROBS,
        follows_list_instructions: bool = True,
    ) -> None:
        self.name = model if base_url is None else f"{model}@{base_url}"
        self.model = model
        self.base_url = base_url
        self._api_key = api_key
        self.timeout = timeout
        self.max_concurrency = max_concurrency
        self.samples = samples
        self.top_logprobs = top_logprobs
        self.follows_list_instructions = follows_list_instructions
        self._client: Any = None

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> OpenAIModel:
        model, _, base_url = spec.target.partition("@")
        if not model:
            raise ModelSpecError(f"{spec.raw!r} names no model: use openai:MODEL or openai:MODEL@http://host:port/v1")
        key = os.environ.get("OPENAI_API_KEY")
        if not base_url and not key:
            raise ModelSpecError(
                f"{spec.raw!r} calls the OpenAI API but OPENAI_API_KEY is not set: export it, or point the "
                "spec at a compatible server with openai:MODEL@http://host:port/v1"
            )
        return cls(model, base_url or None, api_key=key, **_options(spec))

    # -- the two calls -----------------------------------------------------------------------------

    async def chat(self, request: ChatRequest) -> ChatResponse:
        raw = await self._create(
            request.messages,
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            seed=request.seed,
        )
        return parse_chat(raw)

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        if not request.messages:  # plain text continuation: the completions endpoint, no chat template
            raw = await self._complete(request.prefix, temperature=0.0, max_tokens=1, logprobs=self.top_logprobs)
            found = parse_top_logprobs(raw, request.candidates)
            if found is None:
                sampled = await self._complete(request.prefix, temperature=1.0, max_tokens=8, n=self.samples)
                found = sampled_logprobs(sampled, request.candidates)
            return found
        messages = _with_prefix(request)
        raw = await self._create(
            messages, temperature=0.0, max_tokens=1, logprobs=True, top_logprobs=self.top_logprobs, seed=0
        )
        found = parse_top_logprobs(raw, request.candidates)
        if found is None:
            sampled = await self._create(messages, temperature=1.0, max_tokens=8, n=self.samples, seed=0)
            found = sampled_logprobs(sampled, request.candidates)
        if request.prefix:
            note = "; ".join(filter(None, [found.note, "reply prefix sent as a finished assistant turn"]))
            found = replace(found, exact=False, note=note)
        return found

    # -- transport -----------------------------------------------------------------------------------

    def _client_for_loop(self) -> Any:
        if self._client is None:
            from openai import AsyncOpenAI

            # Our runner owns retries (one policy for every provider): the SDK must not retry too.
            self._client = AsyncOpenAI(
                api_key=self._api_key or "not-needed", base_url=self.base_url, timeout=self.timeout, max_retries=0
            )
        return self._client

    async def _create(self, messages: Sequence[Message], **params: Any) -> Any:
        chat = [{"role": m.role, "content": m.content} for m in messages]
        return await self._send(self._client_for_loop().chat.completions.create, messages=chat, **params)

    async def _complete(self, prompt: str, **params: Any) -> Any:
        return await self._send(self._client_for_loop().completions.create, prompt=prompt, **params)

    async def _send(self, endpoint: Any, **params: Any) -> Any:
        import openai

        try:
            return await endpoint(model=self.model, **{k: v for k, v in params.items() if v is not None})
        except openai.APIError as exc:
            raise classify(exc, self.model_id, self._api_key, self.timeout) from None
        except ValueError as exc:  # a body that is not JSON
            raise TransientError(f"{self.model_id}: malformed response body ({exc})") from None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def _options(spec: ModelSpec) -> dict[str, Any]:
    unknown = set(spec.options) - set(OPTIONS)
    if unknown:
        raise ModelSpecError(f"unknown option(s) {sorted(unknown)} in {spec.raw!r}; valid: {', '.join(OPTIONS)}")
    out: dict[str, Any] = {}
    kinds = {"timeout": float, "concurrency": int, "samples": int, "top_logprobs": int}
    names = {"concurrency": "max_concurrency"}
    for key, kind in kinds.items():
        if key in spec.options:
            try:
                value = kind(spec.options[key])
            except ValueError:
                raise ModelSpecError(f"option {key}={spec.options[key]!r} in {spec.raw!r} must be a number") from None
            if value <= 0:
                raise ModelSpecError(f"option {key} in {spec.raw!r} must be positive")
            out[names.get(key, key)] = value
    if "instruct" in spec.options:
        out["follows_list_instructions"] = spec.options["instruct"].lower() in ("1", "true", "yes")
    return out


def _scrub(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


def classify(exc: Exception, model_id: str, api_key: str | None, timeout: float) -> Exception:
    """Turn an SDK error (openai's, or litellm's subclasses of it) into a transient or permanent error."""
    import openai

    status = getattr(exc, "status_code", None)
    detail = _scrub(str(getattr(exc, "message", "") or exc), api_key)[:300]
    if isinstance(exc, openai.APITimeoutError):
        return TransientError(f"{model_id}: no response within {timeout:g}s (raise ?timeout= in the model spec)")
    if isinstance(exc, openai.APIConnectionError):
        return TransientError(f"{model_id}: connection failed or dropped ({detail})")
    if isinstance(exc, openai.APIResponseValidationError):
        return TransientError(f"{model_id}: malformed response body ({detail})")
    if status == 429 or (isinstance(status, int) and status >= 500):
        return TransientError(f"{model_id}: HTTP {status} ({detail})", _retry_after(exc))
    if status == 401:
        return PermanentError(f"{model_id}: the server rejected the API key (HTTP 401): set a valid OPENAI_API_KEY")
    if status == 403:
        return PermanentError(f"{model_id}: access denied (HTTP 403): check the key's permissions for this model")
    if status == 404:
        return PermanentError(
            f"{model_id}: model or endpoint not found (HTTP 404): check the model name and base URL in "
            f"--fairness-model ({detail})"
        )
    return PermanentError(f"{model_id}: request rejected (HTTP {status}): {detail}")


def _retry_after(exc: Exception) -> float | None:
    """The server's Retry-After in seconds (litellm keeps the real headers on an attribute of its own)."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None and getattr(exc, "response", None) is not None:
        headers = exc.response.headers  # type: ignore[attr-defined]
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def _with_prefix(request: LogprobRequest) -> tuple[Message, ...]:
    """Chat APIs cannot continue a reply mid-way: the prefix is sent as the assistant's turn so far."""
    if not request.prefix:
        return request.messages
    return (*request.messages, Message("assistant", request.prefix))


def _version(raw: Any) -> str | None:
    parts = [getattr(raw, "model", None), getattr(raw, "system_fingerprint", None)]
    return " ".join(str(p) for p in parts if p) or None


def _usage(raw: Any) -> tuple[int, int]:
    usage = getattr(raw, "usage", None)
    if usage is None:
        return 0, 0
    return int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)


def parse_chat(raw: Any) -> ChatResponse:
    if not getattr(raw, "choices", None):
        raise TransientError("response has no choices")
    choice = raw.choices[0]
    prompt_tokens, completion_tokens = _usage(raw)
    return ChatResponse(
        text=choice.message.content or "",
        finish_reason=choice.finish_reason,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        model_version=_version(raw),
    )


def _first_token_top(choice: Any) -> dict[str, float] | None:
    """The first generated token's top log-probs, from a chat or a text completion choice."""
    logprobs = getattr(choice, "logprobs", None)
    if logprobs is None:
        return None
    content = getattr(logprobs, "content", None)
    if content:  # chat completions
        entries = content[0].top_logprobs or []
        pairs = [(e.token, float(e.logprob)) for e in entries]
    else:  # text completions: a list of {token: logprob} per position
        tops = getattr(logprobs, "top_logprobs", None)
        pairs = [(t, float(lp)) for t, lp in (tops[0] or {}).items()] if tops else []
    top: dict[str, float] = {}
    for token, logprob in pairs:
        text = token.strip()  # " a" and "a" both name the word
        top[text] = max(top.get(text, -math.inf), logprob)
    return top or None


def parse_top_logprobs(raw: Any, candidates: Sequence[str]) -> LogprobResponse | None:
    """Candidates' log-probs from the first token's top list; None when the server sent none."""
    if not getattr(raw, "choices", None):
        raise TransientError("response has no choices")
    top = _first_token_top(raw.choices[0])
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
    prompt_tokens, completion_tokens = _usage(raw)
    return LogprobResponse(out, not notes, prompt_tokens, _version(raw), "; ".join(sorted(notes)), completion_tokens)


def sampled_logprobs(raw: Any, candidates: Sequence[str]) -> LogprobResponse:
    """Estimate candidates' probabilities from how often sampled replies start with each one.

    Add-half smoothing keeps an unseen candidate finite; the estimate is labelled as sampled.
    """
    choices = getattr(raw, "choices", [])
    replies = [(c.message.content if hasattr(c, "message") else c.text or "").strip() for c in choices]
    counts: Counter[str] = Counter()
    for reply in replies:
        matches = [c for c in candidates if c.strip() and reply.startswith(c.strip())]
        if matches:
            counts[max(matches, key=lambda c: len(c.strip()))] += 1
    total = max(len(replies), 1)
    out = {c: math.log((counts[c] + 0.5) / (total + 0.5 * len(candidates))) for c in candidates}
    prompt_tokens, completion_tokens = _usage(raw)
    note = "no log-probs from the server: probabilities estimated from sampled replies"
    return LogprobResponse(out, False, prompt_tokens, _version(raw), note, completion_tokens, total)
