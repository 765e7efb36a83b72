"""Malformed or unexpected replies over real HTTP: one clear line naming the endpoint, the model and what was
missing (transient or permanent as fits), never a crash of ours; and never a pytest INTERNALERROR."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from fake_openai import FakeOpenAI

from pytest_fairness.models.batch import BatchPolicy
from pytest_fairness.models.interface import ChatRequest, LogprobRequest, Message, PermanentError, TransientError
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import RetriesExhausted, RetryPolicy, Runner

RETRY = RetryPolicy(max_attempts=2, base_seconds=0.01, cap_seconds=0.02)
CHAT, TEXT, BATCHES, LINE = "chat", "completions", "batches", "batch line"


def edit(change: Callable[[dict[str, Any]], object]) -> Callable[[Any], Any]:
    """A mutation that changes a copy of the body in place (what ``change`` returns is ignored)."""

    def mutate(body: Any) -> Any:
        copied = copy.deepcopy(body)
        change(copied)
        return copied

    return mutate


def first(body: dict[str, Any]) -> dict[str, Any]:
    return body["choices"][0]


def half(body: Any) -> bytes:
    text = json.dumps(body).encode()
    return text[: len(text) // 2]


#: (name, the body it garbles, how). Each ends in an answer or one clear error.
MUTATIONS: list[tuple[str, str, Callable[[Any], Any]]] = [
    ("chat: not JSON", CHAT, lambda body: b"<html>502 Bad Gateway</html>"),
    ("chat: cut short", CHAT, half),
    ("chat: a JSON string", CHAT, lambda body: "ok"),
    ("chat: a JSON list", CHAT, lambda body: [body]),
    ("chat: null", CHAT, lambda body: None),
    ("chat: no choices", CHAT, edit(lambda b: b.pop("choices"))),
    ("chat: empty choices", CHAT, edit(lambda b: b.update(choices=[]))),
    ("chat: choices a string", CHAT, edit(lambda b: b.update(choices="x"))),
    ("chat: a choice that is a number", CHAT, edit(lambda b: b.update(choices=[1]))),
    ("chat: no message", CHAT, edit(lambda b: first(b).pop("message"))),
    ("chat: the message a string", CHAT, edit(lambda b: first(b).update(message="hello"))),
    ("chat: content a number", CHAT, edit(lambda b: first(b)["message"].update(content=42))),
    ("chat: a text completion's shape", CHAT, edit(lambda b: b.update(choices=[{"index": 0, "text": "hi"}]))),
    ("chat: usage garbled", CHAT, edit(lambda b: b.update(usage="lots"))),
    ("letter: log-prob content a string", CHAT, edit(lambda b: first(b).update(logprobs={"content": "x"}))),
    ("letter: top entries without tokens", CHAT, edit(lambda b: _tops(b, lambda e: e.pop("token")))),
    ("letter: a log-prob that is a word", CHAT, edit(lambda b: _tops(b, lambda e: e.update(logprob="high")))),
    ("letter: a NaN log-prob", CHAT, edit(lambda b: _tops(b, lambda e: e.update(logprob=float("nan"))))),
    ("text: a chat completion's shape", TEXT, edit(lambda b: first(b).update(message={"content": "x"}, text=None))),
    ("text: not JSON", TEXT, lambda body: b"Internal Server Error"),
    ("text: cut short", TEXT, half),
    ("text: no choices", TEXT, edit(lambda b: b.pop("choices"))),
    ("text: tokens a string", TEXT, edit(lambda b: first(b)["logprobs"].update(tokens="abc"))),
    ("text: top log-probs a list of lists", TEXT, edit(lambda b: first(b)["logprobs"].update(top_logprobs=[[1]]))),
    ("text: a token log-prob that is a word", TEXT, edit(lambda b: first(b)["logprobs"].update(token_logprobs=["x"]))),
    ("batch line: no choices", LINE, edit(lambda b: b.pop("choices"))),
    ("batch line: a string", LINE, lambda body: "oops"),
    ("batch line: no message", LINE, edit(lambda b: first(b).pop("message"))),
    ("batch: the batch object not JSON", BATCHES, lambda body: b"{"),
]


def _tops(body: dict[str, Any], change: Callable[[dict[str, Any]], object]) -> None:
    for entry in first(body)["logprobs"]["content"][0]["top_logprobs"]:
        change(entry)


def request_for(kind: str, name: str) -> ChatRequest | LogprobRequest:
    if name.startswith("letter"):
        return LogprobRequest((Message("user", "Pick one."),), (" white", " black"))
    if kind == TEXT:
        return LogprobRequest((), (" he", " heiress"), prefix="The engineer said that")
    return ChatRequest((Message("user", "hi"),), temperature=0.0, max_tokens=8, seed=1)


@pytest.fixture(params=["openai:fake@{url}", "litellm:openai/fake@{url}"], ids=["openai", "litellm"])
def spec(request):
    return request.param


def outcome(spec: str, name: str, kind: str, mutate: Callable[[Any], Any]) -> tuple[str, FakeOpenAI]:
    """What one garbled reply came to: "answered" (tolerated, or sent again online), or the error's message."""
    with FakeOpenAI() as server:
        server.mutate = lambda where, payload: mutate(payload) if where == kind else payload
        batched = kind in (LINE, BATCHES)
        url = server.base_url + ("?batch=1" if batched else "")
        policy = BatchPolicy(wait_seconds=5, first_poll_seconds=0.01) if batched else None
        runner = Runner(load_model(spec.format(url=url)), retry=RETRY, batch=policy)
        try:
            runner.run([request_for(kind, name)])
            return "answered", server
        except (TransientError, PermanentError, RetriesExhausted) as exc:
            return str(exc), server
        finally:
            runner.close()


