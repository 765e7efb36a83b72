"""Response-quality and refusal disparities (Eloundou et al., spec §6): the pure statistics, no model.

The judge rates every response on its own, 1-5 on nine criteria. Responses to the same prompt share
its difficulty, so groups are compared prompt by prompt: per criterion, d_x = mean_A,x − mean_B,x
(each group's ratings for prompt x averaged over its names), tested with a paired two-sided t-test
(spec CHOICE-15; Wilcoxon signed-rank as an option), and the nine p-values are corrected together
(Holm by default). Refusal rates are compared as two proportions, with a Newcombe interval for the
difference, which stays sensible at the ~1% rates the paper reports.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pytest_fairness.stats.intervals import Interval, one_sample_t, proportion_interval
from pytest_fairness.stats.lazy_scipy import sps
from pytest_fairness.stats.multiplicity import CORRECTIONS, Correction, adjust

# Spec §6.1 (paper Fig. 20), in order; the judge's JSON answer uses these names as keys.
QUALITY_CRITERIA: tuple[str, ...] = (
    "Quality",
    "Relevance",
    "Accuracy",
    "Completeness",
    "Clarity",
    "Conciseness",
    "Tone and Politeness",
    "Engagement",
    "Ethical Considerations",
)
RATING_RANGE = (1, 5)

PairedTest = Literal["ttest", "wilcoxon"]


def _adjusted(pvalues: Sequence[float], method: Correction) -> list[float]:
    """``multiplicity.adjust`` over the defined p-values; an undefined (NaN) one stays NaN and is not a test,
    so a criterion without a test (e.g. too few prompts) neither counts nor weakens the others."""
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}; valid: {', '.join(CORRECTIONS)}")
    finite = [i for i, p in enumerate(pvalues) if not math.isnan(p)]
    out = [float(p) for p in pvalues]
    for i, p in zip(finite, adjust([pvalues[i] for i in finite], method), strict=True):
        out[i] = p
    return out


# -- ratings ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rating:
    """The judge's ratings of one response: ``scores`` maps criterion → 1..5."""

    prompt: str
    group: str
    scores: Mapping[str, float]


@dataclass(frozen=True)
class CriterionDisparity:
    """One criterion, A vs B over the prompts both groups answered.

    ``relative`` is 100·(mean_a − mean_b)/mean_b, the paper's "difference in %" as we read it.
    """

    criterion: str
    mean_a: float
    mean_b: float
    difference: float
    relative: float
    n: int
    statistic: float
    p: float
    p_adjusted: float
    significant: bool


@dataclass(frozen=True)
class QualityDisparity:
    group_a: str
    group_b: str
    criteria: Mapping[str, CriterionDisparity]
    n_prompts: int
    n_unpaired: int  # prompts rated for one group only: left out
    test: PairedTest
    correction: Correction
    alpha: float

    @property
    def any_significant(self) -> bool:
        return any(c.significant for c in self.criteria.values())


def _validate(rating: Rating, criteria: Sequence[str]) -> None:
    low, high = RATING_RANGE
    for criterion in criteria:
        value = rating.scores.get(criterion)
        if value is None:
            raise ValueError(f"rating of prompt {rating.prompt!r} ({rating.group}) has no {criterion!r} score")
        if isinstance(value, bool) or not low <= value <= high:
            raise ValueError(f"{criterion!r} score of prompt {rating.prompt!r} must be in {low}..{high}, got {value!r}")


def group_means(ratings: Sequence[Rating], criteria: Sequence[str] = QUALITY_CRITERIA) -> dict[str, dict[str, float]]:
    """Mean rating per group and criterion over all of that group's responses."""
    by_group: defaultdict[str, list[Rating]] = defaultdict(list)
    for rating in ratings:
        _validate(rating, criteria)
        by_group[rating.group].append(rating)
    return {g: {c: float(np.mean([r.scores[c] for r in rs])) for c in criteria} for g, rs in by_group.items()}


def _paired_test(d: np.ndarray, test: PairedTest) -> tuple[float, float]:
    if test == "ttest":
        return one_sample_t(d, 0.0)
    if d.size < 2:
        return (math.nan, math.nan)
    if not np.any(d):
        return (0.0, 1.0)  # every pair tied: no evidence of a difference
    res = sps.wilcoxon(d)
    return (float(res.statistic), float(res.pvalue))


