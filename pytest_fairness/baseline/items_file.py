"""A baseline's per-item scores: the compact companion file a paired comparison reads, and its reference.

The YAML a reviewer reads keeps a short summary per check; the scores of its items sit beside it in
``<suite>.<check>.items.tsv``, one line per sample in the order the run drew them (the order a later run
draws and grows in): ``key<TAB>cluster<TAB>score``, the cluster left empty where it is the key, the score at
``ITEM_DIGITS`` significant digits. The YAML entry keeps the file's name, its number of samples and a hash
of its bytes, so an edited or swapped file is recognised, never paired. Pure text in and out: no file I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_fairness.stats.paired.matching import ItemScores, PairingError
from pytest_fairness.util.serial import OMIT_EMPTY

#: Significant digits of a score in the items file; a run's own scores are rounded alike before pairing,
#: so an unchanged model answered from the cache pairs to differences of exactly 0.
ITEM_DIGITS = 6
ITEMS_SUFFIX = ".items.tsv"
HEADER = "# pytest-fairness items v1: key, cluster (empty: the key), score; in the order drawn\n"


def rounded(score: float) -> float:
    """A score as the items file keeps it."""
    return float(f"{score:.{ITEM_DIGITS}g}")


def render_items(items: Sequence[tuple[str, str]], scores: Sequence[float]) -> str:
    """The companion file's text: the same items and scores always give the same bytes."""
    if len(items) != len(scores):
        raise ValueError(f"{len(items)} item keys for {len(scores)} scores: a measure must name every sample")
    lines = [
        f"{key}\t{'' if cluster == key else cluster}\t{rounded(score):.{ITEM_DIGITS}g}"
        for (key, cluster), score in zip(items, scores, strict=True)
    ]
    return HEADER + "".join(f"{line}\n" for line in lines)


def digest(text: str) -> str:
    """The hash the YAML keeps of an items file (sha256, first 16 hex digits)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ItemsReference:
    """What a baseline entry keeps of its items file: name (beside the YAML), samples and hash, and K when the
    run took K ≥ 2 answers per item (``samples_per_item``; 0: one)."""

    file: str = ""
    samples: int = 0
    sha256: str = ""
    samples_per_item: int = field(default=0, metadata=OMIT_EMPTY)


def items_reference(stem: str, text: str, count: int, samples_per_item: int = 1) -> ItemsReference:
    """The reference a baseline entry keeps to the items file ``text`` of check ``stem``."""
    k = samples_per_item if samples_per_item > 1 else 0
    return ItemsReference(f"{stem}{ITEMS_SUFFIX}", count, digest(text), k)


def parse_items(text: str) -> list[ItemScores]:
    """The items of a companion file, in file order; a key seen again adds a sample to its item (K > 1)."""
    found: dict[str, tuple[str, list[float]]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise PairingError(f"line {number} of the items file is not key<TAB>cluster<TAB>score: {line[:60]!r}")
        key, cluster, score = parts
        try:
            value = float(score)
        except ValueError:
            raise PairingError(f"line {number} of the items file has no number as its score: {score[:20]!r}") from None
        found.setdefault(key, (cluster or key, []))[1].append(value)
    return [ItemScores(key, cluster, tuple(values)) for key, (cluster, values) in found.items()]


def run_items(items: Sequence[tuple[str, str]], scores: Sequence[float]) -> list[ItemScores]:
    """A run's own items, rounded as its items file would keep them."""
    return parse_items(render_items(items, scores))


@dataclass(frozen=True)
class RecordedItems:
    """A baseline's items as read for pairing, or why they cannot be used (``problem``, one line), with the
    ``fidelity`` its entry recorded (how its scores were read: exactly or not)."""

    items: tuple[ItemScores, ...] = ()
    problem: str = ""
    fidelity: str | None = None


def read_recorded(reference: ItemsReference | None, text: str | None) -> RecordedItems:
    """Check a baseline's items file against its entry's reference: present, unedited, readable."""
    if not reference:
        return RecordedItems(problem="the baseline keeps no per-item scores (re-record it with --snapshot-update)")
    name = reference.file or "?"
    if text is None:
        return RecordedItems(problem=f"its items file {name} is missing (it is committed beside the YAML)")
    if digest(text) != reference.sha256:
        return RecordedItems(problem=f"its items file {name} does not match the hash in the YAML (edited or replaced)")
    try:
        items = parse_items(text)
    except PairingError as exc:
        return RecordedItems(problem=f"its items file {name} cannot be read: {exc}")
    return RecordedItems(tuple(items))
