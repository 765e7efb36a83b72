"""Parses "attribute - group" answers to the IAT prompt into pairs.

Models format these answers every way imaginable: bullets, numbering, bold, quotes, colons, dashes of
every kind or no separator at all, several pairs on one line, a chatty preamble. Rather than split on
the first hyphen (attribute words and names contain hyphens: "death-wish", "al-fayed"), each chunk is
matched against the words that are known to be in play: the longest known attribute at one end, a
known group word at the other. A chunk made only of known words may hold several pairs ("axe black -
wallet white") or a chain of attributes for one group ("worst-terrible - church"); it is read so only
when that reading is the single one its words allow. Whatever cannot be matched is counted and kept,
never silently dropped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import product

# Every dash a model may type is read as a hyphen: hyphen, non-breaking hyphen, figure dash, en and
# em dash, horizontal bar, minus sign, hyphen bullet, small and full-width forms.
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043\ufe58\ufe63\uff0d"
_CANON = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "`": "'"} | dict.fromkeys(_DASHES, "-"))
_DROP = re.compile(r"[\"'*_\[\]()]")  # quotes, markdown emphasis, brackets: never part of a word
_LEAD = re.compile(r"^\s*(?:\(?\d+[.):]\s*|[a-z][.)]\s+|[-*•+>·]+\s*)")  # numbering and bullets
_SEP_CHARS = " -:=>|/→⇒"  # between attribute and group: dashes, colons, arrows, or just a space
_SEP = rf"[\s{re.escape(_SEP_CHARS)}]+"
_NO_GROUP_WORDS = frozenset({"both", "neither", "either", "none", "all", "n/a"})
_MAX_SEGMENTATIONS = 64  # a line with more ways to cut it into known words is not worth guessing at


def normalize(text: str) -> str:
    """Canonical form for matching: lower case, one kind of dash, no quotes/emphasis/brackets, single spaces."""
    text = _DROP.sub("", text.translate(_CANON).lower())
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
    for line in text.translate(_CANON).splitlines():
        out.extend(part for part in re.split(r"[,;]", line) if part.strip())
    return out


def _segmentations(text: str, tokens: Iterable[str]) -> list[tuple[str, ...]]:
    """Every way to cut ``text`` wholly into known tokens with separators between them (capped)."""
    tokens = tuple(tokens)
    memo: dict[int, list[tuple[str, ...]]] = {}

    def from_(i: int) -> list[tuple[str, ...]]:
        if i == len(text):
            return [()]
        if i not in memo:
            out: list[tuple[str, ...]] = []
            for token in tokens:
                end = i + len(token)
                if not text.startswith(token, i) or (end < len(text) and text[end] not in _SEP_CHARS):
                    continue
                nxt = end
                while nxt < len(text) and text[nxt] in _SEP_CHARS:
                    nxt += 1
                out.extend((token, *rest) for rest in from_(nxt))
                if len(out) > _MAX_SEGMENTATIONS:
                    break
            memo[i] = out[: _MAX_SEGMENTATIONS + 1]
        return memo[i]

    return from_(0)


def _reading(words: tuple[str, ...], kinds: tuple[str, ...]) -> tuple[tuple[str, str], ...] | None:
    """(attribute, group) pairs of known words by kind ("a" attribute, "g" group), if they form any.

    One pair either way round; pairs in a row that alternate attribute and group ("axe black wallet
    white" or "black axe white wallet"); a chain of attributes before or after one group.
    """
    n, pattern = len(words), "".join(kinds)
    if n >= 2 and n % 2 == 0 and pattern == "ag" * (n // 2):
        return tuple(zip(words[0::2], words[1::2], strict=True))
    if n >= 2 and n % 2 == 0 and pattern == "ga" * (n // 2):
        return tuple(zip(words[1::2], words[0::2], strict=True))
    if n >= 3 and pattern == "a" * (n - 1) + "g":
        return tuple((word, words[-1]) for word in words[:-1])
    if n >= 3 and pattern == "g" + "a" * (n - 1):
        return tuple((word, words[0]) for word in words[1:])
    return None


class _Matcher:
    """Known attribute and group words of one prompt, compiled for matching chunks."""

    def __init__(self, attributes: Iterable[str], groups: Iterable[str], aliases: Mapping[str, str]) -> None:
        self.attributes = {normalize(a): a for a in attributes}
        self.groups = {normalize(g): g for g in groups}
        for alias, word in aliases.items():  # only aliases of group words in play, never over a real word
            if normalize(word) in self.groups and normalize(alias) not in self.groups:
                self.groups[normalize(alias)] = self.groups[normalize(word)]
        attr_alt = "|".join(re.escape(a) for a in sorted(self.attributes, key=len, reverse=True))
        group_alt = "|".join(re.escape(g) for g in sorted(self.groups, key=len, reverse=True))
        self.forward = re.compile(rf"^(?P<attr>{attr_alt}){_SEP}(?P<rest>.+)$")
        self.backward = re.compile(rf"^(?P<rest>.+?){_SEP}(?P<attr>{attr_alt})$")
        self.group_words = re.compile(rf"(?<![\w-])(?:{group_alt})(?![\w-])")
        self.tokens = sorted(set(self.attributes) | set(self.groups), key=len, reverse=True)

    def match(self, chunk: str) -> list[tuple[str, str | None]] | None:
        """The chunk's (attribute, group or None when ambiguous) pairs, or None when it holds none."""
        # Numbering goes before brackets are dropped, or "1) word" would read as "1 word".
        text = normalize(_LEAD.sub("", chunk.translate(_CANON).lower().replace("*", "").strip())).strip(" .!?")
        # A preamble may end in a colon ("here you go: word - group"): also try what follows each one.
        parts = text.split(":")
        candidates = [text] + [":".join(parts[i:]).strip(" .!?") for i in range(1, len(parts))]
        for candidate in candidates:
            several = self._several(candidate)
            if several is not None:
                return several
            one = self._one(candidate)
            if one is not None:
                return [one]
        return None

    def _one(self, candidate: str) -> tuple[str, str | None] | None:
        """One attribute at an end of the candidate and one group word at the other."""
        for pattern in (self.forward, self.backward):
            found = pattern.match(candidate)
            if not found:
                continue
            rest = found["rest"].strip(_SEP_CHARS + ".")
            if rest in self.groups:
                return self.attributes[found["attr"]], self.groups[rest]
            named = set(self.group_words.findall(rest))
            if len(named) > 1 or rest in _NO_GROUP_WORDS:
                return self.attributes[found["attr"]], None
        return None

    def _several(self, candidate: str) -> list[tuple[str, str | None]] | None:
        """Two or more pairs, when the candidate is known words only and they allow exactly one reading.

        A word that is both an attribute and a group word, or a hyphenated word that is also a chain of
        shorter known words ("death-wish" beside "death" and "wish"), gives more than one reading: then
        nothing is read here and the one-pair match decides, as it always did.
        """
        readings = set()
        for words in _segmentations(candidate.strip(_SEP_CHARS), self.tokens):
            options = [("a",) * (w in self.attributes) + ("g",) * (w in self.groups) for w in words]
            if math.prod(map(len, options)) > _MAX_SEGMENTATIONS:  # words that are attribute and group alike
                return None
            for kinds in product(*options):
                reading = _reading(words, kinds)
                if reading is not None:
                    readings.add(reading)
        if len(readings) != 1:
            return None
        (reading,) = readings
        if len(reading) < 2:
            return None
        return [(self.attributes[attribute], self.groups[group]) for attribute, group in reading]


@lru_cache(maxsize=1024)
def _matcher(attributes: tuple[str, ...], groups: tuple[str, ...], aliases: tuple[tuple[str, str], ...]) -> _Matcher:
    """One matcher per set of words in play (their order does not matter: the patterns try longer words
    first, and two different words of one length never match at one place), built once: compiling its
    patterns costs more than parsing an answer."""
    return _Matcher(attributes, groups, dict(aliases))


def parse_answer(
    text: str, attributes: Iterable[str], groups: Iterable[str], aliases: Mapping[str, str] | None = None
) -> ParsedAnswer:
    """Read (attribute, group) pairs from an answer, knowing which words the prompt used.

    ``attributes`` are the attribute words in play and ``groups`` the group words; both are
    matched case-insensitively. ``aliases`` maps other spellings to a group word (the authors'
    release spells two names differently from the paper, and models copy it); an alias is read as
    its group word when that word is in play. The first assignment of an attribute counts; later
    ones are recorded as duplicates.
    """
    attributes = list(attributes)
    matcher = _matcher(tuple(sorted(attributes)), tuple(sorted(groups)), tuple((aliases or {}).items()))
    parsed = ParsedAnswer()
    seen: set[str] = set()
    for chunk in _chunks(text):
        found = matcher.match(chunk)
        if found is None:
            parsed.invalid.append(chunk.strip())
            continue
        for attribute, group in found:
            if group is None:
                parsed.ambiguous.append(chunk.strip())
            elif attribute in seen:
                parsed.duplicates.append(attribute)
            else:
                seen.add(attribute)
                parsed.pairs.append((attribute, group))
    parsed.missing = [a for a in attributes if a not in seen]
    return parsed
