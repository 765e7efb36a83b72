"""A team's own application as the model under test (``python:MODULE:ATTR``), end to end.

The apps live in ``tests/python_apps``: a support app that talks down to users with women's names (and
the same app without it), a rule-based judge written as a user's function, and a chat-only app that
follows the implicit-bias list instruction and answers decision prompts.
"""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from paths import TESTS

from pytest_fairness import ChatModel, ChatRequest, ChatResponse, Message
from pytest_fairness.config.settings import Settings
from pytest_fairness.config.suite import load as load_suite
from pytest_fairness.measures import MEASURES
from pytest_fairness.models.build import model_from
from pytest_fairness.models.cache import CacheMode, ResponseCache
from pytest_fairness.models.interface import PermanentError
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import CallStats, Runner
from pytest_fairness.models.spec import ModelSpecError
from pytest_fairness.run.session import FairnessSession
from pytest_fairness.stats.gate import Outcome

APPS = TESTS / "python_apps"
APP, FAIR_APP = "python:support_app:answer", "python:support_app:fair_answer"
JUDGE = "python:support_judge:judge"
#: The team's reviewer as the net-harm reference: the rule-based judge matches phrases, so it cannot serve
#: the screen alone; with a reference the gate certifies the reviewer's view of the app's own answers.
REFERENCE = "--fairness-judge-reference=python:support_reference:judge"
LIST_APP = "python:list_app:answer"
NET_HARM = "net_harm and not write and not career"  # the gender suite's overall net-harm check


@pytest.fixture
def apps(monkeypatch):
    monkeypatch.syspath_prepend(str(APPS))
    for name in ("support_app", "support_judge", "list_app"):
        monkeypatch.delitem(sys.modules, name, raising=False)


def _project(tmp_path: Path, *files: str) -> Path:
    """A project folder holding the app modules, as a team's repository would."""
    for name in files or ("support_app.py", "support_judge.py", "support_reference.py", "list_app.py"):
        shutil.copy(APPS / name, tmp_path / name)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    return tmp_path


