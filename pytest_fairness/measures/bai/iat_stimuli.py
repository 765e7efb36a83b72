"""Loads the IAT stimuli (the 21 stereotypes) from ``data/iat_stimuli.yaml``.

Polarity is always scoped to one stereotype: the same word can be stigma-consistent in one and
absent from another, so there is deliberately no global word -> polarity table.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

from pytest_fairness.data import load_yaml

Side = Literal["stigma", "default"]


@dataclass(frozen=True)
class Stereotype:
    key: str
    label: str
    domain: str
    default_label: str
    stigma_label: str
    default_attr_label: str
    stigma_attr_label: str
    default_groups: tuple[str, ...]
    stigma_groups: tuple[str, ...]
    default_attrs: tuple[str, ...]
    stigma_attrs: tuple[str, ...]
    synonym_default_attrs: tuple[str, ...]
    synonym_stigma_attrs: tuple[str, ...]
    #: (other spelling, group word): spellings read from answers as the group word, never put in prompts
    aliases: tuple[tuple[str, str], ...] = ()

    def attributes(self, synonyms: bool = False) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(default-consistent, stigma-consistent) attribute words of one stimulus set."""
        if synonyms:
            return self.synonym_default_attrs, self.synonym_stigma_attrs
        return self.default_attrs, self.stigma_attrs

    def group_side(self) -> dict[str, Side]:
        """Every group word of the stereotype mapped to its side."""
        sides: dict[str, Side] = dict.fromkeys(self.default_groups, "default")
        sides.update(dict.fromkeys(self.stigma_groups, "stigma"))
        return sides

    def group_aliases(self) -> dict[str, str]:
        """Other spellings of this stereotype's group words (the authors' release's), mapped to the word."""
        return dict(self.aliases)

    def attribute_side(self) -> dict[str, Side]:
        """Every attribute word (original and synonym sets) mapped to the side it is consistent with."""
        sides: dict[str, Side] = dict.fromkeys(self.default_attrs + self.synonym_default_attrs, "default")
        sides.update(dict.fromkeys(self.stigma_attrs + self.synonym_stigma_attrs, "stigma"))
        return sides


def _checked_aliases(key: str, fields: dict, aliases: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The stereotype's aliases, each of one of its group words and none shadowing one of its words."""
    groups = set(fields["default_groups"]) | set(fields["stigma_groups"])
    words = groups | {w for name, v in fields.items() if name.endswith("attrs") for w in v}
    for alias, word in aliases.items():
        if word not in groups or alias in words:
            raise ValueError(f"iat_stimuli.yaml: alias {alias!r} -> {word!r} of {key!r} must name a group word")
    return tuple(aliases.items())


@cache
def load_stereotypes() -> dict[str, Stereotype]:
    raw = load_yaml("iat_stimuli.yaml")
    aliases = raw.get("group_aliases", {}).get("stereotypes", {})
    if aliases and not raw["group_aliases"].get("source"):
        raise ValueError("iat_stimuli.yaml: group_aliases must name their source")
    unknown = set(aliases) - set(raw["stereotypes"])
    if unknown:
        raise ValueError(f"iat_stimuli.yaml: group_aliases for unknown stereotypes {sorted(unknown)}")
    out: dict[str, Stereotype] = {}
    for key, entry in raw["stereotypes"].items():
        fields = {k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()}
        out[key] = Stereotype(key=key, **fields, aliases=_checked_aliases(key, fields, aliases.get(key, {})))
    return out


class UnknownStereotypeError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def get_stereotype(key: str) -> Stereotype:
    """Look up a stereotype; an unknown key lists the valid ones."""
    stereotypes = load_stereotypes()
    try:
        return stereotypes[key]
    except KeyError:
        raise UnknownStereotypeError(f"unknown stereotype {key!r}; valid: {', '.join(stereotypes)}") from None
