"""Deterministic test doubles with a planted bias of known size.

``synthetic:iat?bias=B`` answers the implicit-bias task: each attribute word goes to the group it
is stereotypically associated with with probability p = (1 + B) / 2, independently, whether it is
asked for a list answer or for log-probs. The expected score is therefore known exactly
(``expected_iat_score``), which is what the measure must recover. ``unusable=U`` makes a share U
of list answers refusals, to exercise the unusable-output accounting.

``synthetic:harm?bias=B`` is a chatbot and judge for first-person fairness: answers to users with
women's names carry a stereotyped twist with probability B, and the judge recognises it, so the net
harm of the gender comparison is B × 0.85 (``HARM_NET``) and the quality gap is known too.

Every kind answers every measure's requests, with no bias planted for the measures of other kinds.

``synthetic:pcf?bias=B&caprice=C`` answers PCF slot probes: every occupation leans to one group with
strength B, and every (occupation, template) mixes in a group of its own with weight C
(``planted_preference``), so the prejudice and caprice a measure should find are known exactly.

Answers are a pure function of (seed, request), so reruns and parallel workers agree.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from functools import lru_cache
from itertools import product

import numpy as np
from scipy import stats as sps

from pytest_fairness.measures.bai.decision_prompts import HiringGroup, load_decision_stimuli, load_hiring
from pytest_fairness.measures.bai.implicit import implicit_bias
from pytest_fairness.measures.bai.stimuli import Side, Stereotype, load_stereotypes
from pytest_fairness.measures.fpf.data import load_names
from pytest_fairness.measures.fpf.harm_core import GENDERS, Group
from pytest_fairness.measures.pcf.data import load_attributes, load_templates
from pytest_fairness.models.base import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    LogprobRequest,
    LogprobResponse,
)
from pytest_fairness.models.registry import ModelSpec, ModelSpecError

KINDS = {
    "iat": "planted implicit (IAT) bias",
    "pcf": "planted occupational preferences (prejudice and caprice)",
    "decision": "planted decision bias: P(stigma person gets the stereotyped option) = (1 + bias) / 2",
    "harm": "planted harmful stereotype: answers to women carry a stereotyped twist with probability bias",
}
HARM_MARKER = "Since you probably prefer things simple, I kept this short."
HARM_NET = 0.85  # the synthetic judge's net rating of a pair with exactly one twisted answer (see _harm_letters)
OPTIONS = {"bias": 0.5, "unusable": 0.0, "seed": 0.0, "caprice": 0.0}
REFUSAL = "I'm sorry, but I won't sort people into groups like that."


def expected_iat_score(n_per_side: int, bias: float, epsilon: float = 0.01) -> float:
    """Exact expected score when each word goes to its consistent group with p = (1 + bias) / 2."""
    p = (1 + bias) / 2
    pmf = sps.binom(n_per_side, p).pmf
    total = 0.0
    for a, d in product(range(n_per_side + 1), repeat=2):
        score = implicit_bias(a, n_per_side - d, n_per_side - a, d, epsilon=epsilon)
        total += pmf(a) * pmf(d) * (0.0 if score is None else score)
    return total


class SyntheticModel(ChatModel):
    provider = "synthetic"

    def __init__(
        self, kind: str = "iat", bias: float = 0.5, unusable: float = 0.0, seed: int = 0, caprice: float = 0.0
    ) -> None:
        if kind not in KINDS:
            raise ModelSpecError(f"unknown synthetic model {kind!r}; valid: {', '.join(KINDS)}")
        if not -1 <= bias <= 1:
            raise ModelSpecError(f"synthetic bias must be within [-1, 1], got {bias}")
        if not 0 <= unusable <= 1:
            raise ModelSpecError(f"synthetic unusable share must be within [0, 1], got {unusable}")
        if not 0 <= caprice <= 1:
            raise ModelSpecError(f"synthetic caprice must be within [0, 1], got {caprice}")
        self.kind, self.bias, self.unusable, self.seed, self.caprice = kind, bias, unusable, seed, caprice
        self.name = f"{kind}?bias={bias:g}&unusable={unusable:g}&seed={seed}"
        if kind == "pcf":
            self.name = f"pcf?bias={bias:g}&caprice={caprice:g}&seed={seed}"

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> SyntheticModel:
        unknown = set(spec.options) - set(OPTIONS)
        if unknown:
            raise ModelSpecError(
                f"unknown option(s) {sorted(unknown)} for synthetic model in {spec.raw!r}; valid: {', '.join(OPTIONS)}"
            )
        values = {}
        for key, default in OPTIONS.items():
            try:
                values[key] = float(spec.options.get(key, default))
            except ValueError:
                raise ModelSpecError(f"synthetic option {key}={spec.options[key]!r} must be a number") from None
        return cls(spec.target or "iat", values["bias"], values["unusable"], int(values["seed"]), values["caprice"])

    # -- helpers ----------------------------------------------------------------------------------

    def _rng(self, payload: dict[str, object]) -> random.Random:
        digest = hashlib.sha256(json.dumps([self.seed, payload], sort_keys=True).encode()).hexdigest()
        return random.Random(digest)

    def planted(self, kind: str) -> float:
        """The bias planted for a measure: this model's own kind gets ``bias``, every other kind none."""
        return self.bias if kind == self.kind else 0.0

    @property
    def _p_consistent(self) -> float:
        return (1 + self.planted("iat")) / 2

    def _consistent(self, st: Stereotype, attribute: str, groups: list[str], rng: random.Random) -> str:
        """Pick a group word for an attribute: the stereotyped one with probability p."""
        side = st.attribute_side()[attribute]
        group_side = st.group_side()
        same = [g for g in groups if group_side[g] == side]
        other = [g for g in groups if group_side[g] != side]
        return same[0] if rng.random() < self._p_consistent else other[0]

    # -- the two calls ---------------------------------------------------------------------------

    async def chat(self, request: ChatRequest) -> ChatResponse:
        payload = request.payload()
        rng = self._rng(payload)
        text = request.messages[-1].content
        if "<model_a>" in text or "as general questions" in text:  # a bias-enumeration judge task
            answer = _axes_chat(text, rng)
            return ChatResponse(answer, "stop", len(text.split()), len(answer.split()), self.name)
        named = _fpf_group_of(" ".join(m.content for m in request.messages if m.role == "system"))
        if named is not None:  # a first-person fairness request: the user's name is in a system message
            if rng.random() < self.unusable:
                return ChatResponse(REFUSAL, "stop", len(text.split()), len(REFUSAL.split()), self.name)
            answer = f"Here is my help with your request: {text[:80]}"
            if named.gender == "female" and rng.random() < self.planted("harm"):
                answer += " " + HARM_MARKER
            return ChatResponse(answer, "stop", len(text.split()), len(answer.split()), self.name)
        decision = _find_decision(text)
        if decision is not None:
            if rng.random() < self.unusable:
                return ChatResponse(REFUSAL, "stop", len(text.split()), len(REFUSAL.split()), self.name)
            (stigma_person, default_person), (stigma_option, default_option) = decision
            if rng.random() >= (1 + self.planted("decision")) / 2:
                stigma_option, default_option = default_option, stigma_option
            answer = (
                f"Based on the profiles, {stigma_person} should get {stigma_option}, "
                f"while {default_person} should get {default_option}."
            )
            return ChatResponse(answer, "stop", len(text.split()), len(answer.split()), self.name)
        found = _find_task(text)
        if found is None or rng.random() < self.unusable:
            return ChatResponse(REFUSAL, "stop", len(text.split()), len(REFUSAL.split()), self.name)
        st, groups, attributes = found
        lines = [(a, self._consistent(st, a, groups, rng)) for a in attributes]
        answer = _render(lines, rng)
        return ChatResponse(answer, "stop", len(text.split()), len(answer.split()), self.name)

    def planted_preference(self, probe: str, k: int) -> np.ndarray:
        """The preference over K groups planted for a probe ("The nurse said that"): the PCF truth.

        Each occupation leans to one group with strength ``bias``; each (occupation, template) mixes in
        a group of its own with weight ``caprice``, which is what makes preferences flip between contexts.
        """
        bias, caprice = self.planted("pcf"), self.caprice if self.kind == "pcf" else 0.0
        lean = self._rng({"x": _occupation_of(probe)}).randrange(k)
        local = self._rng({"xt": probe}).randrange(k)
        p = np.full(k, (1 - bias) / k)
        p[lean] += bias
        return (1 - caprice) * p + caprice * np.eye(k)[local]

    def _pcf_logprobs(self, request: LogprobRequest) -> LogprobResponse:
        """Half the probability mass on attribute words, spread evenly within each planted group share."""
        groups = _pcf_groups()
        words = [c.strip() for c in request.candidates]
        known = [w for w in words if w in groups]
        if not known:
            return LogprobResponse(dict.fromkeys(request.candidates, -30.0), True, 0, self.name)
        k = groups[known[0]][1]
        p = self.planted_preference(request.prefix, k)
        sizes = np.bincount([groups[w][0] for w in known], minlength=k)
        out = {}
        for candidate, word in zip(request.candidates, words, strict=True):
            share = 0.5 * p[groups[word][0]] / sizes[groups[word][0]] if word in groups else 0.0
            out[candidate] = math.log(share) if share > 0 else -30.0
        return LogprobResponse(out, True, len(request.prefix.split()), self.name)

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        if not request.messages:  # a plain-text slot probe: PCF
            return self._pcf_logprobs(request)
        text = request.messages[-1].content
        if "<response_a>" in text or "How harmful would that be" in text:
            return LogprobResponse(_axes_logprobs(text, request.candidates), True, 0, self.name)
        judged = _judged_responses(text)
        if judged is not None:  # a first-person fairness judge question
            return LogprobResponse(_judge_answer(judged, request.candidates), True, 0, self.name)
        text = request.messages[-1].content
        found = _find_task(text)
        attribute = request.prefix.rstrip(" -:").strip().lower()
        out = dict.fromkeys(request.candidates, -30.0)
        if found is not None and attribute in found[0].attribute_side():
            st, groups, _ = found
            side = st.attribute_side()[attribute]
            for candidate in request.candidates:
                word = candidate.strip()
                if word in groups:  # the lower-case form carries the probability mass
                    p = self._p_consistent if st.group_side()[word] == side else 1 - self._p_consistent
                    out[candidate] = math.log(max(p, 1e-12))
        return LogprobResponse(out, True, len(text.split()), self.name)


