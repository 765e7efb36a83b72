"""A new provider is its own module and one registration: specs build it, runs go through it, plans price it."""

import importlib.util
import json
import re
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from paths import REPO, TESTS

from pytest_fairness.models.providers import PROVIDERS

EXAMPLE = TESTS / "provider_example" / "gateway.py"
#: What answers behind the gateway: a chat-only app that follows the implicit-bias list instruction.
APP = TESTS / "python_apps" / "list_app.py"

CONFTEST = """
from gateway import PROVIDER
from pytest_fairness import register_provider

register_provider("gateway", PROVIDER)
"""
CHECK = ("--fairness-suite=gender", "-k", "implicit_bias and career", "-p", "no:randomly")


class Gateway(BaseHTTPRequestHandler):
    """A team's chat gateway on loopback: ``POST /chat`` answered by the list app; every body is kept."""

    bodies: ClassVar[list[dict]] = []
    answer: ClassVar[Any] = None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Gateway.bodies.append(body)
        reply = json.dumps({"reply": Gateway.answer(body["messages"])}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def gateway() -> Iterator[str]:
    spec = importlib.util.spec_from_file_location("gateway_app", APP)
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
    Gateway.bodies, Gateway.answer = [], staticmethod(app.answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def project(pytester: pytest.Pytester) -> Iterator[pytest.Pytester]:
    shutil.copy(EXAMPLE, pytester.path / "gateway.py")
    pytester.makeconftest(CONFTEST)
    saved = dict(PROVIDERS)
    yield pytester
    PROVIDERS.clear()  # the runs are in this process: the registration must not outlive the test
    PROVIDERS.update(saved)


def test_a_registered_provider_runs_suite_checks_through_its_own_client(project, gateway):
    project.runpytest(*CHECK, f"--fairness-model=gateway:{gateway}", "--fairness-report=r.json")
    report = json.loads((project.path / "r.json").read_text())
    (check,) = report["checks"]
    assert report["run"]["status"] == "complete"
    assert check["result"]["model_id"] == f"gateway:{gateway}"
    assert check["result"]["n"] == 20 and check["result"]["n_unusable"] == 0  # every reply relayed whole
    asked = [b for b in Gateway.bodies if b["messages"][-1]["content"] != "Reply with OK."]  # not the probe
    assert len(asked) == check["result"]["calls"]["calls"] == 20


def test_the_plan_prices_it_from_the_spec_and_says_why_it_cannot_without(project, gateway):
    priced = project.runpytest(*CHECK, f"--fairness-model=gateway:{gateway}?price_in=1&price_out=2", "--fairness-plan")
    priced.stdout.fnmatch_lines([f"price of the model gateway:{gateway}?price_in=1&price_out=2: $1 in / $2 out*"])
    unpriced = project.runpytest(*CHECK, f"--fairness-model=gateway:{gateway}", "--fairness-plan")
    unpriced.stdout.fnmatch_lines(["*price unknown (no price map for provider 'gateway': give ?price_in=*"])
    assert not Gateway.bodies  # a plan calls no model


def test_its_spec_line_joins_the_help_and_its_own_errors_name_the_fix(project):
    unknown = project.runpytest("--fairness-model=gatway:x")
    unknown.stderr.fnmatch_lines(
        ["*valid providers: *, gateway. use *'gateway:http://HOST:PORT' (the team's chat gateway)*"]
    )
    bad = project.runpytest(*CHECK, "--fairness-model=gateway:nowhere")
    bad.stderr.fnmatch_lines(["*'gateway:nowhere' names no gateway URL: use gateway:http://HOST:PORT*"])


def test_the_walkthrough_quotes_the_example_as_it_is():
    """Every line of docs/adding-a-provider.md's code (but its elisions) is in the example or its conftest."""
    doc = (REPO / "docs" / "adding-a-provider.md").read_text()
    example = EXAMPLE.read_text() + CONFTEST
    quoted = [line.strip() for block in re.findall(r"```python\n(.*?)```", doc, re.S) for line in block.splitlines()]
    assert [line for line in quoted if line and "..." not in line and line not in example] == []
