"""A slow but working backend ends every check with an outcome; a hung one errors its check once, in one
line; no request is left behind (a synchronous chatbot behind a server that answers one request at a time).

Times are the defaults' divided by ``SCALE``: the 60 s default deadline is ``?timeout=0.6`` here, a 5 s
reply 0.05 s and a 90 s one (one reply in ten: 1.5 deadlines) 0.9 s, so each run takes seconds.
"""

from __future__ import annotations

import json
import shutil
import time

import pytest
from fake_openai import FakeOpenAI, is_probe
from paths import TESTS

APPS = TESTS / "python_apps"
SCALE = 100
DEADLINE, REPLY, SLOW_REPLY = 60 / SCALE, 5 / SCALE, 90 / SCALE
APP = f"python:adapter:reply?timeout={DEADLINE:g}"
CHECKS = "decision_bias and (career or science)"  # 2 checks, 20 calls


@pytest.fixture
def project(pytester, monkeypatch):
    """A project holding the chatbot, and a way to run the gender suite's decision checks against a server."""
    shutil.copy(APPS / "adapter.py", pytester.path / "adapter.py")
    pytester.makefile(".ini", pytest="[pytest]\n")

    def run(server: FakeOpenAI, spec: str, *args: str, checks: str = CHECKS) -> tuple[dict, str]:
        monkeypatch.setenv("ADAPTER_URL", server.base_url)
        report = pytester.path / f"report-{time.monotonic_ns()}.json"
        result = pytester.runpytest(
            "--fairness-suite=gender",
            "-k",
            checks,
            f"--fairness-model={spec}",
            "--fairness-cache-mode=off",
            f"--fairness-report={report}",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            *args,
        )
        return json.loads(report.read_text()), "\n".join(result.outlines + result.errlines)

    run.path = pytester.path  # type: ignore[attr-defined]
    return run


def answered_requests(server: FakeOpenAI) -> int:
    return sum(not is_probe(r) for r in server.requests)


def test_a_slow_but_working_backend_ends_every_check_with_an_outcome_and_loses_no_request(project):
    with FakeOpenAI(serial=True, latency=REPLY, slow_every=10, slow_seconds=SLOW_REPLY) as server:
        report, out = project(server, APP)
        assert server.open == 0, out[-3000:]  # every request the server took was answered by the end
        received = answered_requests(server)
    assert report["run"]["status"] == "complete" and report["run"]["errored"] == 0, out[-3000:]
    assert len(report["checks"]) == 2 and all(c["outcome"] != "errored" for c in report["checks"])
    totals = report["totals"]
    assert totals["late"] >= 1  # the slow replies passed the deadline, and were asked again
    before = report["run"]["preflight"]  # the probe (and its retries when it was slow): not received here
    received_checks = totals["calls"] - before["calls"] + totals["late"] - before["late"]
    assert received == received_checks  # each request answered, or counted as late
    assert report["run"]["abandoned"] == 0


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "two workers"])
def test_a_hung_backend_errors_the_check_once_in_one_line_naming_the_deadline_the_calls_and_both_options(
    project, workers
):
    outputs = ["-x", "--fairness-max-attempts=3", "--fairness-markdown=report.md", "--junitxml=junit.xml", *workers]
    with FakeOpenAI(serial=True, latency=REPLY, hang_after=3) as server:  # the probe and two answers, then nothing
        report, out = project(server, APP, *outputs, checks="decision_bias and (career or science)")
    run = report["run"]
    # pytest's own short summary repeats the reason ("FAILED node - reason"), cut to the terminal's width
    # except under CI=true, so only the plugin's lines count
    said = [line for line in out.splitlines() if not line.startswith(("FAILED ", "ERROR "))]
    lines = [line for line in said if "got no answer within the" in line]
    assert len(lines) == run["errored"] >= 1, out[-3000:]  # each check that errored says so once, in one line
    for line in lines:
        assert f"{DEADLINE:g}s deadline" in line and "calls in flight" in line
        assert "?timeout=" in line and "?concurrency=" in line
    assert run["status"] == "errored" and run["abandoned"] > 0 and "given up on" in out  # the hung calls
    # Each selected check has its state: errored with the line's reason, or not run (-x stopped the run)
    by_check = {c["check"]: c for c in run["unfinished"]}
    assert set(by_check) == {"gender::decision_bias[career]", "gender::decision_bias[science]"}
    errored = [c for c in by_check.values() if c["state"] == "errored"]
    assert len(errored) == run["errored"] and {c["state"] for c in by_check.values()} <= {"errored", "not run"}
    assert {c["reason"] for c in errored} == {line.split(": ", 1)[1] for line in lines}
    assert sum(c["spent"]["late"] for c in errored) >= 3  # three tries of one request at least, each late
    before = report["run"]["preflight"]["calls"]  # the pre-flight probe's
    assert report["totals"]["calls"] == before + sum(c.get("spent", {}).get("calls", 0) for c in by_check.values())
    markdown = (project.path / "report.md").read_text()
    assert "decision_bias[career]" in markdown and "did not finish" in markdown and "got no answer" in markdown
    junit = (project.path / "junit.xml").read_text()
    assert "decision_bias[career]" in junit and "got no answer" in junit
