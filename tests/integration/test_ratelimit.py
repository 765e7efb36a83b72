"""Adaptive concurrency: the AIMD state machine, what servers' headers say, and one limit shared by processes.

The state machine and the bucket are pure, so their tests step a clock by hand; the shared file is tested
with real processes; the providers against the loopback server with a request rate above which it answers
429. Nothing here asserts on elapsed time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI

from pytest_fairness.models import ratelimit
from pytest_fairness.models.interface import ChatRequest, Message, RateLimited, TransientError
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.ratelimit import (
    OK,
    OTHER,
    POLL_SECONDS,
    RATE_LIMITED,
    Aimd,
    Bucket,
    FileStore,
    MemoryStore,
    SharedLimit,
)
from pytest_fairness.models.ratelimit_headers import Credit, duration, server_wait, tokens_reset
from pytest_fairness.models.runner import Runner


def always(pid: int) -> bool:
    return True


# -- the state machine ---------------------------------------------------------------------------------------


def test_starts_at_the_cap():
    state = Aimd.start(16)
    assert (state.limit, state.allowed, state.blocked_until) == (16.0, 16, 0.0)
    with pytest.raises(ValueError):
        Aimd.start(0)


def test_a_429_halves_the_limit_once_per_overload():
    state = Aimd.start(16).rate_limited(now=10.0, sent_at=9.9, wait=None)
    assert state.allowed == 8
    # Requests sent before that cut were part of the same overload: their 429s do not halve again.
    assert state.rate_limited(now=10.1, sent_at=9.95, wait=None).allowed == 8
    # A request sent after the cut that is still refused shows the halved limit is still too high.
    assert state.rate_limited(now=10.3, sent_at=10.05, wait=None).allowed == 4


def test_the_limit_never_falls_below_one():
    state = Aimd.start(5)
    for step in range(10):
        state = state.rate_limited(now=float(step + 1), sent_at=float(step) + 0.5, wait=None)
    assert state.limit == 1.0 and state.allowed == 1


def test_retry_after_pauses_without_a_second_cut():
    state = Aimd.start(8).rate_limited(now=100.0, sent_at=99.0, wait=2.5)
    assert state.blocked_until == 102.5 and state.limit == 4.0
    later = state.rate_limited(now=100.5, sent_at=99.5, wait=0.5)  # a shorter wait never shortens the pause
    assert later.blocked_until == 102.5 and later.limit == 4.0


def test_growth_is_slow_a_quarter_request_per_window_of_answers():
    state = Aimd.start(32).rate_limited(now=1.0, sent_at=0.5, wait=None)  # 16
    for _ in range(16):  # one window of answers at 16 in flight
        state = state.succeeded()
    assert 16.2 < state.limit < 16.3 and state.allowed == 16  # additive and slow: +1/4, not doubled
    for _ in range(4 * 17):
        state = state.succeeded()
    assert state.allowed == 17


def test_after_a_pause_one_probe_goes_first():
    state = Aimd.start(8).rate_limited(now=10.0, sent_at=9.9, wait=1.0)  # paused until 11, limit 4
    assert state.probing and state.allowed == 1
    assert state.succeeded(sent_at=10.5).allowed == 1  # sent before the pause ended: proves nothing
    assert state.succeeded(sent_at=11.2).allowed == 4  # the probe got through: the halved limit holds
    assert not Aimd.start(8).rate_limited(now=10.0, sent_at=9.9, wait=None).probing  # no pause, no probe


def test_growth_stops_at_the_cap():
    state = Aimd.start(4).rate_limited(now=1.0, sent_at=0.5, wait=None)
    for _ in range(1000):
        state = state.succeeded()
    assert state.limit == 4.0 and state.allowed == 4


def test_the_tighter_cap_of_two_processes_holds():
    assert Aimd.start(16).with_cap(8).allowed == 8
    assert Aimd.start(8).with_cap(16).allowed == 8


# -- the shared bucket ------------------------------------------------------------------------------------------


def test_bucket_hands_out_the_allowed_slots_then_asks_to_wait():
    bucket = Bucket.open(None, 2, always)
    bucket, wait = bucket.take(1, now=0.0)
    assert wait is None
    bucket, wait = bucket.take(2, now=0.0)
    assert wait is None and bucket.in_flight == 2
    bucket, wait = bucket.take(1, now=0.0)
    assert wait == POLL_SECONDS and bucket.in_flight == 2
    bucket = bucket.give(2, now=0.1, sent_at=0.0, outcome=OK)
    bucket, wait = bucket.take(1, now=0.1)
    assert wait is None and bucket.members == {1: 2, 2: 0}


def test_bucket_waits_out_a_retry_after_probes_then_sends_at_half_the_limit():
    bucket, _ = Bucket.open(None, 4, always).take(1, now=0.0)
    bucket = bucket.give(1, now=0.2, sent_at=0.0, outcome=RATE_LIMITED, wait=1.0)
    assert bucket.rate_limited == 1
    _, wait = bucket.take(1, now=0.7)
    assert wait == pytest.approx(0.5)
    bucket, wait = bucket.take(1, now=1.2)  # the probe
    assert wait is None
    _, wait = bucket.take(1, now=1.2)
    assert wait == POLL_SECONDS
    bucket = bucket.give(1, now=1.3, sent_at=1.2, outcome=OK)
    for _ in range(2):
        bucket, wait = bucket.take(1, now=1.3)
        assert wait is None
    _, wait = bucket.take(1, now=1.3)
    assert wait == POLL_SECONDS  # the third request waits: the limit is 2 now


def test_other_failures_neither_cut_nor_grow_the_limit():
    bucket, _ = Bucket.open(None, 4, always).take(1, 0.0)
    after = bucket.give(1, now=1.0, sent_at=0.0, outcome=OTHER)
    assert after.aimd == bucket.aimd and after.in_flight == 0


def test_a_dead_process_frees_its_slots_and_a_run_of_dead_processes_starts_afresh():
    bucket, _ = Bucket.open(None, 2, always).take(111, now=0.0)
    bucket, _ = bucket.take(111, now=0.0)
    bucket = bucket.give(111, now=0.1, sent_at=0.0, outcome=RATE_LIMITED)  # limit 1, one still in flight
    reopened = Bucket.open(bucket, 2, lambda pid: pid != 111)
    assert reopened.in_flight == 0 and reopened.aimd == Aimd.start(2)  # nobody of that run is left
    with_survivor = Bucket.open(Bucket(bucket.aimd, {**bucket.members, 222: 0}), 2, lambda pid: pid != 111)
    assert with_survivor.in_flight == 0 and with_survivor.aimd.allowed == 1  # the run goes on: its limit holds


def test_bucket_round_trips_through_json():
    bucket, _ = Bucket.open(None, 3, always).take(7, now=5.0)
    bucket = bucket.give(7, now=6.0, sent_at=5.0, outcome=RATE_LIMITED, wait=0.25)
    assert Bucket.from_json(bucket.to_json()) == bucket
    paced = bucket.budget(remaining=3, reset=0.5, limit=10, now=6.0)
    assert Bucket.from_json(paced.to_json()) == paced


def test_file_store_keeps_the_bucket_and_treats_a_torn_file_as_none(tmp_path):
    store = FileStore(tmp_path / "limits" / "a.json")
    seen = []
    store.update(lambda found: (Bucket.open(found, 3, always).take(1, 0.0)[0], None))
    store.update(lambda found: (seen.append(found) or found, None))  # type: ignore[func-returns-value]
    assert seen[0] is not None and seen[0].members == {1: 1}
    (tmp_path / "limits" / "a.json").write_text('{"aimd": {"cap": 3, "lim')
    store.update(lambda found: (seen.append(found) or Bucket.open(found, 3, always), None))  # type: ignore[func-returns-value]
    assert seen[1] is None


# -- headers ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5), ("0.5", 0.5), ("soon", None), ("", None)],
)
def test_reset_durations(text, seconds):
    assert duration(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_what_a_429_asks_for():
    now = 1_700_000_000.0
    assert server_wait({"Retry-After": "3"}, now) == 3.0
    assert server_wait({"retry-after-ms": "250", "retry-after": "1"}, now) == 0.25
    assert server_wait({"retry-after": "Tue, 14 Nov 2023 22:13:30 GMT"}, now) == pytest.approx(10.0)
    spent = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1.5s"}
    assert server_wait(spent, now) == 1.5
    assert server_wait({"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "1.5s"}, now) is None
    assert server_wait({}, now) is None


def test_a_spent_token_budget_pauses_until_its_reset():
    assert tokens_reset({"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "2s"}) == 2.0
    litellm_style = {"llm_provider-x-ratelimit-remaining-tokens": "0", "llm_provider-x-ratelimit-reset-tokens": "1s"}
    assert tokens_reset(litellm_style) == 1.0
    assert tokens_reset({"x-ratelimit-remaining-tokens": "900", "x-ratelimit-reset-tokens": "1s"}) is None
    assert tokens_reset({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s"}) is None


def test_a_429_without_retry_after_waits_for_one_request_of_refill_or_a_spent_token_budget():
    now = 0.0
    # 60 requests a minute, none left, whole again in 60 s: one more is allowed in a second, not a minute
    refill = {
        "x-ratelimit-limit-requests": "60",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "60s",
    }
    assert server_wait(refill, now) == pytest.approx(1.0)
    both = {**refill, "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "3s"}
    assert server_wait(both, now) == 3.0


def test_the_account_name_reveals_neither_key_nor_url():
    name = ratelimit.account("openai", "https://api.openai.com/v1", "sk-secret")
    assert "secret" not in name and "openai.com" not in name
    assert name != ratelimit.account("openai", "https://api.openai.com/v1", "sk-other")
    assert name == ratelimit.account("openai", "https://api.openai.com/v1", "sk-secret")


# -- a slot around each request ----------------------------------------------------------------------------------


def test_a_429_raised_inside_a_slot_cuts_the_limit_and_other_errors_do_not():
    limit = SharedLimit(MemoryStore(), 8)

    async def go() -> None:
        with pytest.raises(TransientError):
            async with limit.slot():
                raise TransientError("HTTP 500")
        assert limit.bucket().aimd.allowed == 8
        with pytest.raises(RateLimited):
            async with limit.slot():
                raise RateLimited("HTTP 429", retry_after=0.0)
        async with limit.slot():
            pass

    asyncio.run(go())
    bucket = limit.bucket()
    assert (bucket.aimd.allowed, bucket.rate_limited, bucket.in_flight) == (4, 1, 0)


# -- two processes, one limit -------------------------------------------------------------------------------------

CAP = 3


def _hold_slots(path: str, start, counter, peak, lock, rounds: int, tasks: int) -> None:
    """In a child process: ``tasks`` coroutines each take ``rounds`` slots, counting everyone's slots held."""
    limit = SharedLimit(FileStore(Path(path)), CAP)

    async def worker() -> None:
        for _ in range(rounds):
            async with limit.slot():
                with lock:
                    counter.value += 1
                    peak.value = max(peak.value, counter.value)
                await asyncio.sleep(0.005)
                with lock:
                    counter.value -= 1

    async def main() -> None:
        await asyncio.gather(*(worker() for _ in range(tasks)))

    start.wait()
    asyncio.run(main())