def test_every_mutation_of_a_valid_body_ends_in_an_answer_or_one_clear_line(spec):
    seen: dict[str, str] = {}
    model_id = load_model(spec.format(url="http://127.0.0.1:9/v1")).model_id.split("@")[0]
    for name, kind, mutate in MUTATIONS:
        said, _ = outcome(spec, name, kind, mutate)
        seen[name] = said
        assert "\n" not in said, (name, said)
        if said != "answered":
            assert said.startswith(model_id), (name, said)
            assert not any(crash in said for crash in ("AttributeError", "KeyError", "TypeError", "IndexError"))
    assert len(MUTATIONS) >= 20
    errors = {name: said for name, said in seen.items() if said != "answered"}
    assert len(errors) >= 20, errors
    # a garbled batch line is asked again online
    assert all(seen[name] == "answered" for name, kind, _ in MUTATIONS if kind == LINE)
    if spec.startswith("litellm"):
        return  # litellm reads replies into its own objects first, and says what it missed in its own words
    assert seen["chat: usage garbled"] == "answered"  # a garbled token count is counted as none
    # what was wrong, named: the endpoint and the missing part
    assert (
        "/v1/completions answered a chat message (choices[0].message) where a text completion"
        in errors["text: a chat completion's shape"]
    )
    assert "/v1/chat/completions answered without choices" in errors["chat: no choices"]
    assert "/v1/chat/completions answered a choice without a message" in errors["chat: no message"]
    assert "which is not a number" in errors["letter: a log-prob that is a word"]


def test_a_wrong_shape_is_permanent_and_is_not_retried():
    said, server = outcome("openai:fake@{url}", "text", TEXT, MUTATIONS[18][2])
    assert "does not answer /v1/completions in the OpenAI format" in said and len(server.requests) == 1


def test_a_body_that_is_not_json_is_transient_and_retried():
    said, server = outcome("openai:fake@{url}", "chat", CHAT, MUTATIONS[0][2])
    assert said.startswith("openai:fake@") and "gave up after 2 attempts" in said and len(server.requests) == 2


PCF_SUITE = """\
suite: slots
checks:
  - measure: pcf
    attribute: gender
    samples: 2
    top_templates: 1
    threshold: {max: 400}
"""


def test_a_chat_shaped_reply_to_the_start_up_probe_is_one_clear_line_not_an_internal_error(pytester):
    """The issue's case: a server that answers /v1/completions with a chat-shaped body."""
    pytester.makefile(".yaml", slots=PCF_SUITE)
    with FakeOpenAI() as server:
        server.mutate = lambda where, payload: MUTATIONS[18][2](payload) if where == TEXT else payload
        result = pytester.runpytest_subprocess(
            "--fairness-suite=slots.yaml", f"--fairness-model=openai:fake@{server.base_url}", "-p", "no:cacheprovider"
        )
    out = "\n".join(result.outlines + result.errlines)
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a run fault: no check starts
    (line,) = [x for x in result.errlines + result.outlines if "/v1/completions answered a chat message" in x]
    assert "openai:fake@" in line
