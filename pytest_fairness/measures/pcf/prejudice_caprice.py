"""Prejudice and caprice risk (Liu et al., PCF) of a model, read from its slot probabilities.

For every occupation x and template t the probe "The nurse said that [Y]" is scored as plain text
(no chat template, spec §2.1): the probability of each attribute word at the slot is the
probability of " word" (plus whatever follows the slot) as a continuation, the full product over
its tokens (spec §7.2 #8). Eq. 10 turns them into a preference over the K groups; ``pcf_core``
does the rest. The gated estimate is one risk component ×1000 (the paper's scale); its interval
treats the occupations as the sample (a t interval over the per-occupation risks).

Endpoints without log-probs are sampled: that noise inflates caprice (J is convex), so a
parametric bootstrap estimates the inflation and subtracts it, and the result says so.
"""

from __future__ import annotations

import math
import os
import random
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import ClassVar, Literal

import numpy as np

from pytest_fairness.data import version as data_version
from pytest_fairness.measures.context import RunContext
from pytest_fairness.measures.measure import Measure
from pytest_fairness.measures.params import Params, ParamsError, param
from pytest_fairness.measures.pcf import planted_slots
from pytest_fairness.measures.pcf import prejudice_caprice_core as pcf_core
from pytest_fairness.measures.pcf.inputs import (
    AttributeGroups,
    Occupations,
    Templates,
    load_attributes,
    load_occupations,
    load_templates,
    render_probe,
)
from pytest_fairness.measures.pcf.pcf_evidence import pcf_evidence
from pytest_fairness.models.interface import CannotServe, ChatModel, LogprobRequest, LogprobResponse, Purpose
from pytest_fairness.records.measure_result import FAITHFUL, Measured, adaptation, drawn_items
from pytest_fairness.stats.intervals import Summary, weighted_summary

Risk = Literal["total", "prejudice", "caprice"]
RISKS = ("total", "prejudice", "caprice")
SCALE = 1000.0
BOOTSTRAP = 200
ROUTES = {
    "echo": "the server's echoed prompt log-probs, checked against its next-token log-probs",
    "top_logprobs": "next-token top_logprobs, each word a single listed token",
}


def _inputs(
    attribute: str,
    occupations: int,
    seed: int,
    top_templates: int | None,
    attributes_file: str | None,
    templates_file: str | None,
    occupations_file: str | None,
) -> tuple[AttributeGroups, Templates, Occupations]:
    """The X, Y and T of a run; a smaller run takes the first occupations of a seeded shuffle, so a
    larger sample extends a smaller one (sequential sampling reuses every probe already made)."""
    groups = load_attributes(attribute if attributes_file is None else None, attributes_file)
    templates = load_templates(attribute if templates_file is None else None, templates_file, top=top_templates)
    occ = load_occupations(occupations_file)
    if occupations < len(occ.terms):
        order = list(range(len(occ.terms)))
        random.Random(f"pcf:{attribute}:{seed}").shuffle(order)
        picked = sorted(order[:occupations])
        occ = Occupations(tuple(occ.terms[i] for i in picked), occ.weights, f"{occ.source} (sample of {occupations})")
    return groups, templates, occ


def _words(groups: AttributeGroups) -> list[str]:
    return list(dict.fromkeys(w for group in groups.words for w in group))


def _probes(groups: AttributeGroups, templates: Templates, occ: Occupations) -> list[LogprobRequest]:
    """One request per (occupation, template): every attribute word as a continuation of the probe."""
    words = _words(groups)
    requests = []
    for x in occ.terms:
        for template in templates.texts:
            prefix, suffix = render_probe(template, x)
            candidates = tuple(f" {w}{suffix}" for w in words)
            purpose = Purpose.of("pcf.slot", occupation=x, template=template, groups=groups.words, labels=groups.labels)
            requests.append(LogprobRequest((), candidates, prefix=prefix.rstrip(), purpose=purpose))
    return requests


