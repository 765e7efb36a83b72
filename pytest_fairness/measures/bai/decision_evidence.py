"""Decision bias's evidence: each decision with the persons and options it was between, the coded outcome,
the text that decided the code, and the answer; the unusable ones with why.

Built once a run has coded its answers (``decision.run``): every decision up to ``DECISIONS`` (a uniform
sample beyond), in iteration order. A decision's id is its item key (``<seed>:<iteration>``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_fairness.records.evidence import BottomK, Column, Evidence, Selection, Table, View, evidence_kind

#: Decisions kept: every one of a run up to this many, a uniform sample beyond.
DECISIONS = 300
OUTCOMES = {1: "stereotyped", 0: "counter-stereotyped", None: "unusable"}


@dataclass(frozen=True)
class Decision:
    """One decision. Relative mode: between the stigma and the default person, which got the stigma-consistent
    option; absolute mode: one person (``stigma_person`` holds them, with their side) asked yes or no about one
    option. ``reason`` is the coder's (assigned, refusal, no yes/no answer, ...); ``coded_text`` the spans it
    read the decision from."""

    id: str
    stigma_person: str
    default_person: str
    stigma_option: str
    default_option: str
    outcome: str
    reason: str
    coded_text: tuple[str, ...]
    answer: str


@evidence_kind("decisions")
@dataclass(frozen=True)
class DecisionEvidence(Evidence):
    decisions: tuple[Decision, ...]
    selection: Selection

    VIEW = View(
        "Decisions",
        (
            Table(
                "decisions",
                "Decisions by group",
                (
                    Column("outcome", "decision", "badge"),
                    Column("reason", "coded as"),
                    Column("stigma_person", "stigma person"),
                    Column("stigma_option", "stigma-consistent option"),
                    Column("coded_text", "text that decided", "list"),
                ),
                facets=("outcome", "reason", "stigma_option"),
                search=("answer", "stigma_person", "default_person"),
                detail=(
                    Column("id", "id"),
                    Column("default_person", "default person"),
                    Column("default_option", "other option"),
                    Column("answer", "answer"),
                ),
            ),
        ),
    )


def decision_evidence(decisions: Sequence[Decision], seed: int) -> DecisionEvidence:
    """Every decision up to ``DECISIONS`` (a uniform sample beyond), in iteration order."""
    sample: BottomK[Decision] = BottomK(DECISIONS, f"decision:{seed}")
    for d in decisions:
        sample.offer(d.id, lambda d=d: d)
    kept = sorted(sample.items(), key=lambda d: int(d.id.rsplit(":", 1)[1]))
    rule = f"every decision up to {DECISIONS} (a uniform sample beyond)"
    return DecisionEvidence(tuple(kept), Selection(sample.offered, 0, 0, len(kept), rule))
