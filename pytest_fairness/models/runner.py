"""Sends batches of requests to a model through the cache, with bounded concurrency, retries and accounting.

Measures hand the runner a list of requests and get the responses back in the same order. Every
runner of a process runs its calls on the process's one event loop, on a background thread
(``models.loop``), so it works the same from plain tests, async tests and fixtures, and providers and
apps may keep loop-bound clients (HTTP connection pools) for the whole run. Transient failures
(a call past its deadline among them) are retried with jittered exponential backoff, honouring the
server's Retry-After; a permanent failure, or a transient one that outlasts the retries, ends the
batch with one clear error. Every finished response is cached as it arrives, so nothing finished
is lost when a batch fails or a run is interrupted.

With a ``BatchPolicy`` (batch mode), the cache misses of each ``run`` that the provider can batch go
first through its batch API (``models.batch``); what a batch does not answer is sent online as usual.

A runner told to ``remember`` keeps every answer it was given in this run and gives it again when the same
request comes back, whatever the cache does: a check that grows sequentially re-asks its earlier items at each
look, and its confidence sequence is valid only if those answers are the ones it already saw (a model that does
not reproduce an answer from its seed, with the cache off, read-only or refreshing, would give new ones).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import random
import time
from collections.abc import Awaitable, Callable, Collection, Coroutine, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

from pytest_fairness.models.batch import BatchPolicy, Ledger, MemoryLedger, answer_by_batch, batch_api
from pytest_fairness.models.cache import CacheMiss, CacheMode, ResponseCache, cache_key
from pytest_fairness.models.deadline import SETTLE_SECONDS, DeadlineExceeded
from pytest_fairness.models.interface import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    LogprobRequest,
    LogprobResponse,
    RateLimited,
    TransientError,
    resampled,
    split_notes,
)
from pytest_fairness.models.loop import process_loop

if TYPE_CHECKING:
    from pytest_fairness.models.pricing import Price


class ProgressFn(Protocol):
    """Told, as a call's requests are answered, how many of them are; ``note`` says what the call waits
    on when it waits on something other than the model (a provider batch)."""

    def __call__(self, done: int, total: int, note: str = "") -> None: ...


T = TypeVar("T")
#: CallStats' numeric fields, in the order reports show them (report/tally.py adds them up).
COUNTERS = (
    "calls",
    "cache_hits",
    "retries",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
    "usd",
    "unpriced",
    "batched",
    "rate_limited",
    "late",
)


@dataclass
class CallStats:
    """What a batch cost: model calls, cache hits, retries, tokens and wall time, plus what it saw.

    ``model_versions`` are the versions / system fingerprints the provider reported; ``notes`` are
    the approximations providers had to make (for example a candidate missing from top log-probs).
    ``usd`` is what the calls cost at their models' standard rates, or batch rates for the ``batched``
    calls answered through a provider batch (a runner with a price counts it); ``unpriced`` counts calls
    to a model whose price is unknown, so a spend is never shown as complete when it is not.
    ``rate_limited`` counts the answers that were HTTP 429 (each one retried, so also in ``retries``
    unless it was the last straw): how hard the run pressed the provider's rate limit. ``late`` counts the
    calls that passed their deadline (each one retried likewise; it ran on, so the server still answered it).
    ``roles`` splits the counters by the role the calls served (``"model"``: the model under test,
    ``"judge"``), each role's counters summing to its share of the totals.
    """

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    usd: float = 0.0
    unpriced: int = 0
    batched: int = 0
    rate_limited: int = 0
    late: int = 0
    model_versions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    roles: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, other: CallStats) -> None:
        for name in COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for role, counts in other.roles.items():
            mine = self.roles.setdefault(role, {})
            for name in COUNTERS:
                mine[name] = mine.get(name, 0) + counts.get(name, 0)
        self.model_versions = sorted(set(self.model_versions) | set(other.model_versions))
        self.notes = sorted(set(self.notes) | set(other.notes))

    def saw(self, response: ChatResponse | LogprobResponse) -> None:
        if response.model_version and response.model_version not in self.model_versions:
            self.model_versions = sorted({*self.model_versions, response.model_version})
        parts = split_notes(getattr(response, "note", ""))  # each approximation once, however combined
        if not set(parts) <= set(self.notes):
            self.notes = sorted({*self.notes, *parts})


#: The counters of the checks whose calls are being counted (``counting``); innermost last.
_COUNTING: ContextVar[tuple[CallStats, ...]] = ContextVar("fairness_counting", default=())


@contextlib.contextmanager
def counting(stats: CallStats) -> Iterator[CallStats]:
    """Add every batch any runner answers within the block to ``stats``: a check's accounting is kept by
    the framework around its run, so no measure threads a counter through its helpers."""
    token = _COUNTING.set((*_COUNTING.get(), stats))
    try:
        yield stats
    finally:
        _COUNTING.reset(token)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter; a server's Retry-After is a floor, never shortened."""

    max_attempts: int = 6
    base_seconds: float = 0.5
    cap_seconds: float = 30.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        backoff = rng.uniform(0, min(self.cap_seconds, self.base_seconds * 2**attempt))
        return max(backoff, retry_after or 0.0)


