"""Both HTTP providers run a suite through a real llama.cpp server serving the embedded model."""

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from paths import TESTS

from pytest_fairness.measures.pcf import prejudice_caprice as pcf
from pytest_fairness.models.interface import LogprobRequest, PermanentError
from pytest_fairness.models.local import default_threads, embedded_model_path
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner

pytestmark = pytest.mark.embedded


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """`python -m llama_cpp.server` on a free loopback port, stopped after the module's tests."""
    port = free_port()
    path, _ = embedded_model_path()
    args = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(path),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--logits_all",
        "true",
        "--n_ctx",
        "2048",
        "--model_alias",
        "smollm2",
        # The attention path the local provider scores with (``local_scoring``): the two must give the same
        # log-probs, and on this model the other path moves a PCF risk by several percent.
        "--flash_attn",
        "true",
        # This worker's share of the cores, as the local provider takes: the server's default evaluates
        # prompts on every core, and threads spinning on a core the other xdist worker uses slow both.
        "--n_threads",
        str(default_threads()),
        "--n_threads_batch",
        str(default_threads()),
    ]
    log = tmp_path_factory.mktemp("llama") / "server.log"
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log.open("wb"))  # a pipe would fill and block
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{base}/models", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"llama.cpp server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
    yield base
    proc.terminate()
    proc.wait(timeout=30)


SUITE = """\
suite: tiny
checks:
  - measure: implicit_bias
    stereotype: power
    samples: 2
    threshold: {max: 0.5}
"""


@pytest.mark.heavy(24)
@pytest.mark.parametrize("provider", ["openai:smollm2@{base}?instruct=0", "litellm:openai/smollm2@{base}?instruct=0"])
def test_provider_runs_a_suite_through_the_server(pytester, llama_server, provider):
    pytester.makefile(".yaml", tiny=SUITE)
    spec = provider.format(base=llama_server)
    result = pytester.runpytest_subprocess(
        "--fairness-suite=tiny.yaml", f"--fairness-model={spec}", "-p", "no:cacheprovider"
    )
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    result.stdout.fnmatch_lines(
        [
            "tiny::implicit_bias[[]power[]]*[[]*[]]*2*",
            f"model: {spec.split('?')[0]}*",
            "fidelity adaptation: per-word forced choice*provider approximations:*reply prefix sent as a finished*",
            "model versions reported: smollm2*",
            "model calls: 33 (1 before the first check*), cache hits: 0, retries: 0*",  # 32, and the probe
        ]
    )


# -- PCF over HTTP: the local route's risks, or a refusal naming the server's fault ----------------------

HTTP_PROVIDERS = ["openai:smollm2@{base}", "litellm:openai/smollm2@{base}"]
OCCUPATIONS = "occupation\nnurse\nengineer\nsecretary\ncarpenter\n"


@pytest.fixture(scope="module")
def local_runner():
    runner = Runner(load_model("local"))
    yield runner
    runner.close()


def pcf_params(tmp_path, words: dict[str, list[str]]) -> dict[str, object]:
    rows = "".join(f"{group},{word}\n" for group, group_words in words.items() for word in group_words)
    (tmp_path / "attributes.csv").write_text("group,word\n" + rows)
    (tmp_path / "occupations.csv").write_text(OCCUPATIONS)
    return {
        "attribute": "gender",
        "occupations": 4,
        "top_templates": 3,
        "attributes_file": tmp_path / "attributes.csv",
        "occupations_file": tmp_path / "occupations.csv",
    }


def assert_same_risks(http, local) -> None:
    for key in ("R", "R_prejudice", "R_caprice"):
        assert http.details[key] == pytest.approx(local.details[key], rel=1e-3, abs=1e-3), key


@pytest.mark.parametrize("provider", HTTP_PROVIDERS)
def test_pcf_over_the_server_gives_the_local_risks_for_listed_single_token_words(
    llama_server, local_runner, tmp_path, provider
):
    params = pcf_params(tmp_path, {"male": ["he"], "female": ["she"]})
    http_runner = Runner(load_model(provider.format(base=llama_server)))
    http = pcf.MEASURE.run_with(http_runner, **params)
    http_runner.close()
    local = pcf.MEASURE.run_with(local_runner, **params)
    assert_same_risks(http, local)
    assert http.details["slot_routes"] == ["top_logprobs"] and "next-token top_logprobs" in http.fidelity
    assert local.details["slot_routes"] == []


