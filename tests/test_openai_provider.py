"""The OpenAI-compatible and litellm providers over real HTTP against a fault-injecting loopback server."""

import time

import pytest
from fake_openai import FakeOpenAI

from pytest_fairness.models.base import ChatRequest, LogprobRequest, Message, ModelSpecError, PermanentError, load_model
from pytest_fairness.models.runner import CallStats, RetriesExhausted, RetryPolicy, Runner

FAST = RetryPolicy(max_attempts=4, base_seconds=0.01, cap_seconds=0.05)
PROVIDERS = ["openai:fake@{url}?timeout=1", "litellm:openai/fake@{url}?timeout=1"]


@pytest.fixture
def server():
    with FakeOpenAI() as srv:
        yield srv


@pytest.fixture(params=PROVIDERS, ids=["openai", "litellm"])
def runner(request, server):
    r = Runner(load_model(request.param.format(url=server.base_url)), retry=FAST)
    yield r
    r.close()


def chat(text: str = "hi") -> ChatRequest:
    return ChatRequest((Message("user", text),), temperature=1.0, max_tokens=20, seed=3)


@pytest.mark.parametrize("fault", ["429", "500", "drop", "malformed", "slow"])
def test_transient_faults_are_retried_to_a_correct_result(runner, server, fault):
    server.slow_seconds = 2.0  # past the 1 s client timeout
    server.script.extend([fault, fault])
    stats = CallStats()
    (response,) = runner.run([chat()], stats=stats)
    assert response.text == "wonderful - white"
    assert (stats.calls, stats.retries) == (1, 2)
    assert len(server.requests) == 3


def test_retry_after_is_honoured(runner, server):
    server.retry_after = 0.6
    server.script.append("429")
    start = time.monotonic()
    runner.run([chat()])
    assert time.monotonic() - start >= 0.6


def test_persistent_fault_ends_in_one_clear_error(runner, server):
    server.script.extend(["500"] * 10)
    with pytest.raises(RetriesExhausted, match=r"gave up after 4 attempts; last error: .*HTTP 500.*rerun to resume"):
        runner.run([chat()])


@pytest.mark.parametrize(
    ("fault", "message"),
    [("401", "rejected the API key \\(HTTP 401\\): set a valid OPENAI_API_KEY"), ("404", "not found \\(HTTP 404\\)")],
)
def test_client_errors_fail_fast_naming_the_fix(runner, server, fault, message):
    server.script.append(fault)
    with pytest.raises(PermanentError, match=message):
        runner.run([chat()])
    assert len(server.requests) == 1  # no retry


def test_model_version_and_fingerprint_are_recorded(runner):
    stats = CallStats()
    (response,) = runner.run([chat()], stats=stats)
    assert response.model_version == "fake fp_fake"
    assert stats.model_versions == ["fake fp_fake"]
    assert (response.prompt_tokens, response.completion_tokens) == (11, 3)


def test_candidates_in_top_logprobs_are_exact(runner, server):
    (response,) = runner.run([LogprobRequest((Message("user", "pick"),), (" white", " black"))])
    assert response.exact and response.logprobs == {" white": -0.3, " black": -1.5}
    assert server.requests[-1]["logprobs"] is True and server.requests[-1]["max_tokens"] == 1


def test_a_candidate_missing_from_top_logprobs_gets_a_labelled_upper_bound(runner):
    (response,) = runner.run([LogprobRequest((Message("user", "pick"),), (" white", " grey"))])
    assert response.logprobs[" grey"] == -1.5 and not response.exact
    assert "smallest as an upper bound" in response.note


def test_a_server_without_logprobs_is_sampled_and_labelled(runner, server):
    server.script.append("nologprobs")
    server.reply = "white"
    (response,) = runner.run([LogprobRequest((Message("user", "pick"),), (" white", " black"))])
    assert not response.exact and "estimated from sampled replies" in response.note and response.samples == 20
    assert response.logprobs[" white"] > response.logprobs[" black"]
    assert server.requests[-1]["n"] == 20


def test_a_reply_prefix_is_labelled_as_an_approximation_on_chat_apis(runner, server):
    (response,) = runner.run([LogprobRequest((Message("user", "pick"),), (" white", " black"), prefix="word -")])
    assert not response.exact and "reply prefix sent as a finished assistant turn" in response.note
    assert server.requests[-1]["messages"][-1] == {"role": "assistant", "content": "word -"}


def test_api_key_is_sent_but_never_kept(monkeypatch, server, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET123")
    from pytest_fairness.models.cache import ResponseCache

    cache = ResponseCache(tmp_path / "c.sqlite")
    model = load_model(f"openai:fake@{server.base_url}")
    runner = Runner(model, cache, retry=FAST)
    runner.run([chat()])
    assert server.headers[-1]["authorization"] == "Bearer sk-test-SECRET123"
    assert "SECRET" not in model.model_id
    server.script.append("401")
    with pytest.raises(PermanentError) as err:
        runner.run([chat("other")])
    assert "SECRET" not in str(err.value)
    runner.close()
    cache.close()
    assert b"SECRET" not in (tmp_path / "c.sqlite").read_bytes()


def test_openai_api_without_a_key_is_a_clear_spec_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelSpecError, match="OPENAI_API_KEY is not set: export it"):
        load_model("openai:gpt-4o")


def test_litellm_model_names_need_a_provider():
    with pytest.raises(ModelSpecError, match="litellm models are named PROVIDER/MODEL"):
        load_model("litellm:gpt-4o")


def test_concurrency_is_bounded(server):
    server.latency = 0.05
    runner = Runner(load_model(f"openai:fake@{server.base_url}?concurrency=4"), max_concurrency=64)
    start = time.monotonic()
    runner.run([chat(str(i)) for i in range(16)])
    assert time.monotonic() - start >= 4 * 0.05  # 16 requests, 4 at a time
    runner.close()
