"""How often an unchanged model fails its baselines: with a fresh baseline per trial, and given one baseline.

Model-free: the religion suite's six checks at the quick profile (implicit bias of islam, judaism and
buddhism, 20 iterations of the synthetic double's list answers at bias 0.2; decisions on the same
stereotypes, 10 coin flips at share 0.5). Each baseline is recorded at ``factor`` times the reruns'
size, then rerun many times; a rerun fails when ``baseline.compare`` + ``decide_run`` (Holm, alpha 0.05,
fail on regression) find a regression. The comparison is vectorised (Welch + Holm in numpy) and checked
to decide exactly as the plugin's functions on a subset.

What it shows: over fresh baselines, Holm keeps the chance that a rerun fails at most alpha; but a team
keeps one recorded baseline, and for an unlucky baseline every later rerun fails more often (the
conditional rate's 95th percentile is well above alpha). Recording the baseline at 4× the reruns' size
shrinks that excess. Run this file as a script for larger figures: ``python tests/unit/test_baseline_false_alarms.py``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache

import numpy as np
import pytest
from scipy import stats as sps

from pytest_fairness import baseline as BL
from pytest_fairness.baseline.entry import Entry
from pytest_fairness.baseline.entry_comparison import compare
from pytest_fairness.config import suite
from pytest_fairness.measures.bai.iat_stimuli import get_stereotype
from pytest_fairness.measures.bai.implicit_core import EPSILON, implicit_bias
from pytest_fairness.stats.gate import Threshold

ALPHA, IAT_BIAS, SHARE = 0.05, 0.2, 0.5


@dataclass(frozen=True)
class _Check:
    id: str
    n: int  # the reruns' size (quick profile)
    threshold: float  # a maximum: a rise is a regression
    sides: tuple[int, int] | None  # implicit: attribute words per side; decisions: None


@cache
def _checks() -> tuple[_Check, ...]:
    out = []
    for check in suite.load("religion").checks:
        sides = None
        if check.measure.name == "implicit_bias":
            st = get_stereotype(check.params.subject)
            sides = (len(st.stigma_attrs), len(st.default_attrs))
        out.append(_Check(check.id, check.samples["quick"], float(check.threshold.max), sides))  # type: ignore[arg-type]
    return tuple(out)


def _iat(a: np.ndarray, d: np.ndarray, stigma: int, default: int) -> np.ndarray:
    """``implicit_bias`` of the cell counts (a, b = default − d, c = stigma − a, d), vectorised."""
    b, c = default - d, stigma - a
    return a / (a + b + EPSILON) + d / (c + d + EPSILON) - 1


def _draw(rng: np.random.Generator, check: _Check, shape: tuple[int, ...]) -> np.ndarray:
    """Samples of the synthetic double: each attribute word goes to its consistent group with p = (1 + B) / 2."""
    if check.sides is None:
        return (rng.random(shape) < SHARE).astype(float)
    p, (stigma, default) = (1 + IAT_BIAS) / 2, check.sides
    return _iat(rng.binomial(stigma, p, shape), rng.binomial(default, p, shape), stigma, default)


def _welch_p(m0, s0, n0, m1, s1, n1) -> np.ndarray:
    """Two-sided Welch p of new − old, as ``baseline.welch``: 1 or 0 when both sides have no spread."""
    v0, v1 = s0**2 / n0, s1**2 / n1
    se = np.sqrt(v0 + v1)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (v0 + v1) ** 2 / (v0**2 / (n0 - 1) + v1**2 / (n1 - 1))
        p = 2 * sps.t.sf(np.abs(m1 - m0) / se, df)
    return np.where(se == 0, (m1 == m0).astype(float), p)


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values along the last axis, as ``multiplicity.holm``."""
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, -1) * (m - np.arange(m))
    adjusted = np.minimum(np.maximum.accumulate(ranked, axis=-1), 1.0)
    out = np.empty_like(adjusted)
    np.put_along_axis(out, order, adjusted, -1)
    return out


@dataclass(frozen=True)
class Trials:
    """Per baseline and rerun, each check's summary, and whether the rerun fails (per method)."""

    old: list[tuple[np.ndarray, np.ndarray, int]]  # per check: means (B,), SDs (B,), n
    new: list[tuple[np.ndarray, np.ndarray, int]]  # per check: means (B, R), SDs (B, R), n
    fails: dict[str, np.ndarray]  # method -> (B, R) booleans