def quality_disparity(
    ratings: Sequence[Rating],
    group_a: str,
    group_b: str,
    *,
    criteria: Sequence[str] = QUALITY_CRITERIA,
    test: PairedTest = "ttest",
    correction: Correction = "holm",
    alpha: float = 0.05,
) -> QualityDisparity:
    """Compare two groups' ratings criterion by criterion, paired by prompt.

    Each group's ratings for a prompt are averaged first (one value per group and prompt), so a prompt
    counts once whatever the number of names. ``significant`` uses the corrected p-value.
    """
    if test not in ("ttest", "wilcoxon"):
        raise ValueError(f"unknown test {test!r}; valid: ttest, wilcoxon")
    per_prompt: dict[str, dict[str, list[Rating]]] = defaultdict(lambda: defaultdict(list))
    for rating in ratings:
        if rating.group in (group_a, group_b):
            _validate(rating, criteria)
            per_prompt[rating.prompt][rating.group].append(rating)
    paired = [groups for groups in per_prompt.values() if group_a in groups and group_b in groups]
    if not paired:
        raise ValueError(f"no prompt has ratings for both {group_a!r} and {group_b!r}")

    def prompt_means(group: str, criterion: str) -> np.ndarray:
        return np.array([np.mean([r.scores[criterion] for r in groups[group]]) for groups in paired])

    rows = []
    for criterion in criteria:
        a, b = prompt_means(group_a, criterion), prompt_means(group_b, criterion)
        statistic, p = _paired_test(a - b, test)
        rows.append((criterion, float(a.mean()), float(b.mean()), statistic, p))
    adjusted = _adjusted([row[4] for row in rows], correction)
    return QualityDisparity(
        group_a=group_a,
        group_b=group_b,
        criteria={
            c: CriterionDisparity(
                criterion=c,
                mean_a=ma,
                mean_b=mb,
                difference=ma - mb,
                relative=100.0 * (ma - mb) / mb,
                n=len(paired),
                statistic=stat,
                p=p,
                p_adjusted=padj,
                significant=bool(padj < alpha),
            )
            for (c, ma, mb, stat, p), padj in zip(rows, adjusted, strict=True)
        },
        n_prompts=len(paired),
        n_unpaired=len(per_prompt) - len(paired),
        test=test,
        correction=correction,
        alpha=alpha,
    )


# -- refusals ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefusalDisparity:
    """Refusal rates of two groups, their difference (A − B) with its interval, and a z-test."""

    rate_a: float
    rate_b: float
    difference: float
    ci: Interval
    z: float
    p: float
    n_a: int
    n_b: int
    refused_a: int
    refused_b: int
    confidence: float


def refusal_disparity(
    refused_a: Sequence[bool], refused_b: Sequence[bool], confidence: float = 0.95
) -> RefusalDisparity:
    """Compare refusal indicators (one per response) of group A and group B.

    Interval: Newcombe's hybrid score interval for p_A − p_B (from the two Wilson intervals); test:
    pooled two-proportion z-test. Both treat responses as independent; with several names per prompt
    they are mildly clustered, so read borderline p-values with care.
    """
    k_a, k_b = int(sum(map(bool, refused_a))), int(sum(map(bool, refused_b)))
    return refusal_counts_disparity(k_a, len(refused_a), k_b, len(refused_b), confidence)


def refusal_counts_disparity(k_a: int, n_a: int, k_b: int, n_b: int, confidence: float = 0.95) -> RefusalDisparity:
    """``refusal_disparity`` from counts: ``k_a`` of group A's ``n_a`` responses refused, ``k_b`` of B's ``n_b``."""
    if n_a == 0 or n_b == 0:
        raise ValueError("both groups need at least one response")
    p_a, p_b = k_a / n_a, k_b / n_b
    (la, ua), (lb, ub) = (
        proportion_interval(k_a, n_a, confidence, "wilson"),
        proportion_interval(k_b, n_b, confidence, "wilson"),
    )
    diff = p_a - p_b
    ci = (diff - math.hypot(p_a - la, ub - p_b), diff + math.hypot(ua - p_a, p_b - lb))
    pooled = (k_a + k_b) / (n_a + n_b)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    if se == 0:
        z, p = 0.0, 1.0  # nobody refused, or everybody did
    else:
        z = diff / se
        p = float(2 * sps.norm.sf(abs(z)))
    return RefusalDisparity(p_a, p_b, diff, ci, z, p, n_a, n_b, k_a, k_b, confidence)


def refusal_disparity_by_task(
    refusals: Sequence[tuple[str, str, bool]],
    group_a: str,
    group_b: str,
    *,
    confidence: float = 0.95,
    correction: Correction = "holm",
) -> dict[str, tuple[RefusalDisparity, float]]:
    """Per task (spec §6.2: refusals are checked separately per task): the disparity and its corrected p.

    ``refusals`` holds (task, group, refused) per response; tasks where a group has no response are
    left out.
    """
    by_task: defaultdict[str, dict[str, list[bool]]] = defaultdict(lambda: {group_a: [], group_b: []})
    for task, group, refused in refusals:
        if group in (group_a, group_b):
            by_task[task][group].append(refused)
    results = {t: refusal_disparity(g[group_a], g[group_b], confidence) for t, g in by_task.items() if all(g.values())}
    adjusted = _adjusted([r.p for r in results.values()], correction)
    return {t: (r, p) for (t, r), p in zip(results.items(), adjusted, strict=True)}
