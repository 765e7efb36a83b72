"""Axes of difference, the Bias Enumeration Algorithm (Eloundou et al., spec §7): the search's pure core.

The judge is shown answers to the same prompt written for a user of group A and one of group B, never
told so. This module holds the search's steps without any model or I/O: which pairs each step may use,
the brainstorming batches, reading the judge's lists, and consolidation; ``axes_prompts`` words every
request, ``axes_labels`` reads labels and ratings, ``axes_gate`` holds the gated estimate.

1. brainstorming: t batches of k pairs shown as "Model A" / "Model B"; the judge lists short
   differences that recur (``sample_batches``, ``brainstorm_request``, ``parse_features``);
2. consolidation: the differences become "Which response ...?" questions, exact and near duplicates
   removed deterministically and, optionally, by the judge (``questions_request``, ``merge_request``,
   ``parse_questions``, ``consolidate``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from pytest_fairness.measures.fpf.corpus import is_refusal
from pytest_fairness.measures.fpf.harm.net_harm_core import identical_responses

DEFAULT_K = 7  # pairs per brainstorming call: the paper's value (spec §7.1)
MAX_FEATURE_WORDS = 6
# Two features are near duplicates when their content-word sets overlap this much (Jaccard). At 0.75,
# sets of up to three words must match exactly and longer ones may differ by one extra word. A
# character-level ratio (difflib) is not used: it merges antonyms such as male/female, formal/informal.
NEAR_DUPLICATE_JACCARD = 0.75

Orientation = Literal["batch", "pair", "fixed"]
ORIENTATIONS: tuple[Orientation, ...] = ("batch", "pair", "fixed")


def check_choice(name: str, value: str, valid: Sequence[str]) -> None:
    if value not in valid:
        raise ValueError(f"unknown {name} {value!r}; valid: {', '.join(valid)}")


# -- pairs ------------------------------------------------------------------------------------------


class ResponsePair(NamedTuple):
    """One prompt answered once for a group-A user and once for a group-B user (names masked)."""

    prompt: str
    response_a: str
    response_b: str


@dataclass(frozen=True)
class PairScreen:
    """Which pairs each step may use, by index.

    Pairs with a refusal are dropped (spec CHOICE-14: they belong to the refusal statistics).
    Identical pairs teach brainstorming nothing; in labeling they are ties without a judge call
    (label them ``NEITHER``).
    """

    brainstorm: tuple[int, ...]
    label: tuple[int, ...]
    refused: tuple[int, ...]
    identical: tuple[int, ...]


def screen_pairs(pairs: Sequence[Sequence[str]]) -> PairScreen:
    """Sort (prompt, response_a, response_b) pairs (``ResponsePair``s) by the steps that may use them."""
    refused = tuple(i for i, (_, a, b) in enumerate(pairs) if is_refusal(a) or is_refusal(b))
    dropped = set(refused)
    identical = tuple(i for i, (_, a, b) in enumerate(pairs) if i not in dropped and identical_responses(a, b))
    label = tuple(i for i in range(len(pairs)) if i not in dropped)
    same = set(identical)
    return PairScreen(tuple(i for i in label if i not in same), label, refused, identical)


def split_by_draw(
    draws: Sequence[int], brainstorm: Sequence[int], label: Sequence[int], brainstorm_draws: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Disjoint (brainstorm, label) pair indices, decided by each pair's prompt draw alone (spec CHOICE-21:
    testing on the pairs a feature was noticed in would favour it).

    Even draws below ``brainstorm_draws`` brainstorm, every other draw is labeled. A pair's side
    depends on nothing else, so a run grown to more draws keeps the first round's brainstorm pairs,
    and labels all the new ones. ``brainstorm`` and ``label`` are the indices ``screen_pairs`` allows
    for each step; the pairs of one draw (e.g. women's and men's Black-vs-White pairs) stay together,
    so no prompt is both brainstormed on and tested.
    """

    def brainstormed(i: int) -> bool:
        return draws[i] < brainstorm_draws and draws[i] % 2 == 0

    return tuple(i for i in brainstorm if brainstormed(i)), tuple(i for i in label if not brainstormed(i))


def fit_k(k: int, tokens: Callable[[int], int], context: int | None) -> int:
    """The largest batch size up to ``k`` whose request (``tokens(k)``: prompt and reply room) fits the
    judge's ``context``; 0 when not even one pair fits, ``k`` when the context is unknown."""
    if context is None:
        return k
    return next((size for size in range(k, 0, -1) if tokens(size) <= context), 0)


# -- 1. brainstorming -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BrainstormChat:
    """One pair as the judge sees it. ``swapped``: Model A shows group B's response."""

    index: int
    prompt: str
    model_a: str
    model_b: str
    swapped: bool


@dataclass(frozen=True)
class BrainstormBatch:
    chats: tuple[BrainstormChat, ...]

    @property
    def indices(self) -> tuple[int, ...]:
        return tuple(c.index for c in self.chats)


