"""The net-harm judge's calibration pool: labelled answer pairs composed from ``data/harm_calibration.yaml``.

The file holds parts (prompts with plain answers, families of demeaning clauses, harmless variations);
``pool()`` composes them into pairs, and ``draw(seed)`` picks the run's screen: the same number of harmful
pairs from every family, so a judge cannot serve by recognising a few phrases, and a new seed screens other
wordings; and every benign pair, so that a judge's mean lean on each family of harmless differences is that
family's exact mean over the pool (the population a draw would sample), not an estimate with its own error.
A team adds its own labelled pairs with ``--fairness-judge-calibration=FILE`` (``load_pairs``).

A pair shows ``given`` as the answer to the first group (A) and ``other`` as the answer to the second. A
harmful pair's ``given`` is the demeaning one (its blatant clauses keep ``{a_group}`` until the comparison
names the group); a benign pair's ``given`` is the varied one (the aside, the warmer words, the extra
detail...), so a judge's signed score on benign pairs shows whether it leans on which group gets the
harmless difference.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from os import PathLike
from pathlib import Path
from typing import Any

from pytest_fairness.data import load_yaml, parse_yaml

HARMFUL_KINDS = ("blatant", "subtle")
#: Pairs of each harmful family (half blatant, half subtle) a run screens (every benign pair is screened).
HARMFUL_PER_FAMILY = 10
#: Prompts each demeaning clause is composed with.
USES_PER_CLAUSE = 3


class CalibrationFileError(ValueError):
    """A team's calibration file that cannot be used; the message names the entry and the fix."""


@dataclass(frozen=True)
class CalibrationPair:
    """One labelled pair: ``kind`` "blatant", "subtle" (harmful: giving ``given`` to group A is a harmful
    stereotype) or "benign" (no stereotype whoever gets which); ``family`` the kind of demeaning assumption
    or of harmless difference; ``source`` "pool" or the team's file."""

    family: str
    kind: str
    prompt: str
    given: str
    other: str
    source: str = "pool"

    @property
    def harmful(self) -> bool:
        return self.kind != "benign"


def _join(sentences: Sequence[str]) -> str:
    return " ".join(sentences)


def _demeaning(plain: Sequence[str], clause: str, at: str) -> str:
    """The plain answer with the clause before or after it, or replacing all but its first sentence."""
    if at == "before":
        return f"{clause} {_join(plain)}"
    if at == "after":
        return f"{_join(plain)} {clause}"
    return f"{plain[0]} {clause}"


def _harmful(prompts: Sequence[Mapping[str, Any]], families: Mapping[str, Any]) -> list[CalibrationPair]:
    """Every clause of every family with ``USES_PER_CLAUSE`` prompts of its topics (a seeded spread)."""
    out = []
    for family, spec in families.items():
        fitting = [x for x in prompts if set(x["topics"]) & set(spec["topics"])]
        random.Random(f"harm-pool:{family}").shuffle(fitting)
        for i, clause in enumerate(spec["clauses"]):
            for j in range(USES_PER_CLAUSE):
                x = fitting[(i * USES_PER_CLAUSE + j) % len(fitting)]
                given = _demeaning(x["plain"], clause["text"], clause["at"])
                out.append(CalibrationPair(family, clause["kind"], x["prompt"], given, _join(x["plain"])))
    return out


def _swap(text: str, swaps: Sequence[Sequence[str]], start: int) -> str | None:
    """The text with one word or phrase replaced by its synonym (the first swap from ``start`` that applies)."""
    for k in range(len(swaps)):
        old, new = swaps[(start + k) % len(swaps)]
        swapped, n = re.subn(rf"\b{re.escape(old)}\b", new, text, count=1)
        if n:
            return swapped
    return None


def _variants(i: int, x: Mapping[str, Any], benign: Mapping[str, Any]) -> dict[str, str | None]:
    """The harmless variations of prompt ``i``'s plain answer, by family (None where one does not apply)."""
    plain, text = list(x["plain"]), _join(x["plain"])
    openers, closers = benign["aside"]["openers"], benign["aside"]["closers"]
    opener, closer = openers[i % len(openers)], closers[(5 * i + 3) % len(closers)]
    aside = (f"{opener} {text}", f"{text} {closer}", f"{opener} {text} {closer}")[i % 3]
    warm = benign["warmth"]["sentences"][(7 * i) % len(benign["warmth"]["sentences"])]
    return {
        "aside": aside,
        "warmth": f"{warm} {text}" if i % 2 else f"{text} {warm}",
        "detail": f"{text} {x['detail']}",
        "brevity": _join(plain[:2]),
        "order": None if x.get("steps") else _join(plain[1:] + plain[:1]),
        "format": "\n".join(f"- {s}" for s in plain),
        "trivial": _swap(text, benign["trivial"]["swaps"], 3 * i),
    }


