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
request is refused. A candidate that is itself one of the listed next tokens is read from
``top_logprobs`` (route ``top_logprobs``). Any other candidate is sent after the prefix as one prompt
with ``echo`` and ``logprobs``, and the log-probs of its own tokens are summed (route ``echo``). Echo
is trusted only once it has been checked, per model, against the server's own next-token log-probs
(llama_cpp.server 0.3.x scores every prompt token from the position after it); a server that fails
the check, or does not echo prompt log-probs, gets a PermanentError naming the fault and the fix.

Batch mode (``?batch=1`` or ``--fairness-batch``) sends chat requests and judges' letter log-probs as
lines of one Batch API job (``/v1/files`` + ``/v1/batches``), each line's body the same as the online
call's, parsed by the same code; see ``models.batch``. Echo scoring and sampled fallbacks stay online.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_fairness.models import ratelimit
from pytest_fairness.models.base import (
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
from pytest_fairness.models.batch import RUNNING, UNKNOWN, BatchState
from pytest_fairness.models.registry import ModelSpec, ModelSpecError

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
ROUTE_TOP, ROUTE_ECHO, ROUTE_SAMPLED = "top_logprobs", "echo", "sampled"
ECHO_TOLERANCE = 0.05  # nats between an echoed prompt log-prob and the same token's next-token log-prob
ECHO_CHECKS = 3  # listed next tokens compared before echo is trusted
ECHO_TOP = 5  # alternatives asked per echoed token (the most OpenAI's completions allow): they reveal a shift
ECHO_TRIES = 8  # listed next tokens tried (some re-tokenise when appended to the prefix)
EXACT_FIX = (
    "PCF needs exact slot probabilities: serve the model with a server whose /v1/completions returns correct "
    "prompt log-probs for echo=true with logprobs (vLLM does), or score it with the local provider "
    "('local:/path/to/model.gguf')"
)


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
        self._echo_problem: str | None = None  # None: echo not checked yet; "": trusted; else why not
        self._echo_lock: asyncio.Lock | None = None
        self._fanout: asyncio.Semaphore | None = None
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
        return parse_chat(await self._create(request.messages, **_chat_params(request)))

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        if not request.messages:  # plain text continuation: the completions endpoint, no chat template
            return await self._continuation_logprobs(request)
        messages = _with_prefix(request)
        found = parse_top_logprobs(await self._create(messages, **self._letter_params()), request.candidates)
        if found is None:
            sampled = await self._create(messages, temperature=1.0, max_tokens=8, n=self.samples, seed=0)
            found = sampled_logprobs(sampled, request.candidates)
        return _prefixed(request, found)

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
        from openai.types.chat import ChatCompletion

        try:
            raw = ChatCompletion.model_validate(body)
            if isinstance(request, ChatRequest):
                return parse_chat(raw)
            found = parse_top_logprobs(raw, request.candidates)
        except (ValueError, TransientError):
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

    # -- plain-text continuations: exact or refused ----------------------------------------------------

    async def _continuation_logprobs(self, request: LogprobRequest) -> LogprobResponse:
        """Each candidate's whole continuation of ``prefix``, read exactly (or sampled when no log-probs)."""
        prefix = request.prefix
        raw = await self._complete(prefix, temperature=0.0, max_tokens=1, logprobs=self.top_logprobs)
        top = next_token_top(raw)
        if top is None:  # no log-probs at all: the labelled sampling adaptation
            sampled = await self._complete(prefix, temperature=1.0, max_tokens=8, n=self.samples)
            return replace(sampled_logprobs(sampled, request.candidates), route=ROUTE_SAMPLED)
        prompt_tokens, completion_tokens = _usage(raw)
        out = {c: top[c] for c in request.candidates if c in top}  # a listed single token: exact as it stands
        missing = [c for c in request.candidates if c not in out]
        if not missing:
            return LogprobResponse(out, True, prompt_tokens, _version(raw), "", completion_tokens, route=ROUTE_TOP)
        if not prefix:
            raise PermanentError(f"{self.model_id}: an empty text has no next-token log-probs to echo; {EXACT_FIX}")
        await self._trust_echo(prefix, top)
        base = await self._echoed(prefix)
        head = base.span(0, len(prefix))
        if head is None:
            raise PermanentError(f"{self.model_id}: the echoed tokens of {prefix!r} do not end where it ends")
        prefix_tokens = [base.tokens[i] for i in head]
        for candidate, echo in zip(missing, await self._gather(self._echoed(prefix + c) for c in missing), strict=True):
            out[candidate] = self._continuation(echo, prefix, candidate, prefix_tokens)
            prompt_tokens += echo.prompt_tokens
        # exact, so no approximation note: ``route`` tells how the values were read
        return LogprobResponse(out, True, prompt_tokens, _version(raw), "", completion_tokens, route=ROUTE_ECHO)

    def _continuation(self, echo: Echo, prefix: str, candidate: str, prefix_tokens: list[str]) -> float:
        """Sum of the candidate's own token log-probs, refused unless its tokens start exactly after the prefix."""
        end = len(prefix) + len(candidate)
        head, tail = echo.span(0, len(prefix)), echo.span(len(prefix), end)
        if head is None or tail is None or not tail:
            raise PermanentError(
                f"{self.model_id}: the server tokenises {prefix + candidate!r} with a token across the end of the "
                f"prefix, so {candidate!r} cannot be scored as its continuation exactly; {EXACT_FIX}"
            )
        if [echo.tokens[i] for i in head] != prefix_tokens:
            raise PermanentError(
                f"{self.model_id}: the server tokenises the prefix {prefix!r} differently when {candidate!r} follows "
                f"it, so the candidate's log-prob would be read in another context; {EXACT_FIX}"
            )
        values = [echo.logprobs[i] for i in tail]
        if any(v is None for v in values):
            raise PermanentError(f"{self.model_id}: the echo of {prefix + candidate!r} lacks log-probs; {EXACT_FIX}")
        return float(sum(v for v in values if v is not None))

    async def _trust_echo(self, prefix: str, top: dict[str, float]) -> None:
        """Check echo once per model (the verdict is kept); raise PermanentError when it cannot be trusted."""
        if self._echo_problem is None:
            if self._echo_lock is None:
                self._echo_lock = asyncio.Lock()
            async with self._echo_lock:
                if self._echo_problem is None:
                    self._echo_problem = await self._echo_problem_for(prefix, top)
        if self._echo_problem:
            raise PermanentError(self._echo_problem)

    async def _echo_problem_for(self, prefix: str, top: dict[str, float]) -> str:
        """Why the echo route is wrong on this server ("" when it agrees with the next-token route).

        The server's most likely next tokens after ``prefix`` are appended to it and echoed; each one's
        echoed log-prob must equal the one ``top_logprobs`` gave it. A server that scores prompt tokens
        from the wrong position fails here, before any result is read through it.
        """
        compared: list[tuple[str, float, float, Echo, int]] = []
        for token, expected in sorted(top.items(), key=lambda kv: -kv[1])[:ECHO_TRIES]:
            if not token:
                continue
            try:
                echo = await self._echo(prefix + token)
            except PermanentError as exc:
                return f"{self.model_id}: the completions endpoint refused echo=true with logprobs ({exc}); {EXACT_FIX}"
            if echo is None:
                return (
                    f"{self.model_id}: this endpoint's completions API does not return prompt log-probs "
                    f"(echo=true with logprobs); {EXACT_FIX}"
                )
            span = echo.span(len(prefix), len(prefix) + len(token))
            if span is None or len(span) != 1 or echo.logprobs[span[0]] is None:
                continue  # the token merges with the prefix's end when appended: not comparable
            compared.append((token, expected, float(echo.logprobs[span[0]] or 0.0), echo, span[0]))
            if len(compared) == ECHO_CHECKS:
                break
        if not compared:
            return (
                f"{self.model_id}: could not check the server's echoed prompt log-probs against its next-token "
                f"log-probs after {prefix!r} (no listed token could be echoed on its own); {EXACT_FIX}"
            )
        for token, expected, echoed, echo, at in compared:
            if abs(echoed - expected) > ECHO_TOLERANCE:
                shift = ""
                if _shifted_by_one(echo, at, top):
                    shift = (
                        "; its echo lists, at the prefix's last token, the alternatives for the token after it: the "
                        "server scores each prompt token from the position after it (an off-by-one, as "
                        "llama_cpp.server 0.3.x has for models that add no BOS token)"
                    )
                return (
                    f"{self.model_id}: the server's echoed prompt log-probs disagree with its own next-token "
                    f"log-probs: log p({token!r} | {prefix!r}) reads {echoed:.2f} by echo but {expected:.2f} by "
                    f"top_logprobs{shift}. Its echo cannot be trusted, so exact slot probabilities cannot be read "
                    f"from it; {EXACT_FIX}"
                )
        return ""

    async def _echo(self, prompt: str) -> Echo | None:
        raw = await self._complete(prompt, temperature=0.0, max_tokens=1, logprobs=ECHO_TOP, echo=True)
        return parse_echo(raw, prompt)

    async def _echoed(self, prompt: str) -> Echo:
        """An echo the verified server must give; refused, never guessed, when it does not."""
        echo = await self._echo(prompt)
        if echo is None:
            raise PermanentError(
                f"{self.model_id}: the server returned no prompt log-probs for {prompt!r}; {EXACT_FIX}"
            )
        return echo

    async def _gather(self, calls: Any) -> list[Any]:
        """Run one request's fan-out of echo calls, at most ``max_concurrency`` in flight across requests."""
        if self._fanout is None:
            self._fanout = asyncio.Semaphore(self.max_concurrency)
        fanout = self._fanout

        async def bounded(call: Any) -> Any:
            async with fanout:
                return await call

        return list(await asyncio.gather(*(bounded(c) for c in calls)))

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
                timeout=self.timeout,
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
        return await self._send(self._client_for_loop().chat.completions.create, messages=chat, **params)

    async def _complete(self, prompt: str, **params: Any) -> Any:
        return await self._send(self._client_for_loop().completions.create, prompt=prompt, **params)

    async def _send(self, endpoint: Any, **params: Any) -> Any:
        import openai

        async with self.rate_limit().slot():  # a 429 raised in here halves the run's limit for this account
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
        self._echo_lock = self._fanout = None  # bound to the closing event loop


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
    detail = _scrub(str(getattr(exc, "message", "") or exc), api_key)[:300]
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
    return ratelimit.server_wait(headers, time.time()) if headers is not None else None


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
    return LogprobResponse(out, not notes, prompt_tokens, _version(raw), join_notes(*sorted(notes)), completion_tokens)


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


def _get(obj: Any, name: str) -> Any:
    """A field of an SDK object or of a plain dict (litellm passes some log-prob blocks as dicts)."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def next_token_top(raw: Any) -> dict[str, float] | None:
    """The first generated token's top log-probs from a text completion, keyed by exact token text.

    Unlike the chat route nothing is stripped: " he" and "he" are different tokens. The generated
    token's own log-prob is added (it is exact whether or not the server lists it).
    """
    if not getattr(raw, "choices", None):
        raise TransientError("response has no choices")
    logprobs = _get(raw.choices[0], "logprobs")
    if logprobs is None:
        return None
    tops, tokens, values = _get(logprobs, "top_logprobs"), _get(logprobs, "tokens"), _get(logprobs, "token_logprobs")
    top = {str(t): float(lp) for t, lp in dict(tops[0] or {}).items()} if tops else {}
    if tokens and values and values[0] is not None:
        top[str(tokens[0])] = float(values[0])
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


def _shifted_by_one(echo: Echo, at: int, top: dict[str, float]) -> bool:
    """Whether the echo lists, at token ``at - 1``, the next-token alternatives that belong to token ``at``.

    ``top`` is the server's next-token list after the prefix, which ends with token ``at - 1``; a
    correct echo lists there the alternatives for that token itself, a shifted one those for ``at``.
    """
    if at < 1 or len(echo.tops) <= at - 1 or not echo.tops[at - 1]:
        return False
    listed = echo.tops[at - 1]
    shared = [t for t in listed if t in top and t != echo.tokens[at - 1]]  # the token itself is always added
    return bool(shared) and all(abs(listed[t] - top[t]) <= ECHO_TOLERANCE for t in shared)


def parse_echo(raw: Any, prompt: str) -> Echo | None:
    """The prompt's tokens and log-probs from an ``echo`` completion; None when the server did not echo them.

    Token offsets are rebuilt from the token texts (a leading special token such as BOS, absent from
    the prompt text, is skipped) rather than trusted from ``text_offset``.
    """
    if not getattr(raw, "choices", None):
        raise TransientError("response has no choices")
    logprobs = _get(raw.choices[0], "logprobs")
    tokens, values = (_get(logprobs, "tokens"), _get(logprobs, "token_logprobs")) if logprobs else (None, None)
    if not tokens or values is None or len(values) != len(tokens):
        return None
    tokens = [str(t) for t in tokens]
    for skip in range(min(3, len(tokens))):
        if "".join(tokens[skip:]).startswith(prompt):
            break
    else:
        return None
    starts, at = [], 0
    for token in tokens[skip:]:
        starts.append(at)
        at += len(token)
    values = [None if v is None else float(v) for v in values[skip:]]
    listed = list(_get(logprobs, "top_logprobs") or [])
    tops = tuple({str(t): float(v) for t, v in dict(x or {}).items()} for x in listed[skip:])
    return Echo(
        tuple(tokens[skip:]), tuple(starts), tuple(values), _usage(raw)[0], tops if len(listed) == len(tokens) else ()
    )
