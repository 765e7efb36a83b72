"""The machine's cores, shared by the xdist workers of one run: a worker that has run its last test lends
its core to the workers still running.

A local model runs ``cores // workers`` llama.cpp threads, one per worker on two cores: more threads than
free cores make every call several times slower, as ggml's threads spin while they wait. But the workers
rarely finish together (a sequential check may grow after the placement committed it), and a worker left
alone at the end would run on one core while the other idles. So the controller makes a folder with one
file per worker, a worker removes its own once it has run its last test, and a model asks ``share()``
before each call: the cores divided by the files left. The thread count does not change llama.cpp's
numbers (ggml splits work by rows), only how fast they come.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

_folder: Path | None = None  # this process's run's folder, when it is an xdist worker
_worker = ""


def owned() -> bool:
    """Whether a run started in this process owns the cores: not inside an xdist worker of another run (a
    test's pytester run), whose cores that run shares among workers this one cannot see."""
    return not os.environ.get("PYTEST_XDIST_WORKER")


def open_run() -> Path:
    """The controller's folder for a run's workers (``close_run`` removes it)."""
    return Path(tempfile.mkdtemp(prefix="fairness-workers-"))


def add_worker(folder: Path, worker: str) -> None:
    """Count ``worker`` as running until it leaves (the controller does this before the worker starts, so
    that no worker sees itself alone while the others are still starting)."""
    (folder / worker).touch()


def close_run(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def join(folder: str | Path | None, worker: str) -> None:
    """Make this process the worker ``worker`` of the run whose folder is ``folder`` (None: not shared)."""
    global _folder, _worker
    _folder, _worker = (Path(folder), worker) if folder else (None, "")


def leave() -> None:
    """This worker has run its last test: its core goes to the others."""
    if _folder is not None:
        (_folder / _worker).unlink(missing_ok=True)


def running() -> int | None:
    """Workers of this run that have not run their last test; None outside an xdist run (or its folder is gone)."""
    if _folder is None:
        return None
    try:
        return sum(1 for _ in os.scandir(_folder))
    except OSError:
        return None


def share() -> int | None:
    """Threads this worker may run now: the cores divided by the workers still running (at least 1), or
    None outside an xdist run."""
    workers = running()
    return None if workers is None else max(1, (os.cpu_count() or 1) // max(workers, 1))
