"""One comparison of a check with its baseline, as data: what travels in ``CheckRecord.baseline``.

A ``Comparison`` keeps the evidence (both sides, the difference, its interval, p, the tolerance and the
threshold that says which way is harmful) and, once the run's comparisons are adjusted together, the
``Adjustment``. Its explanation is rendered from those fields (``explain``), so it round-trips through
``serial.to_json`` / ``serial.from_json`` (from xdist workers to the controller) and can be restated without
editing prose.
It sits below the check record that carries it; comparing entries (``baseline.entry_comparison``) sits above both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from pytest_fairness.stats.gate import Outcome, Threshold
from pytest_fairness.stats.multiplicity import Method
from pytest_fairness.stats.paired.noninferiority import PairedComparison
from pytest_fairness.util.serial import OMIT_EMPTY

Status = Literal[
    "unchanged",
    "improved",
    "regressed",
    "changed",
    "new",
    "missing",
    "non-inferior",
    "not non-inferior",
    "within margin",
    "undecided",
]
#: Every status, the most alarming first: the order reports count them in. A comparison paired on the
#: baseline's items (``baseline.pairing``) says what it showed in difference mode: "regressed" (shown worse
#: than the margin), "within margin" (shown within it) or "undecided" (neither: never "unchanged", which it
#: did not show).
STATUSES: tuple[Status, ...] = (
    "regressed",
    "not non-inferior",
    "improved",
    "changed",
    "new",
    "missing",
    "undecided",
    "non-inferior",
    "within margin",
    "unchanged",
)
#: The statuses that raise an alarm: each fails the run, and every report shows it in capitals. ``changed``
#: (significant and beyond the tolerance with no harmful side to tell) is one: nobody can call it harmless.
ALARMS: frozenset[Status] = frozenset({"regressed", "not non-inferior", "changed", "missing"})
#: The statuses under which a comparison holds on its own ("undecided" does not fail the run, but is explained).
HOLDS: frozenset[Status] = frozenset({"unchanged", "non-inferior", "within margin"})
#: What a change that counted on its own but not across the run becomes: unpaired, "unchanged" (within the run's
#: noise); paired, "undecided" (not shown worse than the margin, nor shown within it).
NOT_COUNTED: Mapping[bool, Status] = {False: "unchanged", True: "undecided"}

Mode = Literal["difference", "noninferiority"]
MODES: tuple[Mode, ...] = ("difference", "noninferiority")
Interval = tuple[float, float]


def paired_status(outcome: Outcome) -> Status:
    """What a paired comparison in difference mode is, by the outcome of its paired test: what it showed, never
    more ("undecided" where it showed neither: not "unchanged", which it did not show)."""
    if outcome is Outcome.FAIL:
        return "regressed"
    return "within margin" if outcome is Outcome.PASS else "undecided"


@dataclass(frozen=True)
class Side:
    """One side of a comparison as its entry recorded it: estimate, interval and its level, n, and the model
    (with its version: an app's spec and version) that produced it, so a comparison says what it compared."""

    estimate: float | None
    ci: tuple[float | None, float | None]
    confidence: float
    n: int
    model: str = field(default="", metadata=OMIT_EMPTY)


@dataclass(frozen=True)
class Adjustment:
    """How the run restated a comparison: its own status, and its p adjusted across the run's tested ones."""

    own: Status
    p: float
    method: Method
    tested: int


@dataclass(frozen=True)
class Comparison:
    """A new result against its baseline: the verdict and the evidence; ``explain.explain`` says it in words.

    ``p`` is the comparison's own p-value: two-sided (Welch) in ``difference`` mode, one-sided for
    "worse by more than the tolerance" in ``noninferiority`` mode. ``before`` is None for a check new in
    this run, ``after`` for one missing from it. Once ``decide_run`` adjusts the run's comparisons
    together, ``status`` is the run's verdict and ``adjusted`` keeps the comparison's own.
    """

    check: str
    status: Status
    #: Declared here so that the JSON form reads it beside the status; given by name (it has a default).
    mode: Mode = field(default="difference", kw_only=True)
    before: Side | None
    after: Side | None
    difference: float | None
    ci: Interval | None
    p: float | None
    tolerance: float
    alpha: float
    threshold: Threshold = field(default_factory=Threshold)
    inputs_changed: tuple[str, ...] = ()
    adjusted: Adjustment | None = None
    #: Set when decided on the items the run shares with its baseline (``baseline.pairing``).
    paired: PairedComparison | None = None
    #: Why a comparison with a baseline is not paired (one line): it is the unpaired one (Welch).
    unpaired: str = ""
    #: The JSON form (``serial.to_json``) adds the adjusted p after the comparison's own.
    JSON_DERIVED: ClassVar[dict[str, str]] = {"p_adjusted": "p"}

    @property
    def old(self) -> float | None:
        """The baseline's estimate."""
        return None if self.before is None else self.before.estimate

    @property
    def new(self) -> float | None:
        """This run's estimate."""
        return None if self.after is None else self.after.estimate

    @property
    def own_status(self) -> Status:
        """The comparison's verdict on its own, before the run's adjustment."""
        return self.status if self.adjusted is None else self.adjusted.own

    @property
    def p_adjusted(self) -> float | None:
        return None if self.adjusted is None else self.adjusted.p

    @property
    def alarm(self) -> bool:
        return self.status in ALARMS

    @property
    def matches(self) -> bool:
        """Whether a snapshot still holds: no counted change and the same instrument. Reports show the rest."""
        return self.status in HOLDS and not self.inputs_changed

    @property
    def interval_level(self) -> float:
        """Coverage of ``ci``: 1 - alpha for a difference, 1 - 2 alpha (one-sided 1 - alpha) for non-inferiority,
        and for a paired comparison 1 - 2 × its PASS level (each end one-sided at that level)."""
        if self.paired is not None:
            return 1 - 2 * self.paired.pass_alpha
        return 1 - 2 * self.alpha if self.mode == "noninferiority" else 1 - self.alpha

    def level(self, alpha: float) -> float:
        """The level the run's adjusted p is held to: a paired regression is shown at its FAIL level, a paired
        non-inferiority at its PASS level."""
        if self.paired is None:
            return alpha
        return self.paired.fail_alpha if self.mode == "difference" else self.paired.pass_alpha

    def restated(self, p_adjusted: float, method: Method, tested: int, alpha: float) -> Comparison:
        """This comparison at the run's level: its own change or non-inferiority counts only if the adjusted p does."""
        own = self.own_status
        significant = p_adjusted < self.level(alpha)
        status: Status = own
        if self.mode == "noninferiority":
            status = "non-inferior" if own == "non-inferior" and significant else "not non-inferior"
        elif own in ("regressed", "improved", "changed") and not significant:
            status = NOT_COUNTED[self.paired is not None]
        return replace(self, status=status, adjusted=Adjustment(own, p_adjusted, method, tested))

    @staticmethod
    def readable(raw: dict[str, Any]) -> bool:
        """Whether a JSON baseline section holds a whole comparison (earlier versions kept only its prose)."""
        return {"before", "after", "tolerance", "adjusted"} <= set(raw)