def test_two_processes_never_hold_more_slots_together_than_the_one_limit(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    lock = ctx.Lock()
    counter, peak = ctx.Value("i", 0, lock=False), ctx.Value("i", 0, lock=False)
    start = ctx.Event()
    path = str(tmp_path / "bucket.json")
    procs = [ctx.Process(target=_hold_slots, args=(path, start, counter, peak, lock, 15, 4)) for _ in range(2)]
    for proc in procs:
        proc.start()
    start.set()
    for proc in procs:
        proc.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0]
    # Each process alone could hold three (four tasks each): together they still held three at most.
    assert 1 <= peak.value <= CAP
    assert counter.value == 0
    left = json.loads((tmp_path / "bucket.json").read_text())
    assert sum(left["members"].values()) == 0  # every slot given back


def _report_429(path: str) -> None:
    limit = SharedLimit(FileStore(Path(path)), 8)

    async def one() -> None:
        sent = await limit.acquire()
        limit.release(sent, RATE_LIMITED, 0.0)

    asyncio.run(one())


def test_a_429_in_one_process_halves_the_limit_of_another(tmp_path):
    path = tmp_path / "bucket.json"
    mine = SharedLimit(FileStore(path), 8)

    async def one() -> None:
        async with mine.slot():
            pass

    asyncio.run(one())  # this process joins the run's bucket
    child = multiprocessing.get_context("spawn").Process(target=_report_429, args=(str(path),))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    bucket = mine.bucket()
    assert (bucket.aimd.allowed, bucket.rate_limited) == (4, 1)
    assert list(bucket.members) == [os.getpid()]  # the finished child is dropped


