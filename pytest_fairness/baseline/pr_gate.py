"""The pull-request gate (--fairness-gate=pr): a check's verdict from its paired comparison with its baseline.

A pull request asks whether a change is no worse than the last release, so a check PASSes only when its paired
comparison shows it within the margin and FAILs only when it shows it worse than the margin, at the FAIL level
split over the run's checks (Bonferroni: each worker decides its own check; the run's Holm decision over the
baseline comparisons can only fail more of them). Where the comparison decides neither (or cannot be made:
no baseline, no pairing), the check's own threshold decides if it can, under its own words: WITHIN THRESHOLD
or BEYOND THRESHOLD, which say nothing of the change (``PR_VERDICTS``); else the check is inconclusive. A check
the model could not serve at the baseline and still cannot is reported and does not block (nothing changed);
one it could serve then and cannot now is a regression. Pure: no pytest, no files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pytest_fairness.records.comparison import Comparison
from pytest_fairness.stats.gate import Outcome
from pytest_fairness.stats.paired.allocation import components_from_baseline, plan_k
from pytest_fairness.stats.paired.matching import ItemScores
from pytest_fairness.stats.paired.noninferiority import baseline_level
from pytest_fairness.stats.power import TARGET_POWER

if TYPE_CHECKING:
    from pytest_fairness.baseline.entry import Entry

#: What decided a pull request's verdict: the paired comparison with the baseline (its margin), the check's
#: threshold alone, or neither.
Basis = Literal["margin", "threshold", "none"]


@dataclass(frozen=True)
class VerdictMeaning:
    """One word of the pull-request gate: what decides it and what it certifies (docs/ci.md's table)."""

    outcome: Outcome
    decided_by: str
    certifies: str


#: Every outcome a pull request's check can reach, with what decided it and what it certifies.
PR_VERDICTS: tuple[VerdictMeaning, ...] = (
    VerdictMeaning(
        Outcome.PASS,
        "the paired comparison with the baseline",
        "the change moved the measure, averaged over the items named (all the baseline's; a sequential run: its "
        "first ones it grew through), by less than the check's margin the harmful way: a change of the margin "
        "or more passes at most a share α of a baseline's reruns, for all but a share γ of recorded baselines",
    ),
    VerdictMeaning(
        Outcome.FAIL,
        "the paired comparison with the baseline",
        "the change moved the measure the harmful way by more than the margin, at the FAIL level split over "
        "the run's checks",
    ),
    VerdictMeaning(
        Outcome.WITHIN_THRESHOLD,
        "the check's threshold, where the comparison decided neither way or could not be made",
        "the measure lies within its threshold (the release gate's claim); nothing about the change",
    ),
    VerdictMeaning(
        Outcome.BEYOND_THRESHOLD,
        "the check's threshold, as for WITHIN THRESHOLD",
        "the measure lies beyond its threshold; the change is not shown worse than the margin",
    ),
    VerdictMeaning(Outcome.INCONCLUSIVE, "neither", "nothing"),
    VerdictMeaning(
        Outcome.CANNOT_SERVE,
        "the model's usable answers",
        "too few usable answers to measure; not blocking when the baseline could not serve either",
    ),
)


@dataclass(frozen=True)
class PrVerdict:
    """A check's outcome under the pull-request gate; ``blocking`` False for a check that could not serve at its
    baseline either (reported, never failing the run); ``why`` says what decided it, in a few words, ``basis``
    which of the comparison (``margin``) and the ``threshold`` did, and ``claim`` what a PASS or FAIL shows."""

    outcome: Outcome
    why: str
    blocking: bool = True
    basis: Basis = "none"
    claim: str = ""


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
    """The check's pull-request outcome from its threshold's verdict (``absolute``) and its baseline comparison:
    PASS and FAIL only from the paired comparison, the threshold's verdict under its own words otherwise."""
    if absolute is Outcome.CANNOT_SERVE:
        if baseline_unserved:
            return PrVerdict(absolute, "it could not serve at the baseline either: nothing changed", blocking=False)
        return PrVerdict(absolute, "it served at the baseline and cannot now: a regression")
    evidence = None if comparison is None else comparison.paired
    if evidence is None:
        why = "no baseline" if comparison is None else f"not paired ({comparison.unpaired or comparison.status})"
        return _by_threshold(absolute, why)
    items = evidence.items_claimed()
    if evidence.outcome is Outcome.FAIL and evidence.p_beyond * max(checks, 1) <= evidence.fail_alpha:
        claim = f"worse than the baseline by more than {evidence.margin:g} on {items}"
        return PrVerdict(Outcome.FAIL, f"shown {claim}", basis="margin", claim=claim)
    if evidence.outcome is Outcome.PASS:
        claim = f"within {evidence.margin:g} of the baseline on {items}"
        return PrVerdict(Outcome.PASS, f"shown {claim}", basis="margin", claim=claim)
    return _by_threshold(absolute, f"the comparison decided neither way on {items}")


def _by_threshold(absolute: Outcome, undecided: str) -> PrVerdict:
    """The threshold's verdict on a check the comparison did not decide (``undecided`` says why), named for the
    threshold: it says where the measure lies, never how far the change moved it."""
    if absolute is Outcome.PASS:
        why = f"{undecided}: the threshold alone decides, within it (the margin not shown)"
        return PrVerdict(Outcome.WITHIN_THRESHOLD, why, basis="threshold")
    if absolute is Outcome.FAIL:
        why = f"{undecided}: the threshold alone decides, beyond it (the margin not shown)"
        return PrVerdict(Outcome.BEYOND_THRESHOLD, why, basis="threshold")
    return PrVerdict(Outcome.INCONCLUSIVE, f"{undecided}, and the threshold does not decide either")


@dataclass(frozen=True)
class PairedSize:
    """The paired planner's choice for a pull-request check: the measure's ``size`` (all of the baseline's items,
    ``clusters`` prompts) × ``samples_per_item``, its model ``calls`` and dollars (None: unpriced), its chance to
    pass an unchanged release at the PASS level ``level`` (``reached``: the planner's power), and the baseline's
    variance components it was chosen from (K0 ``k_old`` answers an item)."""

    size: int
    samples_per_item: int
    clusters: int
    calls: int
    usd: float | None
    power: float
    rho: float
    between: float
    within: float
    basis: str

    #: Whether every answer the baseline's size needs is in the response cache (the baseline's model, unchanged).
    cached: bool = False
    level: float = 0.0
    reached: bool = True
    k_old: int = 1

    def line(self) -> str:
        """The choice in one line, for --fairness-plan and the run's log."""
        usd = "unpriced" if self.usd is None else f"${self.usd:,.2f}"
        rho = "n/a" if math.isnan(self.rho) else f"{self.rho:.2f}"
        if self.cached:
            chosen = (
                f"all the baseline's {self.clusters:,} prompts × K = {self.samples_per_item}, every answer in the "
                "response cache (0 calls: identical answers pair to differences of 0)"
            )
        else:
            chosen = (
                f"all the baseline's {self.clusters:,} prompts × K = {self.samples_per_item} samples per item = "
                f"{self.calls:,} calls ({usd}), {self.power:.0%} chance to pass an unchanged release at the PASS "
                f"level {self.level:g}"
            )
            if not self.reached:
                chosen += (
                    f" (short of {TARGET_POWER:.0%}: more answers per item cannot shrink the baseline's own noise; a "
                    f"baseline recorded with more than K0 = {self.k_old} answers an item, or more items, would)"
                )
        return (
            f"paired plan: {chosen}; ρ = {rho}, between-item variance {self.between:.3g}, within-item "
            f"{self.within:.3g} ({self.basis})"
        )


def paired_size(
    items: Sequence[ItemScores],
    baseline_size: int,
    margin: float,
    width: float,
    usd_per_sample: float | None,
    alpha: float = 0.05,
    cached: bool = False,
    requests_per_sample: float = 1.0,
) -> PairedSize:
    """Every one of the baseline's items × the fewest K whose chance to pass an unchanged release at the PASS
    level (``baseline_level(alpha)``) reaches the planner's power (``allocation.plan_k``), from the variance
    components measured on the baseline's items: the claim then covers the baseline's items, not a prefix of
    them. Each of an item's K samples costs ``usd_per_sample`` (its requests, the model's and the judge's);
    the calls shown are ``requests_per_sample`` a sample (e.g. a pair's two answers, or an association test's
    per-word requests). When every answer of the baseline's size and K0 is ``cached`` (its model,
    unchanged), that size costs nothing and pairs to differences of 0: it is the plan."""
    components = components_from_baseline(items)
    clusters = len({i.cluster for i in items})
    level = baseline_level(alpha)
    rho, between, within, basis = components.rho, components.between, components.within, components.basis
    if cached:
        k = components.k_old
        return PairedSize(baseline_size, k, clusters, 0, 0.0, math.nan, rho, between, within, basis, True, level,
                          k_old=k)  # fmt: skip
    chosen = plan_k(components, clusters, margin, width, alpha=level)
    samples = clusters * components.items_per_cluster * chosen.k
    usd = None if usd_per_sample is None else samples * usd_per_sample
    return PairedSize(
        baseline_size, chosen.k, clusters, round(samples * requests_per_sample), usd, chosen.chance,
        rho, between, within, basis, False, level, chosen.reached, components.k_old,
    )  # fmt: skip
