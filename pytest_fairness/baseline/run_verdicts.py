"""A run's comparisons decided together: p-values adjusted across the run (Holm or Benjamini-Hochberg),
each comparison restated at the run's level, and whether the run fails.

Every comparison with a p-value is in the family. An adjusted p is never below the raw one, so a
comparison that did not count on its own never counts after the adjustment; one that did keeps its
status only if its adjusted p is below ``alpha``. In non-inferiority mode, passing is what must be
shown, so the adjustment makes passing harder, never easier.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pytest_fairness.config.baseline_policy import BaselinePolicy, FailOn
from pytest_fairness.records.comparison import ALARMS, NOT_COUNTED, Comparison, Mode, Status
from pytest_fairness.stats.multiplicity import CONTROLS, NAMES, Method, adjust, describe

if TYPE_CHECKING:
    from pytest_fairness.records.check_record import CheckRecord

#: Statuses that fail a run: the alarms always, improvements too under ``fail_on="change"``.
FAILING: frozenset[Status] = ALARMS
FAILING_ON_CHANGE: frozenset[Status] = ALARMS | {"improved"}


def _tally(comparisons: Sequence[Comparison]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in comparisons:
        out[c.status] = out.get(c.status, 0) + 1
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class RunDecision:
    """Every comparison of a run after adjusting their p-values together, and whether the run fails."""

    comparisons: tuple[Comparison, ...]
    method: Method
    alpha: float
    mode: Mode
    fail_on: FailOn

    @property
    def own(self) -> tuple[Status, ...]:
        """Each comparison's own status before the adjustment, in the same order."""
        return tuple(c.own_status for c in self.comparisons)

    @property
    def absorbed(self) -> int:
        """Changes that counted on their own but not across the run: what the correction prevented."""
        quiet = set(NOT_COUNTED.values())
        return sum(c.own_status != c.status and c.status in quiet for c in self.comparisons)

    @property
    def tested(self) -> int:
        """Comparisons with a p-value: the family the adjustment runs over."""
        return sum(c.p is not None for c in self.comparisons)

    @property
    def failing(self) -> tuple[Comparison, ...]:
        """The comparisons that fail the run, with ``fail_on`` deciding whether improvements do."""
        failing = FAILING_ON_CHANGE if self.fail_on == "change" else FAILING
        return tuple(c for c in self.comparisons if c.status in failing)

    @property
    def shown(self) -> tuple[Comparison, ...]:
        """The comparisons a report explains: every one that does not simply match its baseline."""
        return tuple(c for c in self.comparisons if not c.matches)

    def counts(self) -> dict[str, int]:
        return _tally(self.comparisons)

    def headline(self) -> str:
        """``baseline comparisons: 29 compared, family-wise error rate controlled at 0.05 (Holm); 29 unchanged``."""
        what = "non-inferiority tests" if self.mode == "noninferiority" else "baseline comparisons"
        counts = ", ".join(f"{n} {s}" for s, n in self.counts().items())
        return f"{what}: {len(self.comparisons)} compared, {describe(self.method, self.alpha)}; {counts or 'none'}"

    def verdict(self) -> str:
        """One line on what the comparisons do to the run."""
        if self.failing:
            what = ", ".join(f"{n} {s}" for s, n in _tally(self.failing).items())
            after = f" (after {NAMES[self.method]} across {self.tested} tested)" if self.method != "none" else ""
            return f"the run fails: {what}{after}"
        improved = sum(c.status == "improved" for c in self.comparisons)
        if improved:
            return (
                f"the run passes; {improved} improvement(s) reported, not failed "
                "(--fairness-baseline-fail-on=change fails them)"
            )
        return "the run passes its baselines"

    def to_dict(self) -> dict[str, Any]:
        """The JSON report's ``baselines`` section."""
        return {
            "mode": self.mode,
            "multiplicity": self.method,
            "controls": CONTROLS[self.method],
            "alpha": self.alpha,
            "fail_on": self.fail_on,
            "compared": len(self.comparisons),
            "tested": self.tested,
            "counts": self.counts(),
            "failed": bool(self.failing),
            "checks": {
                c.check: {"status": c.status, "p": c.p, "p_adjusted": c.p_adjusted, "difference": c.difference}
                for c in self.comparisons
            },
        }


def decide_run(
    comparisons: Sequence[Comparison],
    method: Method = "holm",
    *,
    alpha: float = 0.05,
    mode: Mode = "difference",
    fail_on: FailOn = "regression",
) -> RunDecision:
    """Adjust the p-values of a run's comparisons together; each tested one is restated with its run-level
    status and adjusted p (``Comparison.restated``), the others are kept as they are."""
    tested = [(i, c.p) for i, c in enumerate(comparisons) if c.p is not None]
    adjusted = adjust([p for _, p in tested], method)
    restated = {
        i: comparisons[i].restated(p, method, len(tested), alpha) for (i, _), p in zip(tested, adjusted, strict=True)
    }
    out = tuple(restated.get(i, c) for i, c in enumerate(comparisons))
    return RunDecision(out, method, alpha, mode, fail_on)


def decide_records(
    records: Sequence[CheckRecord], policy: BaselinePolicy
) -> tuple[RunDecision | None, tuple[CheckRecord, ...]]:
    """Decide the comparisons the run's records carry together: the decision (None when no check was
    compared) and the records again, each compared one carrying its restated comparison, so the JSON report,
    Markdown and summary show the run's verdict, not the check's own. The records given are left as they are.
    """
    compared = [(i, rec.baseline) for i, rec in enumerate(records) if rec.baseline is not None]
    if not compared:
        return None, tuple(records)
    decision = decide_run(
        [comparison for _, comparison in compared],
        policy.method,
        alpha=policy.alpha,
        mode=policy.mode,
        fail_on=policy.fail_on,
    )
    final = {i: c for (i, _), c in zip(compared, decision.comparisons, strict=True)}
    return decision, tuple(replace(rec, baseline=final[i]) if i in final else rec for i, rec in enumerate(records))
