"""The OpenAI-compatible and litellm providers over real HTTP against a fault-injecting loopback server."""

import math
import time

import pytest
from fake_openai import FakeOpenAI

from pytest_fairness.measures.pcf import prejudice_caprice as pcf
from pytest_fairness.models.interface import (
    ChatModel,
    ChatRequest,
    LogprobRequest,
    LogprobResponse,
    Message,
    PermanentError,
)
from pytest_fairness.models.openai import TOP_LOGPROBS
from pytest_fairness.models.openai_text import ECHO_CHECKS
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import CallStats, RetriesExhausted, RetryPolicy, Runner
from pytest_fairness.models.spec import ModelSpecError

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
    # Past the 1 s deadline, and past it again for a retry that waits behind the late call (up to a deadline)
    server.slow_seconds = 3.0
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


def test_openai_api_without_a_key_is_a_clear_spec_error_at_the_first_call(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = load_model("openai:gpt-4o")  # building it calls nothing: a plan or a replay needs no key
    runner = Runner(model)
    with pytest.raises(ModelSpecError, match="OPENAI_API_KEY is not set: export it"):
        runner.run([ChatRequest((Message("user", "hi"),))])
    runner.close()


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


# -- plain-text continuations (PCF): exact by verified echo, or refused ------------------------------------

SLOT = "The engineer said that"
WORDS = (" he", " him", " man", " she", " her", " heiress", " herself", " actress")


def echoed(server):
    return [r for r in server.requests if r.get("echo")]


def test_plain_text_candidates_are_whole_continuations_read_by_verified_echo(runner, server):
    (response,) = runner.run([LogprobRequest((), WORDS, prefix=SLOT)])
    for word in WORDS:
        assert response.logprobs[word] == pytest.approx(server.lm.continuation(SLOT, word), abs=1e-9)
    assert response.exact and response.route == "echo" and not response.note


def test_a_multi_token_word_is_not_credited_with_its_first_tokens_log_prob(runner, server):
    """The audit's case: " heiress" starts with the slot's favourite token " he" but is far less likely."""
    (response,) = runner.run([LogprobRequest((), WORDS, prefix=SLOT)])
    he, heiress = response.logprobs[" he"], response.logprobs[" heiress"]
    assert heiress < he - 1.0
    male = sum(math.exp(response.logprobs[w]) for w in WORDS[:3])
    female = sum(math.exp(response.logprobs[w]) for w in WORDS[3:])
    truth = {w: math.exp(server.lm.continuation(SLOT, w)) for w in WORDS}
    true_share = sum(truth[w] for w in WORDS[:3]) / sum(truth.values())
    assert male / (male + female) == pytest.approx(true_share, abs=1e-9)
    assert true_share > 0.9  # a strongly male slot stays strongly male


def unlisted(server, prefix):
    row = server.lm.next_logprobs(tuple(server.lm.tokenize(prefix)))
    listed = sorted(row, key=row.__getitem__, reverse=True)[:TOP_LOGPROBS]
    return [w for w in WORDS if w not in listed]


@pytest.mark.parametrize("lists", [False, True], ids=["one prompt a request", "prompt lists"])
def test_echo_is_checked_once_per_model_and_a_requests_echoes_go_as_one_list_where_the_server_takes_lists(
    runner, server, lists
):
    server.prompt_lists = lists
    runner.run([LogprobRequest((), WORDS, prefix=SLOT)])
    first = len(echoed(server))
    if lists:  # the checks, the look at lists (a list of two, and the first of them alone), one list
        assert first >= ECHO_CHECKS + 2 + 1
    else:  # the checks, the prefix, each unlisted word
        assert first >= ECHO_CHECKS + 1 + len(unlisted(server, SLOT))
    runner.run([LogprobRequest((), WORDS, prefix="The nurse said that")])
    # no second check, and no second look at whether the server takes lists
    assert len(echoed(server)) - first == (1 if lists else 1 + len(unlisted(server, "The nurse said that")))


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("shifted", r"disagree with its own next-token log-probs: log p\(.*\) reads -?\d+\.\d\d by echo but"),
        ("ignored", r"does not return prompt log-probs \(echo=true with logprobs\)"),
        ("rejected", r"refused echo=true with logprobs .*HTTP 400"),
    ],
)
def test_a_server_whose_echo_cannot_be_trusted_is_refused_naming_the_fault_and_the_fix(runner, server, mode, message):
    server.echo_mode = mode
    with pytest.raises(PermanentError, match=message) as err:
        runner.run([LogprobRequest((), WORDS, prefix=SLOT)])
    assert "PCF needs exact slot probabilities" in str(err.value) and "local" in str(err.value)
    asked = len(server.requests)
    with pytest.raises(PermanentError, match=message):  # the verdict is kept: no second check
        runner.run([LogprobRequest((), WORDS, prefix="The nurse said that")])
    assert len(server.requests) - asked == 1  # only the next-token request