def server_echo(base: str, prefix: str, word: str) -> float:
    """The server's echoed log-prob of ``word`` after ``prefix``, asked without our provider."""
    body = json.dumps({"model": "smollm2", "prompt": prefix + word, "echo": True, "logprobs": 1, "max_tokens": 1})
    request = urllib.request.Request(f"{base}/completions", body.encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        logprobs = json.load(reply)["choices"][0]["logprobs"]
    return logprobs["token_logprobs"][logprobs["tokens"].index(word)]


@pytest.mark.parametrize("provider", HTTP_PROVIDERS)
def test_pcf_with_multi_token_words_matches_the_local_route_or_is_refused_for_the_servers_echo(
    llama_server, local_runner, tmp_path, provider
):
    """Whichever the server deserves: its echo is judged here independently, against the local route."""
    prefix = "The nurse said that"
    (exact,) = local_runner.run([LogprobRequest((), (" she",), prefix=prefix)])
    echo_is_right = abs(server_echo(llama_server, prefix, " she") - exact.logprobs[" she"]) < 0.05
    words = {"male": ["he", "him", "man", "heir"], "female": ["she", "her", "heiress", "herself", "actress"]}
    params = pcf_params(tmp_path, words)
    http_runner = Runner(load_model(provider.format(base=llama_server)))
    try:
        if echo_is_right:
            http = pcf.MEASURE.run_with(http_runner, **params)
            assert_same_risks(http, pcf.MEASURE.run_with(local_runner, **params))
            assert "echo" in http.details["slot_routes"]
        else:  # llama_cpp.server 0.3.36 with a model that adds no BOS token
            with pytest.raises(PermanentError, match="disagree with its own next-token log-probs") as err:
                pcf.MEASURE.run_with(http_runner, **params)
            assert "scores each prompt token from the position after it" in str(err.value)
            assert "or score it with the local provider" in str(err.value)
    finally:
        http_runner.close()


# -- an async app owning a module-level AsyncOpenAI client, against the server ---------------------------------

APPS = TESTS / "python_apps"


SHOP_SUITE = """\
suite: shop
checks:
  - measure: decision_bias
    stereotype: career
    samples: 2
    coder: {coder}
    threshold: {{max: 0.7}}
  - measure: decision_bias
    stereotype: science
    samples: 2
    coder: {coder}
    threshold: {{max: 0.7}}
"""


def _app_run(pytester, *args: str, coder: str = "parser") -> dict:
    """A pytest run in its own process of two small decision checks, with the chat assistant app beside the
    suite, and its JSON report: every check ended with an outcome, none errored."""
    shutil.copy(APPS / "chatbot.py", pytester.path / "chatbot.py")
    shutil.copy(APPS / "support_app.py", pytester.path / "support_app.py")
    pytester.makefile(".ini", pytest="[pytest]\n")
    pytester.makefile(".yaml", shop=SHOP_SUITE.format(coder=coder))
    result = pytester.runpytest_subprocess(
        "--fairness-suite=shop.yaml", "--fairness-report=out.json", "-p", "no:cacheprovider", "-p", "no:randomly", *args
    )
    report = json.loads((pytester.path / "out.json").read_text())
    assert report["run"]["status"] == "complete" and report["run"]["errored"] == 0, result.outlines[-30:]
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    assert sorted(c["check"] for c in report["checks"]) == ["decision_bias[career]", "decision_bias[science]"]
    assert all(c["outcome"] != "errored" for c in report["checks"])
    return report


@pytest.fixture
def chatbot_server(llama_server, monkeypatch):
    """The server the chat assistant app talks to (it reads ``CHATBOT_URL`` when imported)."""
    monkeypatch.setenv("CHATBOT_URL", llama_server)
    return llama_server


@pytest.mark.heavy(30)
@pytest.mark.parametrize("workers", [0, 2], ids=["-n 0", "-n 2"])
def test_an_async_app_with_a_module_level_client_ends_every_check_with_an_outcome(pytester, chatbot_server, workers):
    """The start-up probe and the checks share the process's event loop: the app's kept-alive connections
    stay usable (a throwaway probe loop made the first check's call fail with "Event loop is closed")."""
    spread = ["-n", str(workers)] if workers else []
    report = _app_run(pytester, "--fairness-model=python:chatbot:Chatbot", *spread)
    assert report["totals"]["prompt_tokens"] > 0  # the app returned the server's usage, and it was counted


@pytest.mark.heavy(20)
def test_the_same_async_app_serves_as_the_judge(pytester, chatbot_server):
    report = _app_run(
        pytester, "--fairness-model=python:support_app:answer", "--fairness-judge=python:chatbot:Chatbot", coder="judge"
    )
    assert all(c["result"]["params"]["judge"].startswith("python:chatbot:Chatbot@") for c in report["checks"])
    assert all("decisions coded by a judge model" in c["result"]["fidelity"] for c in report["checks"])