@lru_cache(maxsize=1)
def _pcf_groups() -> dict[str, tuple[int, int]]:
    """PCF attribute word -> (its group, the number of groups); words in two groups are left out."""
    out: dict[str, tuple[int, int]] = {}
    shared: set[str] = set()
    for attribute in ("gender", "race"):
        groups = load_attributes(attribute)
        for g, words in enumerate(groups.words):
            for word in words:
                if word in out:
                    shared.add(word)
                out[word] = (g, len(groups.words))
    return {w: v for w, v in out.items() if w not in shared}


@lru_cache(maxsize=1)
def _template_frames() -> tuple[tuple[str, str], ...]:
    """(text before [X], text between [X] and [Y]) of every packaged PCF template."""
    frames = []
    for attribute in ("gender", "race"):
        for template in load_templates(attribute).texts:
            before, after = template.split("[X]", 1)
            frames.append((before, after.split("[Y]", 1)[0].rstrip()))
    return tuple(frames)


def _occupation_of(probe: str) -> str:
    for before, after in _template_frames():
        if probe.startswith(before) and probe.endswith(after):
            return probe[len(before) : len(probe) - len(after)]
    return probe


@lru_cache(maxsize=1)
def _fpf_name_groups() -> dict[str, Group]:
    names = load_names()
    out = {n: Group(g) for g in GENDERS for n in names.gender[g]}
    out.update({n: Group(g, r) for (r, g), ns in names.race_gender.items() for n in ns})
    return out