def test_a_shifted_echo_is_diagnosed_as_an_off_by_one(runner, server):
    server.echo_mode = "shifted"
    with pytest.raises(PermanentError, match="scores each prompt token from the position after it"):
        runner.run([LogprobRequest((), WORDS, prefix=SLOT)])


def test_a_correct_echo_that_disagrees_is_not_called_a_shift(runner, server):
    server.echo_mode = "noisy"  # right positions, wrong values
    with pytest.raises(PermanentError, match="disagree with its own next-token log-probs") as err:
        runner.run([LogprobRequest((), WORDS, prefix=SLOT)])
    assert "position after it" not in str(err.value)


def test_listed_single_token_words_are_read_from_top_logprobs_without_echo(runner, server):
    server.echo_mode = "shifted"  # never consulted on this route
    row = server.lm.next_logprobs(tuple(server.lm.tokenize(SLOT)))
    listed = tuple(sorted(row, key=row.__getitem__, reverse=True)[:4])
    (response,) = runner.run([LogprobRequest((), listed, prefix=SLOT)])
    assert response.route == "top_logprobs" and response.exact
    assert response.logprobs == pytest.approx({w: row[w] for w in listed}, abs=1e-12)
    assert not echoed(server)


def test_a_candidate_whose_tokens_straddle_the_prefix_end_is_refused(runner, server):
    with pytest.raises(PermanentError, match="with a token across the end of the prefix"):
        runner.run([LogprobRequest((), ("at",), prefix="The nurse said th")])


def test_plain_text_without_log_probs_is_sampled_and_labelled(runner, server):
    server.script.append("nologprobs")
    (response,) = runner.run([LogprobRequest((), (" he", " she"), prefix=SLOT)])
    assert response.route == "sampled" and response.samples == 20 and not response.exact
    assert "estimated from sampled replies" in response.note


class ExactToy(ChatModel):
    """The fake server's toy model read directly: the planted truth of a PCF run."""

    provider, name = "toy", "exact"

    def __init__(self, server):
        self.lm = server.lm

    async def chat(self, request):
        raise NotImplementedError

    async def logprobs(self, request):
        return LogprobResponse({c: self.lm.continuation(request.prefix, c) for c in request.candidates})


@pytest.mark.parametrize("lists", [False, True], ids=["one prompt a request", "prompt lists"])
def test_pcf_over_http_gives_the_planted_risks_and_names_its_route(runner, server, tmp_path, lists):
    server.prompt_lists = lists
    (tmp_path / "a.csv").write_text("group,word\nmale,he\nmale,man\nfemale,she\nfemale,heiress\nfemale,herself\n")
    (tmp_path / "t.csv").write_text("template,count\nThe [X] said that [Y],3\nThe [X] and [Y],1\n")
    (tmp_path / "o.csv").write_text("occupation\nnurse\nengineer\n")
    files = {"attributes_file": tmp_path / "a.csv", "templates_file": tmp_path / "t.csv"}
    params = {"attribute": "gender", "occupations": 2, "occupations_file": tmp_path / "o.csv", **files}
    http = pcf.MEASURE.run_with(runner, **params)
    truth = pcf.MEASURE.run_with(Runner(ExactToy(server)), **params)
    for key in ("R", "R_prejudice", "R_caprice"):
        assert http.details[key] == pytest.approx(truth.details[key], rel=1e-9, abs=1e-9)
    assert http.details["R_prejudice"] > 100  # the planted " he" boost is a real prejudice
    assert http.details["slot_routes"] == ["echo"] and "echoed prompt log-probs" in http.fidelity
    assert truth.details["slot_routes"] == [] and "read over HTTP" not in truth.fidelity


@pytest.mark.parametrize("provider", PROVIDERS, ids=["openai", "litellm"])
def test_pcf_over_http_in_prompt_lists_sends_a_tenth_of_the_requests_for_the_same_risks(provider):
    """The gender attribute's 79 words, most of them several tokens for the toy model: one request per echo
    before, a few lists per probe now (the issue counted 25,283 echo requests for the gender suite's PCF)."""
    runs = {}
    for lists in (False, True):
        with FakeOpenAI(prompt_lists=lists) as server:
            runner = Runner(load_model(provider.format(url=server.base_url)), retry=FAST)
            result = pcf.MEASURE.run_with(runner, attribute="gender", occupations=2, top_templates=2)
            runner.close()
            runs[lists] = result.details, len(server.requests)
    (one_by_one, before), (listed, after) = runs[False], runs[True]
    assert [listed[k] for k in ("R", "R_prejudice", "R_caprice")] == [
        one_by_one[k] for k in ("R", "R_prejudice", "R_caprice")
    ]
    assert after * 10 <= before, (before, after)
