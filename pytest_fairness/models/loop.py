"""The one event loop of a process on which every model call runs, on a background thread.

An app's async client (a module-level ``AsyncOpenAI``, an HTTP pool) binds its connections to the loop it
first ran on. If the start-up probe, each check and each runner had loops of their own, the first call on
a new loop would reuse a connection of a closed one ("Event loop is closed") and lose an answer the server
had given. So every runner of a process shares this loop, which lives until the process ends (a forked
child makes its own). Runners close what they own on it; none closes the loop.
"""

from __future__ import annotations

import asyncio
import os
import threading

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_owner = 0  # the pid that started ``_loop``


def process_loop() -> asyncio.AbstractEventLoop:
    """The process's model loop, started on first use (again in a forked child, whose copy has no thread)."""
    global _loop, _owner
    with _lock:
        if _loop is None or _loop.is_closed() or _owner != os.getpid():
            _loop = asyncio.new_event_loop()
            _owner = os.getpid()
            threading.Thread(target=_loop.run_forever, name="fairness-models", daemon=True).start()
        return _loop
