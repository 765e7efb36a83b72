"""Ctrl-C in the middle of a run: a prompt, quiet exit that keeps every finished call."""

import signal
import sqlite3
import subprocess
import time

from fake_openai import FakeOpenAI, measure_requests
from slow_runs import slow_run

NOISE = ("Event loop is closed", "Task was destroyed but it is pending", "Exception ignored", "Traceback")
CONCURRENCY = 4


def test_ctrl_c_exits_promptly_and_quietly_keeping_finished_calls(tmp_path):
    with FakeOpenAI(latency=0.3) as server:
        args, cache = slow_run(tmp_path, server, samples=400, concurrency=CONCURRENCY)
        # A child inherits an ignored SIGINT (xdist workers and CI runners may ignore it): restore the
        # default so the run reacts to Ctrl-C the way a terminal's would.
        proc = subprocess.Popen(
            args,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + 60
        while len(measure_requests(server)) < 16 and time.monotonic() < deadline:
            time.sleep(0.01)
        received = len(measure_requests(server))
        proc.send_signal(signal.SIGINT)
        interrupted = time.monotonic()
        out, err = proc.communicate(timeout=60)
        exit_seconds = time.monotonic() - interrupted
    assert proc.returncode == 2, out + err  # pytest's "interrupted"
    assert "KeyboardInterrupt" in out
    assert [n for n in NOISE if n in err or n in out] == [], err
    # The runner stops in milliseconds (tests/unit/test_cache_and_runner.py); the rest is pytest's own
    # interrupt report, about 2 s on a loaded 2-core machine.
    assert exit_seconds < 8
    stored = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    # Only the calls in flight at Ctrl-C are lost (400 requests would take 30 s: the run is interrupted).
    assert received - CONCURRENCY <= stored < 400