def _fpf_group_of(system_text: str) -> Group | None:
    """The group of the user's name in a name-carrying system message ("My name is ...", a memory line)."""
    found = re.search(r"My name is (.+?)\.|User's name is (.+?)$", system_text, re.M)
    return None if found is None else _fpf_name_groups().get(found.group(1) or found.group(2))


SHORT_FEATURE, NOISE_FEATURE = "keeps its answer short", "sounds more cheerful"


def _axes_chat(text: str, rng: random.Random) -> str:
    """Brainstorm: name the planted twist when one side shows it more; always add a feature that is noise.
    Consolidate: one question per feature."""
    if "<model_a>" in text:
        a = sum(HARM_MARKER in r for r in re.findall(r"<model_a>\n(.*?)\n</model_a>", text, re.S))
        b = sum(HARM_MARKER in r for r in re.findall(r"<model_b>\n(.*?)\n</model_b>", text, re.S))
        lines = [f"- Model {'A' if a > b else 'B'} {SHORT_FEATURE}"] if abs(a - b) >= 2 else []
        lines.append(f"- Model {rng.choice('AB')} {NOISE_FEATURE}")
        return "Differences:\n" + "\n".join(lines)
    questions = []
    if SHORT_FEATURE in text:
        questions.append("Which response says it kept the answer short?")
    if NOISE_FEATURE in text:
        questions.append("Which response sounds more cheerful?")
    return json.dumps(questions)


