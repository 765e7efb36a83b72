"""Any OpenAI-compatible chat endpoint: OpenAI itself, vLLM, TGI, llama.cpp server, Ollama.

``openai:MODEL`` talks to the OpenAI API with the key in ``OPENAI_API_KEY``;
``openai:MODEL@http://host:port/v1`` talks to any compatible server (a key is optional there).

Errors are sorted for the runner: rate limits, 5xx, timeouts, dropped connections and malformed
bodies are transient (retried); other 4xx are permanent and fail at once with the fix. The API key
never enters a cache key, a result or an error message.

Chat log-probabilities (judges' letters) come from the first reply token's ``top_logprobs``. That
is exact for a candidate whose text is one token and appears there; otherwise the provider says how
it approximated: a multi-token candidate is scored by its first token, a candidate missing from the
top list gets the smallest listed log-probability as an upper bound, and a server that returns no
log-probs at all is sampled ``n`` times and the candidates' shares are used.

Plain-text continuations (PCF's probes) are never bounded: each candidate is scored exactly or the
request is refused (``models.openai_text``, which also sends a request's echoes as prompt lists where
the server takes them). Replies are read by ``models.openai_replies``: a reply of an unexpected shape is
one clear error naming the endpoint, the model and what was missing, never a crash of ours.

A call's deadline (``?timeout=``, default 60 s) counts its own time, not the time it queued behind the
run's other calls to the server (``models.deadline``); a call past it is retried, and the run sends
fewer calls at once while replies come slowly (``models.ratelimit``).

Batch mode (``?batch=1`` or ``--fairness-batch``) sends chat requests and judges' letter log-probs as
lines of one Batch API job (``/v1/files`` + ``/v1/batches``), each line's body the same as the online
call's, parsed by the same code; see ``models.batch``. Echo scoring and sampled fallbacks stay online.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pytest_fairness.models import ratelimit
from pytest_fairness.models.batch import RUNNING, UNKNOWN, BatchState
from pytest_fairness.models.deadline import Deadlines
from pytest_fairness.models.interface import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    LogprobRequest,
    LogprobResponse,
    Message,
    PermanentError,
    RateLimited,
    TransientError,
    join_notes,
)
from pytest_fairness.models.openai_replies import CHAT, Where, parse_chat, parse_top_logprobs, sampled_logprobs
from pytest_fairness.models.openai_text import TextScoring
from pytest_fairness.models.providers import ModelSpec, ModelSpecError
from pytest_fairness.models.ratelimit_headers import server_wait

OPTIONS = ("timeout", "concurrency", "samples", "top_logprobs", "instruct", "context", "batch", "adaptive")
BATCH_ENDPOINT = "/v1/chat/completions"
#: The metadata key of a batch's tag (a hash of its lines' ids), and how many of the newest batches are
#: searched for a running one with the same tag before a new one is created.
BATCH_TAG = "fairness_lines"
LISTED_BATCHES = 100


def batch_metadata(tag: str) -> dict[str, str]:
    return {"source": "pytest-fairness", BATCH_TAG: tag}


NO_BATCH_API = (
    "run without batch mode (drop ?batch=1 from the spec and --fairness-batch), or point the spec at a server "
    "that implements the OpenAI Batch API (/v1/files and /v1/batches)"
)
TOP_LOGPROBS = 20  # the most the OpenAI API returns
#: The SDK's own timeout, in deadlines: a backstop only, since a call may wait up to one deadline behind the
#: run's earlier calls before its own (``models.deadline``) starts.
SDK_TIMEOUTS = 3


class OpenAIModel(ChatModel):
    provider = "openai"
    #: Whether this provider's batch methods reach a Batch API (litellm's: for the providers it batches).
    offers_batches = True

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
        context_tokens: int | None = None,
        batch_requested: bool = False,
        adaptive: bool = True,
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
        self.context_tokens = context_tokens  # the server's window when the spec says ?context=N, else unknown
        self.batch_requested = batch_requested
        self._client: Any = None
        #: Why the model cannot be called (no key for the OpenAI API); raised at the first call.
        self._missing_key = ""
        self._text: TextScoring | None = None  # plain-text continuations, made at the first one
        self.deadlines = Deadlines(timeout, self.model_id)
        self.adaptive = adaptive  # False: a fixed cap per process, no shared limit (``?adaptive=0``)
        self._rate: ratelimit.SharedLimit | ratelimit.Fixed | None = None

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> OpenAIModel:
        model, _, base_url = spec.target.partition("@")
        if not model:
            raise ModelSpecError(f"{spec.raw!r} names no model: use openai:MODEL or openai:MODEL@http://host:port/v1")
        key = os.environ.get("OPENAI_API_KEY")
        built = cls(model, base_url or None, api_key=key, **_options(spec))
        if not base_url and not key:  # an error at the first call, not here: a plan or a replay calls nothing
            built._missing_key = (
                f"{spec.raw!r} calls the OpenAI API but OPENAI_API_KEY is not set: export it, or point the "
                "spec at a compatible server with openai:MODEL@http://host:port/v1"
            )
        return built

    # -- the two calls -----------------------------------------------------------------------------

    async def chat(self, request: ChatRequest) -> ChatResponse:
        return parse_chat(await self._create(request.messages, **_chat_params(request)), self._chat_where)

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        if not request.messages:  # plain text continuation: the completions endpoint, no chat template
            return await self.text_scoring().logprobs(request)
        messages = _with_prefix(request)
        raw = await self._create(messages, **self._letter_params())
        found = parse_top_logprobs(raw, request.candidates, self._chat_where)
        if found is None:
            sampled = await self._create(messages, temperature=1.0, max_tokens=8, n=self.samples, seed=0)
            found = sampled_logprobs(sampled, request.candidates, self._chat_where)
        return _prefixed(request, found)

    @property
    def _chat_where(self) -> Where:
        return Where(self.model_id, CHAT)

    def text_scoring(self) -> TextScoring:
        """This model's plain-text continuation scores (what it learns about the server is kept)."""
        if self._text is None:
            self._text = TextScoring(
                self.model_id,
                self._complete,
                top_logprobs=self.top_logprobs,
                samples=self.samples,
                fanout=self.max_concurrency,
            )
        return self._text

    async def settle(self, grace: float) -> int:
        return await self.deadlines.settle(grace)

    def _letter_params(self) -> dict[str, Any]:
        """The one-token call whose top log-probs score a chat log-prob request's candidates."""
        return {"temperature": 0.0, "max_tokens": 1, "logprobs": True, "top_logprobs": self.top_logprobs, "seed": 0}

    # -- batch mode (models.batch.BatchAPI) -----------------------------------------------------------

    def batch_body(self, request: ChatRequest | LogprobRequest) -> dict[str, Any] | None:
        """The online call's body as a batch line; None for plain-text continuations (several echo calls)."""
        if isinstance(request, ChatRequest):
            messages, params = request.messages, _chat_params(request)
        elif request.messages:
            messages, params = _with_prefix(request), self._letter_params()
        else:
            return None
        chat = [{"role": m.role, "content": m.content} for m in messages]
        return {"model": self.model, "messages": chat, **{k: v for k, v in params.items() if v is not None}}

    def batch_answer(self, request: ChatRequest | LogprobRequest, body: Any) -> Any:
        """A line's chat completion read as the online call's would be; None when it cannot serve (a body
        without choices, or without log-probs: the request then goes online, which can sample)."""
        try:
            if isinstance(request, ChatRequest):
                return parse_chat(body, self._chat_where)
            found = parse_top_logprobs(body, request.candidates, self._chat_where)
        except (TransientError, PermanentError):
            return None
        return None if found is None else _prefixed(request, found)

    async def submit_batch(self, lines: Sequence[tuple[str, dict[str, Any]]]) -> str:
        """Upload the lines as a JSONL file and start a 24-hour batch on it; the batch's id.

        The batch is tagged with a hash of its lines' ids, and a running batch with the same tag is used
        instead of a new one: a retry after a creation whose reply was lost (or a run killed before it
        noted the id) does not pay for the same lines twice."""
        tag = hashlib.sha256("\n".join(cid for cid, _ in lines).encode()).hexdigest()[:32]
        running = await self._batch_call("/v1/batches", self._running_batch, tag)
        if running is not None:
            return running
        data = "".join(
            json.dumps({"custom_id": cid, "method": "POST", "url": BATCH_ENDPOINT, "body": body}) + "\n"
            for cid, body in lines
        ).encode()
        upload = await self._batch_call("/v1/files", self._upload_file, data)
        batch = await self._batch_call("/v1/batches", self._start_batch, str(upload.id), tag)
        return str(batch.id)

    async def _running_batch(self, tag: str) -> str | None:
        """The id of a batch with these lines that is still running, among the newest the server lists;
        None when there is none, or the server cannot list batches."""
        import openai

        try:
            listed = await self._list_batches()
        except openai.APIStatusError as exc:
            if exc.status_code in (404, 405, 501):
                return None
            raise
        for batch in listed:
            if (getattr(batch, "metadata", None) or {}).get(BATCH_TAG) == tag and batch.status in RUNNING:
                return str(batch.id)
        return None

    async def batch_state(self, batch_id: str) -> BatchState:
        """The batch as the server sees it now; status "unknown" when the server no longer knows its id."""

        async def retrieve() -> Any:
            import openai

            try:
                return await self._retrieve_batch(batch_id)
            except openai.NotFoundError:
                return None

        batch = await self._batch_call("/v1/batches/{id}", retrieve)
        if batch is None:
            return BatchState(UNKNOWN)
        errors = getattr(getattr(batch, "errors", None), "data", None) or []
        reasons = "; ".join(f"{getattr(e, 'code', '')}: {getattr(e, 'message', '')}".strip(": ") for e in errors)
        return BatchState(str(batch.status), batch.output_file_id, batch.error_file_id, reasons)

    async def batch_file(self, file_id: str) -> str:
        return await self._batch_call("/v1/files/{id}/content", self._file_text, file_id)

    # The Batch API's four calls, the transport a subclass replaces (as ``_create`` for chat).

    async def _upload_file(self, data: bytes) -> Any:
        return await self._client_for_loop().files.create(file=("fairness-batch.jsonl", data), purpose="batch")

    async def _start_batch(self, file_id: str, tag: str) -> Any:
        return await self._client_for_loop().batches.create(
            input_file_id=file_id, endpoint=BATCH_ENDPOINT, completion_window="24h", metadata=batch_metadata(tag)
        )

    async def _list_batches(self) -> list[Any]:
        return list((await self._client_for_loop().batches.list(limit=LISTED_BATCHES)).data)

    async def _retrieve_batch(self, batch_id: str) -> Any:
        return await self._client_for_loop().batches.retrieve(batch_id)

    async def _file_text(self, file_id: str) -> str:
        return str((await self._client_for_loop().files.content(file_id)).text)

    async def _batch_call(self, path: str, call: Any, *args: Any, **params: Any) -> Any:
        """One Batch API call; a server without the API gets a PermanentError naming it and the fix."""
        import openai

        try:
            return await call(*args, **params)
        except openai.APIStatusError as exc:
            if exc.status_code in (404, 405, 501):
                raise PermanentError(
                    f"{self.model_id}: this server does not offer the Batch API ({path} answered HTTP "
                    f"{exc.status_code}): {NO_BATCH_API}"
                ) from None
            raise classify(exc, self.model_id, self._api_key, self.timeout) from None
        except openai.APIError as exc:
            raise classify(exc, self.model_id, self._api_key, self.timeout) from None
        except ValueError as exc:
            raise TransientError(f"{self.model_id}: malformed response body ({exc})") from None

    # -- transport -----------------------------------------------------------------------------------

    def _client_for_loop(self) -> Any:
        if self._missing_key:
            raise ModelSpecError(self._missing_key)
        if self._client is None:
            from openai import AsyncOpenAI, DefaultAsyncHttpxClient

            # Our runner owns retries (one policy for every provider): the SDK must not retry too.
            self._client = AsyncOpenAI(
                api_key=self._api_key or "not-needed",
                base_url=self.base_url,
                timeout=SDK_TIMEOUTS * self.timeout,
                max_retries=0,
                http_client=DefaultAsyncHttpxClient(event_hooks={"response": [self._observe]}),
            )
        return self._client

    def rate_limit(self) -> ratelimit.SharedLimit | ratelimit.Fixed:
        """The adaptive limit on requests in flight to this account, shared with the run's other processes."""
        if self._rate is None:
            if not self.adaptive:
                self._rate = ratelimit.Fixed()
            else:
                self._rate = ratelimit.limit_for(self.provider, *self._account(), self.max_concurrency)
        return self._rate

    def _account(self) -> tuple[str, str | None]:
        """The base URL and key that name the account a rate limit applies to."""
        return self.base_url or "https://api.openai.com/v1", self._api_key

    async def _observe(self, response: Any) -> None:
        """Every HTTP response's headers: a low ``x-ratelimit-*`` budget paces the run's requests (``ratelimit``)."""
        self.rate_limit().observe(response.headers)

    async def _create(self, messages: Sequence[Message], **params: Any) -> Any:
        chat = [{"role": m.role, "content": m.content} for m in messages]
        return await self._send(self._client_for_loop().chat.completions.create, "chat", messages=chat, **params)

    async def _complete(self, prompt: str | list[str], **params: Any) -> Any:
        return await self._send(self._client_for_loop().completions.create, "completions", prompt=prompt, **params)

    async def _send(self, endpoint: Any, kind: str, **params: Any) -> Any:
        """One request within its deadline; a 429, a deadline or a slow answer in here cuts the run's limit."""
        import openai

        async with self.rate_limit().slot(slow_after=self.timeout / 2):
            sent = endpoint(model=self.model, **{k: v for k, v in params.items() if v is not None})
            try:
                return await self.deadlines.within(sent, kind)
            except openai.APIError as exc:
                raise classify(exc, self.model_id, self._api_key, SDK_TIMEOUTS * self.timeout) from None
            except ValueError as exc:  # a body that is not JSON
                raise TransientError(f"{self.model_id}: {kind} answered a body that is not JSON ({exc})") from None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self._text is not None:
            self._text.reset()  # its locks are bound to the closing event loop