# -- the providers against a rate-limited server ---------------------------------------------------------------


@pytest.mark.parametrize("spec", ["openai:fake@{url}?concurrency=8", "litellm:openai/fake@{url}?concurrency=8"])
def test_a_rate_limited_server_answers_every_request_and_the_limit_comes_down(spec):
    # 10 requests per 0.2 s, and only Retry-After to say so: the client finds the rate by its 429s
    with FakeOpenAI(latency=0.01, rate=50, rate_window=0.2, rate_headers=False) as server:
        model = load_model(spec.format(url=server.base_url))
        runner = Runner(model, max_concurrency=8)
        try:
            requests = [ChatRequest((Message("user", f"q{i}"),), temperature=1.0, seed=1) for i in range(40)]
            responses = runner.run(requests)
        finally:
            runner.close()
    assert [r.text for r in responses] == ["wonderful - white"] * 40
    assert runner.stats.calls == 40
    # 8 in flight at 10 ms each is far above 10 per 0.2 s: the server refused some, the runner counted each
    # one and retried it, and the account's shared limit was cut (it regrows as answers come back).
    assert server.over_rate > 0
    assert runner.stats.rate_limited == server.over_rate
    bucket = model.rate_limit().bucket()
    assert bucket.aimd.last_cut > 0 and bucket.rate_limited == server.over_rate