class RetriesExhausted(RuntimeError):
    """A transient failure that persisted through every retry."""


class Runner:
    """Runs requests against one model, answering from the cache where it can."""

    def __init__(
        self,
        model: ChatModel,
        cache: ResponseCache | None = None,
        cache_mode: CacheMode = CacheMode.RW,
        max_concurrency: int = 8,
        retry: RetryPolicy = RetryPolicy(),
        price: Price | None = None,
        batch: BatchPolicy | None = None,
        role: str = "model",
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.model = model
        self.cache = cache if cache_mode is not CacheMode.OFF else None
        self.cache_mode = cache_mode
        self.max_concurrency = max_concurrency
        self.retry = retry
        #: What the model's calls cost; None: not priced (neither ``usd`` nor ``unpriced`` is counted).
        self.price = price
        #: Batch mode (None: every call online); shared with the run's other runners for one wait budget.
        self.batch = batch
        #: The role its calls serve in the run ("model" under test, or "judge"): each call's accounting says it.
        self.role = role
        self._memory_ledger = MemoryLedger()
        self.stats = CallStats()
        self._jitter = random.Random()
        self._unsaved: list[tuple[str, str, str, dict[str, Any]]] = []
        self._last_save = time.monotonic()
        self._used = False  # whether a call ran on the process loop (something there to close or settle)
        #: Which re-sample of each item its chat requests ask for (``resampled``); 0: the item's first answer.
        self.resample = 0
        #: The answers given in this run by cache key, when told to ``remember`` (shared with its copies).
        self.memo: dict[str, dict[str, Any]] | None = None

    def remember(self) -> None:
        """From now on, answer a request this runner (or a copy) already answered in this run with the same answer,
        before the cache: repeated looks of a growing check then see the answers they saw (memory: the run's own
        answers)."""
        if self.memo is None:
            self.memo = {}

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
        """Answer every request, in order. Accounting goes to ``self.stats``, to ``stats`` and to every
        counter of an enclosing ``counting`` block."""
        batch = CallStats()
        start = time.perf_counter()
        asked = [resampled(r, self.resample) for r in requests] if self.resample else list(requests)
        try:
            return self._call_soon(self._run_all(asked, batch, progress))
        finally:
            batch.seconds = time.perf_counter() - start
            batch.roles = {self.role: {name: getattr(batch, name) for name in COUNTERS}}
            self.stats.add(batch)
            counters = (*_COUNTING.get(), *([] if stats is None else [stats]))
            for counter in {id(c): c for c in counters}.values():  # each counter once
                counter.add(batch)

    def for_role(self, role: str) -> Runner:
        """A runner of the same model, cache, price, policies and running totals (``stats``) whose calls count for
        ``role`` (a judge that is the model under test: the same model, told apart in the accounting)."""
        other = Runner(
            self.model, self.cache, self.cache_mode, self.max_concurrency, self.retry, self.price, self.batch, role
        )
        other.stats, other.memo = self.stats, self.memo
        return other

    def resampled(self, k: int) -> Runner:
        """This runner (same model, cache, totals and settings) asking each chat request's ``k``-th re-sample:
        another answer to the same item (``samples_per_item``)."""
        other = copy.copy(self)
        other.resample, other._unsaved = k, []  # its own pending writes (each run saves its own at its end)
        return other

    def at_once(self) -> int | None:
        """How many requests this runner answers at the same time; None in batch mode, where one ``run`` is
        one batch (splitting the work into several ``run`` calls would wait for each batch in turn)."""
        if batch_api(self.model, self.batch) is not None:
            return None
        return min(self.max_concurrency, self.model.max_concurrency)

    def key(self, request: ChatRequest | LogprobRequest) -> str:
        """The cache key of a request to this runner's model."""
        return cache_key(self.model.model_id, request.payload())

    def cached(self, key: str) -> bool:
        """Whether the request of this cache key would be answered from the cache, or from this run's own answers
        when the runner remembers them (for planning a run, or its next round)."""
        if self.memo is not None and key in self.memo:
            return True
        return self.cache is not None and self.cache_mode.reads and self.cache.contains(key)

    def close(self) -> None:
        """Release what the model holds on the process loop (its HTTP client); the loop itself stays."""
        if self._used and hasattr(self.model, "aclose"):
            self._used = False
            asyncio.run_coroutine_threadsafe(self.model.aclose(), process_loop()).result(timeout=10)

    def settle(self, grace: float = SETTLE_SECONDS) -> int:
        """At the end of a run: wait up to ``grace`` seconds for the model's calls still in flight (calls past
        their deadline run on), then cancel them; how many were cancelled."""
        if not self._used:
            return 0
        future = asyncio.run_coroutine_threadsafe(self.model.settle(grace), process_loop())
        return future.result(timeout=grace + 10)

    # -- internals -----------------------------------------------------------------------------

    def _call_soon(self, coro: Coroutine[Any, Any, T]) -> T:
        self._used = True
        current: list[asyncio.Task[Any]] = []

        async def tracked() -> T:
            task = asyncio.current_task()
            assert task is not None
            current.append(task)
            return await coro

        loop = process_loop()
        future = asyncio.run_coroutine_threadsafe(tracked(), loop)
        try:
            return future.result()
        except BaseException:  # Ctrl-C (or a pytest timeout) lands here, on the caller's thread
            if not future.done():
                self._cancel(loop, current)
            raise

    @staticmethod
    def _cancel(loop: asyncio.AbstractEventLoop, tasks: list[asyncio.Task[Any]], wait: float = 5.0) -> None:
        """Cancel this runner's batch on the loop and wait until it has finished cancelling.

        The batch's own clean-up then runs (finished responses go to the cache, its calls are cancelled)
        and nothing is left pending for the loop to complain about ("Task was destroyed but it is pending").
        """

        async def cancel() -> None:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        # A call that ignores cancellation: give up waiting rather than hang the exit.
        with contextlib.suppress(TimeoutError):
            asyncio.run_coroutine_threadsafe(cancel(), loop).result(timeout=wait)

    async def _run_all(self, requests: list[Any], batch: CallStats, progress: ProgressFn | None) -> list[Any]:
        semaphore = asyncio.Semaphore(min(self.max_concurrency, self.model.max_concurrency))
        keys = [self.key(r) for r in requests]
        stored = self.cache.get_many(keys) if self.cache is not None and self.cache_mode.reads else {}
        if self.memo is not None:  # this run's own answers first: what an earlier look saw, it sees again
            stored.update((key, self.memo[key]) for key in keys if key in self.memo)
        results: list[Any] = [None] * len(requests)
        done = 0
        try:
            batched = await self._batched(requests, keys, stored, batch, progress)
        finally:
            self._save(force=True)

        async def one(unit: list[int]) -> None:
            nonlocal done
            async with semaphore:
                if len(unit) == 1 and keys[unit[0]] in batched:
                    answers = [batched[keys[unit[0]]]]
                elif len(unit) == 1:
                    (i,) = unit
                    answers = [await self._answer(requests[i], keys[i], stored.get(keys[i]), batch)]
                else:
                    answers = await self._answer_many([requests[i] for i in unit], [keys[i] for i in unit], batch)
            for i, answer in zip(unit, answers, strict=True):
                results[i] = answer
            done += len(unit)
            if progress is not None:
                progress(done, len(requests))

        units = self._units(requests, keys, stored.keys() | batched.keys())
        tasks = [asyncio.ensure_future(one(unit)) for unit in units]
        try:
            await asyncio.gather(*tasks)
            return results
        finally:
            for task in tasks:  # on the first failure, stop the rest instead of leaving them running
                task.cancel()
            try:
                await asyncio.gather(*tasks, return_exceptions=True)  # let them finish cancelling
            finally:
                self._save(force=True)

    async def _batched(
        self,
        requests: list[Any],
        keys: list[str],
        stored: dict[str, Any],
        batch: CallStats,
        progress: ProgressFn | None = None,
    ) -> dict[str, Any]:
        """Cache misses answered through the provider's batch API (key -> response), in batch mode; each is
        counted at batch rates and cached before its batch is forgotten. While it waits, ``progress`` hears
        which batches it waits on."""
        api = batch_api(self.model, self.batch)
        if api is None or self.batch is None or self.cache_mode is CacheMode.REPLAY:
            return {}
        misses = [(r, k) for r, k in zip(requests, keys, strict=True) if k not in stored]
        if not misses:
            return {}
        ledger: Ledger = self._memory_ledger
        if self.cache is not None and self.cache_mode.writes:
            ledger = self.cache

        def keep(answers: Any) -> None:
            for key, (request, response) in answers.items():
                self._record(_kind(request), key, response, batch, batched=True)
            self._save(force=True)

        def waiting(note: str) -> None:
            if progress is not None:
                progress(len(requests) - len(misses), len(requests), note)

        return await answer_by_batch(
            api, misses, ledger, self.batch, keep, lambda call: self._with_retries(call, batch), waiting
        )

    def _units(self, requests: list[Any], keys: list[str], stored: Collection[str]) -> list[list[int]]:
        """Indices of the requests to answer together: one by one, except log-prob requests the model must
        be asked for, which go in runs of consecutive ones sharing a conversation, up to ``logprob_batch``."""
        cap = self.model.logprob_batch
        units: list[list[int]] = []
        run: list[int] = []
        for i, (request, key) in enumerate(zip(requests, keys, strict=True)):
            if cap <= 1 or not isinstance(request, LogprobRequest) or key in stored:
                units.append([i])
                continue
            if run and (len(run) >= cap or requests[run[0]].messages != request.messages):
                run = []
            if not run:
                units.append(run)
            run.append(i)
        return units

    def _save(self, force: bool = False) -> None:
        """Write finished responses to the cache: in groups while a batch runs, all of them when it ends."""
        if self.cache is None or not self._unsaved:
            return
        if force or len(self._unsaved) >= 64 or time.monotonic() - self._last_save > 0.25:
            rows, self._unsaved = self._unsaved, []
            self.cache.put_many(rows)
            self._last_save = time.monotonic()

    async def _answer(
        self, request: ChatRequest | LogprobRequest, key: str, stored: dict[str, Any] | None, batch: CallStats
    ) -> Any:
        kind = _kind(request)
        if stored is not None:
            batch.cache_hits += 1
            response = _decode(kind, stored)
            batch.saw(response)
            return response
        self._refuse_in_replay(kind, key)
        if isinstance(request, ChatRequest):
            response: Any = await self._with_retries(lambda: self.model.chat(request), batch)
        else:
            response = await self._with_retries(lambda: self.model.logprobs(request), batch)
        self._record(kind, key, response, batch)
        return response

    async def _answer_many(self, requests: list[LogprobRequest], keys: list[str], batch: CallStats) -> list[Any]:
        """Log-prob requests none of which is cached, in one ``logprobs_many`` call (retried as a whole)."""
        self._refuse_in_replay("logprobs", keys[0])
        responses = await self._with_retries(lambda: self.model.logprobs_many(requests), batch)
        if len(responses) != len(requests):
            raise RuntimeError(f"{self.model.model_id}: {len(responses)} answers to {len(requests)} requests")
        for key, response in zip(keys, responses, strict=True):
            self._record("logprobs", key, response, batch)
        return responses

    def _refuse_in_replay(self, kind: str, key: str) -> None:
        if self.cache is not None and self.cache_mode is CacheMode.REPLAY:
            raise CacheMiss(
                f"--fairness-cache-mode=replay: no cached response for a {kind} request to "
                f"{self.model.model_id} (key {key[:12]}). Run once with --fairness-cache-mode=rw "
                "to record it, or check that the model, seed and profile match the recorded run."
            )

    def _record(self, kind: str, key: str, response: Any, batch: CallStats, *, batched: bool = False) -> None:
        """Count a model call and cache its response. A batched call is priced at the batch rates (at the
        standard ones, an upper bound, when the price lists no batch rate)."""
        batch.calls += 1
        batch.batched += batched
        batch.prompt_tokens += response.prompt_tokens
        batch.completion_tokens += response.completion_tokens
        if self.price is not None:
            at_batch = batched and self.price.has_batch
            cost = self.price.cost(response.prompt_tokens, response.completion_tokens, batch=at_batch)
            if cost is None:
                batch.unpriced += 1
            else:
                batch.usd += cost
        batch.saw(response)
        if self.memo is not None:
            self.memo[key] = asdict(response)
        if self.cache is not None and self.cache_mode.writes:
            self._unsaved.append((key, self.model.model_id, kind, asdict(response)))
            self._save()

    async def _with_retries(self, call: Callable[[], Awaitable[T]], batch: CallStats) -> T:
        attempt = 0
        while True:
            try:
                return await call()
            except TransientError as exc:
                attempt += 1
                batch.rate_limited += isinstance(exc, RateLimited)
                batch.late += isinstance(exc, DeadlineExceeded)
                if attempt >= self.retry.max_attempts and isinstance(exc, DeadlineExceeded):
                    raise RetriesExhausted(exc.exhausted(attempt)) from exc
                if attempt >= self.retry.max_attempts:
                    raise RetriesExhausted(
                        f"{self.model.model_id}: gave up after {attempt} attempts; last error: {exc}. "
                        "Finished calls are cached: rerun to resume."
                    ) from exc
                batch.retries += 1
                if isinstance(exc, RateLimited) and exc.paced and exc.retry_after is not None:
                    delay = exc.retry_after  # the shared limit holds every process back as long: no more
                else:
                    delay = self.retry.delay(attempt - 1, exc.retry_after, self._jitter)
                await asyncio.sleep(delay)


def _kind(request: ChatRequest | LogprobRequest) -> str:
    return "chat" if isinstance(request, ChatRequest) else "logprobs"


def _decode(kind: str, stored: dict[str, Any]) -> ChatResponse | LogprobResponse:
    return ChatResponse(**stored) if kind == "chat" else LogprobResponse(**stored)
