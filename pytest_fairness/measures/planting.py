"""What a measure family contributes to the synthetic test double (``pytest_fairness.testing``).

A family plants a bias of known size for its own kinds of double (``synthetic:iat``, ...) and
answers the requests it builds, recognised by their ``Purpose`` alone, as a model with that bias
would. The double itself knows no measure: it collects every registered measure's ``Planted``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from pytest_fairness.models.interface import ChatRequest, ChatResponse, LogprobRequest, LogprobResponse


class Double(Protocol):
    """The settings of a synthetic double, as an answerer sees them."""

    kind: str
    name: str
    unusable: float
    caprice: float

    def planted(self, kind: str) -> float:
        """The bias planted for a kind: the double's own kind gets its bias, every other kind none."""
        ...

    def rng(self, payload: object) -> random.Random:
        """A generator seeded by the double's seed and ``payload``: same request, same draws."""
        ...


Answerer = Callable[[Double, ChatRequest | LogprobRequest], ChatResponse | LogprobResponse]


@dataclass(frozen=True)
class Kind:
    """One kind of double: what it plants, and the options its name shows (besides the seed)."""

    description: str
    shown: tuple[str, ...] = ("bias", "unusable")


@dataclass(frozen=True)
class Planted:
    """A family's kinds of double, and its answerers keyed by ``Purpose.task``."""

    kinds: Mapping[str, Kind] = field(default_factory=dict)
    answerers: Mapping[str, Answerer] = field(default_factory=dict)
