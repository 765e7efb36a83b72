"""PCF data: occupations (X), attribute word groups (Y) and context templates (T), packaged or the user's.

The packaged files are the paper's lists (spec §3); users can swap in their own as YAML, in the
packaged layout, or CSV (``template,count`` as the authors ship their mined templates; ``group,word``;
``occupation[,weight]``). Every problem in a file raises :class:`PcfDataError` naming the file, the
line (CSV) or key (YAML) and the fix, because these files are edited by hand. Terms and words are
stripped and lower-cased, the surface form the probes use (spec §7.2 #7).
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from pytest_fairness.data import parse_yaml, read_text
from pytest_fairness.measures.pcf.prejudice_caprice_core import OccupationWeights, weigh_occupations, weigh_templates

PathLike = str | Path


class PcfDataError(ValueError):
    """A problem in a PCF data file; the message says which file, where in it, and how to fix it."""


@dataclass(frozen=True)
class Occupations:
    """The X values in order, with optional weights (e.g. employment) for some or all of them."""

    terms: tuple[str, ...]
    weights: dict[str, float] | None
    source: str

    def weigh(self) -> OccupationWeights:
        """ω: uniform without weights, else proportional to them, unweighted terms dropped and listed."""
        return weigh_occupations(self.terms, self.weights)


@dataclass(frozen=True)
class AttributeGroups:
    """The K groups of an attribute (Y), each a tuple of words, in file order."""

    attribute: str
    labels: tuple[str, ...]
    words: tuple[tuple[str, ...], ...]
    source: str


@dataclass(frozen=True)
class Templates:
    """Context templates with their mined counts; ``top`` records a truncation to the N most frequent."""

    texts: tuple[str, ...]
    counts: tuple[float, ...]
    source: str
    top: int | None = None

    def weigh(self) -> np.ndarray:
        """π: counts renormalised over the templates kept (spec §3.3)."""
        return weigh_templates(self.counts)


def _template_problem(template: str) -> str | None:
    """What stops a string from being a PCF template, or None when it is one."""
    if "[X]" not in template:
        return "has no [X]; mark the occupation slot with [X]"
    n_slots = template.count("[Y]")
    if n_slots == 0:
        return "has no [Y]; mark the slot whose word probabilities are read with [Y]"
    if n_slots > 1:
        return f"has {n_slots} [Y] slots; keep exactly one, the slot whose word probabilities are read"
    return None


def render_probe(template: str, occupation: str) -> tuple[str, str]:
    """Fill [X] with the occupation and split at [Y]: (text before the slot, text after it).

    Surface form per spec §7.2 #7: the occupation is lower-cased and nothing is added (no final period,
    no article). Spacing is the template's own, so the prefix keeps the space before the slot; scorers
    that read word-boundary tokens move it onto the word (spec §2.4). The suffix is empty for the
    paper's templates, whose [Y] is last, and holds the rest of the sentence otherwise.
    """
    problem = _template_problem(template)
    if problem:
        raise ValueError(f"template {template!r} {problem}")
    term = occupation.strip().lower()
    if not term:
        raise ValueError("occupation is empty")
    before, after = template.split("[Y]")
    return before.replace("[X]", term), after.replace("[X]", term)


# -- reading files -------------------------------------------------------------------------------------


def _read(path: PathLike | None, packaged: str) -> tuple[str, str, str]:
    """(text, name used in messages, format) of a user file, or of the packaged one when no path."""
    if path is None:
        return read_text(packaged), packaged, "yaml"
    p = Path(path)
    fmt = {".yaml": "yaml", ".yml": "yaml", ".csv": "csv"}.get(p.suffix.lower())
    if fmt is None:
        raise PcfDataError(f"{p}: unsupported file type {p.suffix!r}; use .yaml, .yml or .csv")
    try:
        return p.read_text(encoding="utf-8-sig"), str(p), fmt
    except OSError as e:
        raise PcfDataError(f"{p}: cannot be read ({e.strerror}); check the path") from e


def _yaml(text: str, name: str) -> object:
    try:
        return parse_yaml(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "YAML"
        raise PcfDataError(f"{name}, {where}: not valid YAML ({getattr(e, 'problem', e)}); fix the syntax") from e


def _csv(
    text: str, name: str, columns: dict[str, set[str]], required: tuple[str, ...], example: str
) -> Iterator[tuple[str, dict[str, str]]]:
    """("line N", {column: cell}) for each non-blank data row; ``columns`` maps each column to its accepted headers."""
    reader = csv.reader(io.StringIO(text))
    header = [cell.strip().lower() for cell in next((row for row in reader if row), [])]
    found = {column: header.index(h) for column, aliases in columns.items() for h in aliases if h in header}
    missing = [column for column in required if column not in found]
    if missing:
        raise PcfDataError(f"{name}, line 1: the header names no {' or '.join(missing)} column; start with '{example}'")
    for row in reader:
        if not any(cell.strip() for cell in row):
            continue
        where = f"line {reader.line_num}"
        if len(row) != len(header):
            raise PcfDataError(
                f"{name}, {where}: {len(row)} fields but the header has {len(header)}; quote fields that contain commas"
            )
        yield where, {column: row[i].strip() for column, i in found.items()}


def _word(value: object, name: str, where: str, what: str) -> str:
    if not isinstance(value, str):
        raise PcfDataError(f'{name}, {where}: {what} {value!r} is not text; quote it, e.g. "no" rather than no')
    word = value.strip().lower()
    if not word:
        raise PcfDataError(f"{name}, {where}: {what} is empty; remove it or write the {what}")
    return word


def _number(value: object, name: str, where: str, what: str) -> float:
    if isinstance(value, str):  # CSV cells
        with contextlib.suppress(ValueError):
            value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise PcfDataError(f"{name}, {where}: {what} {value!r} is not a number; write it as a number, e.g. 12")
    if value < 0:
        raise PcfDataError(f"{name}, {where}: {what} {value} is negative; use 0 or more")
    return value


def _pick(data: object, attribute: str | None, name: str, packaged: bool, layout: str) -> tuple[str, object]:
    """The entry of one attribute in a file keyed by attribute name."""
    if not isinstance(data, dict) or not data:
        raise PcfDataError(
            f"{name}, top level: expected a mapping of attribute name to {layout}; see the packaged file"
        )
    if attribute is None:
        if packaged:
            attribute = "gender"
        elif len(data) == 1:
            attribute = next(iter(data))
        else:
            raise PcfDataError(f"{name}, top level: several attributes ({', '.join(map(str, data))}); pass attribute=")
    if attribute not in data:
        raise PcfDataError(
            f"{name}, top level: no attribute {attribute!r}; the file defines {', '.join(map(str, data))}"
        )
    return attribute, data[attribute]


# -- occupations ---------------------------------------------------------------------------------------


def load_occupations(path: PathLike | None = None) -> Occupations:
    """The paper's 257 occupation terms (spec §3.1), or the user's.

    YAML: ``occupations: [..]`` and an optional ``weights: {term: number}``. CSV: an ``occupation``
    column and an optional ``weight`` (or ``employment``) column, blank for unweighted terms.
    """
    text, name, fmt = _read(path, "pcf_occupations.yaml")
    entries: list[tuple[str, object]] = []
    raw_weights: list[tuple[str, object, object]] = []
    if fmt == "csv":
        columns = {"occupation": {"occupation"}, "weight": {"weight", "employment"}}
        for where, row in _csv(text, name, columns, ("occupation",), "occupation,weight"):
            entries.append((where, row["occupation"]))
            if row.get("weight"):
                raw_weights.append((where, row["occupation"], row["weight"]))
    else:
        data = _yaml(text, name)
        if not isinstance(data, dict) or not isinstance(data.get("occupations"), list) or not data["occupations"]:
            raise PcfDataError(f"{name}, occupations: missing or empty; list the terms under 'occupations:'")
        entries = [(f"occupations[{i}]", v) for i, v in enumerate(data["occupations"])]
        weights_map = data.get("weights") or {}
        if not isinstance(weights_map, dict):
            raise PcfDataError(f"{name}, weights: expected a mapping of term to number, e.g. 'nurse: 3130600'")
        raw_weights = [(f"weights.{k}", k, v) for k, v in weights_map.items()]
    if not entries:
        raise PcfDataError(f"{name}, all rows: no occupations; list at least one")
    terms: dict[str, str] = {}
    for where, value in entries:
        term = _word(value, name, where, "occupation")
        if term in terms:
            raise PcfDataError(f"{name}, {where}: {term!r} repeats {terms[term]}; remove the repeat")
        terms[term] = where
    weights: dict[str, float] = {}
    for where, key, value in raw_weights:
        term = _word(key, name, where, "occupation")
        if term not in terms:
            raise PcfDataError(f"{name}, {where}: weight for {term!r}, which is not an occupation; add it or drop it")
        weights[term] = _number(value, name, where, "weight")
    return Occupations(tuple(terms), weights or None, name)


# -- attribute groups ----------------------------------------------------------------------------------


def load_attributes(attribute: str | None = None, path: PathLike | None = None) -> AttributeGroups:
    """Word groups of an attribute: packaged ``gender`` (default) or ``race`` (spec §3.2), or the user's.

    YAML: ``attribute: {group: [words]}``, several attributes per file allowed. CSV: ``group,word``
    rows, one attribute per file, groups in order of first appearance. A word may be in two groups
    (the paper's ``canary``), never twice in one.
    """
    text, name, fmt = _read(path, "pcf_attributes.yaml")
    raw: dict[str, list[tuple[str, object]]] = {}
    if fmt == "csv":
        attribute, scope = attribute or Path(name).stem, "group column"
        for where, row in _csv(text, name, {"group": {"group"}, "word": {"word"}}, ("group", "word"), "group,word"):
            raw.setdefault(_word(row["group"], name, where, "group"), []).append((where, row["word"]))
    else:
        attribute, groups = _pick(_yaml(text, name), attribute, name, path is None, "{group: [words]}")
        scope = str(attribute)
        if not isinstance(groups, dict):
            raise PcfDataError(f"{name}, {attribute}: expected a mapping of group to words, e.g. 'male: [he, him]'")
        for label, words in groups.items():
            where = f"{attribute}.{label}"
            if words is None or words == []:
                raise PcfDataError(f"{name}, {where}: group has no words; list at least one, e.g. '{label}: [he]'")
            if not isinstance(words, list):
                raise PcfDataError(f"{name}, {where}: expected a list of words, e.g. '{label}: [{words}]'")
            raw[_word(label, name, where, "group")] = [(f"{where}[{i}]", w) for i, w in enumerate(words)]
    if len(raw) < 2:
        raise PcfDataError(
            f"{name}, {scope}: only {len(raw)} group ({', '.join(raw)}); PCF compares K >= 2 groups, so add another"
        )
    words_by_group = []
    for label, entries in raw.items():
        seen: dict[str, str] = {}
        for where, value in entries:
            word = _word(value, name, where, "word")
            if word in seen:
                raise PcfDataError(
                    f"{name}, {where}: {word!r} repeats {seen[word]} in group {label!r}; "
                    "remove the repeat, it would count the word's probability twice"
                )
            seen[word] = where
        words_by_group.append(tuple(seen))
    return AttributeGroups(str(attribute), tuple(raw), tuple(words_by_group), f"{name}#{attribute}")


# -- templates -----------------------------------------------------------------------------------------

_COUNT_HEADERS = {"count", "proportion", "times", "weight", "distribution"}


def load_templates(attribute: str | None = None, path: PathLike | None = None, *, top: int | None = None) -> Templates:
    """Context templates with counts: packaged ``gender`` (default) or ``race`` top 10 (spec §3.3), or the user's.

    YAML: ``attribute: [{template: .., count: ..}, ..]``. CSV: a template column and a count column
    (``template,count``; the authors' ``template,proportion`` and ``T,distribution`` headers work too).
    Every template needs [X] and exactly one [Y]. ``top`` keeps the N highest counts, in file order.
    """
    if top is not None and top < 1:
        raise ValueError(f"top must be a positive number of templates, got {top}")
    text, name, fmt = _read(path, "pcf_templates.yaml")
    rows: list[tuple[str, object, object]] = []
    source, scope = name, "all rows"
    if fmt == "csv":
        columns = {"template": {"template", "t"}, "count": _COUNT_HEADERS}
        table = _csv(text, name, columns, ("template", "count"), "template,count")
        rows = [(where, row["template"], row["count"]) for where, row in table]
    else:
        attribute, items = _pick(_yaml(text, name), attribute, name, path is None, "[{template, count}]")
        source, scope = f"{name}#{attribute}", attribute
        if not isinstance(items, list):
            raise PcfDataError(f"{name}, {attribute}: expected a list of {{template: .., count: ..}} entries")
        for i, item in enumerate(items):
            where = f"{attribute}[{i}]"
            if not isinstance(item, dict) or "template" not in item or "count" not in item:
                raise PcfDataError(
                    f"{name}, {where}: expected 'template' and 'count' keys, e.g. {{template: .., count: 3}}"
                )
            rows.append((where, item["template"], item["count"]))
    if not rows:
        raise PcfDataError(f"{name}, {scope}: no templates; list at least one")
    seen: dict[str, str] = {}
    counts = []
    for where, template, count in rows:
        if not isinstance(template, str) or not template.strip():
            raise PcfDataError(
                f"{name}, {where}: template {template!r} is not text; write the sentence with [X] and [Y]"
            )
        sentence = template.strip()
        problem = _template_problem(sentence)
        if problem:
            raise PcfDataError(f"{name}, {where}: template {sentence!r} {problem}")
        if sentence in seen:
            raise PcfDataError(
                f"{name}, {where}: template repeats {seen[sentence]}; merge the two, summing their counts"
            )
        seen[sentence] = where
        counts.append(_number(count, name, where, "count"))
    if sum(counts) == 0:
        raise PcfDataError(f"{name}, {scope}: every count is 0; give at least one template a positive count")
    texts = tuple(seen)
    if top is None or top >= len(texts):
        return Templates(texts, tuple(counts), source)
    kept = sorted(sorted(range(len(texts)), key=lambda i: -counts[i])[:top])
    return Templates(tuple(texts[i] for i in kept), tuple(counts[i] for i in kept), source, top)
