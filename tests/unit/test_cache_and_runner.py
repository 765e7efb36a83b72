"""The response cache and the runner: keys, modes, failures never cached, sharing across processes."""

import asyncio
import gc
import logging
import multiprocessing
import os
import random
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from pytest_fairness.models.cache import CacheError, CacheMiss, CacheMode, ResponseCache, cache_key
from pytest_fairness.models.interface import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    LogprobRequest,
    LogprobResponse,
    Message,
    Purpose,
    TransientError,
)
from pytest_fairness.models.loop import process_loop
from pytest_fairness.models.runner import CallStats, RetryPolicy, Runner, counting


class CountingModel(ChatModel):
    """Echoes the prompt and counts calls; fails on prompts containing 'boom'."""

    provider = "counting"
    name = "echo"

    def __init__(self) -> None:
        self.calls = 0

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        text = request.messages[-1].content
        if "boom" in text:
            raise ConnectionError("endpoint went away")
        return ChatResponse(f"{text}#{request.sample_index}", "stop", 3, 2)

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        self.calls += 1
        return LogprobResponse({c: -float(i) for i, c in enumerate(request.candidates)}, True, 3)


def chat(text: str, sample: int = 0, temperature: float = 1.0) -> ChatRequest:
    return ChatRequest((Message("user", text),), temperature=temperature, seed=1, sample_index=sample)


def test_cache_keys_stay_those_of_caches_already_filled():
    """The key of a request is fixed by its content: a faster way of building the payload must give a cache
    filled by an earlier version the same keys (these were computed before the payload was built by hand)."""
    messages = (Message("system", "Be brief."), Message("user", "héllo"))
    chat_request = ChatRequest(messages, 0.8, 12, 7, 1, purpose=Purpose.of("x", a=1))
    logprobs = LogprobRequest((Message("user", "pick"),), (" A", " B"), prefix="(", purpose=Purpose.of("y"))
    assert cache_key("m", chat_request.payload()) == "2c6cfe20e441596662f1cf50774f64cf0f05ac261ac8f926503b6545229463df"
    assert cache_key("m", logprobs.payload()) == "c8b8ca6638ed453aacbd6aaabdad8639bcddc41e8baec19e82dbc550d8c71fd1"


def test_cache_key_covers_the_whole_request_and_the_model():
    base = cache_key("m", chat("hi").payload())
    assert base == cache_key("m", chat("hi").payload())
    assert base != cache_key("other", chat("hi").payload())
    assert base != cache_key("m", chat("hi", sample=1).payload())
    assert base != cache_key("m", chat("hi", temperature=0.5).payload())
    assert base != cache_key("m", LogprobRequest((Message("user", "hi"),), (" a",)).payload())


def test_second_run_is_answered_from_the_cache(tmp_path):
    model = CountingModel()
    runner = Runner(model, ResponseCache(tmp_path / "c.sqlite"))
    requests = [chat("a"), chat("b"), chat("a", sample=1)]
    first = runner.run(requests)
    stats = CallStats()
    second = runner.run(requests, stats=stats)
    assert first == second
    assert [r.text for r in first] == ["a#0", "b#0", "a#1"]
    assert model.calls == 3
    assert (stats.calls, stats.cache_hits) == (0, 3)
    assert runner.stats.calls == 3 and runner.stats.cache_hits == 3


