"""Batch mode against the fake server's Batch API over real HTTP: same answers as online, resumed
batches are collected (never paid twice), expired and partly failed batches recover, clear errors."""

import asyncio
import hashlib
import json

import pytest
from fake_openai import FakeOpenAI

from pytest_fairness.models.batch import BatchPending, BatchPolicy
from pytest_fairness.models.cache import ResponseCache
from pytest_fairness.models.interface import ChatRequest, LogprobRequest, Message, PermanentError, TransientError
from pytest_fairness.models.pricing import Price
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import CallStats, RetryPolicy, Runner
from pytest_fairness.models.spec import ModelSpecError
from pytest_fairness.report.progress import Tick

FAST = RetryPolicy(max_attempts=3, base_seconds=0.01, cap_seconds=0.05)
WAIT = BatchPolicy(wait_seconds=5, first_poll_seconds=0.02, max_poll_seconds=0.1)


def varied(body: dict) -> tuple[str, list[tuple[str, float]]]:
    """Answers that differ per request, so that a response given to the wrong request shows."""
    digest = int(hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest(), 16)
    a = -0.1 - (digest % 7) / 3
    return f"reply {digest % 10_000}", [("A", a), ("B", a - 0.5), ("C", -4.0)]


@pytest.fixture
def server():
    with FakeOpenAI(answer=varied) as srv:
        yield srv


def requests() -> list:
    chats = [ChatRequest((Message("user", f"question {i}"),), temperature=0.0, max_tokens=20, seed=i) for i in range(7)]
    letters = [LogprobRequest((Message("user", f"pick {i}"),), ("A", "B", "C")) for i in range(5)]
    return [*chats, *letters, chats[0]]  # a repeated request is one batch line


#: The two ways to reach a server's Batch API: our OpenAI client, and litellm's files and batches calls.
FAMILIES = ["openai:fake", "litellm:openai/fake"]


def runner(server, cache=None, policy=WAIT, spec="?batch=1", price=None, family="openai:fake") -> Runner:
    model = load_model(f"{family}@{server.base_url}{spec}")
    return Runner(model, ResponseCache(cache) if cache else None, retry=FAST, batch=policy, price=price)


def online_answers(server) -> list:
    r = Runner(load_model(f"openai:fake@{server.base_url}"), retry=FAST)
    try:
        return r.run(requests())
    finally:
        r.close()


@pytest.mark.parametrize("family", FAMILIES)
def test_batch_answers_equal_online_ones_each_request_submitted_once(family, server, tmp_path):
    expected = online_answers(server)
    online_before = len(server.requests)
    r = runner(server, tmp_path / "c.sqlite", family=family)
    stats = CallStats()
    assert r.run(requests(), stats=stats) == expected
    r.close()
    assert len(server.requests) == online_before  # nothing went online
    assert len(server.batch_api.batches) == 1
    assert sorted(server.batch_api.submitted.values()) == [1] * 12  # 12 distinct requests, each once
    assert (stats.calls, stats.batched) == (12, 12)


def test_plain_text_scoring_stays_online(server):
    r = runner(server)
    continuation = LogprobRequest((), (" he",), prefix="The nurse said that")
    (response,) = r.run([continuation])
    r.close()
    assert response.logprobs[" he"] < 0
    assert not server.batch_api.batches  # echo scoring needs several calls: never batched


@pytest.mark.parametrize("family", FAMILIES)
def test_interrupted_run_collects_the_same_batch(family, server, tmp_path):
    cache = tmp_path / "c.sqlite"
    server.batch_api.script.append("hold")
    first = runner(server, cache, BatchPolicy(wait_seconds=0), family=family)
    with pytest.raises(BatchPending, match=r"submitted 12 requests to .* as batch batch_1 .*rerun the same command"):
        first.run(requests())
    first.close()
    again = runner(server, cache, BatchPolicy(wait_seconds=0), family=family)  # a rerun, batch still running
    with pytest.raises(BatchPending, match=r"waiting for 12 requests .* batch_1"):
        again.run(requests())
    again.close()
    server.batch_api.release()
    last = runner(server, cache, family=family)
    answers = last.run(requests())
    last.close()
    assert len(server.batch_api.batches) == 1
    assert set(server.batch_api.submitted.values()) == {1}
    assert answers == online_answers(server)
    assert not ResponseCache(cache).batch_ids(list(server.batch_api.submitted))  # ledger cleared once stored