def test_x_ratelimit_headers_pace_requests_before_the_budget_runs_out():
    with FakeOpenAI(latency=0.01, rate=50, rate_window=0.2) as server:
        model = load_model(f"openai:fake@{server.base_url}?concurrency=8")
        runner = Runner(model, max_concurrency=8)
        try:
            requests = [ChatRequest((Message("user", f"q{i}"),), temperature=1.0, seed=1) for i in range(30)]
            assert len(runner.run(requests)) == 30
        finally:
            runner.close()
    credit = model.rate_limit().bucket().credit
    assert credit is not None and credit.limit == 10 and credit.refill > 0  # the server's budget, as it told it
    assert runner.stats.rate_limited == server.over_rate


def test_credit_paces_by_the_refill_rate_until_the_budget_is_whole():
    credit = Credit.told(remaining=1, reset=1.0, limit=11, now=0.0, others=0)  # refills 10 a second
    assert credit.refill == 10.0 and credit.wait(0.0) == 0.0
    spent = credit.spend(0.0)
    assert spent.wait(0.0) == pytest.approx(0.1)  # the next one refills in a tenth of a second
    assert spent.available(0.5) == pytest.approx(5.0) and spent.available(2.0) == 11.0
    told_late = Credit.told(remaining=3, reset=1.0, limit=11, now=0.0, others=4)  # four went after it
    assert told_late.wait(0.0) == pytest.approx(0.25)  # one short of nothing, refilling 8 a second
    no_limit = Credit.told(remaining=0, reset=0.5, limit=None, now=0.0, others=0)
    assert no_limit.refill == 0.0 and no_limit.wait(0.1) == pytest.approx(0.4)  # only the reset is known


def test_bucket_takes_from_the_credit_then_waits_for_its_refill():
    bucket = Bucket.open(None, 8, always).budget(remaining=2, reset=1.0, limit=10, now=0.0)
    for _ in range(2):
        bucket, wait = bucket.take(1, now=0.0)
        assert wait is None
    _, wait = bucket.take(1, now=0.0)
    assert wait == pytest.approx(0.125)  # 8 a second refill the budget
    bucket, wait = bucket.take(1, now=1.5)
    assert wait is None and bucket.credit is None  # past the reset the budget is whole: no pacing


