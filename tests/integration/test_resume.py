"""A run killed midway and restarted repeats no call that had finished."""

import signal
import sqlite3
import subprocess
import time

import pytest
from fake_openai import FakeOpenAI, measure_requests
from slow_runs import slow_run


def _saved(cache) -> int:
    """Responses the cache file holds so far (0 before the run has created it)."""
    try:
        with sqlite3.connect(f"file:{cache}?mode=ro", uri=True) as db:  # read-only: never creates the file
            return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.OperationalError:  # no file or no table yet
        return 0


@pytest.mark.heavy(11)
def test_killed_run_resumes_without_repeating_finished_calls(tmp_path):
    with FakeOpenAI(latency=0.05) as server:
        args, cache = slow_run(tmp_path, server, samples=40, concurrency=1)
        proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while _saved(cache) < 10 and time.monotonic() < deadline:  # saved, not merely sent: load delays writes
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        finished = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        assert 10 <= finished < 40
        served_before = len(measure_requests(server))
        subprocess.run(args, cwd=tmp_path, stdout=subprocess.DEVNULL, check=False, timeout=120)
        assert len(measure_requests(server)) - served_before == 40 - finished
