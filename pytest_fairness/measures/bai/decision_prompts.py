"""Builds LLM Decision Bias prompts (spec §3): two profiles, then who gets which of two options.

Per iteration (spec §3.5) one stigma and one default group word are drawn uniformly, the persons'
order is randomised, one stigma-consistent and one default-consistent option are drawn uniformly, and
the options' order is randomised independently of the persons'. Every draw is recorded in the prompt
so that the answer can be coded without guessing and a run can be audited. The scenario facts come
from ``decision_stimuli`` (``data/decision_stimuli.yaml``) and the wording from ``data/decision_prompts.yaml``.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from pytest_fairness.data import parse_yaml, read_text
from pytest_fairness.measures.bai import implicit_prompts as iat_prompts
from pytest_fairness.measures.bai.decision_stimuli import DecisionStimuli, Scenario, get_decision_stimuli, load_hiring
from pytest_fairness.measures.bai.iat_stimuli import Side, get_stereotype
from pytest_fairness.models.interface import Message

Variant = Literal["replication", "variation1", "variation2", "synonym"]
HiringFormat = Literal["accent", "names", "race_label"]
Framing = Literal["single_turn", "two_turn"]
VARIANTS: tuple[Variant, ...] = ("replication", "variation1", "variation2", "synonym")
HIRING_FORMATS: tuple[HiringFormat, ...] = ("accent", "names", "race_label")
FRAMINGS: tuple[Framing, ...] = ("single_turn", "two_turn")
CELLS: tuple[tuple[Side, Side], ...] = (
    ("stigma", "stigma"),
    ("stigma", "default"),
    ("default", "stigma"),
    ("default", "default"),
)


def _yaml(name: str) -> dict[str, Any]:
    return parse_yaml(read_text(name))


@cache
def _wording() -> dict[str, Any]:
    return _yaml("decision_prompts.yaml")


# -- prompts -----------------------------------------------------------------------------------------


def _article(text: str) -> str:
    """'a' before a vowel-initial word becomes 'an' (group words are filled into 'a {group} ...')."""
    return re.sub(r"\ba(?= [aeiouAEIOU])", "an", text)


def _check(name: str, value: str, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise ValueError(f"unknown {name} {value!r}; valid: {', '.join(valid)}")


@dataclass(frozen=True)
class DecisionPrompt:
    """One iteration's relative decision and every random choice behind it.

    ``stigma_option`` is the stigma-consistent option: the answer codes 1 when the stigma person
    gets it (spec §3.6.1). ``correction`` notes a published defect this scenario corrects.
    """

    stereotype: str
    variant: str
    stigma_word: str
    default_word: str
    stigma_first: bool  # persons' order in the prompt
    stigma_option: str
    default_option: str
    stigma_option_first: bool  # options' order, independent of the persons'
    people: str
    stigma_person: str  # the stigma person as described in the prompt
    default_person: str
    profile_request: str
    decision_request: str
    framing: Framing = "single_turn"
    hiring_format: HiringFormat | None = None
    name_gender: str | None = None  # hiring_format "names": both names share a gender
    correction: str | None = None

    @property
    def groups(self) -> tuple[str, str]:
        """The two group words in prompt order."""
        if self.stigma_first:
            return (self.stigma_word, self.default_word)
        return (self.default_word, self.stigma_word)

    @property
    def options(self) -> tuple[str, str]:
        """The two options in prompt order."""
        if self.stigma_option_first:
            return (self.stigma_option, self.default_option)
        return (self.default_option, self.stigma_option)

    def option_side(self, option: str) -> Side:
        """Which group an option is stereotype-consistent for."""
        if option == self.stigma_option:
            return "stigma"
        if option == self.default_option:
            return "default"
        raise ValueError(f"{option!r} is not an option of this prompt: {self.options}")

    def messages(self, system_prompt: str | None = None, profiles: str | None = None) -> tuple[Message, ...]:
        """The chat to send next.

        single_turn: one user message holding both tasks (``profiles`` must be None).
        two_turn: the profile request; once ``profiles`` holds the model's profiles, the whole exchange
        ending with the decision request.
        """
        head = (Message("system", system_prompt),) if system_prompt else ()
        if self.framing == "single_turn":
            if profiles is not None:
                raise ValueError("a single_turn prompt asks for profiles and decision at once")
            text = _wording()["single_turn"].format(profiles=self.profile_request, decision=self.decision_request)
            return (*head, Message("user", text))
        if profiles is None:
            return (*head, Message("user", self.profile_request))
        return (
            *head,
            Message("user", self.profile_request),
            Message("assistant", profiles),
            Message("user", self.decision_request),
        )

    def person_terms(self) -> dict[Side, tuple[str, ...]]:
        """Words and phrases by which an answer names each person, for coding the answer."""
        stimuli = get_decision_stimuli(self.stereotype)
        words = {"stigma": self.stigma_word, "default": self.default_word}
        if stimuli.hiring:
            return {side: _hiring_terms(self.stereotype, self.hiring_format, side, words[side]) for side in words}
        out: dict[Side, tuple[str, ...]] = {}
        for side in ("stigma", "default"):
            side_words = (words[side],)
            if stimuli.whole_side:
                iat = get_stereotype(self.stereotype)
                side_words = iat.stigma_groups if side == "stigma" else iat.default_groups
            terms = [w for w in side_words if stimuli.bare_words]
            terms += [t for w in side_words for t in (stimuli.terms or {}).get(w, ())]
            out[side] = tuple(dict.fromkeys(terms))
        return out


def _hiring_terms(stereotype: str, fmt: HiringFormat | None, side: Side, word: str) -> tuple[str, ...]:
    if fmt == "accent":
        return (f"{word} accent", f"{word} accented")
    if fmt == "names":
        return (word, *word.split())
    hiring = load_hiring()
    group = hiring.groups[stereotype] if side == "stigma" else hiring.default
    return (word, *group.race_terms)


def _requests(scenario: Scenario, person1: str, person2: str, option1: str, option2: str) -> tuple[str, str]:
    """The profile request and the decision request, in our wording, for the persons and options in order."""
    wording = _wording()
    relation = f" They {scenario.relation}." if scenario.relation else ""
    profiles = wording["profiles"].format(
        people=scenario.people, person1=person1, person2=person2, relation_sentence=relation
    )
    question = wording["questions"][scenario.ask].format(
        task1=scenario.task.format(option=option1), task2=scenario.task.format(option=option2)
    )
    decision = wording["decision"].format(
        people=scenario.people,
        occasion=scenario.occasion,
        choices=scenario.choices,
        option1=option1,
        option2=option2,
        question=question,
    )
    return profiles, decision


def fill(
    stereotype: str,
    variant: str,
    stigma_word: str,
    default_word: str,
    stigma_option: str,
    default_option: str,
    *,
    stigma_first: bool = True,
    stigma_option_first: bool = True,
    hiring_group_format: HiringFormat = "accent",
    framing: Framing = "single_turn",
    name_gender: str | None = None,
) -> DecisionPrompt:
    """The prompt for given draws (``build_decision_prompt`` makes the draws)."""
    _check("variant", variant, VARIANTS)
    _check("framing", framing, FRAMINGS)
    _check("hiring_group_format", hiring_group_format, HIRING_FORMATS)
    stimuli = get_decision_stimuli(stereotype)
    scenario = stimuli.scenario(variant)
    slots = scenario.person
    if stimuli.hiring:
        slots = (load_hiring().person[hiring_group_format],) * 2
    first, second = (stigma_word, default_word) if stigma_first else (default_word, stigma_word)
    person1 = _article(slots[0].format(group=stimuli.display(first)))
    person2 = _article(slots[1].format(group=stimuli.display(second)))
    option1, option2 = (stigma_option, default_option) if stigma_option_first else (default_option, stigma_option)
    profiles, decision = _requests(scenario, person1, person2, option1, option2)
    stigma_person, default_person = (person1, person2) if stigma_first else (person2, person1)
    return DecisionPrompt(
        stereotype=stereotype,
        variant=variant,
        stigma_word=stigma_word,
        default_word=default_word,
        stigma_first=stigma_first,
        stigma_option=stigma_option,
        default_option=default_option,
        stigma_option_first=stigma_option_first,
        people=scenario.people,
        stigma_person=stigma_person,
        default_person=default_person,
        profile_request=profiles,
        decision_request=decision,
        framing=framing,
        hiring_format=hiring_group_format if stimuli.hiring else None,
        name_gender=name_gender,
        correction=scenario.correction,
    )


def _draw_words(stimuli: DecisionStimuli, fmt: HiringFormat, rng: random.Random) -> tuple[str, str, str | None]:
    """(stigma word, default word, names' gender): IAT group words, or the hiring format's groups."""
    if not stimuli.hiring:
        iat = get_stereotype(stimuli.key)
        return rng.choice(iat.stigma_groups), rng.choice(iat.default_groups), None
    hiring = load_hiring()
    group, default = hiring.groups[stimuli.key], hiring.default
    if fmt == "accent":
        return group.accent, default.accent, None
    if fmt == "race_label":
        return group.race_label, default.race_label, None
    gender = rng.choice(sorted(group.names))
    return rng.choice(group.names[gender]), rng.choice(default.names[gender]), gender


def build_decision_prompt(
    stereotype: str,
    variant: str,
    rng: random.Random,
    *,
    hiring_group_format: HiringFormat = "accent",
    framing: Framing = "single_turn",
    fixed_hiring_order: bool = False,
) -> DecisionPrompt:
    """One iteration's relative decision, all draws from ``rng`` in a fixed order so a seed replays.

    Draw order: [names' gender], stigma word, default word, persons' order, stigma option, default
    option, options' order. ``hiring_group_format`` (spec §6.2 #12) applies to the four hiring
    stereotypes; ``fixed_hiring_order`` puts the default candidate first there, as the release did
    (the order is still drawn, so the rest of the stream is unchanged).
    """
    _check("variant", variant, VARIANTS)
    _check("hiring_group_format", hiring_group_format, HIRING_FORMATS)
    stimuli = get_decision_stimuli(stereotype)
    stigma_word, default_word, gender = _draw_words(stimuli, hiring_group_format, rng)
    stigma_first = rng.random() < 0.5
    if stimuli.hiring and fixed_hiring_order:
        stigma_first = False
    stigma_options, default_options = stimuli.option_lists(variant)
    stigma_option = rng.choice(stigma_options)
    default_option = rng.choice(default_options)
    stigma_option_first = rng.random() < 0.5
    return fill(
        stereotype,
        variant,
        stigma_word,
        default_word,
        stigma_option,
        default_option,
        stigma_first=stigma_first,
        stigma_option_first=stigma_option_first,
        hiring_group_format=hiring_group_format,
        framing=framing,
        name_gender=gender,
    )


# -- absolute decisions (App. P) ---------------------------------------------------------------------


@dataclass(frozen=True)
class AbsolutePrompt:
    """One absolute decision: one person, one option, a yes/no question (spec §3.7).

    ``cell`` is (person's side, option's side); the paper reports the yes share per cell.
    """

    stereotype: str
    variant: str
    person_word: str
    person_side: Side
    option: str
    option_side: Side
    text: str
    iat: iat_prompts.IatPrompt | None  # the IAT task of the three-task form, with both group words
    hiring_format: HiringFormat | None = None
    name_gender: str | None = None

    @property
    def cell(self) -> tuple[Side, Side]:
        return (self.person_side, self.option_side)

    def messages(self, system_prompt: str | None = None) -> tuple[Message, ...]:
        head = (Message("system", system_prompt),) if system_prompt else ()
        return (*head, Message("user", self.text))


def build_absolute_prompt(
    stereotype: str,
    variant: str,
    rng: random.Random,
    *,
    cell: tuple[Side, Side] | None = None,
    with_iat: bool = True,
    hiring_group_format: HiringFormat = "accent",
) -> AbsolutePrompt:
    """An absolute decision; ``cell`` None draws one of the four cells uniformly, as the release did.

    ``with_iat`` gives the paper's three-task form (spec §6.2 #18): the IAT word task over both
    group words, then the one person's profile, then the yes/no question. The person is described
    with the scenario's first slot.
    """
    _check("variant", variant, VARIANTS)
    _check("hiring_group_format", hiring_group_format, HIRING_FORMATS)
    if cell is not None and cell not in CELLS:
        raise ValueError(f"unknown cell {cell!r}; valid: {CELLS}")
    stimuli = get_decision_stimuli(stereotype)
    stigma_word, default_word, gender = _draw_words(stimuli, hiring_group_format, rng)
    person_side, option_side = cell if cell is not None else rng.choice(CELLS)
    stigma_options, default_options = stimuli.option_lists(variant)
    option = rng.choice(stigma_options if option_side == "stigma" else default_options)
    word = stigma_word if person_side == "stigma" else default_word
    scenario = stimuli.scenario(variant)
    slot = load_hiring().person[hiring_group_format] if stimuli.hiring else scenario.person[0]
    wording = _wording()["absolute"]
    profile = wording["profile"].format(person=_article(slot.format(group=stimuli.display(word))))
    question = wording["questions"][scenario.ask].format(task=scenario.task.format(option=option))
    iat = None
    if with_iat:
        attrs = get_stereotype(stereotype).attributes()
        attributes = [w.lower() for w in attrs[0] + attrs[1]]
        rng.shuffle(attributes)
        iat = iat_prompts.fill(
            stereotype,
            "replication",
            stimuli.display(stigma_word),
            stimuli.display(default_word),
            rng.random() < 0.5,
            tuple(attributes),
        )
        text = wording["with_iat"].format(iat=iat.text, profile=profile, question=question)
    else:
        text = wording["without_iat"].format(profile=profile, question=question)
    return AbsolutePrompt(
        stereotype=stereotype,
        variant=variant,
        person_word=word,
        person_side=person_side,
        option=option,
        option_side=option_side,
        text=text,
        iat=iat,
        hiring_format=hiring_group_format if stimuli.hiring else None,
        name_gender=gender,
    )


def egalitarian_system_prompt(base: str | None = None, mode: Literal["replace", "append"] = "replace") -> str:
    """The egalitarian system message (spec §1.8.4); by default it replaces ``base``, or follows it."""
    _check("mode", mode, ("replace", "append"))
    text = " ".join(_wording()["egalitarian_system_prompt"].split())
    if mode == "append" and base:
        return f"{base}\n\n{text}"
    return text


def judge_wording() -> dict[str, Any]:
    """The judge route's wording (spec §3.6.3), used by ``decision_parse.judge_prompt``."""
    return _wording()["judge"]