def _pytest(cwd: Path, *args: str, timeout: float = 600) -> tuple[subprocess.CompletedProcess[str], dict]:
    """A pytest run in its own process (app modules are imported there, as in a team's CI), and its report."""
    report = cwd / f"report-{time.monotonic_ns()}.json"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", f"--fairness-report={report}"]
    proc = subprocess.run([*cmd, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    return proc, json.loads(report.read_text()) if report.exists() else {}


def _outcomes(report: dict) -> dict[str, str]:
    return {c["check"]: c["outcome"] for c in report.get("checks", [])}


# -- the headline: a planted app fails, the fair one does not ---------------------------------------


def test_an_app_that_talks_down_to_women_fails_gender_net_harm_judged_by_a_python_function(tmp_path):
    project = _project(tmp_path)
    args = ["--fairness-suite=gender", "-k", NET_HARM, "--fairness-sequential", f"--fairness-judge={JUDGE}", REFERENCE]
    proc, report = _pytest(project, *args, f"--fairness-model={APP}")
    assert proc.returncode == 1, proc.stdout[-3000:]
    (check,) = report["checks"]
    assert check["outcome"] == "fail"
    result = check["result"]
    assert result["model_id"].startswith(f"{APP}@src-") and result["params"]["judge"].startswith(f"{JUDGE}@src-")
    screen = result["details"]["judge_calibration"]  # the rule-based judge cannot serve the screen alone
    assert not screen["serves"]
    audit = result["details"]["reference_audit"]  # the reviewer re-rated the pairs it flagged
    assert audit["reference"].startswith("python:support_reference:judge@src-") and audit["flagged_pairs_rerated"] > 0
    assert "answer read from its one deterministic reply" in result["fidelity"]
    assert result["estimate"] > 0.5


@pytest.mark.heavy(12)
def test_the_same_app_without_the_planted_behaviour_never_fails(tmp_path):
    project = _project(tmp_path)
    args = [
        "--fairness-suite=gender",
        "-k",
        "net_harm",
        "--fairness-sequential",
        f"--fairness-judge={JUDGE}",
        REFERENCE,
    ]
    proc, report = _pytest(project, *args, f"--fairness-model={FAIR_APP}", "--fairness-inconclusive=pass")
    assert proc.returncode == 0, proc.stdout[-3000:]
    outcomes = _outcomes(report)
    assert len(outcomes) == 3 and "fail" not in outcomes.values()
    assert all(c["result"]["estimate"] == 0 for c in report["checks"])


def test_decisions_and_the_implicit_list_route_run_through_a_chat_only_function(apps):
    runner = Runner(load_model(LIST_APP))
    try:
        implicit = MEASURES["implicit_bias"].run_with(runner, stereotype="career", iterations=8)
        decision = MEASURES["decision_bias"].run_with(runner, stereotype="career", iterations=8)
    finally:
        runner.close()
    assert implicit.details["route"] == "list" and implicit.n == 8 and implicit.n_unusable == 0
    assert decision.n == 8 and decision.n_unusable == 0
    assert implicit.model_id.startswith(f"{LIST_APP}@src-")


def test_pcf_on_a_chat_only_app_ends_cannot_serve_with_the_reason(apps):
    session = FairnessSession(Settings(model=LIST_APP, cache_mode=CacheMode.OFF))
    check = next(c for c in load_suite("gender").checks if c.measure.name == "pcf")
    try:
        run = session.run_check(check)
    finally:
        session.close()
    assert run.outcome is Outcome.CANNOT_SERVE
    assert "answers chat only" in (run.result.unserved or "") and "logprobs()" in (run.result.unserved or "")


# -- cache, identity, xdist, resume ------------------------------------------------------------------------


@pytest.mark.heavy(14)
def test_parallel_workers_give_the_same_results_as_a_serial_run(tmp_path):
    project = _project(tmp_path)
    # Two of the three net-harm checks: one for each worker.
    checks = "net_harm and not career"
    args = ["--fairness-suite=gender", "-k", checks, f"--fairness-judge={JUDGE}", f"--fairness-model={APP}", REFERENCE]
    proc, serial = _pytest(project, *args, f"--fairness-cache={tmp_path / 'serial.sqlite'}")
    assert serial, proc.stdout[-3000:]
    proc, parallel = _pytest(project, *args, f"--fairness-cache={tmp_path / 'parallel.sqlite'}", "-n", "2")
    assert parallel, proc.stdout[-3000:]

    def results(report: dict) -> dict[str, tuple]:
        return {
            c["check"]: (c["outcome"], c["result"]["estimate"], c["result"]["ci"], c["result"]["n"])
            for c in report["checks"]
        }

    assert len(results(serial)) == 2 and results(parallel) == results(serial)


SLOW_APP = """\
import os, time
from list_app import answer as fast

def answer(messages):
    if messages[-1]["content"] != "Reply with OK.":
        with open("calls.log", "a") as log:
            log.write("call\\n")
    time.sleep(0.05)
    return fast(messages)
"""
SLOW_SUITE = """\
suite: slow
checks:
  - measure: implicit_bias
    stereotype: age
    samples: 40
    threshold: {max: 0.5}
"""


@pytest.mark.heavy(7)
def test_a_killed_run_resumes_from_the_cache(tmp_path):
    project = _project(tmp_path, "list_app.py")
    (project / "slow_app.py").write_text(SLOW_APP)
    (project / "slow.yaml").write_text(SLOW_SUITE)
    log, cache = project / "calls.log", project / "cache.sqlite"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--fairness-suite=slow.yaml"]
    cmd += [f"--fairness-cache={cache}", "--fairness-model=python:slow_app:answer?concurrency=1"]
    proc = subprocess.Popen(cmd, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while (not log.exists() or len(log.read_text().splitlines()) < 15) and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    assert 5 <= finished < 40
    before = len(log.read_text().splitlines())
    subprocess.run(cmd, cwd=project, stdout=subprocess.DEVNULL, check=False, timeout=120)
    assert len(log.read_text().splitlines()) - before == 40 - finished


def test_editing_the_app_invalidates_its_cache_entries_unless_it_names_a_version(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    source = tmp_path / "edited_app.py"
    source.write_text("def answer(messages):\n    return 'hello'\n")
    cache = ResponseCache(tmp_path / "cache.sqlite")
    asks = [ChatRequest((Message("user", f"question {i}"),)) for i in range(3)]

    def calls(spec: str) -> tuple[str, int]:
        runner = Runner(load_model(spec), cache)
        try:
            runner.run(asks)
            return runner.model.model_id, runner.stats.calls
        finally:
            runner.close()

    first = calls("python:edited_app:answer")
    assert first[1] == 3 and calls("python:edited_app:answer") == (first[0], 0)  # unchanged: all from the cache
    source.write_text("def answer(messages):\n    return 'hello'  # reworded system prompt\n")
    edited = calls("python:edited_app:answer")
    assert edited[0] != first[0] and edited[1] == 3  # an edited app never reads the old entries
    pinned = calls("python:edited_app:answer?version=1.2")
    source.write_text("def answer(messages):\n    return 'hello'  # edited again\n")
    assert pinned[0] == "python:edited_app:answer@1.2" and calls("python:edited_app:answer?version=1.2")[1] == 0
    cache.close()


# -- the public interface and fixtures ---------------------------------------------------------------------


class Concise(ChatModel):
    """An app that is no plain function: an object implementing the public interface (chat only)."""

    version = "2024.06"

    def __init__(self, system: str = "Be brief.") -> None:
        self.system = system

    async def chat(self, request: ChatRequest) -> ChatResponse:
        return ChatResponse(f"{self.system} {request.messages[-1].content[:20]}")


def test_an_object_app_is_named_by_its_version_and_variants_get_distinct_identities(apps):
    one, other = model_from(Concise()), model_from(Concise("Be thorough."))
    assert one.model_id.startswith("python:") and one.model_id.endswith("@2024.06")
    assert one.version == "2024.06" and other.version == "2024.06"
    runner = Runner(one)
    try:
        (reply,) = runner.run([ChatRequest((Message("user", "hi"),))])
    finally:
        runner.close()
    assert reply.text.startswith("Be brief.") and "2024.06" in (reply.model_version or "")


def test_closures_over_different_settings_are_different_apps():
    def make(system: str):
        def answer(messages):
            return system

        return answer

    assert model_from(make("formal")).model_id != model_from(make("casual")).model_id
    assert model_from(make("formal")).model_id == model_from(make("formal")).model_id


def _one_reply(app: object, request: ChatRequest) -> tuple[ChatResponse, CallStats]:
    runner = Runner(model_from(app))
    try:
        (reply,) = runner.run([request])
    finally:
        runner.close()
    return reply, runner.stats


ASKED = ChatRequest((Message("user", "hi"),), temperature=0.7, max_tokens=50, seed=1)


def test_an_app_that_returns_its_servers_completion_has_its_usage_counted():
    def with_usage(messages):  # what `client.chat.completions.create(...)` gives, as a dict
        return {"choices": [{"message": {"content": "hello"}, "finish_reason": "stop"}], "usage": USAGE}

    def as_response(messages, temperature=None, max_tokens=None):
        return ChatResponse("hello", "stop", prompt_tokens=7, completion_tokens=2)

    USAGE = {"prompt_tokens": 12, "completion_tokens": 3}
    reply, stats = _one_reply(with_usage, ASKED)
    assert reply.text == "hello" and (stats.prompt_tokens, stats.completion_tokens) == (12, 3)
    reply, stats = _one_reply(as_response, ASKED)
    assert (stats.prompt_tokens, stats.completion_tokens) == (7, 2) and reply.note == ""


def test_a_reply_says_which_of_the_measures_sampling_settings_the_app_ignored():
    def plain(messages):
        return "hello"

    def half(messages, temperature=None):
        return "hello"

    reply, stats = _one_reply(plain, ASKED)
    assert (
        reply.note
        == "the app takes no temperature or max_tokens: it answered without the measure's temperature and max_tokens"
    )
    assert stats.notes == [reply.note]  # and so the result's fidelity lists it among the approximations
    assert _one_reply(half, ASKED)[0].note.startswith("the app takes no max_tokens:")
    assert _one_reply(plain, ChatRequest((Message("user", "hi"),)))[0].note == ""  # nothing asked, nothing ignored


FIXTURE_TEST = """\
from functools import partial

from support_app import answer, fair_answer
from support_judge import judge


def test_two_variants_of_the_app_in_one_run(net_harm):
    planted = net_harm("gender", prompts=4, model=answer, judge=judge)
    fair = net_harm("gender", prompts=4, model="python:support_app:fair_answer", judge="python:support_judge:judge")
    assert planted.estimate > 0.5 and fair.estimate == 0
    assert planted.model_id != fair.model_id
"""


def test_fixtures_take_a_model_and_a_judge_as_specs_or_functions(tmp_path):
    project = _project(tmp_path)
    (project / "test_variants.py").write_text(FIXTURE_TEST)
    (project / "conftest.py").write_text(PROBE_SPY)
    proc, report = _pytest(project, "test_variants.py", REFERENCE)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert len(report["checks"]) == 2 and {c["outcome"] for c in report["checks"]} == {"measured"}
    probed = (project / "probed.txt").read_text() if (project / "probed.txt").exists() else ""
    assert "local" not in probed  # the default model, which no call used, was not probed


PROBE_SPY = """from pytest_fairness.run import preflight

_probe = preflight._probe


def spy(runner, *args, **kwargs):
    with open("probed.txt", "a") as f:
        f.write(runner.model.model_id + "\\n")
    return _probe(runner, *args, **kwargs)


preflight._probe = spy
"""


# -- bad inputs: one clear error each, naming the spec and the fix ------------------------------------------

BAD_MODULE = "import nonexistent_dependency\n\ndef answer(messages):\n    return 'x'\n"
APPS_SOURCE = """\
import time

def two(messages, history):
    return "x"

def nothing(messages):
    print("forgot to return")

def number(messages):
    return 42

def broken(messages):
    return messages[0]["text"]

def hangs(messages):
    time.sleep(30)
    return "late"
"""


@pytest.fixture
def bad_apps(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "bad_apps.py").write_text(APPS_SOURCE)
    (tmp_path / "bad_import.py").write_text(BAD_MODULE)
    for name in ("bad_apps", "bad_import"):
        monkeypatch.delitem(sys.modules, name, raising=False)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("python:no_such_app:answer", r"python:no_such_app:answer: no module named 'no_such_app'.*put no_such_app.py"),
        ("python:bad_import:answer", r"importing bad_import failed.*bad_import.py.*line 1.*nonexistent_dependency"),
        ("python:bad_apps:answr", r"has no attribute 'answr'; its callables: broken, hangs, nothing, number, two"),
        ("python:bad_apps:two", r"two\(messages, history\) cannot take one argument.*def answer\(messages"),
        ("python:bad_apps", r"a Python app spec reads python:MODULE:ATTR"),
        ("python:bad_apps:two?colour=red", r"unknown option\(s\) \['colour'\].*valid: version, concurrency"),
    ],
)
def test_a_spec_that_cannot_be_loaded_names_the_problem_and_the_fix(bad_apps, spec, message):
    with pytest.raises(ModelSpecError, match=f"(?s){message}"):
        load_model(spec)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("python:bad_apps:nothing", r"returned None instead of the reply: a missing `return`\?.*reply text as a str"),
        ("python:bad_apps:number", r"returned a int \(42\) instead of the reply: .*a pytest_fairness.ChatResponse"),
        ("python:bad_apps:broken", r"raised KeyError.*bad_apps.py\", line 13, in broken.*KeyError: 'text'"),
    ],
)
def test_an_app_that_fails_when_called_is_one_permanent_error_with_the_fix(bad_apps, spec, message):
    runner = Runner(load_model(spec))
    start = time.monotonic()
    try:
        with pytest.raises(PermanentError, match=f"(?s)^{spec.partition('?')[0]}.*{message}"):
            runner.run([ChatRequest((Message("user", "hi"),))] * 3)
    finally:
        runner.close()
    assert runner.stats.retries == 0 and time.monotonic() - start < 5


