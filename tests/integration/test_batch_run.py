"""A gender net-harm run in batch mode, end to end on the fake server (model and judge): the same results
as online, submit-and-exit with its own exit status, and a killed run that resumes its batch."""

import json
import signal
import subprocess
import sys
import time

import pytest
import yaml
from fake_openai import FakeOpenAI, measure_requests
from harm_judges import chatbot_and_judge

from pytest_fairness.config import suite
from pytest_fairness.config.settings import Settings
from pytest_fairness.models.batch import PENDING_EXIT
from pytest_fairness.records.measure_result import MeasureResult
from pytest_fairness.run.session import FairnessSession

SUITE = """\
suite: batchy
checks:
  - measure: net_harm
    comparison: gender
    samples: 4
    max_tokens: 40
    threshold: {max: 0.5}
"""


def pytest_args(server: FakeOpenAI, cache: str, report: str, *extra: str) -> list[str]:
    return [
        "--fairness-suite=batchy.yaml",
        f"--fairness-model=openai:fake@{server.base_url}",
        f"--fairness-cache={cache}",
        f"--fairness-report={report}",
        "-p",
        "no:cacheprovider",
        *extra,
    ]


def net_harm(server: FakeOpenAI, cache, batch: bool, family: str = "openai:fake") -> tuple[MeasureResult, int]:
    """One run of the suite's check through a fresh session; its result and the measure requests sent online."""
    before = len(measure_requests(server))
    settings = Settings(model=f"{family}@{server.base_url}", cache_path=cache, batch=batch, batch_wait=1)
    session = FairnessSession(settings)
    try:
        (check,) = suite.parse(yaml.safe_load(SUITE), "batchy.yaml").checks
        return session.run_check(check).result, len(measure_requests(server)) - before
    finally:
        session.close()


@pytest.mark.parametrize("family", ["openai:fake", "litellm:openai/fake"])
def test_net_harm_in_batch_mode_equals_the_online_run(tmp_path, family):
    with FakeOpenAI(answer=chatbot_and_judge) as server:
        online, sent_online = net_harm(server, tmp_path / "online.sqlite", batch=False)
        batched, sent_by_batch = net_harm(server, tmp_path / "batch.sqlite", batch=True, family=family)
    assert sent_by_batch == 0 and sent_online == online.calls.calls > 0
    assert batched.calls.batched == batched.calls.calls == online.calls.calls
    assert (batched.summary, batched.samples, batched.n_unusable) == (online.summary, online.samples, online.n_unusable)
    assert online.summary.mean != 0  # the answers differ and the judge finds harm: a mix-up would show
    assert len(server.batch_api.batches) == 3  # judge screen, chatbot answers, judge letters: one batch each
    assert set(server.batch_api.submitted.values()) == {1}


def test_submit_and_exit_ends_with_its_own_status_and_the_rerun_collects(pytester):
    pytester.makefile(".yaml", batchy=SUITE)
    with FakeOpenAI(answer=chatbot_and_judge) as server:
        server.batch_api.script.append("hold")
        args = pytest_args(server, "batch.sqlite", "batch.json", "--fairness-batch")
        submitted = pytester.runpytest(*args)
        assert submitted.ret == PENDING_EXIT
        submitted.stdout.fnmatch_lines(
            [
                "*submitted * requests to openai:fake@* as batch batch_1 (*); rerun the same command to collect*",
                f"exit status {PENDING_EXIT}: * requests wait in 1 provider batch(es); rerun the same command*",
            ]
        )
        assert json.loads((pytester.path / "batch.json").read_text())["run"]["not_run"] == 1
        server.batch_api.release()
        collected = pytester.runpytest(*args)  # the batches after the held one finish at their first look
        assert collected.ret in (0, 1)
        assert not measure_requests(server)
    report = json.loads((pytester.path / "batch.json").read_text())
    assert report["run"]["status"] == "complete"
    (check,) = report["checks"]
    assert check["result"]["calls"]["batched"] == check["result"]["calls"]["calls"] > 0
    assert set(server.batch_api.submitted.values()) == {1}


def test_killed_batch_run_resumes_its_batch_without_submitting_again(pytester):
    pytester.makefile(".yaml", batchy=SUITE)
    with FakeOpenAI(answer=chatbot_and_judge) as server:
        server.batch_api.script.append("hold")
        args = [*pytest_args(server, "c.sqlite", "r.json", "--fairness-batch"), "--fairness-batch-wait=10"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", *args],
            cwd=pytester.path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not server.batch_api.polls and time.monotonic() < deadline:  # submitted and noted: now waiting on it
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert len(server.batch_api.batches) == 1
        server.batch_api.release()
        rerun = pytester.runpytest(*args)
    assert rerun.ret in (0, 1)
    assert set(server.batch_api.submitted.values()) == {1}  # the held batch was collected, never resubmitted
    assert len(server.batch_api.batches) == 3
    assert json.loads((pytester.path / "r.json").read_text())["run"]["status"] == "complete"