def _options(spec: ModelSpec) -> dict[str, Any]:
    unknown = set(spec.options) - set(OPTIONS)
    if unknown:
        raise ModelSpecError(f"unknown option(s) {sorted(unknown)} in {spec.raw!r}; valid: {', '.join(OPTIONS)}")
    out: dict[str, Any] = {}
    kinds = {"timeout": float, "concurrency": int, "samples": int, "top_logprobs": int, "context": int}
    names = {"concurrency": "max_concurrency", "context": "context_tokens"}
    for key, kind in kinds.items():
        if key in spec.options:
            try:
                value = kind(spec.options[key])
            except ValueError:
                raise ModelSpecError(f"option {key}={spec.options[key]!r} in {spec.raw!r} must be a number") from None
            if value <= 0:
                raise ModelSpecError(f"option {key} in {spec.raw!r} must be positive")
            out[names.get(key, key)] = value
    for key, name in (("instruct", "follows_list_instructions"), ("batch", "batch_requested")):
        if key in spec.options:
            out[name] = spec.options[key].lower() in ("1", "true", "yes")
    if "adaptive" in spec.options:
        out["adaptive"] = spec.options["adaptive"].lower() not in ("0", "false", "no", "off")
    return out


def _chat_params(request: ChatRequest) -> dict[str, Any]:
    return {"temperature": request.temperature, "max_tokens": request.max_tokens, "seed": request.seed}


