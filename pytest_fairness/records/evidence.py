"""Evidence: what a check keeps of the answers behind its number, chosen while the run streams.

A reviewer's next question after ``net_harm 0.013 [0.010, 0.020]`` is "show me". Each measure keeps a
bounded set of typed items (answer pairs, word pairings, decisions, occupations, axes) on its result
(``MeasureResult.evidence``), each with a stable ``id`` built from the measure's own item key, so that a
later run of the same seed finds the same item under the same id and a comment or annotation can point at it.

Bounded by construction, never by holding every text: a ``TopK`` keeps the k highest-scored items (a heap),
a ``BottomK`` a uniform sample of k (the k smallest hash priorities of their ids, so the same sample in any
order and chunking, and two samples merge by keeping the k smallest of their union). ``Keeper`` is the one
rule the measures share: every flagged item up to a cap, the highest first, plus a uniform sample of all.

Each kind of evidence declares how the HTML page shows it (``View``: tables with facets, a search, a number
filter, a drill-down, and charts), so the page names no measure. Kinds register on import (``evidence_kind``)
and their JSON form (``evidence_json``) carries the kind, which ``read_evidence`` reads back.
"""

from __future__ import annotations

import dataclasses
import hashlib
import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from pytest_fairness.util.serial import from_json, to_json

T = TypeVar("T")
E = TypeVar("E", bound="Evidence")

#: An answer kept as evidence is cut at this many characters per token the model was allowed (``max_tokens``):
#: an answer at its limit fits, and a pair stays a few kilobytes.
CHARS_PER_TOKEN = 8


def capped(text: str, max_tokens: int) -> str:
    """``text`` as evidence keeps it: whole when within ``CHARS_PER_TOKEN × max_tokens`` characters, else cut."""
    cap = CHARS_PER_TOKEN * max_tokens
    return text if len(text) <= cap else text[:cap] + " […]"


# -- choosing what to keep ------------------------------------------------------------------------------


