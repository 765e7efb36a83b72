"""Sends batches of requests to a model through the cache, with bounded concurrency and accounting.

Measures hand the runner a list of requests and get the responses back in the same order. The
runner owns one event loop on a background thread, so it works the same from plain tests, async
tests and fixtures, and providers may keep loop-bound clients between batches.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar, overload

from pytest_fairness.models.base import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    LogprobRequest,
    LogprobResponse,
)
from pytest_fairness.models.cache import CacheMiss, CacheMode, ResponseCache, cache_key

ProgressFn = Callable[[int, int], None]
T = TypeVar("T")


@dataclass
class CallStats:
    """What a batch cost: model calls made, calls answered from the cache, tokens and time."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def add(self, other: CallStats) -> None:
        for name in ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


class Runner:
    """Runs requests against one model, answering from the cache where it can."""

    def __init__(
        self,
        model: ChatModel,
        cache: ResponseCache | None = None,
        cache_mode: CacheMode = CacheMode.RW,
        max_concurrency: int = 4,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.model = model
        self.cache = cache if cache_mode is not CacheMode.OFF else None
        self.cache_mode = cache_mode
        self.max_concurrency = max_concurrency
        self.stats = CallStats()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @overload
    def run(
        self, requests: Sequence[ChatRequest], *, stats: CallStats | None = ..., progress: ProgressFn | None = ...
    ) -> list[ChatResponse]: ...
    @overload
    def run(
        self,
        requests: Sequence[LogprobRequest],
        *,
        stats: CallStats | None = ...,
        progress: ProgressFn | None = ...,
    ) -> list[LogprobResponse]: ...
    def run(
        self,
        requests: Sequence[ChatRequest] | Sequence[LogprobRequest],
        *,
        stats: CallStats | None = None,
        progress: ProgressFn | None = None,
    ) -> list[Any]:
        """Answer every request, in order. Accounting goes to ``self.stats`` and to ``stats``."""
        batch = CallStats()
        start = time.perf_counter()
        try:
            return self._call_soon(self._run_all(list(requests), batch, progress))
        finally:
            batch.seconds = time.perf_counter() - start
            self.stats.add(batch)
            if stats is not None:
                stats.add(batch)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._loop.close()
            self._loop = None

    # -- internals -----------------------------------------------------------------------------

    def _call_soon(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="fairness-runner", daemon=True)
            self._thread.start()
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def _run_all(self, requests: list[Any], batch: CallStats, progress: ProgressFn | None) -> list[Any]:
        done = 0

        semaphore = asyncio.Semaphore(min(self.max_concurrency, self.model.max_concurrency))

        async def one(request: Any) -> Any:
            nonlocal done
            async with semaphore:
                response = await self._answer(request, batch)
            done += 1
            if progress is not None:
                progress(done, len(requests))
            return response

        return list(await asyncio.gather(*(one(r) for r in requests)))

    async def _answer(self, request: ChatRequest | LogprobRequest, batch: CallStats) -> Any:
        payload = request.payload()
        kind = str(payload["kind"])
        key = cache_key(self.model.model_id, payload)
        if self.cache is not None and self.cache_mode.reads:
            stored = self.cache.get(key)
            if stored is not None:
                batch.cache_hits += 1
                return _decode(kind, stored)
            if self.cache_mode is CacheMode.REPLAY:
                raise CacheMiss(
                    f"--fairness-cache-mode=replay: no cached response for a {kind} request to "
                    f"{self.model.model_id} (key {key[:12]}). Run once with --fairness-cache-mode=rw "
                    "to record it, or check that the model, seed and profile match the recorded run."
                )
        if isinstance(request, ChatRequest):
            response: ChatResponse | LogprobResponse = await self.model.chat(request)
            batch.completion_tokens += response.completion_tokens
        else:
            response = await self.model.logprobs(request)
        batch.calls += 1
        batch.prompt_tokens += response.prompt_tokens
        if self.cache is not None and self.cache_mode.writes:
            self.cache.put(key, self.model.model_id, kind, asdict(response))
        return response


def _decode(kind: str, stored: dict[str, Any]) -> ChatResponse | LogprobResponse:
    return ChatResponse(**stored) if kind == "chat" else LogprobResponse(**stored)
