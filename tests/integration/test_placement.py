"""Placement of suite checks on xdist workers: sharing groups kept whole, costliest first, workers even.

The scheduler is driven by a simulated clock (each test takes a given time; a worker starts a test
only once it knows the next one or is told to stop, as xdist's workers do), so nothing here is timed.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from pytest_fairness.models.interface import ChatRequest, LogprobRequest, Message
from pytest_fairness.run import placement

pytest.importorskip("xdist")


def chat(text: str, max_tokens: int = 10) -> ChatRequest:
    return ChatRequest((Message("user", text),), temperature=0.0, max_tokens=max_tokens)


def test_a_group_counts_each_shared_request_once_at_its_largest_growth():
    shared, own = chat("shared prompt"), LogprobRequest((Message("user", "own"),), (" a", " b"))
    costs = placement.group_costs([("g", 1.0, [shared]), ("g", 2.0, [shared, own]), ("h", 1.0, [shared])])
    assert costs["g"] == pytest.approx(2 * placement.request_cost(shared) + 2 * placement.request_cost(own))
    assert costs["h"] == pytest.approx(placement.request_cost(shared))


def test_generating_costs_more_than_reading_the_prompt():
    assert placement.request_cost(chat("x" * 40, max_tokens=100)) > placement.request_cost(chat("x" * 400, 1))


def test_units_go_costliest_first_and_unknown_ones_last_in_their_order():
    order = placement.longest_first(["u", "a", "b", "v", "c"], {"a": 1.0, "b": 5.0, "c": 3.0})
    assert order == ["b", "c", "a", "u", "v"]


@dataclass(eq=False)
class Worker:
    """A stand-in for xdist's WorkerController: records what it is sent."""

    name: str
    queue: list[int] = field(default_factory=list)
    shutting_down: bool = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.queue.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True

    @property
    def gateway(self) -> SimpleNamespace:
        return SimpleNamespace(id=self.name)


def simulate(scheduler, collection: list[str], seconds: dict[str, float], n: int = 2) -> dict[str, tuple[float, list]]:
    """Run the collection on ``n`` simulated workers; each worker's finishing time and the tests it ran."""
    workers = [Worker(f"gw{i}") for i in range(n)]
    for w in workers:
        scheduler.add_node(w)
    for w in workers:
        scheduler.add_node_collection(w, collection)
    scheduler.schedule()
    clock = {w.name: 0.0 for w in workers}
    ran: dict[str, list[str]] = {w.name: [] for w in workers}
    events: list[tuple[float, int, str]] = []
    running: dict[str, int | None] = {w.name: None for w in workers}
    by_name = {w.name: w for w in workers}

    def start(w: Worker) -> None:
        # An xdist worker runs a test once it knows the next one (or that there is none).
        if running[w.name] is None and w.queue and (len(w.queue) >= 2 or w.shutting_down):
            index = w.queue.pop(0)
            running[w.name] = index
            heapq.heappush(events, (clock[w.name] + seconds[collection[index]], index, w.name))

    for w in workers:
        start(w)
    while events:
        now, index, name = heapq.heappop(events)
        w = by_name[name]
        clock[name] = now
        running[name] = None
        ran[name].append(collection[index])
        scheduler.mark_test_complete(w, index)
        for other in workers:
            start(other)
    assert not any(w.queue for w in workers), "every test ran"
    return {name: (clock[name], ran[name]) for name in clock}


#: Seconds per check of the gender suite on the embedded model (``--durations`` of the main job with this
#: placement, on a machine shared with other jobs), in the suite's order.
GENDER = {
    "fairness/gender::implicit_bias[career]": 232.04,
    "fairness/gender::implicit_bias[science]": 206.54,
    "fairness/gender::implicit_bias[power]": 213.90,
    "fairness/gender::implicit_bias[sexuality]": 229.52,
    "fairness/gender::pcf_prejudice": 464.69,
    "fairness/gender::pcf_caprice": 439.78,
    "fairness/gender::decision_bias[career]": 122.43,
    "fairness/gender::decision_bias[science]": 144.20,
    "fairness/gender::decision_bias[power]": 207.37,
    "fairness/gender::decision_bias[sexuality]": 75.99,
    "fairness/gender::net_harm": 789.08,
    "fairness/gender::net_harm[write a story]": 0.20,
    "fairness/gender::net_harm[career advice]": 0.15,
    "fairness/gender::bias_axes": 916.88,
}
GROUPS = {nodeid: nodeid.split("::")[1].split("[")[0] for nodeid in GENDER} | {
    "fairness/gender::pcf_prejudice": "pcf",
    "fairness/gender::pcf_caprice": "pcf",
    "fairness/gender::net_harm": "fpf",
    "fairness/gender::net_harm[write a story]": "fpf",
    "fairness/gender::net_harm[career advice]": "fpf",
    "fairness/gender::bias_axes": "fpf",
}
for _nodeid, _group in list(GROUPS.items()):
    if _group in ("implicit_bias", "decision_bias"):
        GROUPS[_nodeid] = _nodeid  # one check per group, as their measures share nothing across subjects


