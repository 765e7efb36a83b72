"""Adaptive concurrency: one limit per account (an HTTP provider's, or an app's), shared by every process of a run.

A fixed cap per process multiplies under xdist (``-n 8`` sends eight times what one process would)
and ignores what the server says. Here the number of requests in flight to one provider and key
starts at the provider's cap (``?concurrency=``), halves when the server answers 429 or when replies
slow down (one takes more than half its deadline, or misses it: a server that queues requests answers
each later the more are sent), and grows back by a quarter request per window of answers (additive
increase, multiplicative decrease, as TCP does; after a pause, one probe goes first). Retry-After and
``retry-after-ms`` pause every process for as long as the server asks; OpenAI's ``x-ratelimit-*``
headers (read in ``ratelimit_headers``), when the budget they report runs low, pace requests by its
refill rate (requests) or pause them until the reset (a spent token budget).

The state machine (``Aimd``) and the shared bookkeeping (``Bucket``) are pure. ``SharedLimit`` keeps
a bucket in a small JSON file under an exclusive ``flock`` (beside the response cache when the plugin
runs), named by a hash of the provider, base URL and API key: the key itself is never written. A
bucket lives as long as one of the processes that used it: the last one to leave removes its file
(``leave``), and a file left by processes that are all gone (killed) is removed when the next run
starts (``sweep``), so the next run starts again from the cap. Without a directory the limit is
shared within the process only.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import math
import os
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol, TypeVar

from pytest_fairness.models.deadline import DeadlineExceeded
from pytest_fairness.models.interface import RateLimited
from pytest_fairness.models.ratelimit_headers import MAX_WAIT_SECONDS, Credit, request_budget, tokens_reset

T = TypeVar("T")
# Requests added to the limit per window (``limit`` answers). Slow: a server counts over a window (a second, a
# minute) that outlasts many round trips, so an overshoot shows only long after it began.
GROWTH = 0.25
POLL_SECONDS = 0.01  # how often a process waiting for a slot looks at the shared bucket
OK, RATE_LIMITED, SLOWED, OTHER = "ok", "rate_limited", "slowed", "other"


# -- the pure state machine ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Aimd:
    """How many requests may be in flight: ``limit`` (fractional while it grows) within 1..``cap``."""

    cap: int
    limit: float
    blocked_until: float = 0.0  # wall-clock time before which nothing is sent (Retry-After, reset)
    last_cut: float = 0.0  # when the limit was last halved
    probing: bool = False  # after a pause: one request at a time until one sent after it is answered

    @classmethod
    def start(cls, cap: int) -> Aimd:
        if cap < 1:
            raise ValueError("a concurrency cap must be at least 1")
        return cls(cap, float(cap))

    @property
    def allowed(self) -> int:
        """Requests that may be in flight now (never below one: a limit must let the run finish)."""
        if self.probing:
            return 1
        return max(1, min(self.cap, math.floor(self.limit + 1e-9)))

    def succeeded(self, sent_at: float = math.inf) -> Aimd:
        """An answer to a request sent at ``sent_at``: grow by ``GROWTH`` per ``limit`` answers, up to the cap.

        After a pause the server's window frees one slot at a time (Retry-After says when the first does):
        the first answer to a request sent after it ends the probing, and the halved limit applies again.
        """
        if self.probing:
            return replace(self, probing=False) if sent_at >= self.blocked_until else self
        return replace(self, limit=min(float(self.cap), self.limit + GROWTH / max(self.limit, 1.0)))

    def rate_limited(self, now: float, sent_at: float, wait: float | None) -> Aimd:
        """A 429 to a request sent at ``sent_at``: pause for the server's ``wait`` and halve the limit.

        Halved once per overload: a request sent before the last cut was part of the load that cut
        already answered, so its 429 pauses but does not halve again. A pause ends with one probe.
        """
        out = replace(self.paused(now + wait), probing=True) if wait else self
        if sent_at < self.last_cut:
            return out
        return replace(out, limit=max(1.0, self.limit / 2), last_cut=now)

    def paused(self, until: float) -> Aimd:
        return replace(self, blocked_until=max(self.blocked_until, until))

    def with_cap(self, cap: int) -> Aimd:
        """Another process of the run states a cap for the same account: the tighter one holds."""
        if cap >= self.cap:
            return self
        return replace(self, cap=cap, limit=min(self.limit, float(cap)))


@dataclass(frozen=True)
class Bucket:
    """One account's limit as every process of a run shares it.

    ``members`` maps each process that used it to the requests it has in flight (0 between requests),
    so a crashed process's slots are freed when it is found dead, and a bucket whose processes are all
    gone starts the next run afresh. ``credit`` is the server's request budget when it said lately that
    the budget was running low: requests are then paced by it, and a 429 avoided rather than answered.
    """

    aimd: Aimd
    members: dict[int, int] = field(default_factory=dict)
    rate_limited: int = 0  # 429s its processes saw
    credit: Credit | None = None

    @classmethod
    def open(cls, found: Bucket | None, cap: int, alive: Callable[[int], bool]) -> Bucket:
        """The stored bucket while a process that used it lives (dead ones dropped), else a fresh one at the cap."""
        members = {pid: n for pid, n in found.members.items() if alive(pid)} if found is not None else {}
        if found is None or not members:
            return cls(Aimd.start(cap))
        return replace(found, aimd=found.aimd.with_cap(cap), members=members)

    @property
    def in_flight(self) -> int:
        return sum(self.members.values())

    def take(self, pid: int, now: float) -> tuple[Bucket, float | None]:
        """A slot for ``pid``: (bucket with it taken, None), or (bucket, seconds worth waiting before asking again)."""
        joined = self.members.get(pid, 0)
        waiting = replace(self, members={**self.members, pid: joined})
        if self.credit is not None and now >= self.credit.until:
            waiting = replace(waiting, credit=None)  # the server's budget is whole again
        if now < self.aimd.blocked_until:
            return waiting, self.aimd.blocked_until - now
        if waiting.credit is not None and (wait := waiting.credit.wait(now)) > 0:
            return waiting, wait
        if self.in_flight >= self.aimd.allowed:
            return waiting, POLL_SECONDS
        credit = None if waiting.credit is None else waiting.credit.spend(now)
        return replace(waiting, members={**self.members, pid: joined + 1}, credit=credit), None

    def give(self, pid: int, now: float, sent_at: float, outcome: str, wait: float | None = None) -> Bucket:
        """Return ``pid``'s slot, with what became of its request (``OK``, ``RATE_LIMITED``, ``SLOWED`` or ``OTHER``).

        A slowed request (late, or past its deadline) cuts the limit as a 429 does, without a pause."""
        members = {**self.members, pid: max(0, self.members.get(pid, 0) - 1)}
        aimd, seen = self.aimd, self.rate_limited
        if outcome == OK:
            aimd = aimd.succeeded(sent_at)
        elif outcome == RATE_LIMITED:
            aimd, seen = aimd.rate_limited(now, sent_at, wait), seen + 1
        elif outcome == SLOWED:
            aimd = aimd.rate_limited(now, sent_at, None)
        # OTHER (5xx, connection errors, cancelled): no sign of the rate either way
        return replace(self, aimd=aimd, members=members, rate_limited=seen)

    def paused(self, until: float) -> Bucket:
        return replace(self, aimd=self.aimd.paused(until))

    def budget(self, remaining: int, reset: float, limit: int | None, now: float) -> Bucket:
        """The server's budget, from a response still holding its slot: the others in flight may have reached
        the server after it, so they count as spent already."""
        return replace(self, credit=Credit.told(remaining, reset, limit, now, max(0, self.in_flight - 1)))

    def to_json(self) -> str:
        return json.dumps(
            {
                "aimd": vars(self.aimd),
                "members": self.members,
                "rate_limited": self.rate_limited,
                "credit": None if self.credit is None else vars(self.credit),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Bucket:
        raw = json.loads(text)
        members = {int(pid): int(n) for pid, n in raw["members"].items()}
        credit = None if raw.get("credit") is None else Credit(**raw["credit"])
        return cls(Aimd(**raw["aimd"]), members, int(raw["rate_limited"]), credit)


# -- where a bucket lives ----------------------------------------------------------------------------------


class Store(Protocol):
    """Where a bucket lives; ``change`` gets the bucket (None: none yet) and returns the new one (None: remove it)."""

    def update(self, change: Callable[[Bucket | None], tuple[Bucket | None, T]]) -> T: ...


class MemoryStore:
    """A bucket for the threads of one process."""

    def __init__(self) -> None:
        self._bucket: Bucket | None = None
        self._lock = threading.Lock()

    def update(self, change: Callable[[Bucket | None], tuple[Bucket | None, T]]) -> T:
        with self._lock:
            self._bucket, result = change(self._bucket)
            return result


class FileStore:
    """A bucket in a JSON file that processes change one at a time, under an exclusive ``flock``.

    ``flock`` locks belong to the open file, so threads of one process exclude each other too. A file
    that cannot be read (e.g. cut short by a crash mid-write) counts as no bucket: the run restarts at the cap.
    A bucket changed to None is removed with its file (while locked: a process that opened the file before
    finds, once it holds the lock, that the name no longer points at it, and opens the name again).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def update(self, change: Callable[[Bucket | None], tuple[Bucket | None, T]]) -> T:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if not _still_named(fd, self.path):
                    continue  # removed while we waited for the lock: open the new one
                return self._change(fd, change)
            finally:
                os.close(fd)  # releases the lock

    def _change(self, fd: int, change: Callable[[Bucket | None], tuple[Bucket | None, T]]) -> T:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        found = None
        with contextlib.suppress(ValueError, KeyError, TypeError):
            found = Bucket.from_json(b"".join(chunks).decode())
        bucket, result = change(found)
        if bucket is None:
            self.path.unlink(missing_ok=True)
            return result
        data = bucket.to_json().encode()
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, data)
        return result


