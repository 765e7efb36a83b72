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

    def attribute_side(self) -> dict[str, Side]:
        """Every attribute word (original and synonym sets) mapped to the side it is consistent with."""
        sides: dict[str, Side] = dict.fromkeys(self.default_attrs + self.synonym_default_attrs, "default")
        sides.update(dict.fromkeys(self.stigma_attrs + self.synonym_stigma_attrs, "stigma"))
        return sides


@cache
def load_stereotypes() -> dict[str, Stereotype]:
    raw = load_yaml("iat_stimuli.yaml")
    out: dict[str, Stereotype] = {}
    for key, entry in raw["stereotypes"].items():
        fields = {k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()}
        out[key] = Stereotype(key=key, **fields)
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
