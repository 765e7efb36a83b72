"""Both HTTP providers run a suite through a real llama.cpp server serving the embedded model."""

import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from pytest_fairness.models.local import embedded_model_path

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
    samples: 3
    threshold: {max: 0.5}
"""


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
            "tiny::implicit_bias[[]power[]]*[[]*[]]*3*",
            f"model: {spec.split('?')[0]}*",
            "fidelity adaptation: per-word forced choice*provider approximations:*reply prefix sent as a finished*",
            "model versions reported: smollm2*",
            "model calls: 48, cache hits: 0, retries: 0*",
        ]
    )
