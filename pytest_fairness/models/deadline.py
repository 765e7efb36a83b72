"""Deadlines that count a call's own time, and the calls still in flight to one model.

A server that answers one request at a time (llama.cpp's, a chatbot's single worker) makes every call
wait for the ones sent before it: with four in flight, the fourth waits for three answers before its
own begins. A deadline that counted that wait would fail calls that were never slow. So a call's clock
starts when every call this process sent the model before it has been answered, has failed, or has
been given up on.

A call past its deadline is not cancelled: a thread cannot be, and an HTTP server goes on generating a
reply whose client has left. The caller gets ``DeadlineExceeded``, a transient error the runner retries,
while the call runs on, counted among the calls in flight; the calls behind it still wait for it (the
server is still busy with it), but one more deadline at most, so a hung backend holds nothing forever.
At the end of a run ``settle`` waits a short grace for what is still running, then cancels it and says
how many calls it gave up on, so no request is left behind unseen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

from pytest_fairness.models.interface import TransientError

T = TypeVar("T")
#: Seconds the end of a run waits for calls still in flight before cancelling them.
SETTLE_SECONDS = 2.0


class DeadlineExceeded(TransientError):
    """A call that got no answer within its deadline: retried; the numbers say how slow it was.

    ``own`` is the time its clock ran, ``waited`` the time since it was sent, ``in_flight`` the calls to
    the model that were in flight with it, ``fix`` the options that would help, in the model's spec.
    """

    def __init__(self, where: str, kind: str, timeout: float, own: float, waited: float, in_flight: int, fix: str):
        self.where, self.kind, self.timeout, self.fix = where, kind, timeout, fix
        self.own, self.waited, self.in_flight = own, waited, in_flight
        super().__init__(f"{where}: a {kind} request got no answer within its {timeout:g}s deadline ({self.numbers()})")

    def numbers(self) -> str:
        return f"{self.own:.1f}s of its own, {self.waited:.1f}s since it was sent, {self.in_flight} calls in flight"

    def exhausted(self, attempts: int) -> str:
        """One line for a request whose every attempt passed the deadline: how slow, and what to change."""
        return (
            f"{self.where}: {attempts} attempts at a {self.kind} request each got no answer within the "
            f"{self.timeout:g}s deadline (the last: {self.numbers()}): fix what hangs, or {self.fix}"
        )


@dataclass
class _Call:
    """A call in flight, and when the calls sent after it may start their clocks (``released``)."""

    task: asyncio.Future[Any]
    released: asyncio.Future[None]

    def release(self) -> None:
        if not self.released.done():
            self.released.set_result(None)


class Deadlines:
    """The calls in flight to one model in this process, each held to ``timeout`` seconds of its own time.

    ``spec`` names the model in messages, and takes the ``?timeout=`` and ``?concurrency=`` options."""

    def __init__(self, timeout: float, spec: str) -> None:
        self.timeout = timeout
        self.where = spec
        self.fix = (
            "allow more time with ?timeout=SECONDS, or send fewer calls at once with ?concurrency=N (e.g. "
            f"{spec}?timeout={5 * timeout:g}&concurrency=1)"
        )
        self._calls: list[_Call] = []

    @property
    def in_flight(self) -> int:
        return sum(not c.task.done() for c in self._calls)

    async def within(self, call: Awaitable[T], kind: str, *, cancellable: bool = True) -> T:
        """``call``'s result, or ``DeadlineExceeded`` once its own time passes the deadline (it runs on).

        Cancelling the caller cancels a ``cancellable`` call; any other (a thread's work) runs on, counted in
        flight until it ends or ``settle`` gives up on it."""
        loop = asyncio.get_running_loop()
        ahead = [c.released for c in self._calls if not c.released.done()]
        entry = _Call(asyncio.ensure_future(call), loop.create_future())
        self._calls.append(entry)
        entry.task.add_done_callback(lambda _: self._ended(entry))
        sent = loop.time()
        try:
            if ahead:  # queued behind our own earlier calls: the clock has not started
                behind = asyncio.ensure_future(asyncio.wait(ahead))
                try:
                    await asyncio.wait([entry.task, behind], return_when=asyncio.FIRST_COMPLETED)
                finally:
                    behind.cancel()
            started = loop.time()
            if not entry.task.done():
                await asyncio.wait([entry.task], timeout=self.timeout)
        except asyncio.CancelledError:
            entry.release()  # given up on: the calls behind need not wait for it
            if cancellable:
                entry.task.cancel()
            raise
        if entry.task.done():
            return entry.task.result()  # type: ignore[no-any-return]
        loop.call_later(self.timeout, entry.release)  # it runs on: the calls behind wait one deadline more at most
        now = loop.time()
        raise DeadlineExceeded(self.where, kind, self.timeout, now - started, now - sent, self.in_flight, self.fix)

    def _ended(self, entry: _Call) -> None:
        entry.release()
        self._calls.remove(entry)
        if not entry.task.cancelled():
            entry.task.exception()  # a late call's failure is seen here: asyncio does not log it as never retrieved

    async def settle(self, grace: float = SETTLE_SECONDS) -> int:
        """Wait up to ``grace`` seconds for the calls still in flight, then cancel the rest; how many were cancelled."""
        running = [c.task for c in self._calls if not c.task.done()]
        if running:
            await asyncio.wait(running, timeout=grace)
        left = [t for t in running if not t.done()]
        for task in left:
            task.cancel()
        if left:
            await asyncio.wait(left, timeout=0.5)
        return len(left)