def scheduler(pytester, groups, costs):
    config = pytester.parseconfig("--tx", "2*popen", "--dist", "loadgroup")
    return placement.make_scheduler(config, None, groups, costs)


def group_costs_from(seconds: dict[str, float]) -> dict[str, float]:
    costs: dict[str, float] = {}
    for nodeid, s in seconds.items():
        costs[GROUPS[nodeid]] = costs.get(GROUPS[nodeid], 0.0) + s
    return costs


def ordered(order: str) -> list[str]:
    collection = list(GENDER)
    if order == "reversed":
        collection.reverse()
    elif order == "shuffled":  # pytest-randomly reorders items; the placement must not depend on it
        collection = list(dict.fromkeys(collection[5::2] + collection[::-2] + collection))
    return collection


@pytest.mark.parametrize("order", ["suite", "reversed", "shuffled"])
def test_gender_suite_workers_finish_together_and_groups_stay_whole(pytester, order):
    collection = ordered(order)
    # Node ids as xdist's loadgroup writes them on pytest < 9 (with "@group"): the suffix must not matter.
    collection = [f"{nodeid}@{GROUPS[nodeid]}" if i % 2 else nodeid for i, nodeid in enumerate(collection)]
    seconds = {c: GENDER[c.split("@")[0]] for c in collection}
    result = simulate(scheduler(pytester, GROUPS, group_costs_from(GENDER)), collection, seconds)
    (end_a, ran_a), (end_b, ran_b) = result.values()
    assert not {GROUPS[c.split("@")[0]] for c in ran_a} & {GROUPS[c.split("@")[0]] for c in ran_b}
    assert end_a + end_b == pytest.approx(sum(GENDER.values()))
    # Units are minutes long and a worker learns its next one as it starts its last test, so "together"
    # is within a short unit's length: 2% of the run here.
    assert abs(end_a - end_b) <= 0.03 * (end_a + end_b), result


def test_xdist_loadgroup_alone_splits_sharing_groups_under_pytest_9(pytester):
    """What the placement replaces: pytest 9 ignores the "@group" suffix xdist writes into node ids, so
    each check is a unit of its own and the two PCF risks, which read one grid, can run side by side."""
    from xdist.scheduler import LoadGroupScheduling

    config = pytester.parseconfig("--tx", "2*popen", "--dist", "loadgroup")
    split = []
    for order in ("suite", "reversed", "shuffled"):
        result = simulate(LoadGroupScheduling(config, None), ordered(order), GENDER)
        ran = next(iter(result.values()))[1]
        split.append(("fairness/gender::pcf_prejudice" in ran) != ("fairness/gender::pcf_caprice" in ran))
    assert any(split)


def test_tests_outside_suites_keep_xdist_grouping_and_run_after_checks(pytester):
    collection = [
        "tests/test_a.py::test_one@mine",
        "tests/test_a.py::test_two@mine",
        "tests/test_b.py::test_three",
        "fairness/gender::pcf_prejudice",
        "fairness/gender::pcf_caprice",
    ]
    groups = {"fairness/gender::pcf_prejudice": "pcf", "fairness/gender::pcf_caprice": "pcf"}
    seconds = dict.fromkeys(collection, 1.0)
    result = simulate(scheduler(pytester, groups, {"pcf": 10.0}), collection, seconds)
    for _, ran in result.values():
        assert ("tests/test_a.py::test_one@mine" in ran) == ("tests/test_a.py::test_two@mine" in ran)
        assert ("fairness/gender::pcf_prejudice" in ran) == ("fairness/gender::pcf_caprice" in ran)
    first = {ran[0] for _, ran in result.values()}
    assert "fairness/gender::pcf_prejudice" in first or "fairness/gender::pcf_caprice" in first


def test_the_plugin_places_checks_only_under_loadgroup(pytester):
    from pytest_fairness.plugin import pytest_xdist_make_scheduler

    config = pytester.parseconfigure("--tx", "2*popen", "--dist", "loadgroup", "--fairness-suite=gender")
    made = pytest_xdist_make_scheduler(config, None)
    assert made is not None
    assert made._split_scope("fairness/gender::pcf_caprice") == made._split_scope("fairness/gender::pcf_prejudice")
    assert made._split_scope("fairness/gender::decision_bias[career]") != made._split_scope(
        "fairness/gender::decision_bias[power]"
    )
    plain = pytester.parseconfigure("--tx", "2*popen", "--dist", "load", "--fairness-suite=gender")
    assert pytest_xdist_make_scheduler(plain, None) is None
