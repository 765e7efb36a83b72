"""Where checks run under ``pytest-xdist --dist loadgroup``: answers shared, longest first, workers even.

The same groups and costs split a run into shards (``plan_shard``, for --fairness-shard; ``shard`` has the rule).

Checks that send the same requests (a measure's ``share_group``: both PCF risks read one probe grid,
net harm and axes of difference read the same chatbot answers) must run on one worker, one after the
other, so that the second reads the first's answers from the cache instead of computing them beside
it. xdist's own loadgroup cannot guarantee that under pytest 9, which ignores the ``@group`` suffix
xdist writes into node ids, so every check became its own unit. And it orders units by their number
of tests, then hands a worker its next unit while it still has two tests to run: the two-test PCF
group took a third unit at once, and one worker finished minutes after the other.

``CostScheduling`` is xdist's loadgroup scheduler with three changes: the groups of suite checks come
from the suites themselves, not from node ids; the unit with the largest expected cost goes first
(longest-processing-time order, the classic rule for two machines that leaves the cheap units to
even out the end); and a worker is given its next unit only when it is about to start its last
test, so a unit is committed as late as xdist's protocol allows. Tests that are not suite checks keep
xdist's own grouping, after the checks (their cost is unknown).

The cost of a check is an estimate in token-equivalents from the requests its first round would send
and the plan's estimate of its judge calls (without calling a model), scaled by the growth sequential
sampling may add; a group counts each distinct request once. The weights were read off one main job
(seconds per token-equivalent were within 2x across measures in a first round; growth is data-dependent
and not foreseen). Only the order depends on it: an estimate that is off delays the end by at most the
unit placed wrongly, and loses no work.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_fairness.config import suite
from pytest_fairness.config.settings import Settings
from pytest_fairness.config.shard import Shard, ShardPlan, file_hash, fingerprint, partition
from pytest_fairness.config.suite import Check
from pytest_fairness.models.interface import ChatRequest, LogprobRequest, estimate_tokens
from pytest_fairness.run.growth import sample_budget

#: Node ids of suite checks start with this, then ``<suite>::<check id>``.
CHECK_PREFIX = "fairness/"
#: A generated token costs this many prompt tokens: each is its own decode call, a prompt's tokens share one.
GENERATED_TOKEN = 8.0
#: Share of its ``max_tokens`` a reply is expected to use: a cap is rarely reached (the embedded model's
#: decisions used 105 of 400 tokens on average), and counting it whole put four decision checks of
#: 17-40 s ahead of a 41 s implicit-bias check in the main job, which then ended one worker 37 s late.
REPLY_SHARE = 0.5
#: A scored candidate costs this many prompt tokens (its first token is read from the prompt's last row;
#: longer candidates add a few decoded tokens).
CANDIDATE = 2.0
#: A sequential check is expected to grow this much before it stops (one round doubles it: its step is
#: its first size), within its budget.
EXPECTED_GROWTH = 1.5


@dataclass(frozen=True)
class JudgeWork:
    """A check's judge calls as the plan estimates them (``Measure.judge_estimate``), standing in its
    group's cost as one request (its node id keeps two checks' equal estimates apart)."""

    check: str
    prompt_tokens: int
    completion_tokens: int


def request_cost(request: ChatRequest | LogprobRequest | JudgeWork) -> float:
    """Token-equivalents of one request on a local model: its prompt, plus generated tokens or candidates."""
    if isinstance(request, JudgeWork):
        return request.prompt_tokens + GENERATED_TOKEN * request.completion_tokens
    prompt = float(estimate_tokens(request))
    if isinstance(request, ChatRequest):
        return prompt + GENERATED_TOKEN * REPLY_SHARE * (request.max_tokens or 256)
    return prompt + CANDIDATE * len(request.candidates)


def group_costs(members: Iterable[tuple[str, float, Sequence[Any]]]) -> dict[str, float]:
    """Cost per group from ``(group, growth, requests)`` per check: each distinct request once per group,
    at the largest growth of the checks that send it."""
    growth: dict[str, dict[Any, float]] = {}
    for group, factor, requests in members:
        seen = growth.setdefault(group, {})
        for request in requests:
            seen[request] = max(seen.get(request, 0.0), factor)
    # fsum: the same total whatever order a set gives the requests in (a shard must plan as every other does)
    return {group: math.fsum(request_cost(r) * f for r, f in seen.items()) for group, seen in growth.items()}


def longest_first(units: Sequence[str], costs: Mapping[str, float]) -> list[str]:
    """Units by decreasing cost; units without a cost after them, in their given order."""
    known = sorted((u for u in units if u in costs), key=lambda u: -costs[u])
    return known + [u for u in units if u not in costs]


def plan_groups(
    checks: Sequence[Any], model: Any, *, profile: str, seed: int, sequential: bool
) -> tuple[dict[str, str], dict[str, float]]:
    """Each check's node id -> its sharing group, and each group's expected cost.

    Groups are kept whole even where the checks' own requests barely overlap: net harm's per-task checks
    share the judge's calibration with the overall one (64 judge calls), and run beside it they computed
    it again (650 s in the main job); run after it, they took under a second.
    """
    planned: list[tuple[str, str, float, set[Any]]] = []  # node id, declared group, growth, requests
    for check in checks:
        measure = check.measure
        size = check.sample_size(profile)
        growth = 1.0
        if sequential:
            growth = max(1.0, min(float(sample_budget(check, profile, size)), EXPECTED_GROWTH * size) / size)
        params = check.params_for(profile)
        try:
            requests = set(measure.requests(params, model, seed))
            judged = measure.judge_estimate(params, seed) if measure.judge_estimate else None
        except Exception:  # a check that cannot plan is reported when it runs; it goes last
            requests, judged = set(), None
        nodeid = f"{CHECK_PREFIX}{check.suite}::{check.id}"
        if judged is not None and judged.requests:
            # The judge's calls depend on the answers: the plan's estimate stands for them, as one request.
            requests.add(JudgeWork(nodeid, judged.prompt_tokens, judged.completion_tokens))
        planned.append((nodeid, measure.share_group(check.params), growth, requests))
    groups = {nodeid: group for nodeid, group, _, _ in planned}
    members = [(groups[nodeid], growth, sent) for nodeid, _, growth, sent in planned if sent]
    return groups, group_costs(members)


def make_scheduler(config: Any, log: Any, groups: Mapping[str, str], costs: Mapping[str, float]) -> Any:
    """xdist's loadgroup scheduler, placing suite checks by ``groups`` and ``costs`` (see the module doc)."""
    from xdist.scheduler import LoadGroupScheduling

    class CostScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            check = nodeid.split("@", 1)[0] if nodeid.startswith(CHECK_PREFIX) else nodeid
            if check in groups:
                return groups[check]
            return super()._split_scope(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            first = longest_first(list(self.workqueue), costs)[0]
            self.workqueue.move_to_end(first, last=False)
            super()._assign_work_unit(node)

        def _reschedule(self, node: Any) -> None:
            # xdist tops a worker up when it has two tests left; a worker needs the next test only to
            # start its last one, so wait until then: the unit is chosen as late as possible.
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) > 1:
                return
            self._assign_work_unit(node)

    return CostScheduling(config, log)


