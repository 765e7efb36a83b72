"""Batch mode: a round of uncached requests sent as one provider batch, at batch prices, resumable.

Providers' batch APIs (OpenAI's files + batches, and compatible servers) answer within hours at about
half the price. The runner hands one round of cache misses to ``answer_by_batch``, which submits the
ones the provider can batch (each line's ``custom_id`` is the request's cache key), remembers the batch
id in the cache's ledger at once, and waits for the results as long as the policy allows. A rerun finds
the same requests in the ledger and collects that batch instead of submitting (and paying) again.

When the batch is not finished in time the round raises ``BatchPending``: the plugin ends the run with
"rerun the same command to collect". Lines that failed go back to the runner, which sends them online
(with its retries); a batch that expired is collected as far as it got and the rest resubmitted.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from pytest_fairness.models.interface import ChatRequest, LogprobRequest, PermanentError

T = TypeVar("T")
Request = ChatRequest | LogprobRequest
#: Most lines in one batch (OpenAI's limit); a larger round is split into several batches.
MAX_LINES = 50_000
#: Most bytes of one batch's input file (OpenAI allows 200 MB; kept well below).
MAX_BYTES = 100_000_000
#: Batch states in which the provider is still working.
RUNNING = ("validating", "in_progress", "finalizing", "cancelling")
#: The error code of a line a provider never ran because the batch's window closed: it is submitted again.
EXPIRED = "batch_expired"
#: The status of a batch the server no longer knows (deleted, another key's): its requests are submitted again.
UNKNOWN = "unknown"
#: Exit status of a run that left requests waiting in a batch (pytest's own codes end at 5).
PENDING_EXIT = 6


@dataclass
class BatchPolicy:
    """How a run uses batches: for every model that offers them (``--fairness-batch``) or only for specs
    that ask (``?batch=1``), and how long the run may wait, in all, for batches to finish before it
    exits with "rerun to collect" (0: submit, look once, exit). One policy is shared by a run's runners,
    so the wait is one budget for the whole process."""

    wait_seconds: float = 0.0
    everywhere: bool = False
    first_poll_seconds: float = 1.0
    max_poll_seconds: float = 60.0
    waited: float = field(default=0.0, compare=False)

    def remaining(self) -> float:
        return max(0.0, self.wait_seconds - self.waited)


@dataclass(frozen=True)
class BatchState:
    """A provider batch as last seen: its status, result files and, for a failed batch, why."""

    status: str
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: str = ""


@runtime_checkable
class BatchAPI(Protocol):
    """What a provider offers to serve requests in batches (``models.openai`` implements it, and sets
    ``offers_batches`` True: a subclass that cannot reach a Batch API sets it False)."""

    model_id: str
    #: Whether the model's own spec asked for batch mode (``?batch=1``).
    batch_requested: bool

    def batch_body(self, request: Request) -> dict[str, Any] | None:
        """The request as one batch line's body; None when it needs online calls (e.g. echo scoring)."""

    def batch_answer(self, request: Request, body: Mapping[str, Any]) -> Any:
        """The response a line's body gives; None when it cannot serve (the request then goes online)."""

    async def submit_batch(self, lines: Sequence[tuple[str, dict[str, Any]]]) -> str:
        """Upload (custom_id, body) lines and start a batch; its id."""

    async def batch_state(self, batch_id: str) -> BatchState: ...

    async def batch_file(self, file_id: str) -> str:
        """A result file's text (JSON lines)."""


class BatchPending(Exception):
    """Requests wait in a provider batch that has not finished within the wait the run allows."""

    def __init__(self, model_id: str, waiting: Sequence[tuple[str, int, str]], submitted: int) -> None:
        self.model_id = model_id
        self.waiting = list(waiting)  # (batch id, requests in it, status)
        self.submitted = submitted  # how many of them this run submitted (the rest were submitted before)
        ids = ", ".join(batch_id for batch_id, _, _ in self.waiting)
        total = sum(n for _, n, _ in self.waiting)
        states = ", ".join(sorted({status for _, _, status in self.waiting}))
        verb = "submitted" if submitted == total else "waiting for"
        super().__init__(
            f"{verb} {total} requests to {model_id} as batch {ids} ({states}); rerun the same command to collect "
            "(or wait for it with --fairness-batch-wait=MINUTES)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model_id,
            "batches": [{"id": i, "requests": n, "status": s} for i, n, s in self.waiting],
            "submitted": self.submitted,
        }


