"""The one tally of a run: outcomes per check, what the calls cost, and whether every selected check finished.

Every output counts through here, so the terminal's ``gates:`` line, the Markdown headline, the JSON
report's ``outcomes``, ``totals`` and ``run`` sections agree by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_fairness.gate import Outcome
from pytest_fairness.models.runner import COUNTERS  # CallStats' numeric fields, in the order reports show them
from pytest_fairness.record import CheckRecord


def outcome_counts(records: Sequence[CheckRecord]) -> dict[Outcome, int]:
    """How many records reached each outcome, every outcome listed (zero included), in ``Outcome`` order."""
    return {o: sum(rec.outcome is o for rec in records) for o in Outcome}


def cost_totals(records: Sequence[CheckRecord]) -> dict[str, float]:
    """The run's calls, cache hits, retries, tokens, model seconds and dollars (``usd`` at standard rates;
    ``unpriced``: calls whose model had no price; ``rate_limited``: answers that were HTTP 429), summed over its
    records."""
    return {name: sum(getattr(rec.result.calls, name) for rec in records) for name in COUNTERS}


RunStatus = Literal["complete", "errored", "interrupted", "planned"]


@dataclass(frozen=True)
class RunState:
    """Whether a run finished every selected check, and how its finished checks' gates went.

    ``abandoned`` counts the model calls still in flight when the run ended that a short grace did not see
    answered: given up on (a server may still be working on them), never left behind unseen."""

    status: RunStatus
    selected: int = 0
    passed: int = 0
    failed: int = 0
    inconclusive: int = 0
    cannot_serve: int = 0
    errored: int = 0
    not_run: int = 0
    stopped: str = ""
    abandoned: int = 0

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    def to_dict(self) -> dict[str, Any]:
        """The JSON report's ``run`` section."""
        out: dict[str, Any] = {
            "status": self.status,
            "selected": self.selected,
            "passed": self.passed,
            "failed": self.failed,
            "inconclusive": self.inconclusive,
            "cannot_serve": self.cannot_serve,
            "errored": self.errored,
            "not_run": self.not_run,
            "abandoned": self.abandoned,
        }
        if self.stopped:
            out["stopped"] = self.stopped
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> RunState:
        """A report's ``run`` section (counts it lacks are 0)."""
        counts = ("selected", "passed", "failed", "inconclusive", "cannot_serve", "errored", "not_run", "abandoned")
        return cls(raw["status"], **{k: int(raw.get(k, 0)) for k in counts}, stopped=str(raw.get("stopped", "")))


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
    interrupted: bool = False
    stopped: str = ""
    planned: bool = False  # --fairness-plan: priced, deliberately not run
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
        if self.errored or self.stopped:
            return "errored"
        return "interrupted" if self.not_run else "complete"  # stopped early, e.g. by -x

    def state(self, records: Sequence[CheckRecord]) -> RunState:
        """The run's state; gate outcomes count the checks that finished."""
        counts = outcome_counts(records)
        return RunState(
            status=self.status,
            selected=self.selected,
            passed=counts[Outcome.PASS],
            failed=counts[Outcome.FAIL],
            inconclusive=counts[Outcome.INCONCLUSIVE],
            cannot_serve=counts[Outcome.CANNOT_SERVE],
            errored=len(self.errored),
            not_run=self.not_run,
            stopped=self.stopped,
            abandoned=self.abandoned,
        )
