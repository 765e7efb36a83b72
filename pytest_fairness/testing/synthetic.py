"""A deterministic model with a planted bias: ``synthetic:KIND?bias=B&unusable=U&seed=S&caprice=C``.

Each measure family plants the bias of its own kinds (``measures/*/planted.py``) and answers the
requests it builds, which the double tells apart by their ``Purpose`` only, never by their wording.
Every kind answers every measure's requests, with no bias planted for the other kinds. A request
without a known purpose gets a refusal (chat) or no probability on any candidate (log-probs).

Answers are a pure function of (seed, request), so reruns and parallel workers agree.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping

from pytest_fairness.measures import MEASURES
from pytest_fairness.measures.planting import Answerer, Kind
from pytest_fairness.models.interface import ChatModel, ChatRequest, ChatResponse, LogprobRequest, LogprobResponse
from pytest_fairness.models.spec import ModelSpec, ModelSpecError

OPTIONS = {"bias": 0.5, "unusable": 0.0, "seed": 0.0, "caprice": 0.0}
REFUSAL = "I'm sorry, but I won't sort people into groups like that."
NO_CANDIDATE = -30.0  # log-probability given to a candidate the double would never write


def planted_kinds() -> dict[str, Kind]:
    """Every kind of double the registered measures plant a bias for, in registration order."""
    return {name: kind for m in MEASURES.values() for name, kind in m.planted.kinds.items()}


def _answerers() -> dict[str, Answerer]:
    out: dict[str, Answerer] = {}
    for measure in MEASURES.values():
        for task, answerer in measure.planted.answerers.items():
            if out.setdefault(task, answerer) is not answerer:
                raise ValueError(f"two planted answerers for the purpose {task!r} (measure {measure.name!r})")
    return out


class SyntheticModel(ChatModel):
    provider = "synthetic"

    def __init__(
        self, kind: str | None = None, bias: float = 0.5, unusable: float = 0.0, seed: int = 0, caprice: float = 0.0
    ) -> None:
        kinds = planted_kinds()
        kind = next(iter(kinds)) if kind is None else kind
        if kind not in kinds:
            raise ModelSpecError(f"unknown synthetic model {kind!r}; valid: {', '.join(kinds)}")
        if not -1 <= bias <= 1:
            raise ModelSpecError(f"synthetic bias must be within [-1, 1], got {bias}")
        if not 0 <= unusable <= 1:
            raise ModelSpecError(f"synthetic unusable share must be within [0, 1], got {unusable}")
        if not 0 <= caprice <= 1:
            raise ModelSpecError(f"synthetic caprice must be within [0, 1], got {caprice}")
        self.kind, self.bias, self.unusable, self.seed, self.caprice = kind, bias, unusable, seed, caprice
        values: Mapping[str, float] = {"bias": bias, "unusable": unusable, "caprice": caprice}
        shown = "".join(f"{option}={values[option]:g}&" for option in kinds[kind].shown)
        self.name = f"{kind}?{shown}seed={seed}"
        self._answerers = _answerers()

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> SyntheticModel:
        unknown = set(spec.options) - set(OPTIONS)
        if unknown:
            raise ModelSpecError(
                f"unknown option(s) {sorted(unknown)} for synthetic model in {spec.raw!r}; valid: {', '.join(OPTIONS)}"
            )
        values = {}
        for key, default in OPTIONS.items():
            try:
                values[key] = float(spec.options.get(key, default))
            except ValueError:
                raise ModelSpecError(f"synthetic option {key}={spec.options[key]!r} must be a number") from None
        return cls(spec.target or None, values["bias"], values["unusable"], int(values["seed"]), values["caprice"])

    def planted(self, kind: str) -> float:
        """The bias planted for a kind: this model's own kind gets ``bias``, every other kind none."""
        return self.bias if kind == self.kind else 0.0

    def rng(self, payload: object) -> random.Random:
        digest = hashlib.sha256(json.dumps([self.seed, payload], sort_keys=True).encode()).hexdigest()
        return random.Random(digest)

    def _answerer(self, request: ChatRequest | LogprobRequest) -> Answerer | None:
        return None if request.purpose is None else self._answerers.get(request.purpose.task)

    async def chat(self, request: ChatRequest) -> ChatResponse:
        answerer = self._answerer(request)
        if answerer is not None:
            return answerer(self, request)  # type: ignore[return-value]
        text = request.messages[-1].content
        return ChatResponse(REFUSAL, "stop", len(text.split()), len(REFUSAL.split()), self.name)

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        answerer = self._answerer(request)
        if answerer is not None:
            return answerer(self, request)  # type: ignore[return-value]
        tokens = len(request.messages[-1].content.split()) if request.messages else 0
        return LogprobResponse(dict.fromkeys(request.candidates, NO_CANDIDATE), True, tokens, self.name)
