"""The replay check: before a pull request replays the model's cached answers, a seeded sample is asked again.

A pull request restores the release's response cache, so that an unchanged model costs no call. The model's id
keys its answers, but no id covers everything that changes answers: an endpoint redeployed under its name, an
app whose environment changed, a file its identity does not hash. So before the first check a seeded sample of
the answers the run would replay (its selected checks' requests to the model under test found in the cache,
``planning.Planner.model_requests``) is asked again, past the cache, and compared with the cached ones: a
greedy or seeded chat answer exactly, log-probabilities within ``LOGPROB_TOLERANCE`` nats; an answer sampled
without a seed varies by design and is never compared one by one (the record counts them). The sample is sized
by ``stats.spot_check``'s rule, and asked sorted by prompt (``ask_order``) so a local model re-uses what it
has evaluated of one. When every asked answer holds, the run replays; when one differs, or cannot be
asked, nothing of the model's cached answers is replayed in this run (``Runner.fresh_since``): its answers are
asked anew, while a judge's and a reference's stay cached by their content (their requests hold the answers they
read). The asks are written to the cache (when it takes writes), so a refused run does not pay for them twice.
A cache holding answers sampled without a seed is never replayed: no comparison verifies them.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_fairness.config.settings import Settings
from pytest_fairness.config.suite import Check
from pytest_fairness.models.cache import CacheMode
from pytest_fairness.models.interface import ChatRequest, ChatResponse, LogprobRequest, LogprobResponse, PermanentError
from pytest_fairness.models.runner import CallStats, RetriesExhausted, Runner
from pytest_fairness.planning.plan import Planner
from pytest_fairness.records.replay import ReplayCheck
from pytest_fairness.stats import spot_check

#: Log-probabilities of a cached and a live answer are the same within this many nats (about 2% in probability):
#: above a server's run-to-run noise, far below what a lean moves (a planted bias of 0.6 moves them by about 1).
LOGPROB_TOLERANCE = 0.02
#: Values of --fairness-replay-check: check a pull request's replay (default), every run's, or none.
REPLAY_CHECKS = ("pr", "always", "off")
EXAMPLES = 3


def wanted(settings: Settings) -> bool:
    """Whether this run checks its replay: a pull request (or every run, under ``always``) that reads the cache."""
    if not settings.cache_mode.reads:
        return False
    return settings.replay_check == "always" or (settings.replay_check == "pr" and settings.gate == "pr")


def unseeded_sample(request: ChatRequest | LogprobRequest) -> bool:
    """A chat request sampled without a seed: its answer varies by design, so no single answer can be compared."""
    return isinstance(request, ChatRequest) and request.seed is None and bool(request.temperature)


def difference(stored: Mapping[str, Any], live: ChatResponse | LogprobResponse) -> str:
    """How a live answer differs from the cached one, in a few words ("" when it is the same)."""
    if isinstance(live, ChatResponse):
        before = str(stored.get("text", ""))
        if before == live.text:
            return ""
        at = next((i for i, (a, b) in enumerate(zip(before, live.text, strict=False)) if a != b), None)
        at = min(len(before), len(live.text)) if at is None else at
        return f"chat answer {_short(before, at)!r} is now {_short(live.text, at)!r}"
    before_lp = {str(k): float(v) for k, v in dict(stored.get("logprobs") or {}).items()}
    if set(before_lp) != set(live.logprobs):
        return f"log-probs of {sorted(before_lp)} are now of {sorted(live.logprobs)}"
    for candidate, old in before_lp.items():
        new = live.logprobs[candidate]
        if not (old == new or abs(old - new) <= LOGPROB_TOLERANCE):
            return f"log-prob of {candidate!r} {old:.3f} is now {new:.3f}"
    return ""


def _short(text: str, at: int = 0, room: int = 40) -> str:
    """``text`` cut to ``room`` characters around ``at`` (where two answers first differ), so the difference shows."""
    start = max(0, min(at - room // 4, len(text) - room))
    shown = " ".join(text[start : start + room].split())
    return ("…" if start else "") + shown + ("…" if start + room < len(text) else "")


def check_replay(
    runner: Runner, planner: Planner, checks: Sequence[Check], settings: Settings, stats: CallStats
) -> ReplayCheck:
    """Ask a seeded sample of the model's cached answers again and compare (see the module's docstring); the asks'
    accounting goes to ``stats``. The caller stops the replay when the record says it does not replay."""
    model = runner.model.model_id
    if settings.replay_check == "off":
        why = f"--fairness-replay-check=off: the cached answers of {model} are replayed without being asked again"
        return ReplayCheck(model, "unchecked", why=why)
    if settings.cache_mode is CacheMode.REPLAY:
        why = f"--fairness-cache-mode=replay promises no model call: the cached answers of {model} are not asked again"
        return ReplayCheck(model, "unchecked", why=why)
    wanted_by_check = planner.model_requests(checks)
    requests = {key: r for part in wanted_by_check for key, r in part.requests.items()}
    cache = runner.cache
    stored = {} if cache is None else cache.get_many(sorted(requests))
    if not stored:
        return ReplayCheck(model, "nothing")
    population = sorted(stored)
    comparable = [key for key in population if not unseeded_sample(requests[key])]
    rule = {"share": spot_check.DETECT_SHARE, "power": spot_check.DETECT_POWER, "tolerance": LOGPROB_TOLERANCE}
    unverifiable = len(population) - len(comparable)
    if unverifiable:
        why = (
            f"{unverifiable:,} of the {len(population):,} cached answers of {model} were sampled without a seed, so "
            "no answer-by-answer comparison can verify them: none of its cached answers is replayed in this run, "
            "its answers are asked anew"
        )
        return ReplayCheck(model, "refused", len(population), unverifiable=unverifiable, why=why, **rule)
    n = spot_check.sample_size()
    chosen = [comparable[i] for i in spot_check.draw(len(comparable), n, settings.seed)]
    mode = CacheMode.REFRESH if settings.cache_mode.writes else CacheMode.OFF
    live = Runner(runner.model, cache, mode, settings.max_concurrency, runner.retry, price=runner.price)
    common: dict[str, Any] = {"population": len(population), "asked": len(chosen), "seed": settings.seed, **rule}
    asked = ask_order(chosen, requests)
    try:
        answered = dict(zip(asked, live.run([requests[key] for key in asked], stats=stats), strict=True))
    except (PermanentError, RetriesExhausted) as exc:
        example = f"asking them again failed: {' '.join(str(exc).split())[:200]}"
        return ReplayCheck(model, "refused", failed=len(chosen), examples=(example,), **common)
    finally:
        live.close()
    answers = [answered[key] for key in chosen]  # compared in the sample's order, whatever order they were asked in
    found = [difference(stored[key], answer) for key, answer in zip(chosen, answers, strict=True)]
    differed = [text for text in found if text]
    exact = sum(isinstance(requests[key], ChatRequest) or _identical(stored[key], a)
                for key, a in zip(chosen, answers, strict=True))  # fmt: skip
    versions = tuple(sorted({a.model_version for a in answers if a.model_version}))
    if differed:
        return ReplayCheck(model, "refused", same=len(found) - len(differed), differed=len(differed), exact=exact,
                           examples=tuple(differed[:EXAMPLES]), live_versions=versions, **common)  # fmt: skip
    missed = spot_check.missable(len(comparable))
    replayed = [c for c in wanted_by_check if any(key in stored for key in c.requests)]
    bounds = spot_check.shifts(missed, [(c.label, c.size, _width(checks, c.label)) for c in replayed])
    return ReplayCheck(model, "verified", same=len(found), exact=exact, missable=missed, shifts=bounds,
                       live_versions=versions, **common)  # fmt: skip


def ask_order(chosen: Sequence[str], requests: Mapping[str, ChatRequest | LogprobRequest]) -> list[str]:
    """The sampled requests in the order they are asked: sorted by their prompt, so that those sharing a
    conversation, or its leading text, follow one another and a local model re-uses what it has just evaluated
    (the sample, drawn by cache key, jumps across items). Only the order changes: the same requests are asked,
    and compared in the sample's order. The saving is modest when the sample touches nearly as many items as it
    has asks (90 of 303 implicit-bias items' requests: 86 items, 4% fewer prompt tokens to evaluate)."""
    return sorted(chosen, key=lambda key: (_prompt(requests[key]), key))


def _prompt(request: ChatRequest | LogprobRequest) -> tuple[tuple[tuple[str, str], ...], str]:
    """A request's prompt as it is read, for sorting: its messages in turn, then a log-prob request's prefix."""
    prefix = request.prefix if isinstance(request, LogprobRequest) else ""
    return tuple((m.role, m.content) for m in request.messages), prefix


def _identical(stored: Mapping[str, Any], live: ChatResponse | LogprobResponse) -> bool:
    """Whether a log-prob answer held exactly (not only within the tolerance)."""
    before = dict(stored.get("logprobs") or {})
    return isinstance(live, LogprobResponse) and all(
        float(before[c]) == v or (math.isinf(v) and math.isinf(float(before[c]))) for c, v in live.logprobs.items()
    )


def _width(checks: Sequence[Check], label: str) -> float | None:
    """The width of a check's score range (None: unbounded)."""
    check = next(c for c in checks if c.label == label)
    bounds = check.measure.bounds
    return None if bounds is None else bounds[1] - bounds[0]


# -- the xdist controller's verdict, for its workers --------------------------------------------------------


def replay_verdict_file(cache_path: Path) -> Path:
    """Where an xdist controller leaves its replay verdict for its workers: beside the cache, one file a run."""
    return cache_path.parent / f"replay-verdict-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"


def write_replay_verdict(path: Path, fresh_since: float | None) -> None:
    """Say whether the workers may replay the model's cached answers (``fresh_since`` None) or read only those
    stored since then; written before the controller schedules a check."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"fresh_since": fresh_since}), encoding="utf-8")


def read_replay_verdict(path: Path) -> float | None:
    """The controller's verdict: the time from which the model's answers may be read, or None (all may be)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("fresh_since")
    except (OSError, ValueError):
        return None  # no verdict: the controller checked nothing (no check selected, or no replay check)
    return float(value) if isinstance(value, int | float) else None
