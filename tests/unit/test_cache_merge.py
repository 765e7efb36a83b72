"""Shards' response caches merged into one (python -m pytest_fairness cache merge): no entry lost, a conflict named."""

import pytest

from pytest_fairness.cli.main import main
from pytest_fairness.models.cache import CacheError, ResponseCache, merge_caches


def cache_with(path, entries: dict[str, str]) -> None:
    cache = ResponseCache(path)
    try:
        for key, text in entries.items():
            cache.put(key, "m", "chat", {"text": text})
    finally:
        cache.close()


def contents(path) -> dict[str, object]:
    cache = ResponseCache(path, read_only=True)
    try:
        return {key: cache.get(key) for key in ("a", "b", "c", "d", "e")}
    finally:
        cache.close()


def test_every_entry_of_every_shard_reaches_the_merged_cache_and_a_conflict_is_named(tmp_path, capsys):
    cache_with(tmp_path / "one.sqlite", {"a": "1", "b": "2", "c": "3"})
    cache_with(tmp_path / "two.sqlite", {"c": "3", "d": "4", "e": "other"})
    cache_with(tmp_path / "three.sqlite", {"e": "5"})
    into = tmp_path / "merged" / "responses.sqlite"
    status = main(
        ["cache", "merge", "--into", str(into), *(str(tmp_path / f"{n}.sqlite") for n in ("one", "two", "three"))]
    )
    assert status == 0
    assert contents(into) == {k: {"text": v} for k, v in zip("abcde", ["1", "2", "3", "4", "other"], strict=True)}
    out = capsys.readouterr()
    assert "5 entries added, 5 in all, 1 conflicting" in out.out
    (conflict,) = out.err.strip().splitlines()
    assert (
        conflict.startswith("conflict: entry e (m, chat) in ")
        and "three.sqlite" in conflict
        and "kept the first" in conflict
    )


def test_merging_again_adds_nothing_and_a_missing_cache_is_named(tmp_path, capsys):
    cache_with(tmp_path / "one.sqlite", {"a": "1"})
    into = tmp_path / "merged.sqlite"
    assert merge_caches(into, [tmp_path / "one.sqlite"]).added == 1
    again = merge_caches(into, [tmp_path / "one.sqlite"])
    assert (again.added, again.total, again.conflicts) == (0, 1, ())
    assert main(["cache", "merge", "--into", str(into), str(tmp_path / "nowhere.sqlite")]) == 2
    assert "nowhere.sqlite: no such cache file" in capsys.readouterr().err


def test_a_damaged_shard_cache_is_named_with_the_fix(tmp_path):
    (tmp_path / "bad.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(CacheError, match=r"bad.sqlite is damaged"):
        merge_caches(tmp_path / "merged.sqlite", [tmp_path / "bad.sqlite"])