@pytest.mark.parametrize("family", FAMILIES)
def test_a_creation_whose_reply_was_lost_is_not_paid_twice(family, server, tmp_path):
    # The server creates the batch but answers 502; the retry finds it running (by its lines' tag) and
    # collects it instead of submitting the same lines again.
    server.batch_api.script.extend(["lost_reply", "hold"])
    server.batch_api.held = False
    r = runner(server, tmp_path / "c.sqlite", family=family)
    stats = CallStats()
    assert r.run(requests(), stats=stats) == online_answers(server)
    r.close()
    assert len(server.batch_api.batches) == 1 and set(server.batch_api.submitted.values()) == {1}
    assert stats.retries >= 1 and stats.batched == 12
    (batch,) = server.batch_api.batches.values()
    assert batch.metadata["source"] == "pytest-fairness" and len(batch.metadata["fairness_lines"]) == 32


def test_a_run_waiting_on_a_batch_says_so_in_its_progress(server, tmp_path):
    server.batch_api.script.append("hold")  # the batch stays in progress
    notes: list[tuple[int, int, str]] = []
    r = runner(server, tmp_path / "c.sqlite", BatchPolicy(wait_seconds=0.3, first_poll_seconds=0.05))
    with pytest.raises(BatchPending):
        r.run(requests(), progress=lambda done, total, note="": notes.append((done, total, note)))
    r.close()
    assert len(notes) >= 2  # a word at each look, not silence until the wait runs out
    assert all(n == (0, 13, "waiting on batch batch_1 (in_progress, 12 requests)") for n in notes[1:]), notes
    text = Tick("id", "gender::net_harm", 1, 4, 0, 13, 62.0, "gw1", notes[-1][2]).text()
    assert text == (
        "[gw1] gender::net_harm: round 1, n=4, requests 0/13 (62s); waiting on batch batch_1 (in_progress, 12 requests)"
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_expired_batch_is_collected_and_the_rest_resubmitted(family, server, tmp_path):
    server.batch_api.script.append("expire")
    r = runner(server, tmp_path / "c.sqlite", family=family)
    answers = r.run(requests())
    r.close()
    assert answers == online_answers(server)
    assert len(server.batch_api.batches) == 2
    assert sorted(server.batch_api.submitted.values()) == [1] * 6 + [2] * 6  # only the unrun half again
    assert server.batch_api.lines_run == 12


@pytest.mark.parametrize("family", FAMILIES)
def test_failed_lines_are_retried_online(family, server, tmp_path):
    server.batch_api.script.append("fail_lines")
    online_before = len(server.requests)
    r = runner(server, tmp_path / "c.sqlite", family=family)
    stats = CallStats()
    answers = r.run(requests(), stats=stats)
    r.close()
    # lines 0, 3, 6, 9 of 12 failed; line 0 is the repeated request, which online asks twice
    assert len(server.requests) - online_before == 5
    assert (stats.calls, stats.batched) == (13, 8)
    assert answers == online_answers(server)


def test_batches_are_priced_at_batch_rates(server):
    price = Price(2.0, 4.0, "test", 1.0, 2.0, "test batch")
    r = runner(server, price=price)
    stats = CallStats()
    r.run(requests()[:3], stats=stats)
    r.close()
    tokens_at = (stats.prompt_tokens * 1.0 + stats.completion_tokens * 2.0) / 1e6
    assert stats.usd == pytest.approx(tokens_at) and stats.usd > 0
    online = Runner(load_model(f"openai:fake@{server.base_url}"), retry=FAST, price=price)
    standard = CallStats()
    online.run(requests()[:3], stats=standard)
    online.close()
    assert standard.usd == pytest.approx(2 * stats.usd)


def test_fairness_batch_everywhere_needs_no_spec_option(server):
    r = runner(server, spec="", policy=BatchPolicy(wait_seconds=5, everywhere=True, first_poll_seconds=0.02))
    r.run(requests()[:2])
    r.close()
    assert len(server.batch_api.batches) == 1
    plain = runner(server, spec="")  # neither the spec nor the run asks: online
    plain.run([ChatRequest((Message("user", "another"),))])
    plain.close()
    assert len(server.batch_api.batches) == 1


@pytest.mark.parametrize("family", FAMILIES)
def test_server_without_batch_api_names_the_problem_and_fix(family, server):
    server.batch_api.enabled = False
    r = runner(server, family=family)
    with pytest.raises(
        PermanentError, match=r"does not offer the Batch API \(/v1/files answered HTTP 404\).*drop \?batch=1"
    ):
        r.run(requests()[:1])
    r.close()


def test_failed_batch_is_a_clear_error(server, tmp_path):
    server.batch_api.script.append("failed")
    r = runner(server, tmp_path / "c.sqlite")
    with pytest.raises(PermanentError, match=r"batch batch_1 failed \(invalid_request: fake validation\)"):
        r.run(requests()[:2])
    r.close()


def test_submit_and_exit_without_a_cache_is_refused(server):
    r = runner(server, policy=BatchPolicy(wait_seconds=0))
    with pytest.raises(PermanentError, match=r"needs the response cache .*--fairness-batch-wait"):
        r.run(requests()[:1])
    r.close()
    assert not server.batch_api.batches  # refused before paying for anything


def test_litellm_batches_name_the_model_as_its_provider_does(server):
    r = runner(server, family="litellm:openai/fake")
    r.run(requests()[:2])
    r.close()
    (batch,) = server.batch_api.batches.values()
    assert {line["body"]["model"] for line in server.batch_api._lines(batch)} == {"fake"}  # not "openai/fake"


def test_litellm_batch_errors_never_show_a_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-shown")
    model = load_model("litellm:anthropic/claude-x?batch=1")

    async def garbled() -> list:  # a provider reply that quotes what it was sent
        raise ValueError("could not read the reply to a request signed sk-ant-never-shown")

    monkeypatch.setattr(model, "_list_batches", garbled)
    with pytest.raises(TransientError) as raised:
        asyncio.run(model.submit_batch([("key", {"model": "claude-x"})]))
    assert "sk-ant-never-shown" not in str(raised.value) and "signed ***" in str(raised.value)


def test_litellm_specs_refuse_batch_mode_for_a_provider_litellm_does_not_batch():
    with pytest.raises(ModelSpecError, match=r"litellm runs batches for openai, azure, .*not 'ollama'; drop"):
        load_model("litellm:ollama/llama3@http://127.0.0.1:9?batch=1")
    assert not load_model("litellm:ollama/llama3@http://127.0.0.1:9").offers_batches
    assert load_model("litellm:openai/fake@http://127.0.0.1:9/v1").offers_batches


def test_batch_wait_must_be_minutes_at_least_zero(tmp_path):
    from pytest_fairness.config.settings import Settings, SettingsError

    values = {"batch": True, "batch_wait": "-1"}
    with pytest.raises(SettingsError, match=r"--fairness-batch-wait \(minutes\) must be a number >= 0"):
        Settings.from_values(values.get, tmp_path)
    values["batch_wait"] = "1.5"
    settings = Settings.from_values(values.get, tmp_path)
    assert (settings.batch, settings.batch_wait) == (True, 1.5)


def test_a_batch_the_server_no_longer_knows_is_submitted_again(server, tmp_path):
    cache = tmp_path / "c.sqlite"
    r = runner(server, cache)
    keys = [r.key(request) for request in requests()[:3]]
    ResponseCache(cache).remember_batch("batch_gone", r.model.model_id, keys)  # e.g. made with another key
    assert r.run(requests()[:3]) == online_answers(server)[:3]
    r.close()
    assert len(server.batch_api.batches) == 1 and set(server.batch_api.submitted.values()) == {1}
