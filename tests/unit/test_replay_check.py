"""The replay check's verdict on a cache it cannot verify (answers sampled without a seed vary by design, so no
answer-by-answer comparison can tell a redeployed model from an unchanged one, and none of them is replayed), and
the order it asks its sample in (sorted by prompt: the same requests, the same verdict)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

from pytest_fairness.config import suite
from pytest_fairness.config.settings import Settings
from pytest_fairness.models.cache import ResponseCache
from pytest_fairness.models.interface import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    LogprobRequest,
    LogprobResponse,
    Message,
)
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import CallStats, Runner
from pytest_fairness.planning.plan import CheckRequests
from pytest_fairness.run.replay_check import ask_order, check_replay, difference
from pytest_fairness.stats import spot_check

CHECK = suite.load("religion").checks[0]
SETTINGS = Settings(model="synthetic:iat?bias=0", gate="pr")


def _cached(
    tmp_path, requests: list[ChatRequest] | list[LogprobRequest], asked: ChatModel | None = None
) -> tuple[Runner, SimpleNamespace]:
    """A runner whose cache holds the model's answers to ``requests``, and a planner that would replay them; the
    runner asks ``asked`` (a model answering otherwise) when given."""
    runner = Runner(load_model("synthetic:iat?bias=0"), ResponseCache(tmp_path / "responses.sqlite"))
    runner.run(requests)
    runner = runner if asked is None else Runner(asked, runner.cache)
    keyed = {runner.key(r): r for r in requests}
    planner = SimpleNamespace(model_requests=lambda checks: [CheckRequests(CHECK.label, 6, keyed)])
    return runner, planner


def _asks(seed: int | None, temperature: float) -> list[ChatRequest]:
    return [ChatRequest((Message("user", f"Question {i}?"),), temperature=temperature, seed=seed) for i in range(6)]


def test_answers_sampled_without_a_seed_are_never_replayed_and_the_line_says_why(tmp_path):
    runner, planner = _cached(tmp_path, _asks(None, 0.7))
    stats = CallStats()
    record = check_replay(runner, planner, [CHECK], SETTINGS, stats)
    assert record.status == "refused" and not record.replays
    assert (record.population, record.unverifiable, record.asked) == (6, 6, 0) and stats.calls == 0
    assert "6 of the 6 cached answers" in record.line() and "sampled without a seed" in record.line()
    assert "every cached answer was asked" not in record.line()


def test_seeded_answers_are_asked_again_and_replayed_when_they_hold(tmp_path):
    runner, planner = _cached(tmp_path, _asks(7, 0.7))
    record = check_replay(runner, planner, [CHECK], SETTINGS, CallStats())
    assert record.status == "verified" and record.replays and (record.asked, record.same) == (6, 6)


class Recording(ChatModel):
    """Asks ``inner`` and records the order in which it is asked, shifting the log-probs of the items in
    ``changed`` (each by its own amount, so that each change reads differently)."""

    provider = "recording"

    def __init__(self, changed: frozenset[int] = frozenset()) -> None:
        self.inner = load_model("synthetic:iat?bias=0")
        self.name = self.inner.name
        self.provider = self.inner.provider
        self.changed = changed
        self.asked: list[LogprobRequest] = []

    async def chat(self, request: ChatRequest) -> ChatResponse:
        raise NotImplementedError("the replay check asks these requests' log-probs only")

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        self.asked.append(request)
        answer = await self.inner.logprobs(request)
        item = int(request.messages[-1].content.split()[-1])
        lean = 1.0 + item / 100 + len(request.prefix) / 1000 if item in self.changed else 0.0
        return LogprobResponse({c: v - lean for c, v in answer.logprobs.items()}, True, 3)


def _iat(items: int = 60, prefixes: int = 4) -> list[LogprobRequest]:
    """Log-prob requests sharing a conversation per item (several reply prefixes each) and one instruction."""
    system = Message("system", "Pair each word with he or she.")
    return [
        LogprobRequest((system, Message("user", f"word list {item}")), (" he", " she"), prefix="x" * p)
        for item in range(items)
        for p in range(prefixes)
    ]


def _drawn(keyed: dict) -> list[str]:
    """The replay check's seeded sample of ``keyed``, in the draw's (cache key) order."""
    population = sorted(keyed)
    return [population[i] for i in spot_check.draw(len(population), spot_check.sample_size(), SETTINGS.seed)]


def test_the_sample_is_asked_sorted_by_prompt_and_only_its_order_changes(tmp_path):
    model = Recording()
    runner, planner = _cached(tmp_path, _iat(), asked=model)
    record = check_replay(runner, planner, [CHECK], SETTINGS, CallStats())
    assert record.status == "verified" and (record.population, record.asked, record.same) == (240, 90, 90)
    keyed = planner.model_requests([CHECK])[0].requests
    chosen, asked = _drawn(keyed), [runner.key(r) for r in model.asked]
    assert sorted(asked) == sorted(chosen)  # the same seeded sample, each request once
    assert asked == ask_order(chosen, keyed) != chosen  # grouped by prompt, not in the draw's (key) order
    conversations = [r.messages for r in model.asked]
    switches = sum(a != b for a, b in itertools.pairwise(conversations))
    assert switches == len(set(conversations)) - 1  # each conversation's requests asked one after another


def test_the_verdict_is_the_one_comparing_in_the_draws_order_gives(tmp_path):
    changed = frozenset(range(0, 60, 7))
    runner, planner = _cached(tmp_path, _iat(), asked=Recording(changed))
    keyed = planner.model_requests([CHECK])[0].requests
    stored = runner.cache.get_many(sorted(keyed))
    record = check_replay(runner, planner, [CHECK], SETTINGS, CallStats())
    chosen = _drawn(keyed)
    live = Runner(Recording(changed)).run([keyed[k] for k in chosen])  # the sample asked in the draw's order
    found = [difference(stored[k], a) for k, a in zip(chosen, live, strict=True)]
    differed = [text for text in found if text]
    assert record.status == "refused" and record.differed == len(differed) > 0
    assert record.same == len(found) - len(differed) and record.examples == tuple(differed[:3])
    assert len(set(differed[:3])) == 3  # the examples name different items, so their order is compared too
