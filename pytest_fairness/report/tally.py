"""The one tally of a run: outcomes per check, what the calls cost, and whether every selected check finished.

Every output counts through here, so the terminal's ``gates:`` line, the Markdown headline, the JSON
report's ``outcomes``, ``totals`` and ``run`` sections agree by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_fairness.models.runner import COUNTERS, CallStats
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.stats.gate import Outcome
from pytest_fairness.util.serial import OMIT_EMPTY, to_json


def outcome_counts(records: Sequence[CheckRecord]) -> dict[Outcome, int]:
    """How many records reached each outcome, every outcome listed (zero included), in ``Outcome`` order."""
    return {o: sum(rec.outcome is o for rec in records) for o in Outcome}


def gate_counts(counts: Mapping[Outcome, int]) -> dict[str, int]:
    """``RunState``'s gate fields (``passed``, ``failed``, ``within_threshold``, ...) from an ``outcome_counts``."""
    others = (Outcome.WITHIN_THRESHOLD, Outcome.BEYOND_THRESHOLD, Outcome.INCONCLUSIVE, Outcome.CANNOT_SERVE)
    return {"passed": counts[Outcome.PASS], "failed": counts[Outcome.FAIL], **{o.value: counts[o] for o in others}}


def cost_totals(records: Sequence[CheckRecord]) -> dict[str, float]:
    """The run's calls, cache hits, retries, tokens, model seconds and dollars (``usd`` at standard rates;
    ``unpriced``: calls whose model had no price; ``rate_limited``: answers that were HTTP 429), summed over its
    records."""
    return {name: sum(getattr(rec.result.calls, name) for rec in records) for name in COUNTERS}


def run_totals(records: Sequence[CheckRecord], run: RunState | None) -> dict[str, float]:
    """``cost_totals`` of the records plus what the run's unfinished checks spent before they stopped: all the
    run spent."""
    totals = cost_totals(records)
    for check in run.unfinished if run is not None else ():
        for name in COUNTERS:
            totals[name] += check.spent.get(name, 0)
    return totals


#: The report property of a check that stopped without a result (``UnfinishedCheck.to_dict`` as JSON).
UNFINISHED_PROPERTY = "fairness_unfinished"


def spent_of(calls: CallStats) -> dict[str, float]:
    """CallStats' counters, as an unfinished check keeps them."""
    return {name: getattr(calls, name) for name in COUNTERS}


RunStatus = Literal["complete", "errored", "interrupted", "planned", "collected"]
#: Runs that ran no check on purpose: --fairness-plan priced them, --collect-only listed them.
NOT_RUN_ON_PURPOSE: frozenset[RunStatus] = frozenset({"planned", "collected"})
CheckState = Literal["errored", "interrupted", "not run"]


@dataclass(frozen=True)
class UnfinishedCheck:
    """A selected check that produced no result: ``errored`` (with the one-line ``reason``), ``interrupted``
    while it ran, or ``not run``; ``spent`` is what its calls cost before it stopped (CallStats' counters)."""

    check: str
    state: CheckState
    reason: str = field(default="", metadata=OMIT_EMPTY)
    spent: Mapping[str, float] = field(default_factory=dict, metadata=OMIT_EMPTY)

    def to_dict(self) -> dict[str, Any]:
        return to_json(self)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class RunState:
    """Whether a run finished every selected check, and how its finished checks' gates went.

    ``unfinished`` lists, in run order, every selected check that produced no result and why. ``abandoned``
    counts the model calls still in flight when the run ended that a short grace did not see answered: given up
    on (a server may still be working on them), never left behind unseen."""

    status: RunStatus
    selected: int = 0
    passed: int = 0
    failed: int = 0
    inconclusive: int = 0
    cannot_serve: int = 0
    #: A pull request's checks that only their threshold decided (``pr_gate``): none in a release run.
    within_threshold: int = field(default=0, metadata=OMIT_EMPTY)
    beyond_threshold: int = field(default=0, metadata=OMIT_EMPTY)
    errored: int = 0
    not_run: int = 0
    abandoned: int = 0
    stopped: str = field(default="", metadata=OMIT_EMPTY)
    unfinished: tuple[UnfinishedCheck, ...] = field(default=(), metadata=OMIT_EMPTY)

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    def to_dict(self) -> dict[str, Any]:
        """The JSON report's ``run`` section."""
        return to_json(self)


def combined_state(states: Sequence[RunState], records: Sequence[CheckRecord]) -> RunState:
    """The state of one run from its shards' states, as one process would have tallied it: interrupted if a shard
    was, errored if one errored or stopped, else complete; checks selected, errored and not run summed, gate
    outcomes counted on the run's records; the calls given up on summed, the unfinished checks listed shard by shard."""
    statuses = {s.status for s in states}
    status: RunStatus = next((s for s in ("interrupted", "planned", "errored") if s in statuses), "complete")
    counts = outcome_counts(records)
    return RunState(
        status=status,
        selected=sum(s.selected for s in states),
        **gate_counts(counts),
        errored=sum(s.errored for s in states),
        not_run=sum(s.not_run for s in states),
        stopped="; ".join(dict.fromkeys(s.stopped for s in states if s.stopped)),
        abandoned=sum(s.abandoned for s in states),
        unfinished=tuple(check for s in states for check in s.unfinished),
    )


@dataclass
class RunTally:
    """Which selected checks finished, errored or never ran: what tells a broken run from a clean one.

    Fed from pytest's reports: a check is *finished* when it produced a record (whatever its gate or
    baseline said), *errored* when its setup or call failed without one (a crash, a provider error),
    and *not run* when the run stopped before it.
    """

    selected: int = 0
    finished: set[str] = field(default_factory=set)
    errored: set[str] = field(default_factory=set)
    selection: dict[str, str] = field(default_factory=dict)  # the selected checks' node ids -> labels, in run order
    stops: dict[str, UnfinishedCheck] = field(default_factory=dict)  # node id -> why an errored/interrupted one stopped
    interrupted: bool = False
    stopped: str = ""
    planned: bool = False  # --fairness-plan: priced, deliberately not run
    collected: bool = False  # --collect-only: listed, deliberately not run
    abandoned: int = 0  # calls in flight at the end that were given up on, in every process of the run

    @property
    def not_run(self) -> int:
        return max(0, self.selected - len(self.finished | self.errored))

    @property
    def status(self) -> RunStatus:
        if self.interrupted:
            return "interrupted"
        if self.planned:
            return "planned"
        if self.collected:
            return "collected"
        if self.errored or self.stopped:
            return "errored"
        return "interrupted" if self.not_run else "complete"  # stopped early, e.g. by -x

    def state(self, records: Sequence[CheckRecord]) -> RunState:
        """The run's state; gate outcomes count the checks that finished."""
        counts = outcome_counts(records)
        return RunState(
            status=self.status,
            selected=self.selected,
            **gate_counts(counts),
            errored=len(self.errored),
            not_run=self.not_run,
            stopped=self.stopped,
            abandoned=self.abandoned,
            unfinished=self.unfinished(),
        )

    def unfinished(self) -> tuple[UnfinishedCheck, ...]:
        """Every selected check that did not finish, in run order: why it stopped, or ``not run`` (none when the
        run was only planned)."""
        if self.planned or self.collected:
            return ()
        return tuple(
            self.stops.get(nodeid, UnfinishedCheck(label, "not run"))
            for nodeid, label in self.selection.items()
            if nodeid not in self.finished
        )
