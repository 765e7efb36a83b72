"""A small OpenAI-compatible server on loopback, with scripted faults and a fixed latency.

Real HTTP (the SDKs connect to it like to any server), so the providers' retries, timeouts and
error handling are tested on the wire. Used by the tests and by the benchmarks. Chat requests get
``reply`` and ``top_logprobs``; text completions (``/v1/completions``) are answered by ``lm``, a toy
language model whose exact log-probs the tests know, with ``echo`` behaving as ``echo_mode`` says:

    "correct"     prompt tokens scored from the position before them, as the API defines
    "shifted"     each prompt token scored from its own position (llama_cpp.server 0.3.x's off-by-one)
    "noisy"       the right positions, but every echoed prompt log-prob 0.5 too high
    "ignored"     echo=true returns only the generated token, as if the server had no echo
    "rejected"    echo=true with logprobs is an HTTP 400

``answer`` (a function of the request body returning the reply and its first token's top log-probs)
replaces the fixed ``reply`` and ``top_logprobs`` when a test needs answers that depend on the request.
``/v1/files`` and ``/v1/batches`` are the Batch API (``fake_batches``), whose lines get the same answers
as online requests; ``batch_api.enabled = False`` makes them 404, as on a server without it.

With ``chat=False`` it serves ``/v1/completions`` only, as vLLM or llama.cpp serve a base model without a
chat template: every chat request is an HTTP 400. With ``completions=False`` it serves chat only, as many hosted
chat endpoints do: every text completion is an HTTP 404.

``/v1/completions`` takes a list of prompts, as OpenAI's API does, unless ``prompt_lists`` is off (then a list
of more than one is an HTTP 500, as on llama_cpp.server). With ``serial`` it answers one request at a
time, in arrival order, going on with a request whose client has left (``finished`` counts the answers
written, ``open`` those still owed), every ``slow_every``-th taking ``slow_seconds``, and after
``hang_after`` answers it answers nothing more.

Each request takes the next fault from ``script`` (or answers normally when it is empty):

    "429"         rate limited, with Retry-After: ``retry_after`` seconds
    "500"         server error
    "slow"        answers after ``slow_seconds`` (past a client's timeout)
    "malformed"   200 with a body that is not JSON
    "drop"        closes the connection without answering
    "nologprobs"  a normal answer without log-probs even when asked for them
    "401", "404"  permanent client errors

With ``rate`` set, it also answers like a rate-limited account: at most ``rate`` requests per second over
a sliding ``rate_window``, and any request beyond that gets 429 with a Retry-After that says when a slot
frees up (counted in ``over_rate``). Unless ``rate_headers`` is off, every response then carries OpenAI's
``x-ratelimit-*-requests`` headers (the reset: until the whole budget is back), so a client can see its
budget running out.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import random
import string
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fake_batches import FakeBatchAPI

WORDS = ("The", " nurse", " engineer", " said", " that", " he", " she", " her", " his", " him", " a", " man")
PIECES = ("iress", "self", "ctress", "oman")


@dataclass(frozen=True)
class ToyLM:
    """A tiny deterministic language model: greedy longest-match tokens and per-context seeded logits.

    ``boost`` raises some tokens' logits after every context (e.g. a strongly male slot). Multi-token
    words come out as pieces: " heiress" is " he" + "iress", " herself" is " her" + "self".
    """

    boost: tuple[tuple[str, float], ...] = ((" he", 6.0),)
    vocab: tuple[str, ...] = tuple(dict.fromkeys((*WORDS, *PIECES, *string.ascii_letters, " ", ".", ",")))

    def tokenize(self, text: str) -> list[str]:
        out, at = [], 0
        while at < len(text):
            token = max((v for v in self.vocab if text.startswith(v, at)), key=len, default=text[at])
            out.append(token)
            at += len(token)
        return out

    def next_logprobs(self, context: tuple[str, ...]) -> dict[str, float]:
        """log p(token | context) over the vocabulary, normalised."""
        rng = random.Random(hashlib.sha256("\x1f".join(context).encode()).hexdigest())
        boost = dict(self.boost)
        logits = {v: rng.gauss(0.0, 1.5) + boost.get(v, 0.0) for v in self.vocab}
        norm = math.log(sum(math.exp(x) for x in logits.values()))
        return {v: x - norm for v, x in logits.items()}

    def continuation(self, prefix: str, text: str) -> float:
        """Exact log p(text | prefix): the sum over the text's own tokens."""
        context, total = tuple(self.tokenize(prefix)), 0.0
        for token in self.tokenize(text):
            total += self.next_logprobs(context)[token]
            context += (token,)
        return total