def _still_named(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the open file ``fd`` (another process may have removed it meanwhile)."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _without(pid: int, alive: Callable[[int], bool]) -> Callable[[Bucket | None], tuple[Bucket | None, None]]:
    """A change that drops ``pid`` and the dead from a bucket, and removes the bucket when no process is left."""

    def change(found: Bucket | None) -> tuple[Bucket | None, None]:
        if found is None:
            return None, None
        members = {p: n for p, n in found.members.items() if p != pid and alive(p)}
        return (replace(found, members=members) if members else None), None

    return change


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


@dataclass
class _Gate:
    """Per event loop: one task at a time asks the bucket for a slot; a slot given back wakes it."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    wake: asyncio.Event = field(default_factory=asyncio.Event)


class SharedLimit:
    """Slots for requests to one account, from a bucket in ``store`` that other processes may share."""

    def __init__(
        self,
        store: Store,
        cap: int,
        *,
        clock: Callable[[], float] = time.time,
        alive: Callable[[int], bool] = _alive,
    ) -> None:
        self.store = store
        self.cap = cap
        self._clock = clock
        self._alive = alive
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Gate] = weakref.WeakKeyDictionary()

    def _open(self, found: Bucket | None) -> Bucket:
        return Bucket.open(found, self.cap, self._alive)

    def bucket(self) -> Bucket:
        """The bucket as it stands (for reports and tests)."""

        def read(found: Bucket | None) -> tuple[Bucket, Bucket]:
            bucket = self._open(found)
            return bucket, bucket

        return self.store.update(read)

    async def acquire(self) -> float:
        """Wait for a slot; returns when the request is sent (wall clock), for ``release``."""
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = _Gate()
        pid = os.getpid()
        async with gate.lock:
            while True:
                gate.wake.clear()
                now = self._clock()
                wait = self.store.update(lambda found, now=now: self._open(found).take(pid, now))
                if wait is None:
                    return now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(gate.wake.wait(), timeout=min(wait, MAX_WAIT_SECONDS))

    def release(self, sent_at: float, outcome: str, wait: float | None = None) -> None:
        pid, now = os.getpid(), self._clock()
        self.store.update(lambda found: (self._open(found).give(pid, now, sent_at, outcome, wait), None))
        with contextlib.suppress(RuntimeError):
            gate = self._gates.get(asyncio.get_running_loop())
            if gate is not None:
                gate.wake.set()

    def observe(self, headers: Mapping[str, str] | None) -> None:
        """A response's headers, read while its slot is held: a spent ``x-ratelimit-*`` token budget pauses every
        process until its reset, and a request budget near its end rations what is sent until then."""
        now = self._clock()
        budget = request_budget(headers)
        pause = tokens_reset(headers)
        if budget is not None and budget[0] > 2 * self.cap:
            budget = None  # far from the end: not worth a write per response
        if not pause and budget is None:
            return

        def change(found: Bucket | None) -> tuple[Bucket, None]:
            bucket = self._open(found)
            if budget is not None:
                bucket = bucket.budget(*budget, now)
            return (bucket.paused(now + pause) if pause else bucket), None

        self.store.update(change)

    @contextlib.asynccontextmanager
    async def slot(self, slow_after: float | None = None) -> AsyncIterator[None]:
        """Hold a slot around one request; a ``RateLimited`` error raised inside halves the limit, and so does a
        ``DeadlineExceeded`` or an answer that took more than ``slow_after`` seconds."""
        sent_at = await self.acquire()
        outcome, wait = OTHER, None
        try:
            yield
            late = slow_after is not None and self._clock() - sent_at > slow_after
            outcome = SLOWED if late else OK
        except RateLimited as exc:
            outcome, wait = RATE_LIMITED, exc.retry_after
            exc.paced = True
            raise
        except DeadlineExceeded:
            outcome = SLOWED
            raise
        finally:
            self.release(sent_at, outcome, wait)


class Fixed:
    """No adaptation (``?adaptive=0``): each process keeps its own fixed cap, as the runner sets it."""

    @contextlib.asynccontextmanager
    async def slot(self, slow_after: float | None = None) -> AsyncIterator[None]:
        yield

    def observe(self, headers: Mapping[str, str] | None) -> None:
        """Headers change nothing without adaptation."""


# -- one limit per account, per run --------------------------------------------------------------------------

_directory: Path | None = None
_stores: dict[tuple[Path | None, str], Store] = {}
_stores_lock = threading.Lock()


def share_in(directory: Path | None) -> None:
    """Keep limits in ``directory`` so that every process of the run shares them (the plugin points it beside the
    response cache; buckets no live process uses are removed from it); None: each process keeps its own, and
    this process leaves the buckets it shared (the last to leave one removes its file)."""
    global _directory
    if directory is not None:
        sweep(directory)
    else:
        leave()
    _directory = directory


def sweep(directory: Path, alive: Callable[[int], bool] = _alive) -> None:
    """Remove the buckets in ``directory`` whose processes are all gone (a killed run leaves them behind)."""
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        with contextlib.suppress(OSError):
            FileStore(path).update(_without(0, alive))


def leave(alive: Callable[[int], bool] = _alive) -> None:
    """This process stops using every bucket it shared in a file: a bucket no other live process uses is removed."""
    with _stores_lock:
        shared = [(key, store) for key, store in _stores.items() if isinstance(store, FileStore)]
        for key, _ in shared:
            del _stores[key]
    for _, store in shared:
        with contextlib.suppress(OSError):
            store.update(_without(os.getpid(), alive))


def account(provider: str, base_url: str, api_key: str | None) -> str:
    """A name for a provider account that reveals neither the key nor the URL."""
    key_hash = hashlib.sha256((api_key or "").encode()).hexdigest()
    return hashlib.sha256(f"{provider}\x1f{base_url}\x1f{key_hash}".encode()).hexdigest()[:32]


def limit_for(provider: str, base_url: str, api_key: str | None, cap: int) -> SharedLimit:
    """The limit for requests to this account, shared with every other model and process using it."""
    name = account(provider, base_url, api_key)
    with _stores_lock:
        store = _stores.get((_directory, name))
        if store is None:
            store = MemoryStore()
            if _directory is not None:
                with contextlib.suppress(OSError):  # an unwritable place: this process's limit alone
                    store = FileStore(_directory / f"{name}.json")
            _stores[(_directory, name)] = store
    return SharedLimit(store, cap)