def _draw(pool: Sequence[int], k: int, t: int, rng: np.random.Generator) -> list[list[int]]:
    """t batches of k distinct indices; every index is shown once before any is shown again."""
    queue: list[int] = []
    batches = []
    for _ in range(t):
        batch: list[int] = []
        while len(batch) < k:
            if not queue:
                queue = [pool[i] for i in rng.permutation(len(pool))]
            j = next(j for j, index in enumerate(queue) if index not in batch)
            batch.append(queue.pop(j))
        batches.append(batch)
    return batches


def sample_batches(
    pairs: Sequence[Sequence[str]],
    k: int = DEFAULT_K,
    t: int = 20,
    rng: np.random.Generator | int | None = None,
    *,
    indices: Sequence[int] | None = None,
    orientation: Orientation = "batch",
) -> list[BrainstormBatch]:
    """Draw t brainstorming batches of k (prompt, response_a, response_b) pairs, from ``indices`` if given.

    Which group's response is "Model A" is random and recorded (``swapped``). ``orientation``: one coin
    per ``batch`` (default), per ``pair``, or ``fixed`` (Model A is always group A, as in the paper).
    Per batch keeps the orientation the same across a batch: the judge looks for differences that
    recur between Model A and Model B, and a per-pair coin would scatter a group difference over both
    models and hide it. Questions are orientation-free afterwards, so nothing downstream needs it.
    """
    check_choice("orientation", orientation, ORIENTATIONS)
    pool = list(range(len(pairs))) if indices is None else list(indices)
    if k < 1 or t < 1:
        raise ValueError(f"k and t must be positive, got k={k}, t={t}")
    if len(pool) < k:
        raise ValueError(f"a batch needs k={k} distinct pairs but only {len(pool)} are available; lower k")
    gen = np.random.default_rng(rng)
    batches = []
    for drawn in _draw(pool, k, t, gen):
        batch_coin = orientation == "batch" and bool(gen.integers(2))
        chats = []
        for index in drawn:
            prompt, response_a, response_b = pairs[index]
            swapped = bool(gen.integers(2)) if orientation == "pair" else batch_coin
            first, second = (response_b, response_a) if swapped else (response_a, response_b)
            chats.append(BrainstormChat(index, prompt, first, second, swapped))
        batches.append(BrainstormBatch(tuple(chats)))
    return batches


# -- reading lists ----------------------------------------------------------------------------------

_LIST_ITEM = re.compile(r"^\s*(?:[-*•·+–—]|\(?\d{1,3}[.):\]]|\(?[a-z][.)])\s+", re.IGNORECASE)
_MARKER = re.compile(r"^\W*(?:final\s+)?(?:list\s+of\s+)?differences\W*$", re.IGNORECASE)
_REF_WORD = r"(?:chats?|conversations?|examples?|pairs?)"
_NUMBERS = r"#?\d+(?:\s*(?:,|and|&|-|–|to)\s*#?\d+)*"
_REFS_PAREN = re.compile(rf"\s*[(\[][^()\[\]]*\b{_REF_WORD}\b[^()\[\]]*[)\]]", re.IGNORECASE)
_REFS_TAIL = re.compile(
    rf"[\s,;:.\-–—]*(?:\b(?:seen|observed|shown)\s+)?(?:\bin\s+)?(?:e\.g\.,?\s*)?\b{_REF_WORD}\s*{_NUMBERS}\W*$",
    re.IGNORECASE,
)
_SUBJECT = re.compile(r"(?:model|response)\s+[ab]", re.IGNORECASE)
_EDGE = " \t\"'“”‘’`*_.,;:!"


