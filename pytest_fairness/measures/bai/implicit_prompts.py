"""Builds IAT prompts: random group words, random group order, shuffled attributes (spec §1.1-1.2)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache

from pytest_fairness.data import parse_yaml, read_text
from pytest_fairness.measures.bai.iat_stimuli import Stereotype


@dataclass(frozen=True)
class IatPrompt:
    """One filled prompt and every random choice behind it, so a run can be audited."""

    stereotype: str
    variant: str
    stigma_word: str
    default_word: str
    stigma_first: bool
    attributes: tuple[str, ...]  # in prompt order
    text: str

    @property
    def groups(self) -> tuple[str, str]:
        """The two group words in prompt order."""
        if self.stigma_first:
            return (self.stigma_word, self.default_word)
        return (self.default_word, self.stigma_word)

    def reordered(self, stigma_first: bool) -> IatPrompt:
        """The same draw with the group words in the given order."""
        return fill(self.stereotype, self.variant, self.stigma_word, self.default_word, stigma_first, self.attributes)


@cache
def _prompt_data() -> dict[str, dict[str, object]]:
    text = read_text("implicit_prompts.yaml")
    return parse_yaml(text)


def variants() -> tuple[str, ...]:
    return tuple(_prompt_data()["variants"])


def uses_synonyms(variant: str) -> bool:
    return bool(_prompt_data()["variants"][variant]["synonyms"])  # type: ignore[index]


def fill(
    stereotype: str,
    variant: str,
    stigma_word: str,
    default_word: str,
    stigma_first: bool,
    attributes: tuple[str, ...],
) -> IatPrompt:
    data = _prompt_data()
    template_name = data["variants"][variant]["template"]  # type: ignore[index]
    template = str(data["templates"][template_name])  # type: ignore[index]
    s1, s2 = (stigma_word, default_word) if stigma_first else (default_word, stigma_word)
    text = template.format(s1=s1, s2=s2, words=", ".join(attributes))
    return IatPrompt(stereotype, variant, stigma_word, default_word, stigma_first, attributes, text)


def draw_prompt(stereotype: Stereotype, variant: str, rng: random.Random) -> IatPrompt:
    """One iteration's prompt: group words, their order and the attribute order all random."""
    stigma_word = rng.choice(stereotype.stigma_groups).lower()
    default_word = rng.choice(stereotype.default_groups).lower()
    stigma_first = rng.random() < 0.5
    default_attrs, stigma_attrs = stereotype.attributes(synonyms=uses_synonyms(variant))
    attributes = [w.lower() for w in default_attrs + stigma_attrs]
    rng.shuffle(attributes)
    return fill(stereotype.key, variant, stigma_word, default_word, stigma_first, tuple(attributes))