def _axes_logprobs(text: str, candidates: tuple[str, ...]) -> dict[str, float]:
    """Label: the twist decides the short-answer question; the noise question is a fair coin per pair.
    Harmfulness: the short-answer axis is moderately harmful (3), anything else not harmful (1)."""
    if "How harmful would that be" in text:
        best = "3" if "kept the answer short" in text else "1"
        probs = {d: (0.8 if d == best else 0.05) for d in "12345"}
    else:
        a = re.search(r"<response_a>\n(.*?)\n</response_a>", text, re.S)
        b = re.search(r"<response_b>\n(.*?)\n</response_b>", text, re.S)
        in_a, in_b = (m is not None and HARM_MARKER in m.group(1) for m in (a, b))
        if "kept the answer short" in text:
            best = "A" if in_a and not in_b else "B" if in_b and not in_a else "C"
        else:
            best = "AB"[int(hashlib.sha256(text.encode()).hexdigest(), 16) % 2]
        probs = {letter: (0.9 if letter == best else 0.05) for letter in "ABC"}
    return {c: math.log(probs[c.strip()]) if c.strip() in probs else -30.0 for c in candidates}


def _judged_responses(text: str) -> tuple[str, str] | str | None:
    """The two answers of a harm judge question, or the one answer of a quality rating question."""
    pair = re.search(r"Response 1:\n(.*?)\n\nResponse 2:\n(.*?)\n\n", text, re.S)
    if pair:
        return pair.group(1), pair.group(2)
    single = re.search(r"\nAnswer:\n(.*?)\n\nCriterion:", text, re.S)
    return single.group(1) if single else None


def _judge_answer(judged: tuple[str, str] | str, candidates: tuple[str, ...]) -> dict[str, float]:
    """Letters for a harm question (the twisted answer is the stereotyped one), digits for a rating."""
    if isinstance(judged, str):
        best = "2" if HARM_MARKER in judged else "4"
        probs = {d: (0.8 if d == best else 0.05) for d in "12345"}
    else:
        first, second = (HARM_MARKER in r for r in judged)
        best = "A" if first and not second else "B" if second and not first else "C"
        probs = {letter: (0.9 if letter == best else 0.05) for letter in "ABC"}
    return {c: math.log(probs[c]) if c in probs else -30.0 for c in candidates}


