"""The synthetic double answers by the purpose a measure attaches, never by the prompt's wording,
and the purpose is metadata: it changes no payload, equality or cache key."""

import asyncio
import dataclasses

from pytest_fairness.measures.bai import implicit
from pytest_fairness.measures.bai.implicit import score_response
from pytest_fairness.measures.fpf.answers import pairs_for
from pytest_fairness.measures.fpf.harm import net_harm, pair_judging
from pytest_fairness.measures.fpf.planted_chatbot import HARM_MARKER
from pytest_fairness.models.cache import cache_key
from pytest_fairness.models.interface import ChatRequest, LogprobRequest, Message, Purpose
from pytest_fairness.models.providers import load_model
from pytest_fairness.testing import REFUSAL, planted_kinds

REWORDED = "Ignore the usual phrasing: this sentence shares no wording with any packaged prompt."


def reworded(request, text: str = REWORDED):
    """The same request (same purpose) with its last message's text replaced."""
    messages = (*request.messages[:-1], Message(request.messages[-1].role, text))
    return dataclasses.replace(request, messages=messages)


def ask(model, request):
    call = model.chat if isinstance(request, ChatRequest) else model.logprobs
    return asyncio.run(call(request))


def test_a_reworded_list_prompt_still_gets_the_planted_list_answer():
    model = load_model("synthetic:iat?bias=1")
    for request in implicit.MEASURE.plan_with(model, stereotype="career", iterations=5, route="list"):
        answer = ask(model, reworded(request)).text
        assert answer != REFUSAL
        scored = score_response(answer, "career")
        assert scored.n_pairs == len(request.purpose.fact("attributes"))
        assert scored.score > 0.9  # bias 1: every word goes to its stereotyped group


def test_a_reworded_forced_choice_prompt_gets_the_same_log_probs():
    model = load_model("synthetic:iat?bias=0.5")
    for request in implicit.MEASURE.plan_with(model, stereotype="science", iterations=2, route="forced_choice"):
        original, changed = ask(model, request), ask(model, reworded(request))
        assert original.logprobs == changed.logprobs
        assert max(changed.logprobs.values()) > -1  # a group word is likely, not the -30 fallback


def test_a_reworded_judge_prompt_sees_the_same_twist():
    model = load_model("synthetic:harm")
    pair = pairs_for(net_harm.NetHarmParams(comparison="gender", prompts=1), seed=0)[0]
    twisted, plain = f"Sure. {HARM_MARKER}", "Sure."
    request = pair_judging.judge_request(pair.prompt, pair.a, pair.b, twisted, plain, "gender")
    letters = ask(model, reworded(request, "Which one?")).logprobs
    assert max(letters, key=letters.get) == "A"
    assert letters == ask(model, request).logprobs


def test_without_a_purpose_the_original_wording_gets_the_fallback():
    model = load_model("synthetic:iat?bias=1")
    chat, forced = (
        implicit.MEASURE.plan_with(model, stereotype="career", iterations=2, route=route)[0]
        for route in ("list", "forced_choice")
    )
    assert ask(model, dataclasses.replace(chat, purpose=None)).text == REFUSAL
    assert set(ask(model, dataclasses.replace(forced, purpose=None)).logprobs.values()) == {-30.0}


def test_the_purpose_is_not_part_of_a_request_s_identity():
    messages = (Message("user", "hi"),)
    purpose = Purpose.of("implicit.list", stereotype="career", groups=("ben", "julia"))
    for plain in (ChatRequest(messages, temperature=0.5), LogprobRequest(messages, (" a", " b"))):
        tagged = dataclasses.replace(plain, purpose=purpose)
        assert tagged == plain and hash(tagged) == hash(plain)
        assert tagged.payload() == plain.payload() and "purpose" not in tagged.payload()
        assert cache_key("m", tagged.payload()) == cache_key("m", plain.payload())
    assert purpose.fact("groups") == ("ben", "julia") and purpose.fact("missing", 3) == 3


def test_every_request_a_registered_measure_plans_carries_a_purpose():
    model = load_model("synthetic:iat")
    from pytest_fairness.measures import MEASURES

    subjects = {"implicit_bias": "career", "decision_bias": "career", "pcf": "gender"}
    for name, measure in MEASURES.items():
        subject = subjects.get(name, "gender")
        planned = measure.plan_with(model, **{measure.subject: subject, measure.samples: 2})
        assert planned and all(r.purpose is not None for r in planned), name


def test_the_kinds_of_double_come_from_the_measure_families():
    assert set(planted_kinds()) == {"iat", "decision", "harm", "pcf"}
    assert load_model("synthetic:pcf?caprice=0.2").model_id == "synthetic:pcf?bias=0.5&caprice=0.2&seed=0"