def test_adaptive_0_keeps_a_fixed_cap_per_process():
    model = load_model("openai:fake@http://127.0.0.1:9/v1?adaptive=0")
    assert model.adaptive is False and isinstance(model.rate_limit(), ratelimit.Fixed)
    assert load_model("openai:fake@http://127.0.0.1:9/v1").adaptive is True


# -- a parallel run against the rate-limited server -----------------------------------------------------------------

SUITE = """\
suite: limited
checks:
  - measure: implicit_bias
    stereotype: career
    samples: 20
    threshold: {max: 0.5}
  - measure: implicit_bias
    stereotype: science
    samples: 20
    threshold: {max: 0.5}
"""


class BucketWatch:
    """Reads the run's bucket files (under their lock, as the workers do) every few milliseconds while it runs."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.names: set[str] = set()
        self.pids: set[int] = set()
        self.last: dict[str, Any] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> BucketWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(0.005):
            for path in self.folder.glob("*.json") if self.folder.is_dir() else []:
                with contextlib.suppress(OSError):
                    bucket = FileStore(path).update(lambda found: (found, found))
                    if bucket is not None:
                        self.names.add(path.name)
                        self.pids |= set(bucket.members)
                        self.last = json.loads(bucket.to_json())


def test_two_workers_share_one_limit_and_no_request_fails_and_the_limit_goes_with_the_run(pytester):
    pytester.makefile(".yaml", limited=SUITE)
    folder = pytester.path / ".fairness-cache" / "rate-limits"
    # 10 requests per 0.25 s, said only by Retry-After: both workers meet 429s, and share what they learn
    with FakeOpenAI(latency=0.02, rate=40, rate_window=0.25, rate_headers=False) as server, BucketWatch(folder) as seen:
        result = pytester.runpytest(
            "--fairness-suite=limited.yaml",
            f"--fairness-model=openai:fake@{server.base_url}?concurrency=8",
            "--fairness-report=out.json",
            "-n",
            "2",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
        )
    report = json.loads((pytester.path / "out.json").read_text())
    assert report["run"]["status"] == "complete" and report["run"]["errored"] == 0, result.outlines[-20:]
    assert len(report["checks"]) == 2
    # Both workers met the limit (two checks each sending at the shared cap of 8, far above 10 per 0.25 s):
    # every refused request was counted and retried to an answer, in one bucket both workers used.
    assert server.over_rate > 0
    assert 0 < report["totals"]["rate_limited"] <= server.over_rate  # the preflight's own calls are not a check's
    assert len(seen.names) == 1 and len(seen.pids) >= 2
    assert 0 < seen.last["rate_limited"] <= server.over_rate and seen.last["aimd"]["last_cut"] > 0
    assert list(folder.glob("*.json")) == []  # the last worker to leave removed it


def test_a_bucket_left_by_processes_that_are_gone_is_swept_and_a_live_ones_kept(tmp_path):
    dead, live = FileStore(tmp_path / "dead.json"), FileStore(tmp_path / "live.json")
    for store, pid in ((dead, 999_999_991), (live, os.getpid())):
        store.update(lambda found, pid=pid: (Bucket(Aimd.start(4), {pid: 0}), None))
    ratelimit.sweep(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live.json"]


def test_a_process_leaving_removes_a_bucket_only_when_no_other_live_process_uses_it(tmp_path):
    ratelimit.share_in(tmp_path)
    try:
        limit = ratelimit.limit_for("openai", "http://x", None, 4)
        asyncio.run(_one_slot(limit))
        shared = limit.store
        assert isinstance(shared, FileStore) and shared.path.exists()
        other = os.getppid()  # a live process that joined the same bucket
        shared.update(lambda found: (replace(found, members={**found.members, other: 0}), None))
        ratelimit.leave()
        assert shared.path.exists() and set(json.loads(shared.path.read_text())["members"]) == {str(other)}
        ratelimit.sweep(tmp_path, alive=lambda pid: pid != other)  # once it has gone too
        assert not shared.path.exists()
    finally:
        ratelimit.share_in(None)


async def _one_slot(limit: SharedLimit) -> None:
    async with limit.slot():
        pass
