"""Bai et al.'s headline numbers: implicit and decision bias pooled per domain and over all stereotypes.

The paper averages every prompt's score within a domain (race, gender, health, religion) and overall.
Stereotypes are strata of different sizes and spreads, so the pooled mean's standard error is the
stratified one, sum(n_s * sd_s^2) / N^2, with a t reference on N - strata degrees of freedom, rather
than the spread of the pooled scores around one common mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as sps

from pytest_fairness.measures.bai.stimuli import get_stereotype
from pytest_fairness.record import CheckRecord


def stratified_mean(strata: Sequence[Sequence[float]], null: float, confidence: float = 0.95) -> dict[str, Any]:
    """Mean of every sample of every stratum, with its stratified interval and a t-test against ``null``."""
    used = [np.asarray(s, dtype=float) for s in strata if len(s) >= 2]
    n = sum(s.size for s in used)
    if not used or n - len(used) < 1:
        return {"n": n, "strata": len(used), "mean": None}
    mean = float(sum(s.sum() for s in used) / n)
    se = float(np.sqrt(sum(s.size * s.var(ddof=1) for s in used)) / n)
    df = n - len(used)
    half = float(sps.t.ppf(0.5 + confidence / 2, df)) * se
    p = float(2 * sps.t.sf(abs(mean - null) / se, df)) if se > 0 else (1.0 if mean == null else 0.0)
    return {"n": n, "strata": len(used), "mean": mean, "ci": [mean - half, mean + half], "p": p, "df": df}


def pooled(records: Sequence[CheckRecord], measure: str, null: float) -> dict[str, Any] | None:
    """Per domain and overall, for one measure's records of one variant; None with fewer than two stereotypes."""
    chosen = [r for r in records if r.measure == measure and r.result.samples]
    if len({r.result.subject for r in chosen}) < 2:
        return None
    confidence = chosen[0].confidence
    by_domain: dict[str, list[list[float]]] = {}
    for r in chosen:
        by_domain.setdefault(get_stereotype(r.result.subject).domain, []).append(r.result.samples)
    return {
        "overall": stratified_mean([r.result.samples for r in chosen], null, confidence),
        "by_domain": {d: stratified_mean(s, null, confidence) for d, s in sorted(by_domain.items())},
        "null": null,
    }


def pooled_lines(title: str, result: dict[str, Any]) -> list[str]:
    def line(label: str, e: dict[str, Any]) -> str:
        if e.get("mean") is None:
            return f"  {label}: too few samples"
        lo, hi = e["ci"]
        return f"  {label}: {e['mean']:.3f} [{lo:.3f}, {hi:.3f}], p = {e['p']:.3g} vs {result['null']:g}, n = {e['n']}"

    return [f"{title}, pooled (stratified by stereotype):", line("overall", result["overall"])] + [
        line(domain, e) for domain, e in result["by_domain"].items()
    ]
