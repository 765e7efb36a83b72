"""Matching a run's per-item scores with its baseline's, and the per-cluster differences a paired gate reads.

An item is the unit a measure drew or paired (a prompt × name pair, a stereotype × iteration, an occupation),
named by a key stable across runs; its cluster is the prompt or task it came from. Items of one cluster share
the prompt's own effect, so they are not independent: the paired gate's units are the clusters, each scoring
the mean over its matched items of (the run's item mean − the baseline's item mean). An item may carry K ≥ 1
sample scores (answers re-sampled for the same item); its mean is what is paired, and with K ≥ 2 the spread
of its samples measures the within-item noise the planner needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np


class PairingError(ValueError):
    """Two sides that cannot be paired as given: the message says which item and why."""


@dataclass(frozen=True)
class ItemScores:
    """One item's scores on one side: its stable ``key``, the ``cluster`` it belongs to, its K ≥ 1 sample
    ``scores``, and its ``weight`` within the cluster (e.g. net harm's share of a draw; 1 = equal)."""

    key: str
    cluster: str
    scores: tuple[float, ...]
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not self.scores or not all(math.isfinite(s) for s in self.scores):
            raise PairingError(f"item {self.key!r} needs at least one finite score, got {self.scores!r}")
        if not (math.isfinite(self.weight) and self.weight > 0):
            raise PairingError(f"item {self.key!r} needs a positive weight, got {self.weight!r}")

    @property
    def mean(self) -> float:
        return float(np.mean(self.scores))


@dataclass(frozen=True)
class Pairing:
    """The matched items of a baseline and a run, by cluster in the baseline's order.

    ``old`` and ``new`` are each cluster's weighted mean over its matched items (the baseline's weights) of
    the item means; ``item_differences`` are the matched items' own differences, in the same order.
    ``within_old`` / ``within_new`` pool each side's within-item variance over items with K ≥ 2 samples
    (None when no item has two). Keys found on one side only are listed, never paired.
    """

    clusters: tuple[str, ...]
    old: tuple[float, ...]
    new: tuple[float, ...]
    item_differences: tuple[float, ...]
    unmatched_old: tuple[str, ...]
    unmatched_new: tuple[str, ...]
    samples_old: float
    samples_new: float
    within_old: float | None
    within_new: float | None
    #: The matched items' keys and baseline means, aligned with ``item_differences`` (what moved, and by how much).
    item_keys: tuple[str, ...] = ()
    item_old: tuple[float, ...] = ()

    @property
    def differences(self) -> np.ndarray:
        """Per cluster, the run's mean minus the baseline's: the paired gate's units."""
        return np.asarray(self.new) - np.asarray(self.old)

    @property
    def items(self) -> int:
        return len(self.item_differences)

    def matched_share(self) -> float:
        """Share of the baseline's items the run matched."""
        total = self.items + len(self.unmatched_old)
        return self.items / total if total else 0.0


def _by_key(items: Sequence[ItemScores], side: str) -> dict[str, ItemScores]:
    out: dict[str, ItemScores] = {}
    for item in items:
        if item.key in out:
            raise PairingError(f"the {side} has item {item.key!r} twice; each item key must be unique")
        out[item.key] = item
    return out


def within_variance(items: Sequence[ItemScores]) -> float | None:
    """Pooled within-item variance: Σ over items of Σ (x − item mean)² over Σ (K − 1); None without K ≥ 2."""
    squares = sum(float(np.sum((np.asarray(i.scores) - i.mean) ** 2)) for i in items)
    freedom = sum(len(i.scores) - 1 for i in items)
    return squares / freedom if freedom else None


def pair_items(old: Sequence[ItemScores], new: Sequence[ItemScores]) -> Pairing:
    """Match a baseline's items with a run's by key and form the per-cluster differences.

    Raises PairingError for a duplicate key, for an item whose cluster differs between the sides (the same
    key naming another prompt is a mispairing, never silently paired), and when no item matches.
    """
    before, after = _by_key(old, "baseline"), _by_key(new, "run")
    matched = [key for key in before if key in after]
    if not matched:
        raise PairingError("the run shares no item with its baseline: nothing can be paired")
    clusters: dict[str, list[str]] = {}
    for key in matched:
        a, b = before[key], after[key]
        if a.cluster != b.cluster:
            raise PairingError(f"item {key!r} is in cluster {a.cluster!r} in the baseline but {b.cluster!r} in the run")
        clusters.setdefault(a.cluster, []).append(key)
    old_means, new_means, diffs, order = [], [], [], []
    for keys in clusters.values():
        order += keys
        w = np.array([before[k].weight for k in keys])
        o, n = np.array([before[k].mean for k in keys]), np.array([after[k].mean for k in keys])
        old_means.append(float(w @ o / w.sum()))
        new_means.append(float(w @ n / w.sum()))
        diffs += list(n - o)
    kept_old, kept_new = [before[k] for k in matched], [after[k] for k in matched]
    return Pairing(
        clusters=tuple(clusters),
        old=tuple(old_means),
        new=tuple(new_means),
        item_differences=tuple(float(d) for d in diffs),
        unmatched_old=tuple(k for k in before if k not in after),
        unmatched_new=tuple(k for k in after if k not in before),
        samples_old=float(np.mean([len(i.scores) for i in kept_old])),
        samples_new=float(np.mean([len(i.scores) for i in kept_new])),
        within_old=within_variance(kept_old),
        within_new=within_variance(kept_new),
        item_keys=tuple(order),
        item_old=tuple(before[k].mean for k in order),
    )


@dataclass(frozen=True)
class MovedItem:
    """One matched item's mean score in the baseline (``before``) and in the run (``after``)."""

    key: str
    before: float
    after: float
    #: The JSON form adds the difference after ``after``.
    JSON_DERIVED: ClassVar[dict[str, str]] = {"difference": "after"}

    @property
    def difference(self) -> float:
        return self.after - self.before


#: The items a paired comparison names as having moved most (its reviewer's first look at what changed).
MOVED = 20


def most_moved(pairing: Pairing, k: int = MOVED) -> tuple[MovedItem, ...]:
    """The ``k`` matched items whose scores moved most between the baseline and the run (the largest |run −
    baseline| first; ties in key order); none that did not move."""
    d = np.abs(np.asarray(pairing.item_differences, dtype=float))
    if not pairing.item_keys or d.size == 0:
        return ()
    order = sorted((i for i in range(d.size) if d[i] > 0), key=lambda i: (-d[i], pairing.item_keys[i]))[:k]
    return tuple(
        MovedItem(pairing.item_keys[i], pairing.item_old[i], pairing.item_old[i] + pairing.item_differences[i])
        for i in order
    )