@dataclass
class FakeOpenAI:
    latency: float = 0.0
    retry_after: float = 0.2
    slow_seconds: float = 5.0
    reply: str = "wonderful - white"
    top_logprobs: list[tuple[str, float]] = field(default_factory=lambda: [(" white", -0.3), (" black", -1.5)])
    lm: ToyLM = field(default_factory=ToyLM)
    echo_mode: str = "correct"
    chat: bool = True
    completions: bool = True  # False: /v1/completions is an HTTP 404 (a chat-only endpoint)
    answer: Callable[[dict[str, Any]], tuple[str, list[tuple[str, float]]]] | None = None
    batch_api: FakeBatchAPI = field(default_factory=FakeBatchAPI)
    script: deque[str] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    arrived: list[float] = field(default_factory=list)  # when each of ``requests`` came (time.monotonic)
    port: int = 0
    rate: float = 0.0  # requests per second answered (0: unlimited); over it, 429
    rate_window: float = 1.0
    rate_headers: bool = True  # False: a server that says only Retry-After, on its 429s
    over_rate: int = 0  # requests answered 429 for going over ``rate``
    #: Garbles a 200 answer, for tests of malformed replies: (kind, payload) -> the payload to send instead (bytes
    #: are sent as they are); kind is "chat", "completions", "batches" (Batch API objects) or "batch line".
    mutate: Callable[[str, Any], Any] | None = None
    prompt_lists: bool = True  # False: a list of prompts is an HTTP 500, as llama_cpp.server's assertion makes it
    serial: bool = False  # answer one request at a time, in arrival order (as llama.cpp's server does)
    slow_every: int = 0  # with ``serial``: every n-th request served takes ``slow_seconds`` (0: none)
    hang_after: int = -1  # requests answered before every later one hangs (-1: never)
    finished: int = 0  # requests whose answer was written (or failed to be: the client had gone)

    def __post_init__(self) -> None:
        self._admitted: deque[float] = deque()
        self._turn: asyncio.Lock | None = None  # held while a serial server works on one request
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", self.port, backlog=256), self._loop
        ).result()
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    # -- HTTP -------------------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:] if ":" in x)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                method, path = [*lines[0].split(" "), "", ""][:2]
                if path.startswith(("/v1/files", "/v1/batches")):
                    status, payload = self.batch_api.handle(method, path, headers, body, self._batch_line)
                    raw = payload if isinstance(payload, bytes) else None
                    if status == 200 and raw is None and self.mutate is not None:
                        payload = self.mutate("batches", payload)
                        raw = payload if isinstance(payload, bytes) else None
                    self._send(writer, status, None if raw is not None else payload, raw=raw)
                    await writer.drain()
                    continue
                if not await self._respond(writer, json.loads(body or b"{}"), headers):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):  # stopped: end quietly
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    @property
    def open(self) -> int:
        """Requests received but not yet answered: work the server is still doing (or queues)."""
        return len(self.requests) - self.finished

    async def _respond(self, writer: asyncio.StreamWriter, request: dict[str, Any], headers: dict[str, str]) -> bool:
        self.requests.append(request)
        self.headers.append(headers)
        self.arrived.append(time.monotonic())
        if not self.serial:
            return await self._answer(writer, request)
        if self._turn is None:
            self._turn = asyncio.Lock()
        async with self._turn:  # the work goes on when the client has gone: nothing tells the server
            return await self._answer(writer, request)

    async def _answer(self, writer: asyncio.StreamWriter, request: dict[str, Any]) -> bool:
        try:
            return await self._reply_to(writer, request)
        finally:
            self.finished += 1

    async def _reply_to(self, writer: asyncio.StreamWriter, request: dict[str, Any]) -> bool:
        served = self.finished + 1
        if 0 <= self.hang_after < served:
            await asyncio.Event().wait()  # hung: never answers (until the server stops)
        fault = self.script.popleft() if self.script else ""
        if self.slow_every and served % self.slow_every == 0:
            fault = fault or "slow"
        limits, wait = self._admit() if self.rate else ({}, None)
        if wait is not None:  # refused at the door, at once, as rate limiters do
            self.over_rate += 1
            message = {"error": {"message": "Rate limit reached for requests", "type": "requests"}}
            self._send(writer, 429, message, {"retry-after": f"{wait:.3f}", **limits})
            await writer.drain()
            return True
        await asyncio.sleep(self.slow_seconds if fault == "slow" else self.latency)
        if fault == "drop":
            return False
        if fault == "429":
            self._send(writer, 429, {"error": {"message": "slow down"}}, {"retry-after": str(self.retry_after)})
        elif fault in ("500", "401", "404"):
            self._send(writer, int(fault), {"error": {"message": f"fault {fault}", "type": "fake"}})
        elif fault == "malformed":
            self._send(writer, 200, None, raw=b'{"id": "x", "choices": [')
        elif "messages" in request and not self.chat:
            message = "this model has no chat template; chat completions are not supported (use /v1/completions)"
            self._send(writer, 400, {"error": {"message": message, "type": "BadRequestError"}})
        elif "prompt" in request and not self.completions:
            self._send(writer, 404, {"error": {"message": "/v1/completions is not served here", "type": "fake"}})
        elif isinstance(request.get("prompt"), list) and len(request["prompt"]) > 1 and not self.prompt_lists:
            self._send(writer, 500, {"error": {"message": "assert len(body.prompt) <= 1", "type": "fake"}})
        elif "prompt" in request and request.get("echo") and self.echo_mode == "rejected":
            self._send(writer, 400, {"error": {"message": "echo is not supported with logprobs", "type": "fake"}})
        elif "prompt" in request:
            self._answered(writer, "completions", self._text_completion(request, fault != "nologprobs"), limits)
        else:
            self._answered(writer, "chat", self._completion(request, with_logprobs=fault != "nologprobs"), limits)
        with contextlib.suppress(ConnectionError):  # a client that gave up waiting
            await writer.drain()
        return True

    def _admit(self) -> tuple[dict[str, str], float | None]:
        """Admit a request under ``rate`` (sliding window): its ``x-ratelimit-*`` headers, and the seconds until a
        slot frees when it is over the rate (None when admitted)."""
        now = time.monotonic()
        while self._admitted and self._admitted[0] <= now - self.rate_window:
            self._admitted.popleft()
        allowed = max(1, int(self.rate * self.rate_window))
        wait = None
        if len(self._admitted) >= allowed:
            wait = self._admitted[0] + self.rate_window - now
        else:
            self._admitted.append(now)
        reset = (self._admitted[-1] + self.rate_window - now) if self._admitted else 0.0  # all of it back, as OpenAI
        limits = {
            "x-ratelimit-limit-requests": str(allowed),
            "x-ratelimit-remaining-requests": str(allowed - len(self._admitted)),
            "x-ratelimit-reset-requests": f"{max(reset, 0.001) * 1000:.0f}ms",
        }
        return (limits if self.rate_headers else {}), wait

    def _answered(self, writer: asyncio.StreamWriter, kind: str, payload: Any, limits: dict[str, str]) -> None:
        """A 200 answer, through ``mutate`` when a test garbles what the server says."""
        if self.mutate is not None:
            payload = self.mutate(kind, payload)
        self._send(
            writer,
            200,
            None if isinstance(payload, bytes) else payload,
            limits,
            raw=payload if isinstance(payload, bytes) else None,
        )

    def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        payload: Any,
        extra: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> None:
        body = raw if raw is not None else json.dumps(payload).encode()
        head = [f"HTTP/1.1 {status} X", "content-type: application/json", f"content-length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in (extra or {}).items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)

    def _batch_line(self, body: dict[str, Any]) -> Any:
        """A batch line's response body: what the same request would get online (through ``mutate``)."""
        payload = self._completion(body, with_logprobs=True)
        return payload if self.mutate is None else self.mutate("batch line", payload)

    def _completion(self, request: dict[str, Any], with_logprobs: bool) -> dict[str, Any]:
        reply, listed = self.answer(request) if self.answer is not None else (self.reply, self.top_logprobs)
        choices = []
        for i in range(int(request.get("n") or 1)):
            choice: dict[str, Any] = {
                "index": i,
                "message": {"role": "assistant", "content": reply},
                "finish_reason": "stop",
                "logprobs": None,
            }
            if with_logprobs and request.get("logprobs"):
                top = [{"token": t, "logprob": lp, "bytes": None} for t, lp in listed]
                choice["logprobs"] = {"content": [{**top[0], "top_logprobs": top}], "refusal": None}
            choices.append(choice)
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model", "fake"),
            "system_fingerprint": "fp_fake",
            "choices": choices,
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
        }

    def _text_completion(self, request: dict[str, Any], with_logprobs: bool) -> dict[str, Any]:
        """A legacy completion by ``lm``: one token, greedy at temperature 0, sampled otherwise. A list of prompts
        gets ``n`` choices per prompt, the i-th prompt's j-th at index i·n + j, as OpenAI's API answers."""
        prompts = [request["prompt"]] if isinstance(request["prompt"], str) else list(request["prompt"])
        n = int(request.get("n") or 1)
        choices: list[dict[str, Any]] = []
        prompt_tokens = 0
        for at, prompt in enumerate(prompts):
            tokens = self.lm.tokenize(prompt)
            prompt_tokens += len(tokens)
            choices += [self._text_choice(request, prompt, tokens, at * n + i, i, with_logprobs) for i in range(n)]
        return {
            "id": "cmpl-fake",
            "object": "text_completion",
            "created": 0,
            "model": request.get("model", "fake"),
            "system_fingerprint": "fp_fake",
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(choices), "total_tokens": 0},
        }

    def _text_choice(
        self, request: dict[str, Any], prompt: str, tokens: list[str], index: int, i: int, with_logprobs: bool
    ) -> dict[str, Any]:
        echo = bool(request.get("echo")) and self.echo_mode != "ignored"
        row = self.lm.next_logprobs(tuple(tokens))
        if (request.get("temperature") or 0.0) > 0:
            rng = random.Random(f"{prompt}\x1f{i}")
            token = rng.choices(list(row), weights=[math.exp(v) for v in row.values()])[0]
        else:
            token = max(row, key=row.__getitem__)
        choice: dict[str, Any] = {"index": index, "text": (prompt if echo else "") + token, "finish_reason": "length"}
        choice["logprobs"] = None
        if with_logprobs and request.get("logprobs") is not None:
            choice["logprobs"] = self._token_logprobs([*tokens, token], len(tokens), echo, int(request["logprobs"]))
        return choice

    def _token_logprobs(self, tokens: list[str], n_prompt: int, echo: bool, k: int) -> dict[str, Any]:
        """The legacy ``logprobs`` block: from the prompt's first token when echoing, else the generated one."""
        shift = 1 if self.echo_mode == "shifted" and echo else 0
        out: dict[str, list[Any]] = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
        offset = 0
        for j, token in enumerate(tokens):
            if echo or j >= n_prompt:
                if j == 0:
                    value, top = None, None
                else:
                    row = self.lm.next_logprobs(tuple(tokens[: j + shift]))
                    value, top = row[token], dict(sorted(row.items(), key=lambda kv: -kv[1])[: max(k, 0)])
                    if echo and self.echo_mode == "noisy" and j < n_prompt:
                        value += 0.5
                out["tokens"].append(token)
                out["token_logprobs"].append(value)
                out["top_logprobs"].append(top)
                out["text_offset"].append(offset)
            offset += len(token)
        return out


def is_probe(request: dict[str, Any]) -> bool:
    """Whether a request is one of the probes a plugin run sends before its first check (chat or text)."""
    from pytest_fairness.run.preflight import PROBE, TEXT_PROBE

    probe = [{"role": m.role, "content": m.content} for m in PROBE.messages]
    return request.get("messages") == probe or request.get("prompt") == TEXT_PROBE.prefix


def measure_requests(server: FakeOpenAI) -> list[dict[str, Any]]:
    """The requests a run's measures sent: without the probes a plugin run sends before its first check."""
    return [r for r in list(server.requests) if not is_probe(r)]
