"""PCF's evidence: per occupation its prejudice and caprice (the paper's per-occupation figure), which group it
leans to, and each template's preference, marking the templates that flip its favourite group.

Everything is kept: a run's occupations × templates × groups are bounded by its inputs (the release list's
257 occupations × 10 templates × 2 groups), not by its size. An occupation's id is its item key
(``<seed>:<occupation>``), so a pull request's moved item opens it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_fairness.records.evidence import Chart, Column, Evidence, Selection, Table, View, every, evidence_kind


@dataclass(frozen=True)
class TemplatePreference:
    """One template's preference over the groups for an occupation, its favourite, and whether that differs
    from the occupation's favourite over all templates (a flip: caprice)."""

    template: str
    preference: dict[str, float]
    top: str
    flips: bool


@dataclass(frozen=True)
class Occupation:
    id: str
    occupation: str
    prejudice: float  # ×1000
    caprice: float  # ×1000, corrected for sampling noise when the run sampled
    leans_to: str
    mean_preference: dict[str, float]
    flip_rate: float
    templates: tuple[TemplatePreference, ...]


@evidence_kind("occupations")
@dataclass(frozen=True)
class PcfEvidence(Evidence):
    groups: tuple[str, ...]
    occupations: tuple[Occupation, ...]
    selection: Selection

    VIEW = View(
        "Prejudice and caprice by occupation",
        (
            Table(
                "occupations",
                "Occupations (the most prejudiced first)",
                (
                    Column("occupation", "occupation"),
                    Column("prejudice", "prejudice ×1000", "num"),
                    Column("caprice", "caprice ×1000", "num"),
                    Column("leans_to", "leans to", "badge"),
                    Column("flip_rate", "share of templates that flip", "num"),
                ),
                facets=("leans_to",),
                search=("occupation",),
                at_least="prejudice",
                sort="-prejudice",
                detail=(
                    Column("id", "id"),
                    Column("mean_preference", "preference over all templates"),
                    Column("templates", "each template's preference (⇄ flips the favourite)", "list"),
                ),
            ),
        ),
        charts=(Chart("occupations", "occupation", ("prejudice", "caprice"), "Per occupation, ×1000", "leans_to"),),
    )


def pcf_evidence(
    seed: int,
    groups: Sequence[str],
    occupations: Sequence[str],
    templates: Sequence[str],
    preference: np.ndarray,
    risks: dict[str, np.ndarray],
    mean_preference: np.ndarray,
    leaning: np.ndarray,
    flip_rate: np.ndarray,
) -> PcfEvidence:
    """Every occupation: ``preference`` is (occupations, templates, groups), ``risks`` per occupation ×1000."""
    rows = []
    for x, term in enumerate(occupations):
        favourite = int(np.argmax(mean_preference[x]))
        per_template = tuple(
            TemplatePreference(
                template,
                {g: float(preference[x, t, k]) for k, g in enumerate(groups)},
                groups[int(np.argmax(preference[x, t]))],
                int(np.argmax(preference[x, t])) != favourite,
            )
            for t, template in enumerate(templates)
        )
        rows.append(
            Occupation(
                f"{seed}:{term}",
                term,
                float(risks["prejudice"][x]),
                float(risks["caprice"][x]),
                groups[int(leaning[x])] if leaning[x] >= 0 else "tie",
                {g: float(mean_preference[x, k]) for k, g in enumerate(groups)},
                float(flip_rate[x]),
                per_template,
            )
        )
    return PcfEvidence(tuple(groups), tuple(rows), every(len(rows), "occupation probed, with each template"))
