"""What a run would call and cost before it runs (--fairness-plan, --fairness-budget): typed rows.

A ``Plan`` is built by ``planning.Planner.plan`` (it needs the model's tokenizer, the cache and the
measures' request lists) and read by the terminal's plan tables and the budget check, so each of them
reads fields rather than dictionary keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pytest_fairness.sizing import Power

Who = Literal["model", "judge", "reference"]
Rate = Literal["standard", "batch"]


@dataclass(frozen=True)
class Dollars:
    """USD at standard and batch rates; None where the rate is unknown (no price)."""

    standard: float | None
    batch: float | None

    def at(self, rate: Rate) -> float | None:
        return self.standard if rate == "standard" else self.batch


UNKNOWN = Dollars(None, None)


@dataclass(frozen=True)
class JudgeCalls:
    """The judge calls a check would make, estimated from its measure's structure (``requests`` None: the
    measure gives no estimate), and ``how`` they were estimated, in words."""

    requests: int | None
    how: str


@dataclass(frozen=True)
class PlanRow:
    """One check in the plan: its requests (``shared`` with an earlier check, which counts them; ``cached``
    of the rest), tokens of the uncached ones (``tokens_counted``: by the model's own tokenizer), the
    model's dollars, the judge's calls and dollars (None for a measure without a judge), and the chance
    its size decides it."""

    suite: str
    check: str
    requests: int
    shared: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    tokens_counted: bool
    model_usd: Dollars
    judge: JudgeCalls | None = None
    judge_usd: Dollars | None = None
    power: Power | None = None
    #: The calls and dollars of a --fairness-judge-reference (None without one, or for a measure it does not audit).
    reference: JudgeCalls | None = None
    reference_usd: Dollars | None = None
    #: Under --fairness-gate=pr, the paired planner's choice from the check's baseline items, in one line.
    paired: str = ""

    @property
    def label(self) -> str:
        return f"{self.suite}::{self.check}"

    @property
    def new(self) -> int:
        """Requests this check is the first to send."""
        return self.requests - self.shared

    def usd(self, who: Who | None = None, rate: Rate = "standard") -> float | None:
        """Dollars at one rate, of the model, the judge and the reference (or only ``who``); None when a part is
        unknown."""
        parts = {"model": self.model_usd, "judge": self.judge_usd, "reference": self.reference_usd}
        total = 0.0
        for part, dollars in parts.items():
            if dollars is None or who not in (None, part):
                continue
            value = dollars.at(rate)
            if value is None:
                return None
            total += value
        return total


@dataclass(frozen=True)
class PricedAs:
    """Where a model's price comes from: its spec and the price in words (``pricing.Price.describe``)."""

    spec: str | None
    text: str
    known: bool = True


@dataclass(frozen=True)
class Plan:
    """The plan of a run's checks, in run order, and the prices of the model and the judge."""

    rows: list[PlanRow]
    prices: dict[Who, PricedAs] = field(default_factory=dict)

    def usd(self, who: Who | None = None, rate: Rate = "standard") -> float | None:
        """The plan's dollars at one rate (see ``PlanRow.usd``); None when any part is unknown."""
        return total_usd(self.rows, who, rate)

    @property
    def judged(self) -> bool:
        """Whether any check of the plan uses a judge."""
        return any(row.judge is not None for row in self.rows)


def total_usd(rows: Sequence[PlanRow], who: Who | None = None, rate: Rate = "standard") -> float | None:
    """Dollars of some rows at one rate; None when any part is unknown."""
    total = 0.0
    for row in rows:
        value = row.usd(who, rate)
        if value is None:
            return None
        total += value
    return total
