"""Content-addressed response cache in sqlite, safe to share between pytest-xdist workers.

The key hashes everything that determines a response: provider, exact model, the whole request
(messages, candidates, sampling parameters, seed) and the sample index. Only successful responses
are stored, each as soon as it arrives, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from enum import StrEnum
from pathlib import Path


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


def cache_key(model_id: str, payload: dict[str, object]) -> str:
    """Stable hash of a model identity and a request payload."""
    canonical = json.dumps({"model": model_id, "request": payload}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """A sqlite table of key -> JSON response. WAL mode lets parallel processes read and write."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses ("
            " key TEXT PRIMARY KEY, model TEXT NOT NULL, kind TEXT NOT NULL, response TEXT NOT NULL,"
            " created REAL NOT NULL)"
        )

    def get(self, key: str) -> dict[str, object] | None:
        with self._lock:
            row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def get_many(self, keys: list[str]) -> dict[str, dict[str, object]]:
        """Stored responses of many keys at once: one query per 500 keys instead of one per key."""
        found: dict[str, dict[str, object]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(f"SELECT key, response FROM responses WHERE key IN ({marks})", chunk)
                found.update((key, json.loads(response)) for key, response in rows)
        return found

    def contains(self, key: str) -> bool:
        with self._lock:
            return self._db.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None

    def put(self, key: str, model_id: str, kind: str, response: dict[str, object]) -> None:
        self.put_many([(key, model_id, kind, response)])

    def put_many(self, rows: list[tuple[str, str, str, dict[str, object]]]) -> None:
        """Store responses in one transaction."""
        now = time.time()
        values = [(k, m, kind, json.dumps(r, ensure_ascii=False), now) for k, m, kind, r in rows]
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO responses (key, model, kind, response, created) VALUES (?, ?, ?, ?, ?)", values
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
