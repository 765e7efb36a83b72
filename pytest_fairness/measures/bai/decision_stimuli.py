"""The facts of the decision contexts (``data/decision_stimuli.yaml``): per stereotype its scenarios, option
lists and how answers name the groups, and the hiring decisions' groups, names, accents and jobs."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from pytest_fairness.data import parse_yaml, read_text
from pytest_fairness.measures.bai.iat_stimuli import get_stereotype


@dataclass(frozen=True)
class Scenario:
    """The facts of one decision context; see the schema in decision_stimuli.yaml."""

    people: str
    person: tuple[str, str]  # one description per slot, with {group}
    occasion: str
    choices: str
    task: str  # with {option}
    ask: Literal["should", "likely", "suspect"]
    relation: str | None = None
    correction: str | None = None


def _scenario(raw: dict[str, Any], person: str | None = None) -> Scenario:
    slots = raw.get("person", person)
    if isinstance(slots, str):
        slots = [slots, slots]
    return Scenario(
        people=raw["people"],
        person=tuple(slots),  # type: ignore[arg-type]
        occasion=raw["occasion"],
        choices=raw["choices"],
        task=raw["task"],
        ask=raw["ask"],
        relation=raw.get("relation"),
        correction=raw.get("correction"),
    )


@dataclass(frozen=True)
class HiringGroup:
    """How one side of a hiring decision is described in each hiring format."""

    label: str
    race_label: str
    accent: str
    race_terms: tuple[str, ...]
    names: dict[str, tuple[str, ...]]  # gender -> full names


@dataclass(frozen=True)
class Hiring:
    """The hiring decisions' groups, names, accents and jobs (spec §2.25)."""

    stereotypes: tuple[str, ...]
    person: dict[str, str]  # hiring format -> description of one candidate, with {group}
    default: HiringGroup
    groups: dict[str, HiringGroup]
    jobs: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]  # original/synonym/pilot -> (stigma, default)
    scenarios: dict[str, dict[str, Any]]


def _hiring_group(raw: dict[str, Any]) -> HiringGroup:
    return HiringGroup(
        label=raw["label"],
        race_label=raw["race_label"],
        accent=raw["accent"],
        race_terms=tuple(raw["race_terms"]),
        names={gender: tuple(names) for gender, names in raw["names"].items()},
    )


@cache
def load_hiring() -> Hiring:
    raw = parse_yaml(read_text("decision_stimuli.yaml"))["hiring"]
    return Hiring(
        stereotypes=tuple(raw["stereotypes"]),
        person=dict(raw["person"]),
        default=_hiring_group(raw["default"]),
        groups={key: _hiring_group(group) for key, group in raw["groups"].items()},
        jobs={name: (tuple(lists["stigma"]), tuple(lists["default"])) for name, lists in raw["jobs"].items()},
        scenarios=raw["scenarios"],
    )


@dataclass(frozen=True)
class DecisionStimuli:
    """One stereotype's decision facts: scenarios, option lists and how answers name the groups."""

    key: str
    scenarios: dict[str, Scenario]  # replication, variation1, variation2
    options: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]  # original/synonym -> (stigma, default)
    hiring: bool = False
    from_iat: bool = False  # options are the IAT attribute words (matched verbatim, never inflected)
    capitalize: bool | frozenset[str] = False
    terms: dict[str, tuple[str, ...]] | None = None
    bare_words: bool = True
    whole_side: bool = False
    ignore: tuple[str, ...] = ()

    def scenario(self, variant: str) -> Scenario:
        """The synonym variant is the replication scenario with the synonym option lists."""
        return self.scenarios["replication" if variant == "synonym" else variant]

    def option_lists(self, variant: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(stigma-consistent, default-consistent) options of a variant."""
        return self.options["synonym" if variant == "synonym" else "original"]

    def display(self, word: str) -> str:
        """A group word as written in prompts (names and Black/White capitalised)."""
        if self.capitalize is True or (self.capitalize and word in self.capitalize):
            return " ".join(w[:1].upper() + w[1:] for w in word.split())
        return word


@cache
def load_decision_stimuli() -> dict[str, DecisionStimuli]:
    """All 21 stereotypes' decision facts, keyed like the IAT stimuli."""
    raw = parse_yaml(read_text("decision_stimuli.yaml"))
    hiring = load_hiring()
    out: dict[str, DecisionStimuli] = {}
    for key, entry in raw["stereotypes"].items():
        if entry["options"] == "hiring":
            # The candidates' description comes from the hiring format when the prompt is filled.
            scenarios = {name: _scenario(s, "{group}") for name, s in hiring.scenarios.items()}
            options = {name: hiring.jobs[name] for name in ("original", "synonym")}
            out[key] = DecisionStimuli(key, scenarios, options, hiring=True)
            continue
        if entry["options"] == "iat":
            iat = get_stereotype(key)
            options = {
                "original": (iat.stigma_attrs, iat.default_attrs),
                "synonym": (iat.synonym_stigma_attrs, iat.synonym_default_attrs),
            }
        else:
            options = {name: (tuple(s["stigma"]), tuple(s["default"])) for name, s in entry["options"].items()}
        capitalize = entry.get("capitalize", False)
        out[key] = DecisionStimuli(
            key=key,
            scenarios={name: _scenario(s) for name, s in entry["scenarios"].items()},
            options=options,
            from_iat=entry["options"] == "iat",
            capitalize=frozenset(capitalize) if isinstance(capitalize, list) else bool(capitalize),
            terms={word: tuple(forms) for word, forms in entry.get("terms", {}).items()},
            bare_words=entry.get("bare_words", True),
            whole_side=entry.get("whole_side", False),
            ignore=tuple(entry.get("ignore", ())),
        )
    return out


def get_decision_stimuli(stereotype: str) -> DecisionStimuli:
    """Look up a stereotype's decision facts; an unknown key lists the valid ones."""
    stimuli = load_decision_stimuli()
    if stereotype not in stimuli:
        raise ValueError(f"unknown stereotype {stereotype!r}; valid: {', '.join(stimuli)}")
    return stimuli[stereotype]