def plan_shard(shard: Shard, checks: Sequence[Check], model: Any, settings: Settings) -> ShardPlan:
    """--fairness-shard: the run's partition into shards (``shard.partition``) by these groups and costs, from its
    selected ``checks`` (in the suites' order) and what decides them; ``model`` is the run's model, whose requests
    the cost estimate reads (it is not called)."""
    from pytest_fairness import __version__

    nodes, costs = plan_groups(
        checks, model, profile=settings.profile, seed=settings.seed, sequential=settings.sequential
    )
    groups = {node.removeprefix(CHECK_PREFIX): group for node, group in nodes.items()}
    order = tuple(check.label for check in checks)
    suites = {loaded.name: file_hash(Path(loaded.path).read_bytes()) for loaded in _suites_of(settings)}
    printed = fingerprint(settings.decisive(), suites, order, __version__)
    return ShardPlan(shard, partition(groups, costs, shard.count), order, printed)


def run_order(settings: Settings, selected: Collection[str]) -> list[Check]:
    """The selected checks (by label) in the order the suites list them, whatever order a plugin gave the items."""
    return [check for loaded in _suites_of(settings) for check in loaded.checks if check.label in selected]


def _suites_of(settings: Settings) -> list[suite.Suite]:
    return [suite.load(name, settings.release_design()) for name in settings.suites]
