"""How many samples a gate needs to decide, and the chance that a given number decides.

A gate decides when its whole interval lies on one side of the threshold. For a true mean at
distance ``d`` from the threshold, with per-sample SD ``sd``, the interval's half-width at ``n``
samples is modelled as

    w(n) = sqrt((c·sd)² / n + h(n)²)

where ``c·sd/√n`` is the usual noise term and ``h(n)`` the price of a guarantee on a bounded range:
an interval valid for *every* distribution on [low, high] cannot rule out a rare excursion to the
far end of the range it has not seen yet, so even a sample of identical values has width ``h(n)``
(about 2·(distance to the far end)·log(2/α)/n for the betting interval, log(2/α)/n·(far end) for
Clopper–Pearson). This is why "net harm ≤ 0.001" needs thousands of prompts even for a model whose
every answer is harmless. The sample mean is modelled as normal around the truth with SD sd/√n, so

    P(decide at n) = Φ((d − w(n))·√n / sd).

``c`` is the normal quantile for Clopper–Pearson and t intervals and, for the betting interval,
0.85·sqrt(2·log(2/α)) (fitted to the interval's simulated half-widths at n = 100–2,000; it is 2.3 at
95%). The model is an approximation: ``tests/test_power.py`` checks it against simulated decision
rates of the real intervals, and the release profile it sizes is checked against the synthetic
models in ``tests/test_release_profile.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats as sps

from pytest_fairness.gate import Threshold
from pytest_fairness.stats import MAX_BET, IntervalKind

#: Decision probability the release profile and "needed" sample sizes aim for.
TARGET_POWER = 0.8
#: Fitted ratio of the betting interval's noise term to sqrt(2·log(2/α)) (see the module docstring).
_BETTING_NOISE = 0.85


@dataclass(frozen=True)
class Scale:
    """What the power model needs to know about a measure's samples and interval."""

    kind: IntervalKind
    bounds: tuple[float, float] | None
    confidence: float = 0.95


def half_width(n: int, sd: float, truth: float, far_end: float, scale: Scale) -> float:
    """Modelled half-width at ``n`` samples of the interval end facing ``far_end`` (a bound of the range)."""
    alpha = 1 - scale.confidence
    far = abs(far_end - truth) if math.isfinite(far_end) else 0.0
    if scale.kind == "bounded":
        c = _BETTING_NOISE * math.sqrt(2 * math.log(2 / alpha))
        floor = far / MAX_BET * math.expm1(math.log(2 / alpha) / n)
    elif scale.kind == "binary":
        c = float(sps.norm.ppf(1 - alpha / 2))
        floor = far * -math.expm1(math.log(alpha / 2) / n)
    else:
        c = float(sps.t.ppf(1 - alpha / 2, df=max(n - 1, 1)))
        floor = 0.0
    return math.sqrt((c * sd) ** 2 / n + floor**2)


def _side_probability(n: int, truth: float, sd: float, edge: float, far_end: float, scale: Scale) -> float:
    """Chance that the interval end facing ``far_end`` lands beyond ``edge`` (on the truth's side)."""
    room = abs(edge - truth) - half_width(n, sd, truth, far_end, scale)
    if sd <= 0:
        return 1.0 if room > 0 else 0.0
    return float(sps.norm.cdf(room * math.sqrt(n) / sd))


def decision_probability(n: int, truth: float, sd: float, threshold: Threshold, scale: Scale) -> float:
    """Chance that a gate with ``n`` samples decides (passes or fails) when the true mean is ``truth``."""
    if n < 1:
        return 0.0
    low, high = scale.bounds or (-math.inf, math.inf)
    if threshold.max is not None and truth > threshold.max:
        return _side_probability(n, truth, sd, threshold.max, low, scale)  # fails once the lower end clears max
    if threshold.min is not None and truth < threshold.min:
        return _side_probability(n, truth, sd, threshold.min, high, scale)
    if (threshold.max is not None and truth == threshold.max) or (threshold.min is not None and truth == threshold.min):
        return 0.0  # a truth on the threshold is never decided, however many samples
    p = 1.0
    if threshold.max is not None:
        p *= _side_probability(n, truth, sd, threshold.max, high, scale)
    if threshold.min is not None:
        p *= _side_probability(n, truth, sd, threshold.min, low, scale)
    return p


def needed_samples(
    truth: float, sd: float, threshold: Threshold, scale: Scale, power: float = TARGET_POWER, cap: int = 10**7
) -> int | None:
    """Fewest samples that decide with probability ``power`` at ``truth``; None if even ``cap`` do not."""
    if decision_probability(cap, truth, sd, threshold, scale) < power:
        return None
    low, high = 1, 2
    while decision_probability(high, truth, sd, threshold, scale) < power:
        low, high = high, min(2 * high, cap)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if decision_probability(mid, truth, sd, threshold, scale) >= power else (mid, high)
    return high


def design_truths(threshold: Threshold, bounds: tuple[float, float] | None) -> tuple[float, ...]:
    """The truths a check is sized for: half and twice each threshold value, kept on the scale.

    Empty for a threshold at zero, where "half" and "twice" name the threshold itself.
    """
    low, high = bounds or (-math.inf, math.inf)
    truths: list[float] = []
    for edge in (threshold.max, threshold.min):
        if edge is None or edge == 0:
            continue
        for truth in (edge / 2, edge * 2):
            truths.append(min(max(truth, low), high))
    return tuple(dict.fromkeys(truths))
