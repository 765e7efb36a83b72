"""K samples per item (``samples_per_item``): a measure run K times on the same items, each time with the
model's answers re-sampled (``Runner.resampled``: every chat request with its own seed), averaged per item.

The item's mean is its score: the gate's interval is taken over the items (n of them, not n·K correlated
samples), and the K scores of each item are kept (``Measured.item_samples``) for the items file, where the
within-item spread they show is what the paired planner reads. Only measures whose gate is a plain mean of
bounded per-item samples (``Params.PER_ITEM_MEAN``) average this way; the others take one sample per item.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from pytest_fairness.records.measure_result import Measured
from pytest_fairness.stats.intervals import IntervalKind
from pytest_fairness.stats.paired.allocation import MAX_SAMPLES_PER_ITEM

__all__ = ["MAX_SAMPLES_PER_ITEM", "ResamplingError", "averaged", "interval_for"]


class ResamplingError(ValueError):
    """Items a run cannot average: the message says which and why."""


def averaged(first: Measured, rerun: Callable[[int], Measured], k: int) -> Measured:
    """``first`` with each of its items scored by the mean of its usable samples over ``k`` runs (``rerun(j)``
    is the j-th re-sample, j = 1..k-1), and each item's samples kept. An item unusable in the first run stays
    out (the items are the first run's); one unusable in a re-sample averages the samples it has."""
    if k <= 1 or first.unserved is not None or not first.items or first.summary is not None:
        return first
    keys = [key for key, _ in first.items]
    if len(set(keys)) != len(keys):
        repeats = len(keys) - len(set(keys))
        raise ResamplingError(f"{repeats} item keys repeat within one run: K samples of an item cannot be told apart")
    found: dict[str, list[float]] = {key: [score] for key, score in zip(keys, first.samples, strict=True)}
    for j in range(1, k):
        again = rerun(j)
        for (key, _), score in zip(again.items, again.samples, strict=True):
            if key in found:
                found[key].append(score)
    per_item = tuple(tuple(found[key]) for key in keys)
    return replace(first, samples=[float(np.mean(s)) for s in per_item], item_samples=per_item)


def interval_for(kind: IntervalKind, samples: Sequence[float]) -> IntervalKind:
    """The interval a measure's samples take: a 0/1 measure's items averaged over K answers are means in [0, 1],
    so its exact binary interval gives way to the bounded one there."""
    return "bounded" if kind == "binary" and any(s not in (0, 1) for s in samples) else kind