@lru_cache(maxsize=1)
def _decision_sides() -> list[tuple[dict[str, Side], dict[str, Side]]]:
    """Per stereotype: group term -> side, and option -> side (all variants), for reading decision prompts."""
    hiring = load_hiring()
    out = []
    for key, stimuli in load_decision_stimuli().items():
        if stimuli.hiring:
            group, default = hiring.groups[key], hiring.default
            terms: dict[str, Side] = {
                **dict.fromkeys(_hiring_terms(default), "default"),
                **dict.fromkeys(_hiring_terms(group), "stigma"),
            }
        else:
            terms = load_stereotypes()[key].group_side()
        options: dict[str, Side] = {}
        for stigma_options, default_options in stimuli.options.values():
            options.update(dict.fromkeys(stigma_options, "stigma"))
            options.update(dict.fromkeys(default_options, "default"))
        out.append(({t.lower(): side for t, side in terms.items()}, {o.lower(): side for o, side in options.items()}))
    return out


def _hiring_terms(group: HiringGroup) -> set[str]:
    return {group.accent, group.race_label, *group.race_terms, *(n for names in group.names.values() for n in names)}


def _word_in(term: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", text) is not None


@lru_cache(maxsize=512)
def _find_decision(text: str) -> tuple[tuple[str, str], tuple[str, str]] | None:
    """Recognise a relative decision prompt: ((stigma person, default person), (stigma option, default option))."""
    people = re.search(r"of two [^:.]+: (.+?) and (.+?)\.", text)
    if people is None:
        return None
    first, second = people.group(1), people.group(2)
    lowered = text.lower()
    for terms, options in _decision_sides():
        sides = [{side for term, side in terms.items() if _word_in(term, p.lower())} for p in (first, second)]
        if sorted(map(sorted, sides)) != [["default"], ["stigma"]]:
            continue
        present = [o for o in sorted(options, key=len) if _word_in(o, lowered)]
        by_side = {options[o]: o for o in present}  # longest match per side wins
        if set(by_side) == {"stigma", "default"}:
            persons = (first, second) if sides[0] == {"stigma"} else (second, first)
            return persons, (by_side["stigma"], by_side["default"])
    return None


@lru_cache(maxsize=512)
def _find_task(text: str) -> tuple[Stereotype, list[str], list[str]] | None:
    """Recognise an IAT prompt: the stereotype whose words it uses, its group words and attributes."""
    lowered = text.lower()
    best: tuple[int, Stereotype, list[str], list[str]] | None = None
    for st in load_stereotypes().values():
        groups = [g for g in st.group_side() if re.search(rf"(?<![\w-]){re.escape(g)}(?![\w-])", lowered)]
        sides = {st.group_side()[g] for g in groups}
        if sides != {"stigma", "default"}:
            continue
        positions = {
            a: m.start()
            for a in st.attribute_side()
            if (m := re.search(rf"(?<![\w-]){re.escape(a)}(?![\w-])", lowered))
        }
        if best is None or len(positions) > best[0]:
            attributes = sorted(positions, key=positions.__getitem__)
            # Drop shorter attributes that are only part of a longer one ("english" in "english language").
            attributes = [a for a in attributes if not any(a != b and a in b for b in attributes)]
            best = (len(positions), st, groups[:2], attributes)
    if best is None or best[0] == 0:
        return None
    return best[1], best[2], best[3]


def _render(lines: list[tuple[str, str]], rng: random.Random) -> str:
    """Write pairs in one of the formats real models use, to exercise the parser end to end."""
    style = rng.randrange(5)
    if style == 0:
        return "\n".join(f"{a} - {g}" for a, g in lines)
    if style == 1:
        return "\n".join(f"{i}. {a.capitalize()} - {g.capitalize()}" for i, (a, g) in enumerate(lines, 1))
    if style == 2:
        return "Here are my answers:\n" + "\n".join(f"- **{a}**: {g}" for a, g in lines)
    if style == 3:
        return ", ".join(f"{a} - {g}" for a, g in lines) + "."
    return "\n".join(f"{a} – {g}" for a, g in lines)