def test_failures_are_not_cached_and_finished_calls_survive(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    model = CountingModel()
    runner = Runner(model, cache, max_concurrency=1)
    with pytest.raises(ConnectionError):
        runner.run([chat("ok"), chat("boom")])
    assert len(cache) == 1  # the finished call is kept, the failure is not
    model.calls = 0
    runner.run([chat("ok")])
    assert model.calls == 0


@pytest.mark.parametrize(
    ("mode", "calls_on_rerun", "stored_after"),
    [
        (CacheMode.RW, 0, 1),
        (CacheMode.READ, 0, 1),
        (CacheMode.REFRESH, 1, 1),
        (CacheMode.OFF, 1, 1),
    ],
)
def test_cache_modes(tmp_path, mode, calls_on_rerun, stored_after):
    path = tmp_path / "c.sqlite"
    Runner(CountingModel(), ResponseCache(path)).run([chat("x")])
    model = CountingModel()
    Runner(model, ResponseCache(path), cache_mode=mode).run([chat("x"), chat("new")])
    assert model.calls == calls_on_rerun + 1
    if mode in (CacheMode.READ, CacheMode.OFF):
        assert len(ResponseCache(path)) == stored_after  # nothing new written
    else:
        assert len(ResponseCache(path)) == 2


def test_replay_mode_fails_clearly_on_a_miss(tmp_path):
    path = tmp_path / "c.sqlite"
    Runner(CountingModel(), ResponseCache(path)).run([chat("x")])
    runner = Runner(CountingModel(), ResponseCache(path), cache_mode=CacheMode.REPLAY)
    assert runner.run([chat("x")])[0].text == "x#0"
    with pytest.raises(CacheMiss, match="--fairness-cache-mode=replay: no cached response"):
        runner.run([chat("never seen")])


def test_progress_reports_every_request_in_order_of_completion():
    seen = []
    Runner(CountingModel()).run([chat(str(i)) for i in range(5)], progress=lambda d, t: seen.append((d, t)))
    assert seen == [(i, 5) for i in range(1, 6)]


def _write(path: str, worker: int) -> None:
    cache = ResponseCache(path)
    for i in range(50):
        cache.put(f"{worker}-{i}", "m", "chat", {"text": str(i)})


@pytest.mark.heavy(2)
def test_parallel_processes_share_one_cache_file(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    ResponseCache(path).close()
    procs = [multiprocessing.get_context("spawn").Process(target=_write, args=(path, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert len(ResponseCache(path)) == 200


# -- opening the cache: concurrent creators, damaged files, read-only artifacts ----------------------------


def _open_fresh_caches(folder: str, barrier, rounds: int, failures) -> None:
    """Open a new cache file in step with another process, ``rounds`` times; count the failures."""
    for i in range(rounds):
        barrier.wait(timeout=60)
        try:
            cache = ResponseCache(Path(folder) / f"{i}.sqlite")
            cache.put(f"{os.getpid()}", "m", "chat", {"text": "x"})
            cache.close()
        except Exception as exc:  # counted and reported by the parent
            failures.put(f"round {i}: {type(exc).__name__}: {exc}")


@pytest.mark.heavy(3)
def test_two_processes_creating_the_same_new_cache_at_once_both_succeed(tmp_path):
    """Switching a new file to WAL is not covered by sqlite's busy timeout: two workers used to race on it."""
    ctx = multiprocessing.get_context("spawn")
    barrier, failures, rounds = ctx.Barrier(2), ctx.Queue(), 200
    procs = [ctx.Process(target=_open_fresh_caches, args=(str(tmp_path), barrier, rounds, failures)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    seen = []
    while not failures.empty():
        seen.append(failures.get())
    assert seen == [] and all(p.exitcode == 0 for p in procs)
    assert all(len(ResponseCache(tmp_path / f"{i}.sqlite", read_only=True)) == 2 for i in range(0, rounds, 20))


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "random bytes":
        path.write_bytes(random.Random(0).randbytes(len(data)))
    elif how == "header overwritten":
        path.write_bytes(b"\0" * 100 + data[100:])
    else:  # half truncated
        path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("how", ["random bytes", "header overwritten", "half truncated"])
@pytest.mark.parametrize("read_only", [False, True])
def test_a_damaged_cache_fails_at_open_naming_the_file_and_the_fix(tmp_path, how, read_only):
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    cache.put_many([(f"k{i}", "m", "chat", {"text": "y" * 500}) for i in range(2000)])
    cache.close()
    _damage(path, how)
    with pytest.raises(CacheError) as caught:
        ResponseCache(path, read_only=read_only)
    message = str(caught.value)
    assert str(path) in message and "delete" in message and "--fairness-cache-mode=off" in message
    assert not isinstance(caught.value, sqlite3.Error)


def _recorded_cache(folder: Path) -> Path:
    """A cache holding one response to chat('x'), closed as a finished run leaves it (no -wal file)."""
    folder.mkdir()
    path = folder / "c.sqlite"
    cache = ResponseCache(path)
    Runner(CountingModel(), cache).run([chat("x")])
    cache.close()
    assert sorted(p.name for p in folder.iterdir()) == ["c.sqlite"]
    return path


def _assert_opened_read_only(cache: ResponseCache) -> None:
    assert cache._db is not None and cache._db.execute("PRAGMA query_only").fetchone()[0] == 1
    with pytest.raises(sqlite3.OperationalError, match=r"readonly|read-only|query_only"):
        cache._db.execute("INSERT INTO responses VALUES ('k', 'm', 'chat', '{}', 0)")
    with pytest.raises(CacheError, match="read-only"):
        cache.put("k", "m", "chat", {})


@pytest.mark.parametrize("mode", [CacheMode.READ, CacheMode.REPLAY])
def test_read_and_replay_use_a_read_only_cache_artifact(tmp_path, mode):
    path = _recorded_cache(tmp_path / "artifact")
    before = path.read_bytes()
    path.chmod(0o444)
    path.parent.chmod(0o555)
    try:
        cache = ResponseCache(path, read_only=True)
        model = CountingModel()
        assert Runner(model, cache, cache_mode=mode).run([chat("x")])[0].text == "x#0"
        assert model.calls == 0
        _assert_opened_read_only(cache)
        cache.close()
        assert path.read_bytes() == before
        if os.access(path.parent, os.W_OK):  # root ignores permissions: sqlite may add its WAL files
            pytest.skip("running as root, so chmod does not stop writes; the connection was still read-only")
        assert sorted(p.name for p in path.parent.iterdir()) == ["c.sqlite"]
    finally:
        path.parent.chmod(0o755)


def test_a_cache_that_cannot_get_a_wal_index_is_opened_immutable(tmp_path):
    """What a read-only folder does to sqlite, made so that it holds for root too: the -shm file cannot be made."""
    path = _recorded_cache(tmp_path / "artifact")
    (path.parent / "c.sqlite-shm").mkdir()
    cache = ResponseCache(path, read_only=True)
    assert cache.get(Runner(CountingModel(), cache).key(chat("x")))["text"] == "x#0"
    _assert_opened_read_only(cache)


def test_a_missing_read_only_cache_is_empty_and_is_not_created(tmp_path):
    path = tmp_path / "none" / "c.sqlite"
    cache = ResponseCache(path, read_only=True)
    assert len(cache) == 0 and cache.get_many(["a"]) == {}
    with pytest.raises(CacheMiss):
        Runner(CountingModel(), cache, cache_mode=CacheMode.REPLAY).run([chat("x")])
    assert not path.parent.exists()


class HangingModel(CountingModel):
    """Answers at once, except prompts containing 'hang', which take a minute."""

    async def chat(self, request: ChatRequest) -> ChatResponse:
        if "hang" in request.messages[-1].content:
            await asyncio.sleep(60)
        return await super().chat(request)


@pytest.mark.heavy(2)
def test_ctrl_c_cancels_what_is_in_flight_keeps_what_finished_and_leaves_nothing_pending(tmp_path, caplog):
    """Ctrl-C used to leave tasks pending on the runner's loop: "Task was destroyed" noise at exit."""
    gc.collect()  # earlier tests' garbage (litellm's unclosed aiohttp sessions) logs its own noise when collected
    lasting = _settle_process_loop()  # tasks other tests left running on the process's loop are not this runner's
    cache = ResponseCache(tmp_path / "c.sqlite")
    runner = Runner(HangingModel(), cache, max_concurrency=4)
    ctrl_c = threading.Timer(0.5, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    # An xdist worker may not turn SIGINT into KeyboardInterrupt: make sure this process does, as a shell's does.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    ctrl_c.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.run([chat("a"), chat("hang 1"), chat("b"), chat("hang 2")])
    finally:
        signal.signal(signal.SIGINT, previous)
    interrupted = time.monotonic()
    loop = process_loop()
    assert loop.is_running() and [t for t in asyncio.all_tasks(loop) if not t.done() and t not in lasting] == []
    assert len(cache) == 2  # the two finished calls, flushed although the batch never ended
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        runner.close()
        closed = time.monotonic()
        gc.collect()
    assert closed - interrupted < 1.0
    # This runner's model holds no HTTP session: aiohttp's "Unclosed ..." lines are earlier tests' litellm garbage.
    assert [
        r for r in caplog.records if not r.getMessage().startswith(("Unclosed client session", "Unclosed connector"))
    ] == []
    assert loop.is_running()  # the process's loop stays for the run's other runners


def _settle_process_loop() -> set[asyncio.Task]:
    """Wait a moment for tasks earlier tests left on the process's loop; those that live on (a library's own
    worker, e.g. litellm's logging task) are returned: they are not any runner's."""

    async def wait() -> set[asyncio.Task]:
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        await asyncio.wait(others, timeout=5) if others else None
        return {t for t in others if not t.done()}

    return asyncio.run_coroutine_threadsafe(wait(), process_loop()).result()


class BatchingModel(CountingModel):
    """Takes up to three log-prob requests per call and records each call's size; can fail transiently once."""

    logprob_batch = 3  # same provider and name as CountingModel: the same cache keys

    def __init__(self, fail_first: bool = False) -> None:
        super().__init__()
        self.sizes: list[int] = []
        self.fail_first = fail_first

    async def logprobs_many(self, requests):
        if self.fail_first:
            self.fail_first = False
            raise TransientError("busy", retry_after=0.0)
        self.sizes.append(len(requests))
        return [await self.logprobs(r) for r in requests]


def scored(conversation: str, word: str) -> LogprobRequest:
    return LogprobRequest((Message("user", conversation),), (" a", " b"), prefix=word)


def test_the_runner_hands_a_batching_model_runs_of_requests_sharing_a_conversation(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    requests = [scored("one", w) for w in "abcd"] + [scored("two", w) for w in "ab"] + [scored("one", "e")]
    Runner(CountingModel(), cache=cache).run([requests[1]])  # cached: answered without the model
    model = BatchingModel()
    runner = Runner(model, cache=cache, retry=RetryPolicy(base_seconds=0.0))
    responses = runner.run(requests)
    # "one" a, (b cached), c, d -> one run of 3; "two" a, b -> a run; "one" e -> alone (logprobs, not _many)
    assert model.sizes == [3, 2]
    assert runner.stats.calls == 6 and runner.stats.cache_hits == 1 and runner.stats.prompt_tokens == 18
    expected = Runner(CountingModel(), cache_mode=CacheMode.OFF).run(requests)
    assert responses == expected
    again = BatchingModel()
    assert Runner(again, cache=cache).run(requests) == expected and again.calls == 0  # every one was cached


def test_a_batch_is_retried_as_a_whole_and_replay_refuses_a_missing_batch(tmp_path):
    model = BatchingModel(fail_first=True)
    runner = Runner(model, cache_mode=CacheMode.OFF, retry=RetryPolicy(base_seconds=0.0))
    assert len(runner.run([scored("one", w) for w in "ab"])) == 2
    assert runner.stats.retries == 1 and model.sizes == [2] and runner.stats.calls == 2
    replay = Runner(BatchingModel(), cache=ResponseCache(tmp_path / "c.sqlite"), cache_mode=CacheMode.REPLAY)
    with pytest.raises(CacheMiss, match="replay"):
        replay.run([scored("one", w) for w in "ab"])


def test_each_provider_approximation_is_listed_once_however_responses_combine_them():
    stats = CallStats()
    for note in (
        "a multi-token candidate scored by its first token; reply prefix sent as a finished assistant turn",
        "reply prefix sent as a finished assistant turn",
        "a candidate missing from the top 20 log-probs given their smallest as an upper bound; "
        "a multi-token candidate scored by its first token; reply prefix sent as a finished assistant turn",
        "",
    ):
        stats.saw(LogprobResponse({" a": -1.0}, exact=not note, note=note))
    assert stats.notes == [
        "a candidate missing from the top 20 log-probs given their smallest as an upper bound",
        "a multi-token candidate scored by its first token",
        "reply prefix sent as a finished assistant turn",
    ]


def test_calls_are_counted_by_the_role_they_serve_even_when_the_judge_is_the_model_under_test():
    runner = Runner(CountingModel(), cache_mode=CacheMode.OFF)
    judge = runner.for_role("judge")
    assert judge.model is runner.model and judge.role == "judge" and judge.stats is runner.stats
    check = CallStats()
    with counting(check):
        runner.run([chat("a"), chat("b")])
        judge.run([chat("c")])
    assert check.calls == 3 and check.roles["model"]["calls"] == 2 and check.roles["judge"]["calls"] == 1
    assert sum(r["prompt_tokens"] for r in check.roles.values()) == check.prompt_tokens
    total = CallStats()
    total.add(check)
    total.add(check)
    assert total.roles["judge"]["calls"] == 2


class RestlessModel(CountingModel):
    """Does not reproduce an answer from its seed: every call answers anew."""

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        return ChatResponse(f"{request.messages[-1].content}#{random.random()}", "stop", 3, 2)


@pytest.mark.parametrize("mode", [CacheMode.OFF, CacheMode.REFRESH, CacheMode.READ])
def test_a_runner_that_remembers_gives_a_repeated_request_its_first_answer_whatever_the_cache_does(tmp_path, mode):
    """A growing check re-asks its earlier items at every look: with the cache off, refreshing or read-only, only
    the runner's memory of this run's answers keeps the looks nested."""
    requests = [chat("a"), chat("b"), chat("a", sample=1)]
    forgetful = Runner(RestlessModel(), ResponseCache(tmp_path / "c.sqlite"), cache_mode=mode)
    assert [r.text for r in forgetful.run(requests)] != [r.text for r in forgetful.run(requests)]
    model = RestlessModel()
    keeps = Runner(model, ResponseCache(tmp_path / "c.sqlite"), cache_mode=mode)
    keeps.remember()
    first = keeps.run(requests[:2])
    again = keeps.resampled(1).run(requests[:2])  # another re-sample of the same items: its own answers
    stats = CallStats()
    later = keeps.run([*requests[:2], chat("c")], stats=stats)
    assert [r.text for r in later[:2]] == [r.text for r in first] and model.calls == 5
    assert stats.calls == 1 and stats.cache_hits == 2 and keeps.cached(keeps.key(requests[0]))
    assert [r.text for r in again] != [r.text for r in first]
