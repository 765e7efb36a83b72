"""Content-addressed response cache in sqlite, safe to share between pytest-xdist workers.

The key hashes everything that determines a response: provider, exact model, the whole request
(messages, candidates, sampling parameters, seed) and the sample index. Only successful responses
are stored, each as soon as it arrives, so an interrupted run resumes where it stopped.

Opening is robust to what users meet: workers creating a new cache at the same moment (switching
to WAL needs a lock the busy handler does not always wait for, so it is retried), a read-only
cache such as a CI artifact (opened read-only, or immutable when sqlite cannot create its WAL
index next to it), and a corrupt file (a ``CacheError`` naming the file and the fix, never a raw
sqlite error).

Beside the responses, a ``batches`` table remembers which provider batch each request was submitted in
(``models.batch``): a run interrupted while a batch is running finds it again instead of paying twice.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from pytest_fairness.models.interface import PermanentError

T = TypeVar("T")
LOCK_WAIT_SECONDS = 60.0
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses ("
    " key TEXT PRIMARY KEY, model TEXT NOT NULL, kind TEXT NOT NULL, response TEXT NOT NULL,"
    " created REAL NOT NULL)"
)
_BATCH_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS batches ("
    " key TEXT PRIMARY KEY, batch_id TEXT NOT NULL, model TEXT NOT NULL, created REAL NOT NULL)"
)


class CacheMode(StrEnum):
    RW = "rw"  # read hits, store misses
    READ = "read"  # read hits, call on miss, store nothing
    REPLAY = "replay"  # read hits, a miss is an error: proves a run is fully reproducible offline
    OFF = "off"  # no cache at all
    REFRESH = "refresh"  # ignore what is stored, call and overwrite

    @property
    def reads(self) -> bool:
        return self in (CacheMode.RW, CacheMode.READ, CacheMode.REPLAY)

    @property
    def writes(self) -> bool:
        return self in (CacheMode.RW, CacheMode.REFRESH)


class CacheMiss(LookupError):
    """Raised in replay mode when a request has no stored response."""


class CacheError(PermanentError):
    """The cache file cannot be used (corrupt, unwritable, locked for too long); names the file and the fix."""


def cache_key(model_id: str, payload: dict[str, object]) -> str:
    """Stable hash of a model identity and a request payload."""
    canonical = json.dumps({"model": model_id, "request": payload}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _is_lock_error(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _is_access_error(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("unable to open" in text or "readonly" in text)


def explain(path: Path, exc: sqlite3.Error) -> CacheError:
    """A CacheError saying what is wrong with the cache file and how to go on."""
    elsewhere = "or run with --fairness-cache-mode=off or another --fairness-cache=PATH"
    if _is_lock_error(exc):
        return CacheError(
            f"the response cache {path} stayed locked by another process for {LOCK_WAIT_SECONDS:.0f} s ({exc}): "
            f"stop the other run, {elsewhere}"
        )
    if _is_access_error(exc):
        return CacheError(
            f"cannot use the response cache {path} ({exc}): make the file and its folder writable, use it "
            f"read-only with --fairness-cache-mode=read or replay, {elsewhere}"
        )
    return CacheError(
        f"the response cache {path} is damaged ({exc}): delete the file to start a new cache (its stored "
        f"responses are lost and will be requested again), {elsewhere}"
    )


def retry_while_locked(action: Callable[[], T], wait: float = LOCK_WAIT_SECONDS) -> T:
    """Run ``action``, retrying with jittered backoff while another connection holds a lock.

    sqlite's busy timeout does not cover every lock: a connection switching a new file to WAL
    fails at once with "database is locked" when another one is doing the same.
    """
    deadline = time.monotonic() + wait
    delay = 0.005
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if not _is_lock_error(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(random.uniform(delay / 2, delay))
        delay = min(delay * 2, 0.5)


def _open_writable(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=LOCK_WAIT_SECONDS, check_same_thread=False, isolation_level=None)
    try:
        if retry_while_locked(lambda: db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            retry_while_locked(lambda: db.execute("PRAGMA journal_mode=WAL").fetchone())
        db.execute("PRAGMA synchronous=NORMAL")
        retry_while_locked(lambda: db.execute(_SCHEMA))
        retry_while_locked(lambda: db.execute(_BATCH_SCHEMA))
        _check_integrity(db)
    except BaseException:
        db.close()
        raise
    return db


def _open_read_only(path: Path) -> sqlite3.Connection | None:
    """A read-only connection, or None when there is no cache file (an empty cache).

    ``mode=ro`` first, which sees a concurrent writer's changes; when sqlite cannot create the WAL
    index beside a read-only file, ``immutable=1``, which needs no other file and writes nothing.
    """
    if not path.exists():
        return None
    uri = path.resolve().as_uri()
    last: sqlite3.Error | None = None
    for query in ("mode=ro", "mode=ro&immutable=1"):
        try:
            db = sqlite3.connect(
                f"{uri}?{query}", uri=True, timeout=LOCK_WAIT_SECONDS, check_same_thread=False, isolation_level=None
            )
        except sqlite3.OperationalError as exc:
            last = exc
            continue
        try:
            db.execute("PRAGMA query_only=1")
            retry_while_locked(lambda: _check_integrity(db))  # noqa: B023 - called at once, inside this iteration
            return db
        except sqlite3.OperationalError as exc:
            db.close()
            if not _is_access_error(exc):
                raise
            last = exc
        except BaseException:
            db.close()
            raise
    assert last is not None
    raise last


def _check_integrity(db: sqlite3.Connection) -> None:
    """Fail at open, not in the middle of a run, on a damaged file (reads every page once)."""
    verdict = db.execute("PRAGMA quick_check(1)").fetchone()[0]
    if verdict != "ok":
        raise sqlite3.DatabaseError(f"quick_check: {verdict}")


class ResponseCache:
    """A sqlite table of key -> JSON response. WAL mode lets parallel processes read and write.

    ``read_only`` opens the file without ever writing to it or next to it (for the read and replay
    modes, whose cache may be a read-only artifact); a missing file is then an empty cache.
    """

    def __init__(self, path: Path | str, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._lock = threading.Lock()
        with self._translated():
            self._db = _open_read_only(self.path) if read_only else _open_writable(self.path)
        self._has_table = self._db is not None and self._table_exists()

    @contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise explain(self.path, exc) from exc

    def _table_exists(self) -> bool:
        assert self._db is not None
        with self._translated():
            row = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'responses'")
            return row.fetchone() is not None

    def _query(self, sql: str, args: tuple[object, ...] | list[str] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read query; nothing when the read-only file holds no table yet."""
        if self._db is None or not self._has_table:
            return []
        with self._lock, self._translated():
            return self._db.execute(sql, args).fetchall()

    def get(self, key: str) -> dict[str, object] | None:
        rows = self._query("SELECT response FROM responses WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def get_many(self, keys: list[str], *, since: float | None = None) -> dict[str, dict[str, object]]:
        """Stored responses of many keys at once: one query per 500 keys instead of one per key; with ``since``,
        only those stored at or after that time (``time.time()``)."""
        found: dict[str, dict[str, object]] = {}
        after = "" if since is None else " AND created >= ?"
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            args = [*chunk, *([] if since is None else [since])]
            rows = self._query(f"SELECT key, response FROM responses WHERE key IN ({marks}){after}", args)
            found.update((key, json.loads(response)) for key, response in rows)
        return found

    def contains(self, key: str, *, since: float | None = None) -> bool:
        """Whether a response is stored for ``key`` (with ``since``: stored at or after that time)."""
        if since is None:
            return bool(self._query("SELECT 1 FROM responses WHERE key = ?", (key,)))
        return bool(self._query("SELECT 1 FROM responses WHERE key = ? AND created >= ?", (key, since)))

    def put(self, key: str, model_id: str, kind: str, response: dict[str, object]) -> None:
        self.put_many([(key, model_id, kind, response)])

    def put_many(self, rows: list[tuple[str, str, str, dict[str, object]]]) -> None:
        """Store responses in one transaction."""
        if self._db is None or self.read_only:
            raise CacheError(f"the response cache {self.path} was opened read-only: nothing can be stored in it")
        now = time.time()
        values = [(k, m, kind, json.dumps(r, ensure_ascii=False), now) for k, m, kind, r in rows]
        with self._lock, self._translated():
            self._db.executemany(
                "INSERT OR REPLACE INTO responses (key, model, kind, response, created) VALUES (?, ?, ?, ?, ?)", values
            )

    # -- the batch ledger: request key -> the provider batch it is waiting in ------------------------

    def batch_ids(self, keys: list[str]) -> dict[str, str]:
        """The batch each of these requests was submitted in and not yet collected from."""
        if self._db is None or self.read_only:
            return {}
        found: dict[str, str] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            with self._lock, self._translated():
                rows = self._db.execute(f"SELECT key, batch_id FROM batches WHERE key IN ({marks})", chunk).fetchall()
            found.update(rows)
        return found

    def remember_batch(self, batch_id: str, model_id: str, keys: list[str]) -> None:
        """Note that these requests wait in ``batch_id`` (written at once: a kill right after must not lose it)."""
        if self._db is None or self.read_only:
            raise CacheError(f"the response cache {self.path} was opened read-only: no batch id can be kept in it")
        now = time.time()
        with self._lock, self._translated():
            self._db.executemany(
                "INSERT OR REPLACE INTO batches (key, batch_id, model, created) VALUES (?, ?, ?, ?)",
                [(key, batch_id, model_id, now) for key in keys],
            )

    def forget(self, keys: list[str]) -> None:
        """Drop requests from the ledger once their answers are stored (or their batch ended without them)."""
        if self._db is None or self.read_only:
            return
        with self._lock, self._translated():
            self._db.executemany("DELETE FROM batches WHERE key = ?", [(key,) for key in keys])

    def __len__(self) -> int:
        rows = self._query("SELECT COUNT(*) FROM responses")
        return int(rows[0][0]) if rows else 0

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()


@dataclass(frozen=True)
class CacheMerge:
    """What ``merge_caches`` did: entries added to the target, entries it holds now, and each conflict in words."""

    added: int
    total: int
    conflicts: tuple[str, ...]


def merge_caches(into: Path, sources: Sequence[Path]) -> CacheMerge:
    """Add every entry of ``sources`` (shards' caches) to the cache ``into`` (created if need be), so that no
    answer any shard paid for is lost. An entry whose key is already there with another response (a provider
    that answered two shards differently) keeps the response merged first and is named in ``conflicts``."""
    added, conflicts = 0, []
    for source in sources:
        if not source.is_file():
            raise CacheError(f"{source}: no such cache file (a shard's --fairness-cache)")
    with _translated_for(into):
        db = _open_writable(into)
    try:
        for source in sources:
            with _translated_for(source):
                src = _open_read_only(source)
                assert src is not None
                tables = {row[0] for row in src.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                rows = (
                    src.execute("SELECT key, model, kind, response, created FROM responses").fetchall()
                    if ("responses" in tables)
                    else []
                )
                batches = src.execute("SELECT * FROM batches").fetchall() if "batches" in tables else []
                src.close()
            with _translated_for(into):
                db.execute("BEGIN IMMEDIATE")
                for key, model, kind, response, created in rows:
                    have = db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
                    if have is None:
                        row = (key, model, kind, response, created)
                        db.execute("INSERT INTO responses VALUES (?, ?, ?, ?, ?)", row)
                        added += 1
                    elif json.loads(have[0]) != json.loads(response):
                        conflicts.append(
                            f"entry {key[:16]} ({model}, {kind}) in {source} differs from the one merged before; "
                            "kept the first"
                        )
                db.executemany("INSERT OR IGNORE INTO batches VALUES (?, ?, ?, ?)", batches)
                db.execute("COMMIT")
        total = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    finally:
        db.close()
    return CacheMerge(added, total, tuple(conflicts))


@contextmanager
def _translated_for(path: Path) -> Iterator[None]:
    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise explain(path, exc) from exc