def _benign(prompts: Sequence[Mapping[str, Any]], benign: Mapping[str, Any]) -> list[CalibrationPair]:
    out = []
    for i, x in enumerate(prompts):
        for family, varied in _variants(i, x, benign).items():
            if varied is not None:
                out.append(CalibrationPair(family, "benign", x["prompt"], varied, _join(x["plain"])))
    return out


@cache
def pool() -> tuple[CalibrationPair, ...]:
    """Every pair the packaged parts compose: harmful pairs first, then benign ones."""
    data = load_yaml("harm_calibration.yaml")
    return (*_harmful(data["prompts"], data["harmful"]), *_benign(data["prompts"], data["benign"]))


def families(pairs: Sequence[CalibrationPair]) -> dict[str, list[str]]:
    """The families of some pairs, harmful and benign, each in first-seen order."""
    harmful = list(dict.fromkeys(p.family for p in pairs if p.harmful))
    return {"harmful": harmful, "benign": list(dict.fromkeys(p.family for p in pairs if not p.harmful))}


def draw(seed: int, extra: Sequence[CalibrationPair] = ()) -> list[CalibrationPair]:
    """The pairs a run screens: from each harmful family ``HARMFUL_PER_FAMILY`` (half blatant, half subtle),
    drawn by ``seed``, every benign pair of the pool, then the team's ``extra`` pairs."""
    rng = random.Random(f"harm-calibration:{seed}")
    chosen: list[CalibrationPair] = []
    groups: dict[tuple[str, str], list[CalibrationPair]] = {}
    for pair in pool():
        groups.setdefault((pair.family, pair.kind), []).append(pair)
    for (_, kind), members in groups.items():
        k = HARMFUL_PER_FAMILY // len(HARMFUL_KINDS) if kind in HARMFUL_KINDS else len(members)
        chosen += rng.sample(members, min(k, len(members)))
    return [*chosen, *extra]


def load_pairs(path: str | PathLike[str]) -> tuple[CalibrationPair, ...]:
    """A team's labelled pairs (YAML): ``harmful`` entries with ``prompt``, ``demeaning`` and ``plain`` (and
    optional ``family``, ``kind`` blatant/subtle), ``benign`` entries with ``prompt``, ``varied`` and
    ``plain`` (optional ``family``). ``{a_group}`` in a demeaning answer becomes the first group's label."""
    where = Path(path)
    try:
        raw = parse_yaml(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CalibrationFileError(f"--fairness-judge-calibration: cannot read {where}: {exc.strerror}") from None
    if not isinstance(raw, dict) or not (raw.get("harmful") or raw.get("benign")):
        raise CalibrationFileError(
            f"--fairness-judge-calibration: {where} must be YAML with a 'harmful' and/or a 'benign' list of pairs"
        )
    pairs = [_entry(e, "harmful", i, where) for i, e in enumerate(raw.get("harmful") or [])]
    pairs += [_entry(e, "benign", i, where) for i, e in enumerate(raw.get("benign") or [])]
    return tuple(pairs)


def _entry(entry: object, section: str, i: int, where: Path) -> CalibrationPair:
    given_key = "demeaning" if section == "harmful" else "varied"
    place = f"--fairness-judge-calibration: {where}, {section}[{i}]"
    if not isinstance(entry, dict):
        raise CalibrationFileError(f"{place} must be a mapping with prompt, {given_key} and plain")
    missing = [k for k in ("prompt", given_key, "plain") if not isinstance(entry.get(k), str) or not entry[k].strip()]
    if missing:
        raise CalibrationFileError(f"{place} needs non-empty text for: {', '.join(missing)}")
    kind = str(entry.get("kind", "subtle")) if section == "harmful" else "benign"
    if section == "harmful" and kind not in HARMFUL_KINDS:
        raise CalibrationFileError(f"{place}: kind {kind!r} is not one of {', '.join(HARMFUL_KINDS)}")
    family = str(entry.get("family", f"team {section}"))
    return CalibrationPair(family, kind, entry["prompt"], entry[given_key], entry["plain"], source=str(where.name))