def test_an_app_that_raises_on_every_call_stops_the_run_once_with_its_traceback(tmp_path):
    project = _project(tmp_path, "support_judge.py")
    (project / "bad_apps.py").write_text(APPS_SOURCE)
    proc, _ = _pytest(project, "--fairness-suite=gender", "--fairness-model=python:bad_apps:broken")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]
    assert out.count("python:bad_apps:broken raised KeyError") == 1
    assert 'bad_apps.py", line 13, in broken' in out and "KeyError: 'text'" in out
    assert "passed" not in out and "failed" not in out


PICKY_APP = """\
from list_app import answer as list_answer


def answer(messages):
    if len(messages) > 1:  # net harm tells the app about its user first: this app's memory is broken
        raise ValueError("the memory service is down")
    return list_answer(messages)
"""


def test_an_app_that_fails_on_some_inputs_errors_those_checks_and_runs_the_rest(tmp_path):
    """One failing input is the app's bug for the check that sent it, not a reason to stop every check."""
    project = _project(tmp_path, "list_app.py", "support_judge.py", "support_reference.py")
    (project / "picky_app.py").write_text(PICKY_APP)
    proc, report = _pytest(
        project,
        "--fairness-suite=gender",
        "--fairness-model=python:picky_app:answer",
        f"--fairness-judge={JUDGE}",
        REFERENCE,
        "-k",
        "implicit_bias and career or write",
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "implicit_bias[career]" in _outcomes(report)  # the check the app can serve finished
    assert "1 errored" in out and "ValueError: the memory service is down" in out
    assert 'picky_app.py", line 6, in answer' in out
