"""The replay check's rule, draw and comparison: a change touching 5% of a model's cached answers is caught with
99% probability, simulated through the check's own draw with Clopper–Pearson intervals."""

import itertools
from dataclasses import replace
from types import SimpleNamespace

import pytest

from pytest_fairness.config.settings import Settings
from pytest_fairness.models.cache import CacheMode, ResponseCache
from pytest_fairness.models.interface import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    LogprobRequest,
    LogprobResponse,
    Message,
)
from pytest_fairness.models.runner import CallStats, Runner
from pytest_fairness.planning.plan import CheckRequests
from pytest_fairness.run.replay_check import LOGPROB_TOLERANCE, ask_order, check_replay, difference
from pytest_fairness.stats import spot_check
from pytest_fairness.testing.spot_check_trials import detection_rates


def test_the_rule_sizes_the_draw_and_every_answer_is_asked_when_there_are_no_more():
    assert spot_check.sample_size(0.05, 0.99) == 90  # ln(0.01) / ln(0.95) = 89.8
    assert spot_check.sample_size(0.01, 0.99) == 459
    assert spot_check.draw(60, 90, seed=3) == list(range(60)) and spot_check.missable(60) == 0
    drawn = spot_check.draw(3777, 90, seed=3)
    assert drawn == spot_check.draw(3777, 90, seed=3) != spot_check.draw(3777, 90, seed=4)
    assert len(set(drawn)) == 90 and drawn == sorted(drawn)
    assert spot_check.missable(3777) == 188  # ceil(0.05 × 3777) - 1


def test_the_exact_chance_meets_the_rule_at_any_population():
    for population in (91, 303, 1212, 3777, 40_000):
        at_share = spot_check.detection_chance(round(0.05 * population + 0.5), population, 90)
        assert at_share >= 0.99, population


def test_what_an_unseen_change_could_move_is_bounded_by_the_items_it_touches():
    assert spot_check.estimate_shift(14, 100, 2.0) == pytest.approx(0.28)
    assert spot_check.estimate_shift(188, 100, 2.0) == 2.0  # it could touch every item
    assert spot_check.estimate_shift(5, 100, None) is None


def test_the_simulated_detection_rate_reaches_99_percent_from_a_5_percent_change():
    rates = {d.share: d for d in detection_rates(3777, (0.005, 0.01, 0.02, 0.05, 0.10), trials=2000, seed=1)}
    for share, found in rates.items():
        low, high = found.rate.interval
        assert low <= found.exact <= high, (share, found)  # the simulation agrees with the hypergeometric chance
    assert rates[0.05].rate.interval[1] >= 0.99 and rates[0.05].rate.value >= 0.985
    assert rates[0.10].rate.value >= 0.999
    assert rates[0.01].rate.interval[1] < 0.7  # a 1% change is often missed: what the PASS claim bounds


def test_answers_are_compared_exactly_and_log_probs_within_the_tolerance():
    assert difference({"text": "career - man"}, ChatResponse("career - man")) == ""
    assert "is now" in difference({"text": "career - man"}, ChatResponse("career - woman"))
    cached = {"logprobs": {" he": -0.40, " she": -1.10}}
    close = LogprobResponse({" he": -0.40 + LOGPROB_TOLERANCE / 2, " she": -1.10})
    far = LogprobResponse({" he": -0.40 + 3 * LOGPROB_TOLERANCE, " she": -1.10})
    assert difference(cached, close) == "" and "log-prob of ' he' -0.400 is now" in difference(cached, far)
    assert "log-probs of" in difference(cached, LogprobResponse({" he": -0.4}))


class ScoringModel(ChatModel):
    """Log-probs that depend on the prompt alone, shifted for the conversations in ``changed``; records the order
    in which it is asked."""

    provider = "scoring"
    name = "lean"

    def __init__(self, changed: frozenset[int] = frozenset()) -> None:
        self.changed = changed
        self.asked: list[LogprobRequest] = []

    async def chat(self, request: ChatRequest) -> ChatResponse:
        raise NotImplementedError("the replay check asks this model log-probs only")

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        self.asked.append(request)
        item = int(request.messages[-1].content.split()[-1])
        lean = 1.0 + item / 100 if item in self.changed else 0.0  # each item's change reads differently
        return LogprobResponse({" he": -0.5 - lean, " she": -1.0 - len(request.prefix) / 10}, True, 3)


def iat_requests(items: int = 60, prefixes: int = 4) -> list[LogprobRequest]:
    """Requests that share a conversation per item (several reply prefixes each) and one instruction throughout."""
    system = Message("system", "Pair each word with he or she.")
    return [
        LogprobRequest((system, Message("user", f"word list {item}")), (" he", " she"), prefix="x" * p)
        for item in range(items)
        for p in range(prefixes)
    ]


def replay_of(tmp_path, model: ScoringModel, requests: list[LogprobRequest], seed: int = 0):
    """check_replay over a cache the unchanged model filled with ``requests``: its record, the requests by key and
    the answers cached before the check."""
    cache = ResponseCache(tmp_path / "c.sqlite")
    Runner(ScoringModel(), cache).run(requests)
    runner = Runner(model, cache)
    keyed = {runner.key(r): r for r in requests}
    stored = cache.get_many(sorted(keyed))
    planner = SimpleNamespace(model_requests=lambda checks: [CheckRequests("iat", 60, keyed)])
    checks = [SimpleNamespace(label="iat", measure=SimpleNamespace(bounds=(-1.0, 1.0)))]
    settings = replace(Settings(), seed=seed, cache_mode=CacheMode.RW, replay_check="always")
    return check_replay(runner, planner, checks, settings, CallStats()), keyed, stored


def test_the_sample_is_asked_sorted_by_prompt_and_only_its_order_changes(tmp_path):
    requests = iat_requests()
    model = ScoringModel()
    record, keyed, _ = replay_of(tmp_path, model, requests)
    assert record.status == "verified" and record.population == 240 and record.asked == 90
    drawn = sorted(keyed)
    chosen = [drawn[i] for i in spot_check.draw(240, 90, seed=0)]
    asked = [Runner(model).key(r) for r in model.asked]
    assert sorted(asked) == sorted(chosen)  # the same seeded sample, each request once
    assert asked == ask_order(chosen, keyed) != chosen  # grouped by prompt, not in the draw's (key) order
    conversations = [r.messages for r in model.asked]
    switches = sum(a != b for a, b in itertools.pairwise(conversations))
    assert switches == len(set(conversations)) - 1  # each conversation's requests asked one after another


def test_the_verdict_is_the_one_comparing_in_the_draws_order_gives(tmp_path):
    requests = iat_requests()
    changed = ScoringModel(changed=frozenset(range(0, 60, 7)))
    record, keyed, stored = replay_of(tmp_path, changed, requests)
    drawn = sorted(keyed)
    chosen = [drawn[i] for i in spot_check.draw(240, 90, seed=0)]
    fresh = ScoringModel(changed=changed.changed)
    live = Runner(fresh).run([keyed[k] for k in chosen])  # the sample asked in the draw's order instead
    found = [difference(stored[k], a) for k, a in zip(chosen, live, strict=True)]
    differed = [text for text in found if text]
    assert record.status == "refused" and record.differed == len(differed) > 0
    assert record.same == len(found) - len(differed) and record.examples == tuple(differed[:3])
    assert len(set(differed[:3])) == 3  # the examples name different items, so their order is compared too
