"""The pull-request gate (--fairness-gate=pr): a check's verdict from its paired comparison with its baseline.

A pull request asks whether a change is no worse than the last release, so a check PASSes when its paired
comparison shows it within the margin and FAILs when it shows it worse than the margin, at the FAIL level
split over the run's checks (Bonferroni: each worker decides its own check; the run's Holm decision over
the baseline comparisons can only fail more of them). Where the comparison decides neither, the check's
own threshold decides if it can (its verdict is always shown beside), else the check is inconclusive. A
check the model could not serve at the baseline and still cannot is reported and does not block (nothing
changed); one it could serve then and cannot now is a regression. Pure: no pytest, no files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_fairness.comparison import Comparison
from pytest_fairness.gate import Outcome

if TYPE_CHECKING:
    from pytest_fairness.baseline.entry import Entry


@dataclass(frozen=True)
class PrVerdict:
    """A check's outcome under the pull-request gate; ``blocking`` False for a check that could not serve at its
    baseline either (reported, never failing the run); ``why`` says what decided it, in a few words."""

    outcome: Outcome
    why: str
    blocking: bool = True


def same_items(entry: Entry | None, samples_field: str) -> tuple[int | None, int | None]:
    """The seed and sample size a pull-request run takes from its baseline entry, so that it draws the baseline's
    items first, in the same order (None, None without a baseline)."""
    if entry is None:
        return None, None
    seed, size = entry.params.get("seed"), entry.params.get(samples_field)
    return (int(seed) if isinstance(seed, int) else None), (int(size) if isinstance(size, int) and size > 0 else None)


def pr_sizes(start: int, baseline: int, growth: float) -> list[int]:
    """The sizes a sequential pull-request check looks at: from its profile's size, by ``growth``, through its
    baseline's next items, ending at all of them (a run cannot pair beyond the items its baseline has)."""
    sizes, n = [], max(min(start, baseline), 1)
    while n < baseline:
        sizes.append(n)
        n = max(n + 1, int(n * growth))
    return [*sizes, baseline]


def pr_verdict(absolute: Outcome, comparison: Comparison | None, baseline_unserved: bool, checks: int) -> PrVerdict:
    """The check's pull-request outcome from its threshold's verdict (``absolute``) and its baseline comparison."""
    if absolute is Outcome.CANNOT_SERVE:
        if baseline_unserved:
            return PrVerdict(absolute, "it could not serve at the baseline either: nothing changed", blocking=False)
        return PrVerdict(absolute, "it served at the baseline and cannot now: a regression")
    evidence = None if comparison is None else comparison.paired
    if evidence is None:
        why = "no baseline" if comparison is None else f"not paired ({comparison.unpaired or comparison.status})"
        return PrVerdict(absolute, f"{why}: the threshold gates")
    if evidence.outcome == Outcome.FAIL.value and evidence.p_beyond * max(checks, 1) <= evidence.fail_alpha:
        return PrVerdict(Outcome.FAIL, f"shown worse than the baseline by more than {evidence.margin:g}")
    if evidence.outcome == Outcome.PASS.value:
        return PrVerdict(Outcome.PASS, f"shown within {evidence.margin:g} of the baseline")
    if absolute in (Outcome.PASS, Outcome.FAIL):
        return PrVerdict(absolute, "the comparison decides neither way: the threshold gates")
    return PrVerdict(Outcome.INCONCLUSIVE, "neither the comparison nor the threshold decides")
