"""Bai et al.'s headline numbers: implicit and decision bias pooled per domain and over all stereotypes.

The paper averages every prompt's score within a domain (race, gender, health, religion) and overall.
Each check (one stereotype) is a stratum; the pooled mean is the mean of every usable sample.

Its interval must be as valid as a gate's: on the measure's scale, at the sample sizes a run affords.
A t interval on the stratified standard error is neither (two decisions, 0 and 1, gave
[-5.853, 6.853] on a 0..1 scale). One betting (or exact) interval over all pooled samples would
assume that every sample shares one mean, which stratification exists to deny. So each stratum gets
the interval its gate uses (``stats.mean_interval`` with the measure's interval kind and bounds) at
confidence 1 - (1 - confidence) / strata: all strata's intervals hold at once with at least the run's
confidence (Bonferroni), and the pooled mean, their sample-weighted average, then lies between the
weighted averages of their ends. That interval is conservative, never outside the scale, never a point.

Checks the model cannot serve, or without a usable sample, measure nothing: they are left out and named.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_fairness.measures.bai.iat_stimuli import get_stereotype
from pytest_fairness.measures.measure import Checked
from pytest_fairness.measures.params import Params
from pytest_fairness.measures.resampling import interval_for
from pytest_fairness.stats.gate import Outcome
from pytest_fairness.stats.intervals import mean_interval


def stratified_mean(
    strata: Sequence[Sequence[float]], params: type[Params], confidence: float = 0.95
) -> dict[str, Any]:
    """Mean of every sample of every non-empty stratum, with the stratified gate interval (module docstring)."""
    used = [np.asarray(s, dtype=float) for s in strata if len(s) > 0]
    n = sum(s.size for s in used)
    if not used:
        return {"n": 0, "strata": 0, "mean": None}
    each = 1 - (1 - confidence) / len(used)
    ends = np.array([mean_interval(s, interval_for(params.interval_kind(), s), params.BOUNDS, each) for s in used])
    weights = np.array([s.size for s in used]) / n
    low, high = (float(v) for v in weights @ ends)
    mean = float(sum(s.sum() for s in used) / n)
    return {
        "n": n,
        "strata": len(used),
        "mean": mean,
        "ci": [low, high],
        "interval": f"{params.interval_kind()} per stratum at {each:.4g}, weighted",
    }


def _left_out(record: Checked) -> str | None:
    """Why a record is not pooled, or None when it is."""
    if record.outcome == Outcome.CANNOT_SERVE:
        return "cannot serve"
    if not record.result.samples:
        return "no usable samples"
    return None


def pooled(records: Sequence[Checked], measure: str, params: type[Params]) -> dict[str, Any] | None:
    """Per domain and overall, for one measure's records; None when the run has fewer than two stereotypes.

    Checks the model cannot serve or without usable samples are left out and listed under "left_out".
    """
    mine = [r for r in records if r.measure == measure]
    if len({r.result.subject for r in mine}) < 2:
        return None
    left_out = {r.label: why for r in mine if (why := _left_out(r)) is not None}
    chosen = [r for r in mine if r.label not in left_out]
    confidence = mine[0].confidence
    by_domain: dict[str, list[list[float]]] = {}
    for r in chosen:
        by_domain.setdefault(get_stereotype(r.result.subject).domain, []).append(r.result.samples)
    return {
        "overall": stratified_mean([r.result.samples for r in chosen], params, confidence),
        "by_domain": {d: stratified_mean(s, params, confidence) for d, s in sorted(by_domain.items())},
        "null": params.NULL,
        "bounds": list(params.BOUNDS) if params.BOUNDS else None,
        "checks": len(mine),
        "pooled": len(chosen),
        "left_out": left_out,
    }


def pooled_lines(title: str, result: dict[str, Any]) -> list[str]:
    def line(label: str, e: dict[str, Any]) -> str:
        if e.get("mean") is None:
            return f"  {label}: no usable check"
        lo, hi = e["ci"]
        return f"  {label}: {e['mean']:.3f} [{lo:.3f}, {hi:.3f}] (null {result['null']:g}), n = {e['n']}"

    head = f"{title}, pooled over {result['pooled']} of {result['checks']} checks (stratified by stereotype)"
    if result["left_out"]:
        head += "; left out: " + ", ".join(f"{label} ({why})" for label, why in result["left_out"].items())
    return [head + ":", line("overall", result["overall"])] + [
        line(domain, e) for domain, e in result["by_domain"].items()
    ]
