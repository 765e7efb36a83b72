"""A call's deadline counts its own time; a call past it runs on, is retried, and is never lost at the end."""

from __future__ import annotations

import asyncio
import time

import pytest

from pytest_fairness.models.deadline import DeadlineExceeded, Deadlines
from pytest_fairness.models.ratelimit import OK, SLOWED, Aimd, Bucket, MemoryStore, SharedLimit


class SerialBackend:
    """Answers one call at a time, in arrival order, each after its own ``seconds`` (as llama.cpp's server)."""

    def __init__(self) -> None:
        self.turn = asyncio.Lock()
        self.answered = 0

    async def answer(self, seconds: float) -> str:
        async with self.turn:
            await asyncio.sleep(seconds)
            self.answered += 1
            return f"after {seconds}"


def test_a_call_queued_behind_the_earlier_ones_is_not_failed_for_the_wait():
    async def main() -> list[str]:
        backend, deadlines = SerialBackend(), Deadlines(0.3, "python:app:reply")
        # Four calls at once, 0.2 s each: the last is answered 0.8 s after it was sent, 0.2 s of its own.
        return await asyncio.gather(*(deadlines.within(backend.answer(0.2), "chat") for _ in range(4)))

    assert asyncio.run(main()) == ["after 0.2"] * 4


def test_the_same_wait_counted_from_sending_would_fail_them():
    """The control: the plain deadline (``asyncio.wait_for`` from sending) fails the queued calls."""

    async def main() -> list[object]:
        backend = SerialBackend()
        calls = [asyncio.wait_for(backend.answer(0.2), 0.3) for _ in range(4)]
        return await asyncio.gather(*calls, return_exceptions=True)

    assert sum(isinstance(r, TimeoutError) for r in asyncio.run(main())) >= 2


def test_a_slow_call_fails_at_its_deadline_runs_on_and_the_calls_behind_it_still_answer():
    async def main() -> tuple[list[object], int, int]:
        backend, deadlines = SerialBackend(), Deadlines(0.3, "python:app:reply")
        seconds = [0.45, 0.05, 0.05, 0.05]  # the first is slower than the deadline; three queue behind it
        calls = [deadlines.within(backend.answer(s), "chat", cancellable=False) for s in seconds]
        results = await asyncio.gather(*calls, return_exceptions=True)
        running = deadlines.in_flight
        return results, running, await deadlines.settle(1.0)

    results, running, cancelled = asyncio.run(main())
    assert isinstance(results[0], DeadlineExceeded) and results[1:] == ["after 0.05"] * 3
    late = results[0]
    assert late.own == pytest.approx(0.3, abs=0.05) and late.in_flight == 4
    assert (running, cancelled) == (0, 0)  # the late call ended before the others were answered


@pytest.mark.heavy(1)
def test_a_hung_backend_fails_every_call_and_settle_gives_up_on_them_at_the_end():
    async def main() -> tuple[list[object], list[float], int, int]:
        deadlines = Deadlines(0.2, "python:app:reply")
        start, failed = time.monotonic(), []

        async def one() -> object:
            try:
                return await deadlines.within(asyncio.Event().wait(), "chat", cancellable=False)
            finally:
                failed.append(time.monotonic() - start)

        results = await asyncio.gather(*(one() for _ in range(4)), return_exceptions=True)
        return results, failed, deadlines.in_flight, await deadlines.settle(0.1)

    results, failed, running, cancelled = asyncio.run(main())
    assert all(isinstance(r, DeadlineExceeded) for r in results)
    # The k-th in line waits for the one before it one deadline past that one's own, then one of its own.
    assert failed == pytest.approx([0.2, 0.6, 1.0, 1.4], abs=0.1)
    assert (running, cancelled) == (4, 4)  # still running after their deadlines, until the end of the run


def test_the_message_after_the_last_attempt_names_the_times_the_calls_in_flight_and_both_options():
    late = DeadlineExceeded("python:app:reply", "chat", 60, own=60.0, waited=74.2, in_flight=4, fix="")
    line = Deadlines(60, "python:app:reply")
    exhausted = DeadlineExceeded("python:app:reply", "chat", 60, 60.0, 74.2, 4, line.fix).exhausted(6)
    assert "\n" not in exhausted
    assert "6 attempts at a chat request each got no answer within the 60s deadline" in exhausted
    assert "60.0s of its own, 74.2s since it was sent, 4 calls in flight" in exhausted
    assert "?timeout=SECONDS" in exhausted and "?concurrency=N" in exhausted
    assert "python:app:reply?timeout=300&concurrency=1" in exhausted
    assert "74.2s since it was sent" in str(late)


def test_a_slow_answer_or_a_deadline_halves_the_limit_once_per_overload():
    bucket = Bucket(Aimd.start(8))
    sent = 1.0
    for _ in range(3):  # three answers to calls sent before the first cut: one overload, one halving
        bucket, _ = bucket.take(1, sent)
        bucket = bucket.give(1, 2.0, sent, SLOWED)
    assert bucket.aimd.allowed == 4
    bucket, _ = bucket.take(1, 3.0)
    assert bucket.give(1, 4.0, 3.0, SLOWED).aimd.allowed == 2  # a call sent after the cut: a new overload
    assert bucket.give(1, 4.0, 3.0, OK).aimd.allowed == 4  # an answer in time leaves it


def test_an_answer_slower_than_half_its_deadline_cuts_the_shared_limit():
    async def main() -> int:
        limit = SharedLimit(MemoryStore(), 4)
        async with limit.slot(slow_after=0.05):
            await asyncio.sleep(0.1)
        return limit.bucket().aimd.allowed

    assert asyncio.run(main()) == 2
