"""The replay check's verdict on a cache it cannot verify: answers sampled without a seed vary by design, so no
answer-by-answer comparison can tell a redeployed model from an unchanged one, and none of them is replayed."""

from __future__ import annotations

from types import SimpleNamespace

from pytest_fairness.config import suite
from pytest_fairness.config.settings import Settings
from pytest_fairness.models.cache import ResponseCache
from pytest_fairness.models.interface import ChatRequest, Message
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import CallStats, Runner
from pytest_fairness.planning.plan import CheckRequests
from pytest_fairness.run.replay_check import check_replay

CHECK = suite.load("religion").checks[0]
SETTINGS = Settings(model="synthetic:iat?bias=0", gate="pr")


def _cached(tmp_path, requests: list[ChatRequest]) -> tuple[Runner, SimpleNamespace]:
    """A runner whose cache holds the model's answers to ``requests``, and a planner that would replay them."""
    runner = Runner(load_model("synthetic:iat?bias=0"), ResponseCache(tmp_path / "responses.sqlite"))
    runner.run(requests)
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