class Ledger(Protocol):
    """Where batch ids are kept between runs: the response cache (``ResponseCache``) or ``MemoryLedger``."""

    def batch_ids(self, keys: list[str]) -> dict[str, str]: ...
    def remember_batch(self, batch_id: str, model_id: str, keys: list[str]) -> None: ...
    def forget(self, keys: list[str]) -> None: ...


class MemoryLedger:
    """A ledger for runs without a writable cache: this process can wait for its batches, never resume them."""

    persistent = False

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}

    def batch_ids(self, keys: list[str]) -> dict[str, str]:
        return {k: self._ids[k] for k in keys if k in self._ids}

    def remember_batch(self, batch_id: str, model_id: str, keys: list[str]) -> None:
        self._ids.update(dict.fromkeys(keys, batch_id))

    def forget(self, keys: list[str]) -> None:
        for key in keys:
            self._ids.pop(key, None)


def batch_api(model: object, policy: BatchPolicy | None) -> BatchAPI | None:
    """The model's batch API when this run should use it: a policy, a model that offers one, and either
    ``--fairness-batch`` or the model's own ``?batch=1``."""
    if policy is None or not getattr(model, "offers_batches", False) or not isinstance(model, BatchAPI):
        return None
    return model if policy.everywhere or model.batch_requested else None


def chunks(lines: Sequence[tuple[str, dict[str, Any]]]) -> list[list[tuple[str, dict[str, Any]]]]:
    """Lines split into batches within the provider's limits on lines and file size."""
    out: list[list[tuple[str, dict[str, Any]]]] = []
    size = 0
    for line in lines:
        length = len(json.dumps(line[1])) + 200
        if not out or len(out[-1]) >= MAX_LINES or size + length > MAX_BYTES:
            out.append([])
            size = 0
        out[-1].append(line)
        size += length
    return out


def parse_results(text: str) -> dict[str, Mapping[str, Any] | str]:
    """custom_id -> the response body of a line that succeeded, or the error code of one that failed
    (``EXPIRED`` for a line the provider never ran before its window closed)."""
    out: dict[str, Mapping[str, Any] | str] = {}
    for raw in text.splitlines():
        if not raw.strip():
            continue
        line = json.loads(raw)
        response = line.get("response") or {}
        body = response.get("body")
        if not line.get("error") and response.get("status_code") == 200 and isinstance(body, dict):
            out[str(line.get("custom_id"))] = body
        else:
            error = line.get("error")
            if not error and isinstance(body, dict):
                error = body.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            out[str(line.get("custom_id"))] = str(code or response.get("status_code") or "failed")
    return out


Retry = Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]
Keep = Callable[[Mapping[str, tuple[Request, Any]]], None]


