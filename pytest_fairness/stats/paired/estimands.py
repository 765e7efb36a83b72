"""How the paired difference is formed for estimands that are not a plain mean of one score per sample.

**PCF** gates R (or R^p, R^c) = Σ_x ω_x r_x over occupations x, where r_x = Σ_t π_t J(p_{t,x}) (or its
prejudice or caprice part) is a risk of one occupation over all its templates. R is linear in the r_x, so
with the same occupations, templates and π on both sides, R_run − R_baseline = Σ_x ω_x (r_x,run − r_x,baseline)
exactly: the item is the occupation, its score r_x (×1000, in [0, 1000]), its own cluster
(``occupation_items``). The occupations of a run are a uniform draw (a seeded shuffle) from the list, so
the per-occupation differences are independent draws from the list's, and the betting interval of their
mean covers the equally weighted ΔR (the measure's default weights). Caprice is not linear in the
preferences, but r^c_x is a per-occupation number like r_x, so the same holds. With the user's occupation
weights the estimand is a weighted mean, which the betting interval does not cover: such a check keeps the
unpaired comparison (``paired_weights_supported``).

**Net harm** gates the judge's raw net ratings corrected by s, the judge's mean rating of a truly harmful
pair measured on the screen: raw ≈ s × truth per prompt. When the same judge (model and screen version)
serves the baseline and the run, s is common: raw_run − raw_baseline ≈ s × (truth_run − truth_baseline),
so the per-draw raw differences are paired and their interval, at half the error, is divided by s's bounds
at the other half (``stats.deattenuate``, via ``compare_paired(..., correction=...)``): jointly valid, as
for one side. The item is a name pair of a drawn prompt, its cluster the draw, its weight its share of the
draw's sample (``harm_items``). With another judge or screen on one side (or a reference audit, whose
offset is measured on each run's own pairs) nothing is common, and the only valid statement is the bound
from the two sides' own corrected intervals (``separate_bound``): unpaired, and named so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_fairness.stats.paired.matching import ItemScores

Interval = tuple[float, float]


def occupation_items(risks: Mapping[str, float]) -> list[ItemScores]:
    """PCF: one item per occupation (its own cluster), scored by its risk ×1000, in the run's occupation order."""
    return [ItemScores(occupation, occupation, (float(risk),)) for occupation, risk in risks.items()]


def paired_weights_supported(weights: Sequence[float], tolerance: float = 1e-12) -> bool:
    """Whether PCF's occupation weights are equal, so that the paired mean difference is its ΔR."""
    return bool(weights) and max(weights) - min(weights) <= tolerance * max(abs(w) for w in weights)


@dataclass(frozen=True)
class JudgedPair:
    """Net harm: one judged name pair of a drawn prompt with its net rating and its weight in the draw's sample."""

    draw: int
    pair: str
    weight: float
    net: float


def harm_items(pairs: Sequence[JudgedPair]) -> list[ItemScores]:
    """Net harm: one item per judged name pair, keyed by draw and pair, clustered by draw."""
    return [ItemScores(f"{p.draw}:{p.pair}", str(p.draw), (p.net,), p.weight) for p in pairs]


@dataclass(frozen=True)
class Instrument:
    """What a side's judged scores rest on: the judge's model id, the screen's data version, and whether a
    reference audit corrected them (its offset is measured on that run's own pairs)."""

    judge: str
    screen_version: str
    audited: bool = False


def common_scale(baseline: Instrument, run: Instrument) -> str | None:
    """None when the two sides share the judge's correction (pair the raw ratings), else why they do not."""
    if baseline.audited or run.audited:
        return "a reference audit corrects each run by an offset measured on its own pairs"
    if baseline.judge != run.judge:
        return f"the judge changed ({baseline.judge} -> {run.judge})"
    if baseline.screen_version != run.screen_version:
        return f"the judge's screen changed ({baseline.screen_version} -> {run.screen_version})"
    return None


def separate_bound(run: Interval, baseline: Interval) -> Interval:
    """The run − baseline interval from the two sides' own corrected intervals, each at 1 − alpha/2: valid
    for the difference at 1 − alpha (Bonferroni) whatever corrects each side; unpaired."""
    return (run[0] - baseline[1], run[1] - baseline[0])
