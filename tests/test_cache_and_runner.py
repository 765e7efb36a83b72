"""The response cache and the runner: keys, modes, failures never cached, sharing across processes."""

import multiprocessing

import pytest

from pytest_fairness.models.base import ChatModel, ChatRequest, ChatResponse, LogprobRequest, LogprobResponse, Message
from pytest_fairness.models.cache import CacheMiss, CacheMode, ResponseCache, cache_key
from pytest_fairness.models.runner import CallStats, Runner


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