async def answer_by_batch(
    api: BatchAPI,
    misses: Sequence[tuple[Request, str]],
    ledger: Ledger,
    policy: BatchPolicy,
    keep: Keep,
    retry: Retry,
    on_wait: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Answer what one round's cache misses can get from batches: key -> response.

    ``keep`` stores answers (in the cache) before their batch is forgotten; ``retry`` wraps each API call
    in the runner's retries; ``on_wait`` hears, before each pause, which batches are still running.
    Requests absent from the result (not batchable, or a failed line) are the runner's to send online.
    Raises ``BatchPending`` when the wait runs out first.
    """
    todo, bodies = _batchable(api, misses)
    if not todo:
        return {}
    if policy.wait_seconds <= 0 and not getattr(ledger, "persistent", True):
        raise PermanentError(
            f"{api.model_id}: batch mode without waiting needs the response cache to keep the batch id for the "
            "rerun that collects it: use --fairness-cache-mode=rw, or wait for the batch with "
            "--fairness-batch-wait=MINUTES"
        )
    waiting: dict[str, list[str]] = {}  # batch id -> its keys still unanswered
    known = ledger.batch_ids(list(todo))
    for key, batch_id in known.items():
        waiting.setdefault(batch_id, []).append(key)
    submitted = await _submit(api, [k for k in todo if k not in known], bodies, ledger, retry)
    waiting.update(submitted)
    fresh = set(submitted)
    answered: dict[str, Any] = {}
    delay = policy.first_poll_seconds  # the first look comes at once: a fast server may be done already
    while True:
        seen: dict[str, str] = {}
        for batch_id, keys in list(waiting.items()):
            state: BatchState = await retry(lambda b=batch_id: api.batch_state(b))  # type: ignore[misc]
            if state.status in RUNNING:
                seen[batch_id] = state.status
                continue
            del waiting[batch_id]
            got, failed = await _collect(api, state, keys, todo, retry)
            keep({k: (todo[k], r) for k, r in got.items()})  # stored before the batch is forgotten
            ledger.forget(keys)  # only this round's: a later round collects the batch's other lines
            answered.update(got)
            missing = [k for k in keys if k not in got and k not in failed]
            if _send_again(api.model_id, batch_id, state, missing):
                again = await _submit(api, missing, bodies, ledger, retry)
                waiting.update(again)
                fresh |= set(again)
        if not waiting:
            return answered
        _before_pause(api.model_id, policy, waiting, seen, fresh, on_wait)
        start = time.monotonic()
        await asyncio.sleep(min(delay, policy.remaining()))
        policy.waited += time.monotonic() - start
        delay = min(2 * delay, policy.max_poll_seconds)


def _before_pause(
    model_id: str,
    policy: BatchPolicy,
    waiting: Mapping[str, list[str]],
    seen: Mapping[str, str],
    fresh: set[str],
    on_wait: Callable[[str], None] | None,
) -> None:
    """``BatchPending`` when the wait has run out (with what each batch still holds); else ``on_wait`` hears
    which batches are still running."""
    if policy.remaining() <= 0:
        counts = [(b, len(ks), seen.get(b, "validating")) for b, ks in waiting.items()]
        raise BatchPending(model_id, counts, sum(len(ks) for b, ks in waiting.items() if b in fresh))
    if on_wait is not None:
        running = ", ".join(f"{b} ({seen.get(b, 'validating')}, {len(ks)} requests)" for b, ks in waiting.items())
        on_wait(f"waiting on batch {running}")


def _batchable(api: BatchAPI, misses: Sequence[tuple[Request, str]]) -> tuple[dict[str, Request], dict[str, Any]]:
    """The misses a batch can answer, once each by key, with their batch lines' bodies."""
    todo: dict[str, Request] = {}
    bodies: dict[str, dict[str, Any]] = {}
    for request, key in misses:
        if key not in todo and (body := api.batch_body(request)) is not None:
            todo[key], bodies[key] = request, body
    return todo, bodies


def _send_again(model_id: str, batch_id: str, state: BatchState, missing: Sequence[str]) -> bool:
    """Whether an ended batch's unanswered requests go in a new batch (its window ran out, or it is gone); a
    batch that failed or was cancelled stops the run with what to do."""
    if state.status == "failed":
        raise PermanentError(
            f"{model_id}: batch {batch_id} failed ({state.errors or 'no reason given'}); a rerun submits "
            "its requests again, or run without batch mode"
        )
    if state.status == "cancelled":
        raise PermanentError(
            f"{model_id}: batch {batch_id} was cancelled with {len(missing)} requests unanswered; "
            "rerun to submit them again (answers it had are kept in the cache)"
        )
    return state.status in ("expired", UNKNOWN) and bool(missing)


async def _submit(
    api: BatchAPI, keys: list[str], bodies: Mapping[str, dict[str, Any]], ledger: Ledger, retry: Retry
) -> dict[str, list[str]]:
    """Submit these requests (split within the limits) and note each batch id at once; batch id -> keys."""
    out: dict[str, list[str]] = {}
    for part in chunks([(k, bodies[k]) for k in keys]):
        batch_id: str = await retry(lambda p=part: api.submit_batch(p))  # type: ignore[misc]
        ids = [k for k, _ in part]
        ledger.remember_batch(batch_id, api.model_id, ids)
        out[batch_id] = ids
    return out


async def _collect(
    api: BatchAPI, state: BatchState, keys: list[str], todo: Mapping[str, Request], retry: Retry
) -> tuple[dict[str, Any], set[str]]:
    """Answers from a finished batch's files, and the keys whose lines failed (those go online); a line
    the provider never ran (expired) is in neither."""
    results: dict[str, Mapping[str, Any] | str] = {}
    for file_id in (state.error_file_id, state.output_file_id):  # output last: a success wins
        if file_id:
            results.update(parse_results(await retry(lambda f=file_id: api.batch_file(f))))  # type: ignore[misc]
    got: dict[str, Any] = {}
    failed: set[str] = set()
    for key in keys:
        body = results.get(key, EXPIRED if state.status != "completed" else "missing")
        if body == EXPIRED:
            continue
        response = api.batch_answer(todo[key], body) if not isinstance(body, str) else None
        if response is None:
            failed.add(key)
        else:
            got[key] = response
    return got, failed
