"""How many cached answers a replay check asks again, which ones, and what a change it misses could move.

A pull request replays the model's answers from the release's response cache. Before it does, a seeded sample
of those cached answers is asked again (``run.replay_check``); one that differs means the model changed and
nothing of it is replayed. The sample is sized by a stated rule: a change that touches at least a share ``s`` of
the cached answers is caught with probability at least ``p``. Drawing ``n`` of ``N`` answers without replacement
misses every changed one with probability ``C(N - K, n) / C(N, n) <= (1 - K/N)^n``, so

    n >= ln(1 - p) / ln(1 - s)

suffices for any ``N`` (90 answers for s = 5%, p = 99%), and every answer is asked when there are no more than
that. A change that touches fewer answers may go unseen; what it could move is bounded by how many it touches.
Pure: no model, no files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pytest_fairness.stats.lazy_scipy import sps

#: The rule: a change touching at least this share of the cached answers ...
DETECT_SHARE = 0.05
#: ... is caught with at least this probability.
DETECT_POWER = 0.99


def sample_size(share: float = DETECT_SHARE, power: float = DETECT_POWER) -> int:
    """The fewest answers whose draw (with or without replacement) catches a change touching ``share`` of them
    with probability ``power``: ``ceil(ln(1 - power) / ln(1 - share))``."""
    if not (0 < share < 1 and 0 < power < 1):
        raise ValueError(f"share and power must lie in (0, 1), got {share}, {power}")
    return math.ceil(math.log(1 - power) / math.log(1 - share))


def draw(population: int, n: int, seed: int) -> list[int]:
    """The indices of the ``n`` answers asked again, out of ``population`` (all of them when ``n`` covers it),
    drawn without replacement by the run's seed, in increasing order."""
    if n >= population:
        return list(range(population))
    rng = np.random.default_rng([seed, population, n])
    return sorted(int(i) for i in rng.choice(population, size=n, replace=False))


def detection_chance(changed: int, population: int, n: int) -> float:
    """The chance that ``n`` answers drawn without replacement from ``population`` include at least one of the
    ``changed`` ones (hypergeometric)."""
    if changed <= 0:
        return 0.0
    if n >= population:
        return 1.0
    return float(1.0 - sps.hypergeom(population, changed, n).pmf(0))


def missable(population: int, share: float = DETECT_SHARE) -> int:
    """The most answers a change can touch and still fall short of the rule's share: at most this many changed
    answers may go unseen with a chance above ``1 - power`` (0 when every answer is asked)."""
    if population <= sample_size(share):
        return 0
    return max(0, math.ceil(share * population) - 1)


def estimate_shift(changed: int, items: int, score_range: float | None) -> float | None:
    """The most a mean over ``items`` item scores, each in a range of width ``score_range``, can move when
    ``changed`` answers change: each changed answer changes at most one item's score, so at most
    ``min(changed, items)`` items move, each by at most the range. None for an unbounded score."""
    if score_range is None or items <= 0:
        return None
    return min(changed, items) / items * score_range


def shifts(changed: int, items: Sequence[tuple[str, int, float | None]]) -> dict[str, float | None]:
    """Per check (label, items, score range): what ``changed`` unseen answers could move its estimate."""
    return {label: estimate_shift(changed, n, width) for label, n, width in items}
