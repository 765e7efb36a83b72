"""Answers for ``fake_openai.FakeOpenAI`` that make it an endpoint with a planted lean on implicit-bias prompts.

The synthetic double (``synthetic:iat?bias=B``) answers by a request's purpose, which never travels over HTTP;
here the purpose is read back from the prompt's wording (the packaged templates, with the groups and the words
filled in), so the endpoint answers like the double: each word goes to its stereotyped group with probability
(1 + B) / 2, seeded by the request. Anything else gets "OK". A redeploy under the same model name is a new
``answer`` with another bias: the name and URL stay, the answers change.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

from pytest_fairness.data import parse_yaml, read_text
from pytest_fairness.measures.bai.iat_stimuli import load_stereotypes
from pytest_fairness.models.interface import ChatRequest, Message, Purpose
from pytest_fairness.testing import SyntheticModel

Answer = Callable[[dict[str, Any]], tuple[str, list[tuple[str, float]]]]


@cache
def _patterns() -> tuple[re.Pattern[str], ...]:
    """One pattern per list template: the template's text with its two groups and its words as named groups."""
    templates = parse_yaml(read_text("implicit_prompts.yaml"))["templates"]
    out = []
    for text in templates.values():
        escaped = re.escape(" ".join(str(text).split()))
        for name in ("s1", "s2", "words"):
            escaped = escaped.replace(re.escape("{" + name + "}"), f"(?P<{name}>.+?)")
        out.append(re.compile(escaped, re.S))
    return tuple(out)


def _purpose(prompt: str) -> Purpose | None:
    """The implicit-bias list task a prompt asks, as the measure built it; None for any other prompt."""
    flat = " ".join(prompt.split())
    for pattern in _patterns():
        found = pattern.fullmatch(flat)
        if found is None:
            continue
        groups = (found["s1"].strip(), found["s2"].strip())
        words = tuple(w.strip() for w in found["words"].split(","))
        for key, stereotype in load_stereotypes().items():
            sides = stereotype.group_side()
            if {sides.get(g) for g in groups} == {"stigma", "default"} and set(words) <= set(
                stereotype.attribute_side()
            ):
                return Purpose.of("implicit.list", stereotype=key, groups=groups, attributes=words)
    return None


def iat_answers(bias: float) -> Answer:
    """A FakeOpenAI ``answer``: list answers leaning by ``bias`` to the stereotype, "OK" to anything else."""
    double = SyntheticModel("iat", bias=bias)

    def answer(body: dict[str, Any]) -> tuple[str, list[tuple[str, float]]]:
        messages = tuple(Message(m["role"], m["content"]) for m in body.get("messages", []))
        purpose = _purpose(messages[-1].content) if messages else None
        if purpose is None:
            return "OK", [("OK", -0.01)]
        request = ChatRequest(messages, body.get("temperature"), body.get("max_tokens"), body.get("seed"),
                              purpose=purpose)  # fmt: skip
        answered = double._answerer(request)
        assert answered is not None
        return answered(double, request).text, [("x", -0.1)]  # type: ignore[union-attr]

    return answer
