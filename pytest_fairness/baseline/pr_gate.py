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

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_fairness.records.comparison import Comparison
from pytest_fairness.stats.gate import Outcome
from pytest_fairness.stats.paired.allocation import components_from_baseline, plan
from pytest_fairness.stats.paired.matching import ItemScores

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
    if evidence.outcome is Outcome.FAIL and evidence.p_beyond * max(checks, 1) <= evidence.fail_alpha:
        return PrVerdict(Outcome.FAIL, f"shown worse than the baseline by more than {evidence.margin:g}")
    if evidence.outcome is Outcome.PASS:
        return PrVerdict(Outcome.PASS, f"shown within {evidence.margin:g} of the baseline")
    if absolute in (Outcome.PASS, Outcome.FAIL):
        return PrVerdict(absolute, "the comparison decides neither way: the threshold gates")
    return PrVerdict(Outcome.INCONCLUSIVE, "neither the comparison nor the threshold decides")


@dataclass(frozen=True)
class PairedSize:
    """The paired planner's choice for a pull-request check: the measure's ``size`` (the baseline's first items,
    ``clusters`` of them) × ``samples_per_item``, its model ``calls`` and dollars (None: unpriced), its chance to
    pass an unchanged release, and the baseline's variance components it was chosen from."""

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

    def line(self) -> str:
        """The choice in one line, for --fairness-plan and the run's log."""
        usd = "unpriced" if self.usd is None else f"${self.usd:,.2f}"
        rho = "n/a" if math.isnan(self.rho) else f"{self.rho:.2f}"
        chosen = (
            f"the baseline's {self.clusters:,} prompts × K = {self.samples_per_item}, every answer in the response "
            "cache (0 calls: identical answers pair to differences of 0)"
            if self.cached
            else f"{self.clusters:,} prompts × K = {self.samples_per_item} samples per item = {self.calls:,} calls "
            f"({usd}), {self.power:.0%} chance to pass an unchanged release"
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
) -> PairedSize | None:
    """The least-cost (prompts, K) among the baseline's items that passes an unchanged release with the planner's
    power (``paired.planner.plan``), from the variance components measured on the baseline's items; None when
    no K does it within them. Each of an item's K samples costs ``usd_per_sample`` (its requests, the model's
    and the judge's), none is paid per item; unpriced samples are planned by their count, and the calls shown
    are ``requests_per_sample`` a sample (e.g. a pair's two answers, or an association test's per-word
    requests). The size is the baseline's, scaled by the share of its prompts planned. When every answer of
    the baseline's size and K0 is ``cached`` (its model, unchanged), that size costs nothing and pairs to
    differences of 0: it is the plan."""
    components = components_from_baseline(items)
    clusters = len({i.cluster for i in items})
    if cached:
        k, rho, between, within = components.k_old, components.rho, components.between, components.within
        return PairedSize(baseline_size, k, clusters, 0, 0.0, math.nan, rho, between, within, components.basis, True)
    per_sample = usd_per_sample or 1.0  # a free model is planned by its samples
    chosen = plan(components, margin, width, item_cost=0.0, sample_cost=per_sample, alpha=alpha, available=clusters)
    if chosen is None:
        return None
    samples = chosen.clusters * components.items_per_cluster * chosen.samples_per_item
    calls = round(samples * requests_per_sample)
    size = min(baseline_size, math.ceil(chosen.clusters * baseline_size / clusters))
    usd = None if usd_per_sample is None else samples * usd_per_sample
    return PairedSize(
        size, chosen.samples_per_item, chosen.clusters, calls, usd, chosen.power,
        components.rho, components.between, components.within, components.basis,
    )  # fmt: skip
