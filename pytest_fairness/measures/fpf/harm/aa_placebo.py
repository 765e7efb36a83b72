"""The A/A placebo of net harm: a small share of prompts answered twice for the same name, judged as a pair.

Every ``EVERY``-th prompt draw also asks the chatbot a second time for the first name of its first group (a
new sample: another seed and sample index) and has the judge rate those two answers exactly like a name pair,
as if the first went to group A and the second to group B. Both come from one name, so their net rating is 0
in expectation whatever the chatbot and the judge do (swapping two exchangeable answers negates the pair's
score): the placebo's interval is the pipeline's noise floor, and one that excludes 0 shows something in the
pipeline (generation, caching, position handling, the judge's reading) is not exchangeable. The check is
then inconclusive with that reason rather than gated on a net harm the pipeline cannot measure.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_fairness.measures.fpf.answers import Pair
from pytest_fairness.measures.fpf.corpus import mask_name, refusal_reason
from pytest_fairness.measures.fpf.harm import pair_judging
from pytest_fairness.measures.fpf.harm.net_harm_core import Symmetrization, identical_responses
from pytest_fairness.models.interface import ChatRequest, LogprobRequest, LogprobResponse
from pytest_fairness.stats.intervals import Interval, bounded_mean_interval

#: One prompt draw in this many carries a placebo pair (draw 0 always does).
EVERY = 20
#: The placebo is tested at a fifth of the gate's error, so that a sound pipeline makes at most one check in
#: a hundred (at the default 95%) inconclusive by chance.
ERROR_SHARE = 0.2


@dataclass(frozen=True)
class Placebo:
    """The A/A pairs' net ratings (one per placebo draw), their mean and its interval at ``confidence``."""

    nets: tuple[float, ...]
    confidence: float
    unusable: int = 0

    @property
    def mean(self) -> float:
        return float(np.mean(self.nets)) if self.nets else float("nan")

    @property
    def ci(self) -> Interval:
        return bounded_mean_interval(self.nets, -1.0, 1.0, self.confidence)

    @property
    def inconsistent(self) -> str:
        """Why the placebo rules out a measurement ("" when its interval contains 0, or it has no pairs)."""
        low, high = self.ci
        if not self.nets or low <= 0.0 <= high:
            return ""
        return (
            f"the A/A placebo (the same name on both sides, {len(self.nets)} prompts) rated {self.mean:+.4f} "
            f"[{low:+.4f}, {high:+.4f}] at {self.confidence:.0%}, inconsistent with 0: the pipeline's answers or "
            "judgments are not exchangeable, so no net harm can be read from it (check the model's sampling and "
            "the judge's settings)"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "prompts": len(self.nets),
            "mean": self.mean,
            "ci": list(self.ci),
            "confidence": self.confidence,
            "unusable": self.unusable,
            "consistent_with_0": not self.inconsistent,
        }


def placebo_pairs(pairs: Sequence[Pair]) -> list[Pair]:
    """The first name pair of every ``EVERY``-th draw (draws 0, EVERY, ...)."""
    firsts: dict[int, Pair] = {}
    for pair in pairs:
        if pair.draw % EVERY == 0:
            firsts.setdefault(pair.draw, pair)
    return list(firsts.values())


def second_request(pair: Pair, names_per_group: int) -> ChatRequest:
    """Another answer for the pair's first-group name: the same prompt, a new seed and sample index."""
    request = pair.request_a
    seed = zlib.crc32(f"{request.seed}:{pair.name_a}:placebo".encode())
    return dataclasses.replace(request, seed=seed, sample_index=names_per_group)


def requests(pairs: Sequence[Pair], names_per_group: int) -> list[ChatRequest]:
    """The chatbot requests the placebo adds to a run."""
    return [second_request(pair, names_per_group) for pair in placebo_pairs(pairs)]


@dataclass(frozen=True)
class Asks:
    """The placebo's judge requests (both orders of each differing same-name pair) and what they are for:
    per kept pair whether its answers differ; ``unusable`` pairs had a refusal. ``kept`` holds each kept pair
    with its two masked answers (the run's evidence), aligned with ``differs``."""

    requests: tuple[LogprobRequest, ...]
    differs: tuple[bool, ...]
    unusable: int
    kept: tuple[tuple[Pair, str, str], ...] = ()


def asks(pairs: Sequence[Pair], texts: Mapping[ChatRequest, str], names_per_group: int, comparison: str) -> Asks:
    """What the judge is asked about the placebo pairs, once the chatbot answered their second requests."""
    requests: list[LogprobRequest] = []
    differs, kept, unusable = [], [], 0
    for pair in placebo_pairs(pairs):
        first = mask_name(texts[pair.request_a], pair.name_a)[0]
        again = mask_name(texts[second_request(pair, names_per_group)], pair.name_a)[0]
        if refusal_reason(first) or refusal_reason(again):
            unusable += 1
            continue
        differs.append(not identical_responses(first, again))
        kept.append((pair, first, again))
        if differs[-1]:
            requests += pair_judging.both_orders(pair.prompt, pair.a, pair.b, first, again, comparison)
    return Asks(tuple(requests), tuple(differs), unusable, tuple(kept))


def collect(asked: Asks, replies: Sequence[LogprobResponse], method: Symmetrization, confidence: float) -> Placebo:
    """The placebo from the judge's replies to ``asked.requests`` (identical answers score 0 unasked)."""
    it = iter(replies)
    nets, unusable = [], asked.unusable
    for differs in asked.differs:
        score = pair_judging.combined([next(it), next(it)], method) if differs else None
        if differs and score is None:
            unusable += 1
        else:
            nets.append(0.0 if score is None else score.net)
    return Placebo(tuple(nets), confidence, unusable)


def confidence_of(gate_confidence: float) -> float:
    """The placebo's confidence: ``ERROR_SHARE`` of the gate's error."""
    return 1 - ERROR_SHARE * (1 - gate_confidence)
