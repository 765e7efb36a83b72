"""Parses "attribute - group" answers to the IAT prompt into pairs.

Models format these answers every way imaginable: bullets, numbering, bold, quotes, colons, no
separator at all, several pairs on one line, a chatty preamble. Rather than split on the first
hyphen (attribute words and names contain hyphens: "death-wish", "al-fayed"), each chunk is matched
against the words that are known to be in play: the longest known attribute at one end, a known
group word at the other. Whatever cannot be matched is counted and kept, never silently dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "`": "'"})
_DROP = re.compile(r"[\"'*_\[\]()]")  # quotes, markdown emphasis, brackets: never part of a word
_LEAD = re.compile(r"^\s*(?:\(?\d+[.):]\s*|[a-z][.)]\s+|[-*•+>·]+\s*)")  # numbering and bullets
_SEP = r"[\s\-–—:=>|/→⇒]+"  # between attribute and group: dashes, colons, arrows, or just a space
_NO_GROUP_WORDS = frozenset({"both", "neither", "either", "none", "all", "n/a"})


def normalize(text: str) -> str:
    """Canonical form for matching: lower case, no quotes/emphasis/brackets, single spaces."""
    text = _DROP.sub("", text.translate(_QUOTES).lower())
    return " ".join(text.split())


@dataclass
class ParsedAnswer:
    """Pairs read from one answer, and everything that could not be used."""

    pairs: list[tuple[str, str]] = field(default_factory=list)  # (attribute, group), first wins
    invalid: list[str] = field(default_factory=list)  # chunks that matched nothing
    ambiguous: list[str] = field(default_factory=list)  # "word - both", "word - white/black"
    duplicates: list[str] = field(default_factory=list)  # attributes assigned more than once
    missing: list[str] = field(default_factory=list)  # expected attributes never assigned

    @property
    def usable(self) -> bool:
        return bool(self.pairs)


def _chunks(text: str) -> list[str]:
    """Lines, and pairs that share a line separated by commas or semicolons."""
    out = []
    for line in text.translate(_QUOTES).splitlines():
        out.extend(part for part in re.split(r"[,;]", line) if part.strip())
    return out


class _Matcher:
    """Known attribute and group words of one prompt, compiled for matching chunks."""

    def __init__(self, attributes: Iterable[str], groups: Iterable[str]) -> None:
        self.attributes = {normalize(a): a for a in attributes}
        self.groups = {normalize(g): g for g in groups}
        attr_alt = "|".join(re.escape(a) for a in sorted(self.attributes, key=len, reverse=True))
        group_alt = "|".join(re.escape(g) for g in sorted(self.groups, key=len, reverse=True))
        self.forward = re.compile(rf"^(?P<attr>{attr_alt}){_SEP}(?P<rest>.+)$")
        self.backward = re.compile(rf"^(?P<rest>.+?){_SEP}(?P<attr>{attr_alt})$")
        self.group_words = re.compile(rf"(?<![\w-])(?:{group_alt})(?![\w-])")

    def match(self, chunk: str) -> tuple[str, str | None] | None:
        """(attribute, group or None when ambiguous), or None when the chunk is not a pair."""
        # Numbering goes before brackets are dropped, or "1) word" would read as "1 word".
        text = normalize(_LEAD.sub("", chunk.translate(_QUOTES).lower().replace("*", "").strip())).strip(" .!?")
        # A preamble may end in a colon ("here you go: word - group"): also try what follows each one.
        parts = text.split(":")
        candidates = [text] + [":".join(parts[i:]).strip(" .!?") for i in range(1, len(parts))]
        for candidate in candidates:
            for pattern in (self.forward, self.backward):
                found = pattern.match(candidate)
                if not found:
                    continue
                rest = found["rest"].strip(" -–—:=>|/→⇒.")
                if rest in self.groups:
                    return self.attributes[found["attr"]], self.groups[rest]
                named = set(self.group_words.findall(rest))
                if len(named) > 1 or rest in _NO_GROUP_WORDS:
                    return self.attributes[found["attr"]], None
        return None


def parse_answer(text: str, attributes: Iterable[str], groups: Iterable[str]) -> ParsedAnswer:
    """Read (attribute, group) pairs from an answer, knowing which words the prompt used.

    ``attributes`` are the attribute words in play and ``groups`` the group words; both are
    matched case-insensitively. The first assignment of an attribute counts; later ones are
    recorded as duplicates.
    """
    attributes = list(attributes)
    matcher = _Matcher(attributes, groups)
    parsed = ParsedAnswer()
    seen: set[str] = set()
    for chunk in _chunks(text):
        found = matcher.match(chunk)
        if found is None:
            parsed.invalid.append(chunk.strip())
            continue
        attribute, group = found
        if group is None:
            parsed.ambiguous.append(chunk.strip())
        elif attribute in seen:
            parsed.duplicates.append(attribute)
        else:
            seen.add(attribute)
            parsed.pairs.append((attribute, group))
    parsed.missing = [a for a in attributes if a not in seen]
    return parsed
