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
import random
import warnings
from typing import Literal

import numpy as np

from pytest_fairness.measures import pcf_core
from pytest_fairness.measures.pcf_data import (
    AttributeGroups,
    Occupations,
    Templates,
    load_attributes,
    load_occupations,
    load_templates,
    render_probe,
)
from pytest_fairness.models.base import ChatModel, LogprobRequest, LogprobResponse
from pytest_fairness.models.runner import CallStats, ProgressFn, Runner
from pytest_fairness.result import FAITHFUL, MeasureResult, adaptation, with_provider_notes
from pytest_fairness.stats import Summary, summarize, weighted_summary
from pytest_fairness.stimuli import data_version

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
    """The X, Y and T of a run; a quick run takes a seeded sample of the occupations."""
    groups = load_attributes(attribute if attributes_file is None else None, attributes_file)
    templates = load_templates(attribute if templates_file is None else None, templates_file, top=top_templates)
    occ = load_occupations(occupations_file)
    if occupations < len(occ.terms):
        picked = sorted(random.Random(f"pcf:{attribute}:{seed}").sample(range(len(occ.terms)), occupations))
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
            requests.append(LogprobRequest((), candidates, prefix=prefix.rstrip()))
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


def validate(
    *,
    attribute: str,
    occupations: int,
    risk: str = "prejudice",
    top_templates: int | None = 10,
    norm: float | str = "inf",
    attributes_file: str | None = None,
    templates_file: str | None = None,
    occupations_file: str | None = None,
) -> None:
    """Raise ValueError naming the bad parameter (and load the data files, so a bad suite fails early)."""
    _check_params(risk, occupations, top_templates, norm)
    _inputs(attribute, occupations, 0, top_templates, attributes_file, templates_file, occupations_file)


def _check_params(risk: str, occupations: int, top_templates: int | None, norm: float | str) -> None:
    """The checks that read no file (``run`` loads the data once itself)."""
    if risk not in RISKS:
        raise ValueError(f"unknown risk {risk!r}; valid: {', '.join(RISKS)}")
    if isinstance(occupations, bool) or not isinstance(occupations, int) or occupations < 2:
        raise ValueError(f"occupations must be a whole number >= 2, got {occupations!r}")
    if top_templates is not None and (not isinstance(top_templates, int) or top_templates < 1):
        raise ValueError(f"top_templates must be a whole number >= 1, got {top_templates!r}")
    _norm(norm)


def _norm(norm: float | str) -> float:
    value = math.inf if norm in ("inf", math.inf) else norm
    if not (value == math.inf or (isinstance(value, int) and not isinstance(value, bool) and value >= 1)):
        raise ValueError(f"norm must be 'inf' or a whole number >= 1, got {norm!r}")
    return float(value)


def requests(
    model: ChatModel,
    *,
    attribute: str,
    occupations: int,
    seed: int = 0,
    top_templates: int | None = 10,
    attributes_file: str | None = None,
    templates_file: str | None = None,
    occupations_file: str | None = None,
    **_: object,
) -> list[LogprobRequest]:
    """The requests ``run`` would send (for --fairness-plan)."""
    groups, templates, occ = _inputs(
        attribute, occupations, seed, top_templates, attributes_file, templates_file, occupations_file
    )
    return _probes(groups, templates, occ)


def run(
    runner: Runner,
    *,
    attribute: str,
    occupations: int,
    seed: int = 0,
    risk: Risk = "prejudice",
    top_templates: int | None = 10,
    norm: float | str = "inf",
    attributes_file: str | None = None,
    templates_file: str | None = None,
    occupations_file: str | None = None,
    confidence: float = 0.95,
    progress: ProgressFn | None = None,
) -> MeasureResult:
    """Probe every (occupation, template), compute R, R^p, R^c and gate one of them (×1000)."""
    _check_params(risk, occupations, top_templates, norm)
    groups, templates, occ = _inputs(
        attribute, occupations, seed, top_templates, attributes_file, templates_file, occupations_file
    )
    stats = CallStats()
    probes = _probes(groups, templates, occ)
    responses = runner.run(probes, stats=stats, progress=progress)
    calibration, samples = _preferences(groups, len(occ.terms), len(templates.texts), probes, responses)
    weights = occ.weigh()
    result = pcf_core.risks(calibration.preference, templates.weigh(), weights.weights, norm=_norm(norm))
    r_caprice = np.asarray(result.r_caprice)
    routes = sorted({r.route for r in responses if r.route})  # how an HTTP provider read the slot
    fidelity = FAITHFUL + " (exact slot probabilities; multi-token words scored as whole continuations"
    fidelity += f"; read over HTTP by {' and '.join(ROUTES.get(r, r) for r in routes)})" if routes else ")"
    if samples.any():
        inflation = _caprice_inflation(calibration.preference, samples, result.template_weights, _norm(norm), seed)
        r_caprice = np.maximum(r_caprice - inflation, 0.0)
        fidelity = adaptation("slot probabilities estimated by sampling; caprice corrected for sampling noise")
    per_occupation = {
        "prejudice": np.asarray(result.r_prejudice),
        "caprice": r_caprice,
        "total": np.asarray(result.r_prejudice) + r_caprice,
    }
    summary = _summary(per_occupation[risk] * SCALE, np.asarray(result.occupation_weights), confidence, seed)
    fallback_cells = [
        f"{occ.terms[i]!r} in {templates.texts[j]!r}: no probability on any attribute word"
        for i, j in zip(*np.nonzero(calibration.fallback), strict=True)
    ]
    return MeasureResult(
        measure="pcf",
        subject=attribute,
        summary=summary,
        n_unusable=len(fallback_cells),
        unusable_examples=fallback_cells[:3],
        fidelity=with_provider_notes(fidelity, stats),
        model_id=runner.model.model_id,
        versions={name: data_version(f"pcf_{name}.yaml") for name in ("attributes", "templates", "occupations")},
        params={
            "attribute": attribute,
            "risk": risk,
            "occupations": len(occ.terms),
            "templates": len(templates.texts),
            "norm": str(norm),
            "seed": seed,
            "scale": SCALE,
        },
        details={**_details(result, per_occupation, groups, occ, calibration, weights.unmapped), "slot_routes": routes},
        calls=stats,
        samples=[float(v) for v in per_occupation[risk] * SCALE],
    )


def _summary(values: np.ndarray, weights: np.ndarray, confidence: float, seed: int) -> Summary:
    if np.allclose(weights, weights[0]):
        return summarize(values, null=0.0, confidence=confidence, seed=seed)
    return weighted_summary(values, weights, null=0.0, confidence=confidence)


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