def priority(item_id: str, salt: str) -> float:
    """A uniform number in [0, 1) fixed by the item's id: the order a bottom-k sample keeps items in."""
    digest = hashlib.blake2b(f"{salt}:{item_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _descending(text: str) -> tuple[int, ...]:
    """An order on ids that is the reverse of string order (so equal scores keep the smaller id)."""
    return tuple(-ord(c) for c in text)


class TopK(Generic[T]):
    """The k items of highest score offered (ties: the smaller id), and how many were offered."""

    def __init__(self, k: int) -> None:
        self.k, self.offered = k, 0
        self._heap: list[tuple[float, tuple[int, ...], str, T]] = []  # min-heap: the weakest kept on top

    def offer(self, score: float, item_id: str, build: Callable[[], T]) -> None:
        """``build`` makes the item only when it is kept: one below the cut costs no copy of its texts."""
        self.offered += 1
        key = (score, _descending(item_id))
        if len(self._heap) < self.k:
            heapq.heappush(self._heap, (*key, item_id, build()))
        elif key > self._heap[0][:2]:
            heapq.heapreplace(self._heap, (*key, item_id, build()))

    def items(self) -> list[T]:
        """Highest score first."""
        return [entry[3] for entry in sorted(self._heap, key=lambda e: (-e[0], e[2]))]


class BottomK(Generic[T]):
    """A uniform sample without replacement of k of the items offered: those of smallest ``priority``."""

    def __init__(self, k: int, salt: str) -> None:
        self.k, self.salt, self.offered = k, salt, 0
        self._heap: list[tuple[float, str, T]] = []  # max-heap by priority (negated)

    def offer(self, item_id: str, build: Callable[[], T]) -> None:
        self.offered += 1
        p = priority(item_id, self.salt)
        if len(self._heap) < self.k:
            heapq.heappush(self._heap, (-p, item_id, build()))
        elif -p > self._heap[0][0]:
            heapq.heapreplace(self._heap, (-p, item_id, build()))

    def ids(self) -> set[str]:
        return {entry[1] for entry in self._heap}

    def items(self) -> list[T]:
        """In priority order: the same sample whatever order the items came in."""
        return [entry[2] for entry in sorted(self._heap, key=lambda e: -e[0])]


@dataclass(frozen=True)
class Selection:
    """How the kept items were chosen from all the run saw; the page states it above the items.

    ``seen`` items were offered, ``flagged`` of them met the measure's flag rule, ``kept_flagged`` of those were
    kept (the cap binds when fewer), and ``sampled`` were kept by the uniform sample."""

    seen: int
    flagged: int
    kept_flagged: int
    sampled: int
    rule: str


def every(seen: int, what: str) -> Selection:
    """The selection of a measure that keeps every item it has (bounded by its inputs, not its size)."""
    return Selection(seen, 0, 0, seen, f"every {what}")


class Keeper(Generic[T]):
    """Every flagged item up to ``cap`` (the highest score first) and a uniform sample of ``sample`` of all items.

    Items are frozen dataclasses with ``id`` and ``why`` fields; ``kept`` marks each "flagged", "sampled" or
    "flagged, sampled". The sample is drawn from every item, flagged or not, so its share of flagged items
    estimates the flag rate."""

    def __init__(self, cap: int, sample: int, salt: str) -> None:
        self.flagged: TopK[T] = TopK(cap)
        self.sample: BottomK[T] = BottomK(sample, salt)

    def offer(self, item_id: str, score: float | None, build: Callable[[], T]) -> None:
        """One item; ``score`` is None unless it is flagged (then it ranks it)."""
        if score is not None:
            self.flagged.offer(score, item_id, build)
        self.sample.offer(item_id, build)

    def kept(self) -> list[T]:
        """The flagged items, highest first, then the sampled ones not among them, each marked why it was kept."""
        sampled = self.sample.ids()
        out = [_why(item, "flagged, sampled" if item.id in sampled else "flagged") for item in self.flagged.items()]  # type: ignore[attr-defined]
        ids = {item.id for item in out}  # type: ignore[attr-defined]
        return out + [_why(item, "sampled") for item in self.sample.items() if item.id not in ids]  # type: ignore[attr-defined]

    def selection(self, flag_rule: str, what: str) -> Selection:
        """The selection in words: ``flag_rule`` says what is flagged, ``what`` names the items."""
        kept = len(self.flagged.items())
        rule = (
            f"every {what[:-1] if what.endswith('s') else what} {flag_rule} (up to the {self.flagged.k} highest), "
            f"and a uniform sample of {self.sample.k} of all {self.sample.offered:,} {what}"
        )
        return Selection(self.sample.offered, self.flagged.offered, kept, len(self.sample.items()), rule)


def _why(item: T, why: str) -> T:
    return dataclasses.replace(item, why=why)  # type: ignore[type-var]


# -- how the page shows a kind (declared with it; the one page script renders any) ----------------------------


@dataclass(frozen=True)
class Column:
    """A field of an item as a column: ``format`` is text, num, signed, prob3 (three probabilities), badge, list,
    or ``refs:TABLE`` (ids of another table's rows, shown with their texts)."""

    key: str
    label: str
    format: str = "text"


@dataclass(frozen=True)
class Table:
    """One table of a view: the evidence field it lists, its columns, filters and drill-down."""

    source: str
    title: str
    columns: tuple[Column, ...]
    #: A select per key, of its values (e.g. task, domain, why kept).
    facets: tuple[str, ...] = ()
    #: The fields the search box reads.
    search: tuple[str, ...] = ()
    #: A number field filtered by |value| >= the box's number.
    at_least: str = ""
    #: The default order: a key, "-" before it for descending, "|" for descending by absolute value.
    sort: str = ""
    #: The drill-down's two texts side by side: answer A's field, answer B's, and the fields naming each side.
    pair: tuple[str, str, str, str] | None = None
    #: The drill-down's other fields.
    detail: tuple[Column, ...] = ()


@dataclass(frozen=True)
class Chart:
    """A figure of a table's rows: one horizontal bar per value of each row (the papers' per-item figures)."""

    source: str
    label: str
    values: tuple[str, ...]
    title: str
    #: A field naming where the row leans, shown after its label.
    lean: str = ""


@dataclass(frozen=True)
class View:
    title: str
    tables: tuple[Table, ...]
    charts: tuple[Chart, ...] = ()


# -- the kinds --------------------------------------------------------------------------------------------------


class Evidence:
    """Base of a measure's evidence: a frozen dataclass with a ``selection``, registered under its ``KIND``."""

    KIND: ClassVar[str] = ""
    VIEW: ClassVar[View]


KINDS: dict[str, type[Evidence]] = {}


def evidence_kind(name: str) -> Callable[[type[E]], type[E]]:
    """Register an evidence class under its kind, so its JSON form reads back into it (``read_evidence``)."""

    def register(cls: type[E]) -> type[E]:
        if KINDS.get(name, cls) is not cls:
            raise ValueError(f"evidence kind {name!r} is registered already")
        cls.KIND = name
        KINDS[name] = cls
        return cls

    return register


@dataclass(frozen=True)
class UnreadEvidence(Evidence):
    """Evidence of a kind this process has not registered (a team's own measure not imported): kept as read."""

    raw: Mapping[str, Any]


def evidence_json(evidence: Evidence | None) -> dict[str, Any] | None:
    """The JSON form, its kind first; None stays None."""
    if evidence is None:
        return None
    if isinstance(evidence, UnreadEvidence):
        return dict(evidence.raw)
    return {"kind": evidence.KIND, **to_json(evidence)}


def read_evidence(raw: Mapping[str, Any] | None) -> Evidence | None:
    """The evidence of a JSON form, as its registered class (or kept as read, ``UnreadEvidence``)."""
    if not raw:
        return None
    cls = KINDS.get(str(raw.get("kind")))
    if cls is None:
        return UnreadEvidence(dict(raw))
    return from_json(cls, {k: v for k, v in raw.items() if k != "kind"})


def view_of(kind: str) -> View | None:
    """How the page shows a kind (None: unregistered, shown as its raw JSON)."""
    cls = KINDS.get(kind)
    return None if cls is None else cls.VIEW