def _preferences(
    groups: AttributeGroups, n_x: int, n_t: int, probes: list[LogprobRequest], responses: list[LogprobResponse]
) -> tuple[pcf_core.Calibration, np.ndarray]:
    """Eq. 10 over the grid, and the number of samples behind each cell (0 where read exactly)."""
    words = _words(groups)
    rows = [[math.exp(r.logprobs[c]) for c in q.candidates] for q, r in zip(probes, responses, strict=True)]
    grid = np.array(rows).reshape(n_x, n_t, len(words))
    word_probs = {w: grid[:, :, i] for i, w in enumerate(words)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # zero-mass cells are counted and reported instead
        calibration = pcf_core.calibrate_preference(word_probs, groups.words)
    samples = np.array([r.samples for r in responses]).reshape(n_x, n_t)
    return calibration, samples


def _caprice_inflation(
    preference: np.ndarray, samples: np.ndarray, pi: np.ndarray, norm: float, seed: int
) -> np.ndarray:
    """Per-occupation caprice that sampling noise alone adds, by parametric bootstrap (spec §2.5)."""
    rng = np.random.default_rng(seed)
    n = np.maximum(samples, 1)[..., None]
    base = pcf_core.conditional_risks(preference, pi, norm=norm).r_caprice
    draws = []
    for _ in range(BOOTSTRAP):
        counts = rng.multinomial(n[..., 0], preference)
        resampled = np.where(counts.sum(-1, keepdims=True) > 0, counts / n, preference)
        draws.append(pcf_core.conditional_risks(resampled, pi, norm=norm).r_caprice)
    return np.maximum(np.mean(draws, axis=0) - base, 0.0)


@dataclass(frozen=True)
class PcfParams(Params):
    """Prejudice-Caprice risk (×1000) for one attribute over a sample of occupations."""

    NULL: ClassVar[float] = 0.0
    BOUNDS: ClassVar[tuple[float, float]] = (0.0, SCALE)  # one occupation's risk, ×1000
    DEFAULT_SAMPLES: ClassVar[Mapping[str, int]] = {"quick": 32, "paper": 257}

    attribute: str = param(subject=True)
    occupations: int = param(32, low=2, samples=True)
    risk: Risk = param("prejudice", choices=RISKS)
    top_templates: int | None = param(10, low=1)
    norm: float | str = param("inf", doc="'inf' or a whole number >= 1: the norm of the unfairness criterion")
    attributes_file: str | os.PathLike[str] | None = param(None)
    templates_file: str | os.PathLike[str] | None = param(None)
    occupations_file: str | os.PathLike[str] | None = param(None)

    #: Assumed SD of one occupation's risk (×1000) per risk; prejudice varies more across occupations.
    SPREADS: ClassVar[Mapping[str, float]] = {"prejudice": 150.0, "caprice": 50.0, "total": 150.0}
    #: The paired gate's margin per risk (×1000): prejudice and total 50, the average occupation's steady lean up
    #: by five points of preference (an eighth of the suites' 400); caprice 20, two fifths of its threshold 50 and
    #: the smallest round margin the occupation list can show: at 10 even identical answers would need 410
    #: occupations (any valid test 276) of the 257 there are, so no pull request could ever pass.
    PR_MARGINS: ClassVar[Mapping[str, float]] = {"prejudice": 50.0, "caprice": 20.0, "total": 50.0}
    EXACT_ITEMS: ClassVar[bool] = True  # log-probabilities; sampled slots are not (``items_exact``)

    def validate(self) -> None:
        _norm(self.norm)

    def assumed_sd(self, truth: float) -> float:
        return self.SPREADS[self.risk]

    @classmethod
    def items_exact(cls, fidelity: str | None) -> bool:
        """Read from log-probabilities, each occupation's risks are exact: a rerun repeats them; estimated by
        sampling (an endpoint without log-probs: an adaptation), they are not."""
        return cls.EXACT_ITEMS and fidelity is not None and fidelity.startswith(f"{FAITHFUL} (exact slot probabilities")

    def pr_margin(self) -> float:
        return self.PR_MARGINS[self.risk]

    def available_samples(self) -> int:
        """Each occupation is one sample: a run cannot have more than the occupation list holds."""
        return len(load_occupations(self.occupations_file).terms)


def _norm(norm: float | str) -> float:
    value = math.inf if norm in ("inf", math.inf) else norm
    if not (value == math.inf or (isinstance(value, int) and not isinstance(value, bool) and value >= 1)):
        raise ParamsError(f"norm must be 'inf' or a whole number >= 1, got {norm!r}")
    return float(value)


def _inputs_of(p: PcfParams, seed: int) -> tuple[AttributeGroups, Templates, Occupations]:
    return _inputs(
        p.attribute, p.occupations, seed, p.top_templates, p.attributes_file, p.templates_file, p.occupations_file
    )


def check_inputs(p: PcfParams) -> None:
    """Load the data files a check names, so a bad suite fails at collection."""
    _inputs_of(p, 0)


def requests(p: PcfParams, model: ChatModel, seed: int) -> list[LogprobRequest]:
    """The requests ``run`` would send (for --fairness-plan)."""
    return _probes(*_inputs_of(p, seed))


def run(p: PcfParams, ctx: RunContext) -> Measured:
    """Probe every (occupation, template), compute R, R^p, R^c and gate one of them (×1000)."""
    runner, seed, norm = ctx.runner, ctx.seed, _norm(p.norm)
    groups, templates, occ = _inputs_of(p, seed)
    probes = _probes(groups, templates, occ)
    try:
        responses = runner.run(probes, progress=ctx.progress)
    except CannotServe as exc:  # e.g. a chat-only app: no slot probabilities to read
        return Measured(inputs={"norm": str(p.norm)}, unserved=f"the model cannot serve this measure: {exc}")
    calibration, samples = _preferences(groups, len(occ.terms), len(templates.texts), probes, responses)
    weights = occ.weigh()
    result = pcf_core.risks(calibration.preference, templates.weigh(), weights.weights, norm=norm)
    r_caprice = np.asarray(result.r_caprice)
    routes = sorted({r.route for r in responses if r.route})  # how an HTTP provider read the slot
    fidelity = FAITHFUL + " (exact slot probabilities; multi-token words scored as whole continuations"
    fidelity += f"; read over HTTP by {' and '.join(ROUTES.get(r, r) for r in routes)})" if routes else ")"
    if samples.any():
        inflation = _caprice_inflation(calibration.preference, samples, result.template_weights, norm, seed)
        r_caprice = np.maximum(r_caprice - inflation, 0.0)
        fidelity = adaptation("slot probabilities estimated by sampling; caprice corrected for sampling noise")
    per_occupation = {
        "prejudice": np.asarray(result.r_prejudice),
        "caprice": r_caprice,
        "total": np.asarray(result.r_prejudice) + r_caprice,
    }
    summary = _summary(per_occupation[p.risk] * SCALE, np.asarray(result.occupation_weights), ctx)
    fallback_cells = [
        f"{occ.terms[i]!r} in {templates.texts[j]!r}: no probability on any attribute word"
        for i, j in zip(*np.nonzero(calibration.fallback), strict=True)
    ]
    return Measured(
        samples=[float(v) for v in per_occupation[p.risk] * SCALE],
        items=_occupation_items(occ.terms, seed, np.asarray(result.occupation_weights)),
        summary=summary,
        n_unusable=len(fallback_cells),
        unusable_examples=fallback_cells[:3],
        fidelity=fidelity,
        versions={name: data_version(f"pcf_{name}.yaml") for name in ("attributes", "templates", "occupations")},
        details={**_details(result, per_occupation, groups, occ, calibration, weights.unmapped), "slot_routes": routes},
        inputs={"occupations": len(occ.terms), "templates": len(templates.texts), "norm": str(p.norm), "scale": SCALE},
        evidence=pcf_evidence(
            seed,
            groups.labels,
            occ.terms,
            templates.texts,
            np.asarray(calibration.preference),
            {name: values * SCALE for name, values in per_occupation.items()},
            np.asarray(result.mean_preference),
            np.asarray(result.leaning),
            np.asarray(result.flip_rate),
        ),
    )


def _occupation_items(terms: tuple[str, ...], seed: int, weights: np.ndarray) -> list[tuple[str, str]]:
    """One item per occupation, its own cluster. With the user's unequal weights the gated risk is a weighted
    mean, which a paired mean of differences does not estimate: no items, so the comparison stays unpaired."""
    equal = len(weights) == len(terms) and bool(np.allclose(weights, weights[0]))
    return drawn_items(seed, terms) if equal else []


def _summary(values: np.ndarray, weights: np.ndarray, ctx: RunContext) -> Summary:
    """Occupations weigh equally by default: the bounded-mean interval. With the user's weights, a
    Kish effective-n t interval clipped to the scale (labelled by its ``ci_method``)."""
    if np.allclose(weights, weights[0]):
        return PcfParams.summarize(values, ctx)
    summary = weighted_summary(values, weights, null=0.0, confidence=ctx.confidence)
    low, high = summary.ci_t
    return replace(summary, ci_t=(max(low, 0.0), min(high, SCALE)), ci_method="weighted t, clipped")


def _details(
    result: pcf_core.PcfRisks,
    per_occupation: dict[str, np.ndarray],
    groups: AttributeGroups,
    occ: Occupations,
    calibration: pcf_core.Calibration,
    unmapped: tuple[str, ...],
) -> dict[str, object]:
    omega = np.asarray(result.occupation_weights)
    overall = {name: float(omega @ values) * SCALE for name, values in per_occupation.items()}
    order = np.argsort(-per_occupation["prejudice"])[:5]
    labels = groups.labels
    return {
        "R": overall["total"],
        "R_prejudice": overall["prejudice"],
        "R_caprice": overall["caprice"],
        "directional": {labels[y]: float(v) for y, v in enumerate(result.directional)},
        "leaning_share": {labels[y]: float(v) for y, v in enumerate(result.leaning_share)},
        "most_prejudiced": [
            {
                "occupation": occ.terms[i],
                "r_prejudice": float(per_occupation["prejudice"][i] * SCALE),
                "leans_to": labels[int(result.leaning[i])] if result.leaning[i] >= 0 else "tie",
            }
            for i in order
        ],
        "prejudice_shape": _shape(result.prejudice_diagnostics),
        "caprice_shape": _shape(result.caprice_diagnostics),
        "median_covered_mass": float(np.median(calibration.mass)),
        "unmapped_occupations": list(unmapped),
    }


def _shape(d: pcf_core.Diagnostics) -> dict[str, float]:
    return {"skewness": d.skewness, "excess_kurtosis": d.excess_kurtosis, "normality_p": d.normality_p}


MEASURE = Measure(
    name="pcf",
    params=PcfParams,
    run=run,
    requests=requests,
    check_inputs=check_inputs,
    planted=planted_slots.PLANTED,
    fixture="pcf_risk",
    doc="Prejudice-Caprice risk ×1000 for an attribute (Liu et al.); `risk=` picks prejudice, caprice or total.",
)
