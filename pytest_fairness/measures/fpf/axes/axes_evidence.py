"""The Bias Enumeration gate's evidence: each axis of difference tested, with its net prevalence, which group
it favours and how often, the harm rating of each direction, and example pairs labelled by how clearly they
lean its way; and the canaries planted in the brainstorm pairs, with whether the search found them.

Everything is kept: the questions tested and their few examples are bounded by the search, not the run's
size. Ids: ``q<i>`` per question in the gate's order, ``q<i>/e<j>`` per example, ``canary:<id>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_fairness.measures.fpf.axes.selection import Axis, PairLabel
from pytest_fairness.records.evidence import Column, Evidence, Selection, Table, View, capped, evidence_kind

Text = tuple[str, str, str]  # (prompt, group A's answer, group B's answer), names masked


@dataclass(frozen=True)
class AxisExample:
    """One held-out pair that leans the axis's way: ``lean`` is the judge's preference for A (−1..1)."""

    id: str
    prompt: str
    answer_a: str
    answer_b: str
    lean: float
    favours: str


@dataclass(frozen=True)
class AxisFinding:
    id: str
    question: str
    gated: str | None  # harmful | near | None
    net: float | None
    interval: tuple[float | None, float | None]
    favour_a: int
    favour_b: int
    ties: int
    harm_a: float | None
    harm_b: float | None
    significant: bool
    examples: tuple[AxisExample, ...]


@dataclass(frozen=True)
class Canary:
    """A planted difference: its share of the brainstorm pairs and the question that found it (None: missed)."""

    id: str
    difference: str
    side: str
    share: float
    found: bool
    question: str | None


@evidence_kind("axes")
@dataclass(frozen=True)
class AxesEvidence(Evidence):
    group_a: str
    group_b: str
    axes: tuple[AxisFinding, ...]
    canaries: tuple[Canary, ...]
    selection: Selection

    VIEW = View(
        "Axes of difference",
        (
            Table(
                "axes",
                "Questions tested",
                (
                    Column("question", "question"),
                    Column("gated", "gated as", "badge"),
                    Column("net", "net prevalence", "signed"),
                    Column("favour_a", "pairs favouring A", "num"),
                    Column("favour_b", "pairs favouring B", "num"),
                    Column("harm_a", "harm rating if A has it", "num"),
                    Column("harm_b", "harm rating if B has it", "num"),
                ),
                facets=("gated", "significant"),
                search=("question",),
                at_least="net",
                sort="|net",
                detail=(
                    Column("id", "id"),
                    Column("interval", "net prevalence interval"),
                    Column("examples", "example pairs (lean: the judge's preference for A)", "list"),
                ),
            ),
            Table(
                "canaries",
                "Canaries planted (the search's recall)",
                (
                    Column("difference", "planted difference"),
                    Column("side", "in group"),
                    Column("share", "share of pairs", "num"),
                    Column("found", "found", "badge"),
                    Column("question", "found by the question"),
                ),
                facets=("found",),
            ),
        ),
    )


def axes_evidence(
    records: Sequence[Mapping[str, Any]],
    axes: Sequence[Axis],
    labels: Mapping[str, Sequence[PairLabel | None]],
    held_out: Sequence[Text],
    canaries: Sequence[Mapping[str, Any]],
    groups: tuple[str, str],
    max_tokens: int,
) -> AxesEvidence:
    """Each tested question (``records``: ``findings.axis_record``'s, aligned with ``axes``) with its examples'
    full texts and labels, and each canary."""
    found = []
    for q, (record, axis) in enumerate(zip(records, axes, strict=True)):
        examples = []
        for e, i in enumerate(axis.examples):
            prompt, a, b = held_out[i]
            label = labels[axis.question][i]
            lean = 0.0 if label is None else label.d
            side = groups[0] if lean > 0 else groups[1] if lean < 0 else "neither"
            examples.append(AxisExample(f"q{q}/e{e}", prompt, capped(a, max_tokens), capped(b, max_tokens), lean, side))
        ratings = record["harmfulness_favouring"]
        found.append(
            AxisFinding(
                f"q{q}",
                record["question"],
                record["gated"],
                record["net"],
                tuple(record["net_interval"]),  # type: ignore[arg-type]
                record["n_favour_a"],
                record["n_favour_b"],
                record["n_ties"],
                ratings["A"],
                ratings["B"],
                bool(record["significant"]),
                tuple(examples),
            )
        )
    planted = tuple(
        Canary(f"canary:{c['id']}", c["axis"], c["side"], c["share"], c["found_by"] is not None, c["found_by"])
        for c in canaries
    )
    rule = "every question tested, with the held-out pairs that lean most clearly its way; every canary"
    return AxesEvidence(groups[0], groups[1], tuple(found), planted, Selection(len(found), 0, 0, len(found), rule))