def _prefixed(request: LogprobRequest, found: LogprobResponse) -> LogprobResponse:
    """A reply prefix was sent as a finished assistant turn: the values are approximate, and say so."""
    if not request.prefix:
        return found
    return replace(found, exact=False, note=join_notes(found.note, "reply prefix sent as a finished assistant turn"))


def _scrub(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


def classify(exc: Exception, model_id: str, api_key: str | None, timeout: float) -> Exception:
    """Turn an SDK error (openai's, or litellm's subclasses of it) into a transient or permanent error."""
    import openai

    status = getattr(exc, "status_code", None)
    lines = _scrub(str(getattr(exc, "message", "") or exc), api_key).strip().splitlines()
    detail = (lines[0] if lines else type(exc).__name__)[:300]  # one line: litellm's messages carry tracebacks
    if isinstance(exc, openai.APITimeoutError):
        return TransientError(f"{model_id}: no response within {timeout:g}s (raise ?timeout= in the model spec)")
    if isinstance(exc, openai.APIConnectionError):
        return TransientError(f"{model_id}: connection failed or dropped ({detail})")
    if isinstance(exc, openai.APIResponseValidationError):
        return TransientError(f"{model_id}: malformed response body ({detail})")
    if status == 429:
        return RateLimited(f"{model_id}: HTTP 429 ({detail})", _retry_after(exc))
    if isinstance(status, int) and status >= 500:
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
    """The wait the server asked for, in seconds: Retry-After (or ``-ms``), else the reset of a spent
    ``x-ratelimit-*`` budget (litellm keeps the real headers on an attribute of its own)."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None and getattr(exc, "response", None) is not None:
        headers = exc.response.headers  # type: ignore[attr-defined]
    return server_wait(headers, time.time()) if headers is not None else None


def _with_prefix(request: LogprobRequest) -> tuple[Message, ...]:
    """Chat APIs cannot continue a reply mid-way: the prefix is sent as the assistant's turn so far."""
    if not request.prefix:
        return request.messages
    return (*request.messages, Message("assistant", request.prefix))
