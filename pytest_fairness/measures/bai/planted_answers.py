"""The synthetic double's answers to the Bai et al. measures (``synthetic:iat``, ``synthetic:decision``).

Implicit bias: each attribute word goes to the group it is stereotypically associated with with
probability p = (1 + B) / 2, independently, whether asked for a list answer or for log-probs, so the
expected score is known exactly (``expected_iat_score``). ``unusable=U`` makes a share U of list
answers refusals. Decision bias: the stigma person gets the stigma-consistent option with probability
(1 + B) / 2. Requests are recognised by their purpose and its facts, never by their wording.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from itertools import product

from pytest_fairness.measures.bai.iat_stimuli import Stereotype, get_stereotype
from pytest_fairness.measures.bai.implicit_core import implicit_bias
from pytest_fairness.measures.planting import Double, Kind, Planted
from pytest_fairness.models.interface import ChatRequest, ChatResponse, LogprobRequest, LogprobResponse
from pytest_fairness.stats.lazy_scipy import sps

REFUSAL = "I'm sorry, but I won't sort people into groups like that."
NO_CANDIDATE = -30.0


def expected_iat_score(n_per_side: int, bias: float, epsilon: float = 0.01) -> float:
    """Exact expected score when each word goes to its consistent group with p = (1 + bias) / 2."""
    p = (1 + bias) / 2
    pmf = sps.binom(n_per_side, p).pmf
    total = 0.0
    for a, d in product(range(n_per_side + 1), repeat=2):
        score = implicit_bias(a, n_per_side - d, n_per_side - a, d, epsilon=epsilon)
        total += pmf(a) * pmf(d) * (0.0 if score is None else score)
    return total


def _chat(double: Double, request: ChatRequest, answer: str) -> ChatResponse:
    text = request.messages[-1].content
    return ChatResponse(answer, "stop", len(text.split()), len(answer.split()), double.name)


def _task(request: ChatRequest | LogprobRequest, *more: str) -> tuple[Stereotype, list[str], list[str]] | None:
    """The stereotype of an IAT task, its two group words (one per side) and its attributes in prompt order,
    then the words in ``more`` that are attributes too.

    An attribute that is part of a longer one asked with it ("english" in "english language") is left out.
    """
    facts = request.purpose
    assert facts is not None
    st = get_stereotype(str(facts.fact("stereotype")))
    side = st.group_side()
    groups = [g.lower() for g in facts.fact("groups", ())]  # type: ignore[union-attr]
    if {side.get(g) for g in groups} != {"stigma", "default"}:
        return None
    words = dict.fromkeys([*facts.fact("attributes", ()), *(w.lower() for w in more)])  # type: ignore[misc]
    asked = [a for a in words if a in st.attribute_side()]
    return st, groups, [a for a in asked if not any(a != b and a in b for b in asked)]


def _p_consistent(double: Double) -> float:
    return (1 + double.planted("iat")) / 2


def _pick(double: Double, st: Stereotype, attribute: str, groups: list[str], rng: random.Random) -> str:
    """A group word for an attribute: the stereotyped one with probability p."""
    side = st.attribute_side()[attribute]
    same = [g for g in groups if st.group_side()[g] == side]
    other = [g for g in groups if st.group_side()[g] != side]
    return same[0] if rng.random() < _p_consistent(double) else other[0]


def answer_list(double: Double, request: ChatRequest, *more: str) -> ChatResponse:  # type: ignore[misc]
    """An IAT list answer ("word - group" lines), or a refusal for a share ``unusable``."""
    rng = double.rng(request.payload())
    found = _task(request, *more)
    if found is None or not found[2] or rng.random() < double.unusable:
        return _chat(double, request, REFUSAL)
    st, groups, attributes = found
    lines = [(a, _pick(double, st, a, groups, rng)) for a in attributes]
    return _chat(double, request, _render(lines, rng))


def answer_forced_choice(double: Double, request: LogprobRequest) -> LogprobResponse:  # type: ignore[misc]
    """Log-probs of the group words after "attribute -": p for the stereotyped one, 1 - p for the other."""
    found = _task(request)
    attribute = str(request.purpose.fact("attribute", "")).lower()  # type: ignore[union-attr]
    out = dict.fromkeys(request.candidates, NO_CANDIDATE)
    if found is not None and attribute in found[0].attribute_side():
        st, groups, _ = found
        side = st.attribute_side()[attribute]
        for candidate in request.candidates:
            word = candidate.strip()
            if word in groups:  # the lower-case form carries the probability mass
                p = _p_consistent(double) if st.group_side()[word] == side else 1 - _p_consistent(double)
                out[candidate] = math.log(max(p, 1e-12))
    tokens = len(request.messages[-1].content.split())
    return LogprobResponse(out, True, tokens, double.name)


def answer_absolute(double: Double, request: ChatRequest) -> ChatResponse:  # type: ignore[misc]
    """The absolute form's IAT task answered as a list, the yes/no question left unanswered.

    The option of the question is paired too when it is an attribute word, as if it were one more word.
    """
    return answer_list(double, request, str(request.purpose.fact("option")))  # type: ignore[union-attr]


def answer_relative(double: Double, request: ChatRequest) -> ChatResponse:  # type: ignore[misc]
    """Who gets which option: the stigma person gets the stigma-consistent one with probability (1 + B) / 2."""
    facts = request.purpose
    assert facts is not None
    rng = double.rng(request.payload())
    if rng.random() < double.unusable:
        return _chat(double, request, REFUSAL)
    stigma_person, default_person = facts.fact("stigma_person"), facts.fact("default_person")
    stigma_option, default_option = (str(facts.fact(f"{side}_option")).lower() for side in ("stigma", "default"))
    if rng.random() >= (1 + double.planted("decision")) / 2:
        stigma_option, default_option = default_option, stigma_option
    return _chat(
        double,
        request,
        f"Based on the profiles, {stigma_person} should get {stigma_option}, "
        f"while {default_person} should get {default_option}.",
    )


def _render(lines: Sequence[tuple[str, str]], rng: random.Random) -> str:
    """Write pairs in one of the formats real models use, to exercise the parser end to end."""
    style = rng.randrange(5)
    if style == 0:
        return "\n".join(f"{a} - {g}" for a, g in lines)
    if style == 1:
        return "\n".join(f"{i}. {a.capitalize()} - {g.capitalize()}" for i, (a, g) in enumerate(lines, 1))
    if style == 2:
        return "Here are my answers:\n" + "\n".join(f"- **{a}**: {g}" for a, g in lines)
    if style == 3:
        return ", ".join(f"{a} - {g}" for a, g in lines) + "."
    return "\n".join(f"{a} – {g}" for a, g in lines)


IMPLICIT = Planted(
    kinds={"iat": Kind("planted implicit (IAT) bias")},
    answerers={
        "implicit.list": answer_list,
        "implicit.forced_choice": answer_forced_choice,
    },
)
DECISION = Planted(
    kinds={
        "decision": Kind("planted decision bias: P(stigma person gets the stereotyped option) = (1 + bias) / 2"),
    },
    answerers={"decision.relative": answer_relative, "decision.absolute": answer_absolute},
)
