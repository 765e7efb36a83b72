"""How a Bias Enumeration run records what it found: one record per question, the search's recall with what
a PASS covers, and the summary lines a report prints."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_fairness.measures.fpf.axes import canary_recall, net_prevalence
from pytest_fairness.measures.fpf.axes.question_search import Text
from pytest_fairness.measures.fpf.axes.selection import Axis
from pytest_fairness.measures.measure import Checked
from pytest_fairness.util import fmt

#: What the gated estimate is, stated in every result.
ESTIMAND = (
    "the largest net prevalence |E[d]| among the questions rated harmful: for one question, the share of "
    "held-out answer pairs in which the judge sees the feature on one group's side only, net of the pairs in "
    "which it sees it on the other's (d = P(group A's answer) − P(group B's), both orders; 0 when neither or "
    "both, however the judge guesses); equal to 2·S_q − 1 for the paper's S_q, so 0.04 is a 52/48 split"
)


def observed_rating(axis: Axis, ratings: tuple[float | None, float | None]) -> float | None:
    """The rating in the direction the axis leans (the larger one when it leans neither way)."""
    if axis.direction is None:
        return net_prevalence.top_rating(ratings)
    return ratings[0 if axis.direction == "A" else 1]


def axis_record(
    axis: Axis,
    ratings: tuple[float | None, float | None],
    net: net_prevalence.Net,
    gated: net_prevalence.Gated,
    examples: Sequence[Text],
) -> dict[str, Any]:
    """One question: its net prevalence (the gate's quantity), the paper's sign test, and its ratings."""
    return {
        "question": axis.question,
        "gated": "harmful" if axis.question in gated.harmful else "near" if axis.question in gated.near else None,
        "net": net.estimate,
        "net_interval": list(net.interval),
        "favours": axis.direction,
        "share_a": axis.share_a,
        "mean_score": axis.mean_score,
        "n_favour_a": axis.n_favour_a,
        "n_favour_b": axis.n_favour_b,
        "n_ties": axis.n_ties,
        "n_undecided": axis.n_undecided,
        "p": axis.p,
        "p_bonferroni": axis.p_bonferroni,
        "significant": axis.significant,
        "harmfulness": axis.harmfulness,
        "harmfulness_favouring": {"A": ratings[0], "B": ratings[1]},
        "examples": [json.dumps(examples[i])[:300] for i in axis.examples],
    }


def recall_record(recall: canary_recall.Recall, confidence: float) -> dict[str, Any]:
    """The search's recall per prevalence tier, and the bound a PASS rests on (the weakest tier's)."""
    weakest = recall.weakest()
    return {
        "found": recall.n_found,
        "planted": recall.planted,
        "shown": recall.shown,
        "tiers": [
            {"share": t.share, "found": t.found, "planted": t.planted, "mild_found": t.mild_found}
            for t in recall.tiers()
        ],
        "weakest_share": weakest.share,
        "weakest_lower": recall.lower(confidence),
        "missed_bound": canary_recall.wrong_pass_bound(weakest.planted),
        "match_probes": canary_recall.MATCH_PROBES,
        "candidates": canary_recall.CANDIDATES,
        "confirm_probes": canary_recall.CONFIRM_PROBES,
        "confirm_level": canary_recall.CONFIRM_LEVEL,
        "text": recall.text(confidence),
    }


def not_shown(recall: canary_recall.Recall) -> str:
    """Why the gate cannot pass, and what would let it: growing the held-out pairs does not change recall."""
    return (
        f"{canary_recall.missed(recall)}; more held-out pairs cannot change that: a larger t, a stronger judge, "
        "or more prompts for the brainstorm"
    )


def summary_lines(record: Checked) -> list[str]:
    """The search's recall and coverage, then the ranked axes of a bias_axes check, significant ones first."""
    details = record.result.details
    if record.result.unserved:
        return [f"axes of difference for {record.check}: {record.result.unserved}"]
    groups = {"A": details["group_a"], "B": details["group_b"], None: "neither"}
    lines = [f"axes of difference for {record.check} ({details['questions_tested']} questions tested):"]
    recall = details.get("search_recall")
    if recall:
        why = details.get("search_not_shown")
        lines.append(f"  {recall['text']}" + (f"; no PASS: {why}" if why else ""))
        lines += [f"  not covered: {what}" for what in details["coverage"]["not_covered"]]
    if details.get("bounded_by") in details.get("near_harmful", ()):
        lines.append(
            f"  upper end set by {details['bounded_by']!r}, rated within {net_prevalence.RATING_MARGIN:g} below the "
            "harmful mark: a PASS needs it small too"
        )
    for axis in details["axes"][:10]:
        lines.append("  " + _axis_line(axis, groups))
    return lines


def _axis_line(axis: Mapping[str, Any], groups: Mapping[str | None, str]) -> str:
    # Read back from JSON under xdist, a NaN (no decided pair) arrives as None: ``fmt.num`` shows n/a.
    harm = fmt.num(axis["harmfulness"], ".2f") + ("/5" if axis["harmfulness"] is not None else "")
    mark = ("*" if axis["significant"] else " ") + {"harmful": "!", "near": "?"}.get(axis["gated"] or "", " ")
    return (
        f"{mark} {axis['question']} favours {groups[axis['favours']]}: net "
        f"{fmt.num(axis['net'], '+.3f')} {fmt.interval(axis['net_interval'], '+.3f')} of pairs towards "
        f"{groups['A']}, p_bonf {fmt.num(axis['p_bonferroni'], '.2g')}, harmfulness {harm}"
    )
