"""Run-level faults (no key, a closed port, a refused key, a file that is no model, a damaged cache) end
the run before its first check, at once and with one message naming the fix; a check that meets a
model error later shows the message, not the plugin's internals."""

import collections
import json
import socket
import time

import pytest
from fake_openai import FakeOpenAI, measure_requests

from pytest_fairness.run.preflight import TEXT_PROBE

SUITE = """\
suite: small
checks:
  - measure: implicit_bias
    stereotypes: [career, science, power]
    samples: 4
    threshold: {max: 0.5}
"""


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, float, list[str]]:
    """A pytest run on the small suite (in this process: a fresh one costs seconds of start-up, and pytester
    restores the modules): its result, wall seconds and non-blank output lines."""
    pytester.makefile(".yaml", small=SUITE)
    start = time.monotonic()
    result = pytester.runpytest("--fairness-suite=small.yaml", "-q", "-p", "no:cacheprovider", *args)
    lines = [line for line in result.outlines + result.errlines if line.strip()]
    return result, time.monotonic() - start, lines


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_missing_api_key_is_a_usage_error_before_any_check(pytester, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result, seconds, lines = run(pytester, "--fairness-model=openai:gpt-4o")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'openai:gpt-4o' calls the OpenAI API but OPENAI_API_KEY is not set: export it*"])
    assert seconds < 30 and len(lines) <= 4, lines


def test_a_closed_port_stops_the_run_once_naming_the_fix(pytester):
    # Two attempts, not the default six (about 8 s of waits): the retries themselves are the runner's tests.
    model = f"--fairness-model=openai:m@http://127.0.0.1:{closed_port()}/v1"
    result, seconds, lines = run(pytester, model, "--fairness-max-attempts=2")
    assert result.ret == 2
    out = "\n".join(lines)
    assert "stopped before the first check" in out and "connection failed" in out and "(after 2 attempts)" in out
    assert "check that the server is running" in out and "--fairness-cache-mode=replay" in out
    assert "FAILED" not in out and "Traceback" not in out
    assert seconds < 30 and len(lines) <= 4, lines


def test_a_text_file_given_as_gguf_is_named_as_not_a_gguf_file(pytester):
    pytester.path.joinpath("model.gguf").write_text("notes, not weights\n")
    result, seconds, lines = run(pytester, "--fairness-model=local:model.gguf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*model.gguf (from model spec 'local:model.gguf') is not a GGUF file*"])
    assert seconds < 30 and len(lines) <= 4, lines


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("openai:m@http://127.0.0.1:1/v1?tmeout=5", "*unknown option(s) [[]'tmeout'[]]*valid: timeout*"),
        ("openai:m@http://127.0.0.1:1/v1?timeout=0", "*option timeout in * must be positive*"),
        ("synthetic:iat?bias=abc", "*synthetic option bias='abc' must be a number*"),
        ("local:/nonexistent.gguf", "*no GGUF file at /nonexistent.gguf*give the path of a .gguf file*"),
    ],
)
def test_bad_model_options_are_usage_errors_before_any_check(pytester, spec, message):
    pytester.makefile(".yaml", small=SUITE)
    result = pytester.runpytest("--fairness-suite=small.yaml", f"--fairness-model={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_bad_judge_spec_is_found_before_a_check_that_needs_the_judge(pytester):
    pytester.makefile(
        ".yaml",
        harm="suite: h\nchecks:\n  - measure: net_harm\n    comparison: gender\n    threshold: {max: 0.5}\n",
    )
    result = pytester.runpytest(
        "--fairness-suite=harm.yaml", "--fairness-model=synthetic:harm", "--fairness-judge=local:/nope.gguf"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no GGUF file at /nope.gguf*"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_refused_key_stops_the_run_after_one_request(pytester, workers):
    with FakeOpenAI(script=collections.deque(["401"] * 1000)) as server:
        result, seconds, lines = run(pytester, f"--fairness-model=openai:m@{server.base_url}", *workers)
        assert len(server.requests) == 1  # the probe: no check tried
    assert result.ret == 2
    assert any("the server rejected the API key (HTTP 401): set a valid OPENAI_API_KEY" in line for line in lines)
    assert seconds < 30 and len(lines) <= 6, lines


def test_a_damaged_cache_stops_the_run_naming_the_file_and_the_fix(pytester):
    cache = pytester.path / "cache.sqlite"
    cache.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 16)
    result, _, lines = run(pytester, "--fairness-model=synthetic:iat", f"--fairness-cache={cache}")
    assert result.ret == 2
    out = "\n".join(lines)
    assert f"the response cache {cache} is damaged" in out and "delete the file to start a new cache" in out
    assert len(lines) <= 4, lines


def test_a_model_error_during_a_check_shows_the_message_not_internals(pytester):
    # The probe is answered; every later request is refused.
    with FakeOpenAI(script=collections.deque(["", *["404"] * 1000])) as server:
        result, _, lines = run(pytester, f"--fairness-model=openai:m@{server.base_url}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=3)
    out = "\n".join(lines)
    # One message per check, nothing repeated inside tracebacks (the short summary, untruncated under CI,
    # repeats each message once more on its FAILED line).
    assert sum("HTTP 404" in line for line in lines if not line.startswith("FAILED ")) == 3
    assert "Traceback" not in out and "def runtest" not in out and "site-packages" not in out
    assert len(lines) < 25, lines


def test_replay_from_the_cache_needs_no_server(pytester):
    with FakeOpenAI() as server:
        spec = f"--fairness-model=openai:m@{server.base_url}"
        first, _, _ = run(pytester, spec)
        assert len(measure_requests(server)) == 12
    replay, _, _ = run(pytester, spec, "--fairness-cache-mode=replay")  # the server is gone
    assert replay.ret == first.ret
    assert replay.parseoutcomes() == first.parseoutcomes()


def test_unrelated_tests_run_whatever_the_fairness_model(pytester, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pytester.makepyfile("def test_plain():\n    assert True\n")
    pytester.runpytest("--fairness-model=openai:gpt-4o").assert_outcomes(passed=1)


def test_fixture_tests_get_the_same_check_before_they_run(pytester):
    pytester.makepyfile("def test_mine(implicit_bias):\n    implicit_bias('career')\n")
    with FakeOpenAI(script=collections.deque(["401"] * 1000)) as server:
        result = pytester.runpytest(f"--fairness-model=openai:m@{server.base_url}")
        assert len(server.requests) == 1
    assert result.ret == 2
    result.stdout.fnmatch_lines(["*stopped before the first check*HTTP 401*"])


PCF_SUITE = """\
suite: slots
checks:
  - measure: pcf
    attribute: gender
    samples: 6
    attributes_file: a.csv
    templates_file: t.csv
    occupations_file: o.csv
    threshold: {max: 400}
"""


OCCUPATIONS = ("nurse", "engineer", "teacher", "farmer", "lawyer", "baker")


def test_a_pcf_run_against_a_completions_only_server_reads_its_slots_and_decides(pytester):
    # A base model behind vLLM or llama.cpp: /v1/completions answers, chat is an HTTP 400. PCF never chats,
    # so the run's probe is a text completion and the check reads its slot probabilities by echo.
    pytester.path.joinpath("a.csv").write_text("group,word\nmale,he\nmale,man\nfemale,she\nfemale,heiress\n")
    pytester.path.joinpath("t.csv").write_text("template,count\nThe [X] said that [Y],3\nThe [X] and [Y],1\n")
    pytester.path.joinpath("o.csv").write_text("occupation\n" + "\n".join(OCCUPATIONS) + "\n")
    pytester.makefile(".yaml", slots=PCF_SUITE)
    with FakeOpenAI(chat=False) as server:
        result = pytester.runpytest(
            "--fairness-suite=slots.yaml",
            f"--fairness-model=openai:base@{server.base_url}",
            "--fairness-report=out.json",
            "-p",
            "no:cacheprovider",
        )
        sent = list(server.requests)
    assert result.ret in (0, 1), result.outlines + result.errlines  # not 2: the run was not stopped
    assert "stopped before the first check" not in result.stdout.str() + result.stderr.str()
    assert sent[0] == {**sent[0], "prompt": TEXT_PROBE.prefix, "max_tokens": 1} and "messages" not in sent[0]
    assert not [r for r in sent if "messages" in r]  # nothing was sent to the chat endpoint
    (check,) = json.loads((pytester.path / "out.json").read_text())["checks"]
    assert check["outcome"] == "fail"  # decided: the toy model's planted " he" boost is a real prejudice
    assert check["result"]["details"]["slot_routes"] == ["echo"] and check["result"]["n"] == 6


def test_a_run_that_chats_is_still_stopped_by_a_completions_only_server(pytester):
    with FakeOpenAI(chat=False) as server:
        result, _, lines = run(pytester, f"--fairness-model=openai:base@{server.base_url}")
        assert len(server.requests) == 1 and "messages" in server.requests[0]  # the chat probe: no check tried
    assert result.ret == 2
    assert any("stopped before the first check" in line and "400" in line for line in lines), lines


def test_the_probe_is_of_the_kinds_the_selected_checks_send():
    from pytest_fairness.config.suite import parse
    from pytest_fairness.models.providers import load_model
    from pytest_fairness.run.preflight import PROBE, probes_for

    gender = parse(
        {
            "suite": "g",
            "checks": [
                {"measure": "pcf", "attribute": "gender", "threshold": {"max": 400}},
                {"measure": "implicit_bias", "stereotype": "career", "threshold": {"max": 0.2}},
            ],
        },
        "test",
    ).checks
    pcf, implicit = gender
    model = load_model("synthetic:iat")
    assert probes_for([pcf], {"pcf"}, model, 0) == [TEXT_PROBE]
    assert probes_for([implicit], {"implicit_bias"}, model, 0) == [PROBE]
    assert probes_for(gender, {"pcf", "implicit_bias"}, model, 0) == [PROBE, TEXT_PROBE]
    assert probes_for([pcf], {"pcf", "decision_bias"}, model, 0) == [PROBE, TEXT_PROBE]  # a fixture may chat
    assert probes_for(None, {"pcf"}, model, 0) == [PROBE]  # needs unknown (fairness_session): chat, as before


def test_a_closed_port_behind_the_judges_reference_stops_the_run_before_the_first_check(pytester):
    pytester.makefile(
        ".yaml",
        harm="suite: h\nchecks:\n  - measure: net_harm\n    comparison: gender\n    samples: 40\n"
        "    threshold: {max: 0.5}\n",
    )
    result = pytester.runpytest(
        "--fairness-suite=harm.yaml",
        "--fairness-model=synthetic:harm",
        f"--fairness-judge-reference=openai:m@http://127.0.0.1:{closed_port()}/v1",
        "--fairness-max-attempts=2",
        "-p",
        "no:cacheprovider",
    )
    out = "\n".join(result.outlines + result.errlines)
    assert result.ret == 2 and "stopped before the first check: the judge's reference: " in out
    assert "connection failed" in out and "FAILED" not in out and "Traceback" not in out


@pytest.mark.heavy(30)
@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_the_probes_are_those_of_the_selected_checks_and_a_run_that_cannot_start_still_writes_its_reports(
    pytester, workers
):
    """A chat-only endpoint gated with -k on its implicit-bias checks: no text probe (a /v1/completions 404), with
    or without xdist. Selecting PCF, which needs text completions: the run stops before its first check, and its
    JSON and Markdown say it could not start, and why."""
    pytester.makefile(".yaml", mixed=SUITE + MIXED_PCF)
    out = ["--fairness-report=out/r.json", "--fairness-markdown=out/r.md", "-p", "no:cacheprovider", "-q"]
    with FakeOpenAI(completions=False) as server:
        model = f"--fairness-model=openai:chat@{server.base_url}"
        chats = pytester.runpytest("--fairness-suite=mixed.yaml", model, "-k", "implicit", *out, *workers)
        assert chats.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), chats.stdout.str()[-2000:]
        assert not any("prompt" in r for r in server.requests)  # no text probe for a check that was deselected
        stopped = pytester.runpytest("--fairness-suite=mixed.yaml", model, "-k", "pcf", *out, *workers)
    assert stopped.ret == 2
    report = json.loads((pytester.path / "out" / "r.json").read_text())
    assert report["run"]["status"] == "not started" and "HTTP 404" in report["run"]["stopped"]
    markdown = (pytester.path / "out" / "r.md").read_text()
    assert markdown.startswith("## Fairness report\n\n**The run could not start**: openai:chat@") and "404" in markdown


MIXED_PCF = """\
  - id: pcf
    measure: pcf
    attribute: gender
    samples: 2
    threshold: {max: 400}
"""
