"""Live progress of running checks: which are running, their round, n so far, and requests done of planned.

A check reports progress where it runs: in the pytest process itself, or on an xdist worker that
cannot write to the controller's terminal. A worker therefore sends each (throttled) update as an
intermediate ``pytest_runtest_logreport`` whose ``when`` is ``PROGRESS_WHEN``: xdist forwards every
log report to the controller, where the plugin hands it to a ``Display`` instead of counting it.
pytest's own reporters ignore it (the plugin gives it no letter, no word and no category).

The display writes a status block on its own line: on a terminal it rewrites that line in place, in
a CI log it appends at most one line per check every ``interval`` seconds, so a nine-minute run shows
where it is without flooding the log.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

#: ``when`` of the intermediate reports that carry progress from xdist workers to the controller.
PROGRESS_WHEN = "fairness-progress"
#: The user property of such a report that holds the update.
PROGRESS_PROPERTY = "fairness_progress"
#: Most updates per second a worker sends, and a terminal redraws.
REDRAW_SECONDS = 0.25


@dataclass(frozen=True)
class Tick:
    """One update of a running check."""

    nodeid: str
    label: str
    round: int
    n: int
    done: int
    total: int
    elapsed: float
    worker: str = ""
    note: str = ""  # what the check waits on besides the model (a provider batch)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        """``gender::net_harm: round 2, n=300, requests 120/600 (12s)``, with its worker under xdist."""
        where = f"[{self.worker}] " if self.worker else ""
        note = f"; {self.note}" if self.note else ""
        return (
            f"{where}{self.label}: round {self.round}, n={self.n}, requests {self.done}/{self.total} "
            f"({self.elapsed:.0f}s){note}"
        )

    def short(self) -> str:
        return f"{self.label} r{self.round} n={self.n} {self.done}/{self.total}"


class Emitter:
    """The progress callback of one check (``(done, total)`` from the runner), sending throttled ticks.

    ``begin_round`` is called by sequential sampling when a check grows, so a tick names its round and n.
    """

    def __init__(
        self,
        nodeid: str,
        label: str,
        n: int,
        send: Callable[[Tick], None],
        *,
        worker: str = "",
        min_gap: float = REDRAW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.nodeid, self.label, self.n, self.send, self.worker = nodeid, label, n, send, worker
        self.round = 1
        self.min_gap, self.clock = min_gap, clock
        self.start = clock()
        self.last: float | None = None

    def begin_round(self, round_: int, n: int) -> None:
        self.round, self.n = round_, n
        self.last = None  # a new round is always worth showing

    def __call__(self, done: int, total: int, note: str = "") -> None:
        now = self.clock()
        if self.last is not None and now - self.last < self.min_gap and done < total:
            return
        self.last = now
        elapsed = now - self.start
        self.send(Tick(self.nodeid, self.label, self.round, self.n, done, total, elapsed, self.worker, note))


class Screen(Protocol):
    """What the display writes through (pytest's terminal reporter, or a fake in tests)."""

    def write(self, content: str, **markup: bool) -> None: ...

    def rewrite(self, line: str, **markup: bool) -> None: ...


class Display:
    """The controller's view of running checks: a status line on a terminal, throttled lines in a log.

    ``interval`` is the least time between two lines of one check in a log; a check's first line waits
    that long too, so quick checks print nothing. ``None`` turns progress off.
    """

    def __init__(
        self,
        screen: Screen,
        *,
        tty: bool,
        interval: float | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.screen, self.tty, self.interval, self.clock = screen, tty, interval, clock
        self.running: dict[str, Tick] = {}
        self.shown: dict[str, float] = {}  # nodeid -> when its last log line was written
        self.on_status_line = False
        self.last_draw = float("-inf")

    def update(self, tick: Tick) -> None:
        if self.interval is None:
            return
        self.running[tick.nodeid] = tick
        now = self.clock()
        if self.tty:
            if now - self.last_draw >= REDRAW_SECONDS or tick.done >= tick.total:
                self._draw("  running: " + " | ".join(t.short() for t in self.running.values()))
                self.last_draw = now
            return
        last = self.shown.get(tick.nodeid)
        if (last is None and tick.elapsed < self.interval) or (last is not None and now - last < self.interval):
            return
        self.shown[tick.nodeid] = now
        running = f" [{len(self.running)} running]" if len(self.running) > 1 else ""
        self.screen.write(f"\n  {tick.text()}{running}")  # ends the dots line or the previous progress line
        self.on_status_line = True

    def _draw(self, line: str) -> None:
        if not self.on_status_line:
            self.screen.write("\n")
        self.screen.rewrite(line, erase=True)
        self.on_status_line = True

    def finished(self, nodeid: str) -> None:
        """A check ended: forget it."""
        self.running.pop(nodeid, None)
        self.shown.pop(nodeid, None)

    def before_output(self) -> None:
        """pytest is about to write (a result letter, a section): end the status line so it stays readable."""
        if self.on_status_line:
            self.screen.write("\n")
            self.on_status_line = False