def _json_list(text: str) -> list[str] | None:
    """The last JSON list of strings in ``text`` (replies often wrap it in prose or a code fence)."""
    decoder = json.JSONDecoder()
    found = None
    for match in re.finditer(r"\[", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            found = value
    return found


def _after_marker(text: str) -> list[str] | None:
    """The lines after the last "Differences:" heading, or None without one."""
    lines = text.splitlines()
    heads = [i for i, line in enumerate(lines) if _MARKER.match(line)]
    return lines[heads[-1] + 1 :] if heads else None


def _clean_feature(item: str) -> str:
    text = _LIST_ITEM.sub("", item, count=1).replace("**", "").replace("__", "")
    text = _REFS_TAIL.sub("", _REFS_PAREN.sub("", text)).strip(_EDGE)
    head, sep, tail = text.partition(": ")
    if sep and tail.strip(_EDGE):
        if _SUBJECT.fullmatch(head.strip(_EDGE)):  # "Model B: uses emojis"
            text = f"{head.strip(_EDGE)} {tail}"
        elif len(head.split()) <= 3 and not re.search(r"\b(?:model|response)\b", head, re.IGNORECASE):
            text = tail  # "Tone: Model A is warmer"
    return " ".join(text.strip(_EDGE).split())


@dataclass(frozen=True)
class FeatureParse:
    """Features read from one brainstorming reply, and those dropped for being too long."""

    features: tuple[str, ...]
    too_long: tuple[str, ...]

    @property
    def n_too_long(self) -> int:
        return len(self.too_long)


def read_features(text: str, max_words: int = MAX_FEATURE_WORDS) -> FeatureParse:
    """Read a brainstormed list: after the last "Differences:" heading if any, else every list item.

    Bullets, numbering, markdown emphasis, quotes, trailing punctuation, conversation references
    ("(chats 1, 3)") and short topic labels ("Tone: ...") are removed. Words are counted as written,
    "Model A" included, the way the prompt states the limit. A JSON list of strings is read as is.
    """
    section = _after_marker(text)
    items = _json_list("\n".join(section) if section is not None else text)
    if items is None and section is not None:
        items = [line for line in section if _LIST_ITEM.match(line)] or [line for line in section if line.strip()]
    elif items is None:
        items = [line for line in text.splitlines() if _LIST_ITEM.match(line)]
    kept: list[str] = []
    too_long: list[str] = []
    for item in items:
        feature = _clean_feature(item)
        if feature:
            (too_long if len(feature.split()) > max_words else kept).append(feature)
    return FeatureParse(tuple(kept), tuple(too_long))


def parse_features(text: str, max_words: int = MAX_FEATURE_WORDS) -> list[str]:
    """The usable features of one brainstorming reply; see ``read_features`` for the dropped ones."""
    return list(read_features(text, max_words).features)


# -- 2. consolidation -------------------------------------------------------------------------------

# Words that do not tell features apart: function words, the labels standing for the two responses,
# comparatives and hedges ("more formal" and "less formal" are the same axis, labelled symmetrically),
# and light verbs ("uses/includes/provides more examples"). Negations stay: "uses no emojis" differs
# from "uses emojis".
_STOPWORD_TEXT = """
    a an the is are was were be been being it its of to in on for with by at as that this these those than
    more less fewer most least much many slightly somewhat rather very generally usually often sometimes
    frequently typically tends tend likely overall which what model models response responses answer answers
    assistant chatbot one b s do does has have having use uses using include includes including provide
    provides providing give gives giving contain contains containing offer offers offering"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def feature_key(text: str) -> frozenset[str]:
    """The content words of a feature or question, case, punctuation, stopwords and plurals removed."""
    words = re.findall(r"[a-z0-9]+", text.casefold().replace("’", "'"))
    return frozenset(_stem(w) for w in words if w not in _STOPWORDS)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def is_near_duplicate(a: str, b: str, threshold: float = NEAR_DUPLICATE_JACCARD) -> bool:
    """Whether two features or questions say the same thing, by their content words."""
    key_a, key_b = feature_key(a), feature_key(b)
    if not key_a or not key_b:  # nothing but stopwords: only the same text is a duplicate
        return " ".join(a.casefold().split()) == " ".join(b.casefold().split())
    return _jaccard(key_a, key_b) >= threshold


def consolidate(features: Sequence[str], threshold: float = NEAR_DUPLICATE_JACCARD) -> list[str]:
    """Drop exact and near duplicates, keeping the first of each in input order.

    Deterministic, so it runs before the judge's own merge (spec §7.3 step 3), which is still needed
    for paraphrases without shared words ("is more formal" / "uses a professional register").
    """
    kept: list[str] = []
    for feature in features:
        text = " ".join(feature.split())
        if text and not any(is_near_duplicate(text, other, threshold) for other in kept):
            kept.append(text)
    return kept


_QUESTION = re.compile(r"\bwhich\b[^?\n]*\?", re.IGNORECASE)


def _clean_question(text: str) -> str:
    text = " ".join(_LIST_ITEM.sub("", text, count=1).replace("**", "").split()).strip(_EDGE)
    if text and not text.endswith("?"):
        text += "?"
    return text


def parse_questions(text: str, *, dedupe: bool = True) -> list[str]:
    """Questions from a consolidation or merge reply: its last JSON list of strings, else every
    "Which ...?" sentence. ``dedupe`` applies ``consolidate`` (spec CHOICE-32: an empty result means
    retry or skip, and count it)."""
    items = _json_list(text)
    if items is None:
        items = [m[0] for m in _QUESTION.finditer(text)]
    questions = [q for q in map(_clean_question, items) if q != "?" and q]
    return consolidate(questions) if dedupe else questions


def order_questions(questions: Sequence[str], cap: int | None = None) -> list[str]:
    """Shortest first, then truncated to ``cap`` (spec §7.3 step 4, CHOICE-18): short questions are
    the general ones. The cap must be fixed before labeling: Bonferroni counts what is labeled."""
    ranked = sorted(questions, key=lambda q: (len(q), q))
    return ranked if cap is None else ranked[:cap]


_WHICH = re.compile(r"^\s*which\s+(?:model|response|assistant|chatbot|answer|one)\b\s*", re.IGNORECASE)


def axis_label(question: str) -> str:
    """The axis name: the question without "Which response" and "?" (spec §7.5), e.g. "uses simpler
    language" or "'s tone is darker"."""
    return _WHICH.sub("", question.strip()).rstrip(" ?").strip()
