"""Simulated detection rates of the replay check: how often its seeded draw finds a change that touches a given
share of the cached answers, with Clopper–Pearson intervals, for the tests and the docs.

Each trial changes a random set of ``round(share × population)`` answers and draws the run's sample exactly as
``run.replay_check`` draws it (``stats.spot_check.draw``, a new seed each trial); the change is caught when the
sample holds one of them (every comparison of a greedy or seeded answer that changed differs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_fairness.stats import spot_check
from pytest_fairness.testing.paired_trials import Rate


@dataclass(frozen=True)
class Detection:
    """The simulated rate at one share of changed answers, and the exact chance (hypergeometric) beside it."""

    share: float
    changed: int
    rate: Rate
    exact: float


def detection_rates(
    population: int, shares: Sequence[float], trials: int = 2000, seed: int = 0, n: int | None = None
) -> list[Detection]:
    """Per share of changed answers, how often the replay check's draw of ``n`` (the rule's size by default) of
    ``population`` cached answers holds at least one changed answer, in ``trials`` trials."""
    n = spot_check.sample_size() if n is None else n
    rng = np.random.default_rng(seed)
    out = []
    for share in shares:
        changed = round(share * population)
        caught = 0
        for trial in range(trials):
            touched = np.zeros(population, dtype=bool)
            touched[rng.choice(population, size=changed, replace=False)] = True
            caught += bool(touched[spot_check.draw(population, n, seed=trial)].any())
        out.append(Detection(share, changed, Rate(caught, trials), spot_check.detection_chance(changed, population, n)))
    return out
