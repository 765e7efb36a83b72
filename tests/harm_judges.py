"""Net-harm judges of the shapes the statistics audit studied, for the screen, gate, audit and placebo tests.

Each reads only the two answers it is shown (the request's facts carry them; never which pair is a
calibration item or what its answer is) and puts letter probabilities on A, B and C:

- ``TextJudge(flags)``: the answer ``flags`` says is the stereotype gets (right, wrong, C) = ``probs``;
  with ``q`` < 1 it names a wrong letter instead with probability 1 - q, one coin per pair (both orders
  agree, as a judge's view of a pair does); ``tilt`` puts (toward, away, C) on a pair differing only by a
  friendly aside, toward the letter that gives the aside to the first group;
- ``capable``: flags what the synthetic double's judge flags (``planted.demeaning``);
- ``keyword``: flags only answers that name a group ("as a woman ...");
- ``hedging``: capable, but (0.5, 0.1, 0.4): its top letter is always right, its rating of a harmful pair 0.4;
- ``leaning``: capable, but on a share of the pairs differing only by an aside it leans a little toward the aside
  going to the first group: too little, or too seldom, for the screen's sign test (the audit's leaning judges).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable

from pytest_fairness.data import load_yaml
from pytest_fairness.measures.fpf.planted_chatbot import HARM_MARKER, demeaning
from pytest_fairness.models.interface import ChatModel, ChatResponse, LogprobRequest, LogprobResponse
from pytest_fairness.models.runner import Runner

NAMES_GROUP = re.compile(r"\b(?:wo)?m[ae]n\b", re.I)
_ASIDES = load_yaml("harm_calibration.yaml")["benign"]["aside"]
#: A friendly aside: the pool's openers and closers, and the statistics audit's chatbot's ("Great question! ...").
ASIDE = re.compile(
    "|".join(re.escape(x) for x in [*_ASIDES["openers"], *_ASIDES["closers"], "Great question!", "Hope that helps!"]),
    re.I,
)


def letter(first: str, second: str, flags: Callable[[str], bool]) -> str:
    a, b = flags(first), flags(second)
    return "A" if a and not b else "B" if b and not a else "C"


def _coin(*parts: object) -> float:
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "big") / 2**64


class TextJudge(ChatModel):
    provider = "test"

    def __init__(
        self,
        flags: Callable[[str], bool],
        probs: tuple[float, float, float] = (0.9, 0.05, 0.05),
        *,
        q: float = 1.0,
        seed: int = 0,
        tilt: tuple[float, float, float] | None = None,
        name: str = "text-judge",
    ) -> None:
        self.flags, self.probs, self.q, self.seed, self.tilt = flags, probs, q, seed, tilt
        self.name = f"{name}-{q}-{seed}"

    async def chat(self, request) -> ChatResponse:
        return ChatResponse("C")

    def pick(self, first: str, second: str) -> dict[str, float]:
        """Letter probabilities for the pair shown as (first, second)."""
        best = letter(first, second, self.flags)
        if best == "C" and self.tilt is not None and bool(ASIDE.search(first)) != bool(ASIDE.search(second)):
            toward, away, c = self.tilt
            aside = "A" if ASIDE.search(first) else "B"
            return {aside: toward, "AB".replace(aside, ""): away, "C": c}
        # one coin per pair, whichever order it is shown in
        if _coin(self.seed, *sorted((first, second))) >= self.q:
            wrong = "ABC".replace(best, "")
            best = wrong[int(_coin(self.seed, "which", *sorted((first, second))) * 2)]
            if best in "AB" and first > second:  # the same wrong assignment in both orders
                best = "AB".replace(best, "")
        if best == "C":
            return {"A": 0.05, "B": 0.05, "C": 0.9}
        right, wrong_, c = self.probs
        return {best: right, "AB".replace(best, ""): wrong_, "C": c}

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        first, second = dict(request.purpose.facts)["responses"]
        p = self.pick(first, second)
        return LogprobResponse({c: math.log(max(p[c.strip()], 1e-12)) for c in request.candidates})


def capable(q: float = 1.0, seed: int = 0, **kw: object) -> Runner:
    return Runner(TextJudge(demeaning, q=q, seed=seed, name="capable", **kw))  # type: ignore[arg-type]


def keyword() -> Runner:
    return Runner(TextJudge(lambda text: NAMES_GROUP.search(text) is not None, name="keyword"))


def hedging() -> Runner:
    return Runner(TextJudge(demeaning, (0.5, 0.1, 0.4), name="hedging"))


def tilted(top: bool = False) -> Runner:
    """The audit's tilted judge: C on an aside pair but 0.10 / 0.05 toward the aside going to the first group
    (``top``: 0.6 / 0.1 / 0.3, its top letter follows the tilt)."""
    return Runner(TextJudge(demeaning, tilt=(0.6, 0.1, 0.3) if top else (0.10, 0.05, 0.85), name="tilted"))


class LeaningJudge(TextJudge):
    """The double's judge, except on a pair differing only by an aside: on a share ``often`` of them (a coin per
    pair) (0.05 + lean, 0.05, 0.9 - lean) toward the aside going to the first answer shown."""

    def __init__(self, lean: float, often: float, seed: int = 0) -> None:
        super().__init__(demeaning, name=f"leaning-{lean}-{often}", seed=seed)
        self.lean, self.often = lean, often

    def pick(self, first: str, second: str) -> dict[str, float]:
        differs = bool(ASIDE.search(first)) != bool(ASIDE.search(second))
        tilts = _coin(self.seed, "tilt", *sorted((first, second))) < self.often
        if letter(first, second, self.flags) == "C" and differs and tilts:
            aside = "A" if ASIDE.search(first) else "B"
            return {aside: 0.05 + self.lean, "AB".replace(aside, ""): 0.05, "C": 0.9 - self.lean}
        return super().pick(first, second)


def leaning(lean: float, often: float = 1.0, seed: int = 0) -> Runner:
    return Runner(LeaningJudge(lean, often, seed))


LETTERS = re.compile(r"Response 1:\n(.*)\n\nResponse 2:\n(.*)\n\nWhich statement", re.S)


def chatbot_and_judge(body: dict) -> tuple[str, list[tuple[str, float]]]:
    """The judge flags the answer that presumes something demeaning (as the synthetic judge does); the
    chatbot adds such a twist to a quarter of its answers, chosen by a hash of the request."""
    text = body["messages"][-1]["content"]
    pair = LETTERS.search(text)
    if pair is not None:
        first, second = (demeaning(answer) for answer in pair.groups())
        best = "A" if first and not second else "B" if second and not first else "C"
        return best, [(letter, -0.1 if letter == best else -3.0) for letter in "ABC"]
    digest = int(hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest(), 16)
    reply = f"Here is my help ({digest % 1000})." + (f" {HARM_MARKER}" if digest % 4 == 0 else "")
    return reply, [("OK", -0.1)]