def simulate(baselines: int, reruns: int, factor: int = 1, seed: int = 0) -> Trials:
    """``baselines`` fresh baselines (each at ``factor`` × the reruns' size), ``reruns`` reruns of each."""
    rng = np.random.default_rng(seed)
    old, new, p, up = [], [], [], []
    for check in _checks():
        n0, n1 = factor * check.n, check.n
        x0, x1 = _draw(rng, check, (baselines, n0)), _draw(rng, check, (baselines, reruns, n1))
        m0, s0, m1, s1 = x0.mean(-1), x0.std(-1, ddof=1), x1.mean(-1), x1.std(-1, ddof=1)
        old.append((m0, s0, n0))
        new.append((m1, s1, n1))
        p.append(_welch_p(m0[:, None], s0[:, None], n0, m1, s1, n1))
        up.append(m1 > m0[:, None])  # towards the maximum: a regression when significant
    p_all, up_all = np.stack(p, -1), np.stack(up, -1)
    adjusted = {"holm": _holm(p_all), "none": p_all}
    return Trials(old, new, {method: (up_all & (q < ALPHA)).any(-1) for method, q in adjusted.items()})


def _entry(check: _Check, mean: float, sd: float, n: int) -> Entry:
    threshold = Threshold(max=check.threshold)
    # the interval is only shown, never tested
    return Entry(suite="religion", check=check.id, estimate=mean, sd=sd, n=n, threshold=threshold, ci=(mean, mean))


def plugin_fails(trials: Trials, b: int, r: int, method: str) -> bool:
    """The plugin's own verdict on one rerun against its baseline."""
    comparisons = [
        compare(_entry(c, o[0][b], o[1][b], o[2]), _entry(c, x[0][b, r], x[1][b, r], x[2]), 0.0, alpha=ALPHA)
        for c, o, x in zip(_checks(), trials.old, trials.new, strict=True)
    ]
    return bool(BL.decide_run(comparisons, method, alpha=ALPHA).failing)  # type: ignore[arg-type]


@pytest.mark.heavy(3)
def test_the_vectorised_comparison_decides_as_the_plugin() -> None:
    scores = [implicit_bias(a, 4 - d, 4 - a, d) for a in range(5) for d in range(5)]
    grid = np.arange(5)
    assert np.allclose(_iat(grid[:, None], grid[None, :], 4, 4).ravel(), scores)
    trials = simulate(20, 20, seed=1)
    for method in ("holm", "none"):
        ours = trials.fails[method]
        assert ours.any() and not ours.all()  # both verdicts occur: the comparison means something
        assert all(plugin_fails(trials, b, r, method) == ours[b, r] for b in range(20) for r in range(20))


@pytest.mark.heavy(2)
def test_holm_holds_over_fresh_baselines_but_not_given_one_and_a_larger_baseline_helps() -> None:
    same = simulate(300, 200, factor=1, seed=2).fails["holm"].mean(axis=1)  # per baseline: its reruns' rate
    larger = simulate(300, 200, factor=4, seed=3).fails["holm"].mean(axis=1)
    for conditional in (same, larger):
        assert conditional.mean() <= ALPHA  # a fresh baseline per trial: the promised family-wise rate
    assert np.quantile(same, 0.95) > 2 * ALPHA  # given an unlucky baseline, reruns fail far more often
    assert np.quantile(larger, 0.95) <= 2 * ALPHA  # recorded at 4x the reruns' size: at most twice alpha
    assert np.quantile(larger, 0.95) < 0.75 * np.quantile(same, 0.95)


def _figures(baselines: int, reruns: int) -> None:
    """The unconditional rate and the conditional distribution, per method and baseline size."""
    for factor in (1, 4):
        trials = simulate(baselines, reruns, factor, seed=10 + factor)
        for method, fails in trials.fails.items():
            rate = fails.mean(axis=1)
            q = {f"q{int(100 * x)}": round(float(np.quantile(rate, x)), 3) for x in (0.5, 0.9, 0.95)}
            at_least_one = float(np.mean(1 - (1 - rate) ** 20))
            print(
                f"baseline {factor}x, {method}: unconditional {fails.mean():.3f}, conditional {q}, "
                f"max {rate.max():.3f}, P(>=1 of 20 reruns fails) {at_least_one:.3f}"
            )


if __name__ == "__main__":
    _figures(int(sys.argv[1]) if len(sys.argv) > 1 else 1000, int(sys.argv[2]) if len(sys.argv) > 2 else 500)
