"""How many samples a gate needs to decide, and the chance that a given number decides.

A gate decides when its whole interval lies on one side of the threshold. For a true mean at
distance ``d`` from the threshold, with per-sample SD ``sd``, the interval's half-width at ``n``
samples is modelled as

    w(n) = sqrt((c·sd)² / n + h(n)²)

where ``c·sd/√n`` is the usual noise term and ``h(n)`` the price of a guarantee on a bounded range:
an interval valid for *every* distribution on [low, high] cannot rule out a rare excursion to the
far end of the range it has not seen yet, so even a sample of identical values has width ``h(n)``
(about (distance to the far end)·log(2/α)/(MAX_BET·n) for the betting interval once its bets have
grown to their cap, ``_betting_steps``). This is why "net harm ≤ 0.001" needs thousands of prompts
even for a model whose every answer is harmless. The sample mean is modelled as normal around the
truth with SD sd/√n, so

    P(decide at n) = Φ((d − w(n))·√n / sd).

``c`` is the t quantile for t intervals and, for the betting interval, 0.95·sqrt(2·log(2/α)) (2.6 at
95%): the interval's mean half-width at n = 100–3,000 and SD 0.3–0.7 is 0.87–0.90 of
sqrt(2·log(2/α))·sd/√n, and the margin covers its spread from sample to sample, so that n =
``needed_samples`` decides at least as often as promised. Clopper–Pearson gates (0/1 samples) are not
modelled: their chance to decide is computed exactly from the binomial distribution of the count.
The model is an approximation: ``tests/unit/test_power.py`` checks it against simulated decision rates of
the real intervals, and the release profile it sizes is checked against the synthetic models in
``tests/unit/test_release_profile.py``.

Quadrature of the noise term and the floor overstates the width where the bet's cap binds all along, as for
the samples of a two-phase estimate (``stats.two_phase``: a range of ±B with B up to several times the
scale, most samples near 0). ``Scale(capped=True)`` models that gate directly: a gambler betting b (on the
unit scale) against a mean δ beyond the truth gains about b·n·δ − b²·n·σ²/2 in log-capital, so the end lies
at δ = L/(b·n) + b·σ²/2 with L = log(2/α), least at b = sqrt(2L/(n·σ²)) (δ = sqrt(2Lσ²/n), the noise term
alone, times the fitted 0.95) unless that bet exceeds its cap MAX_BET / (distance to the far end), where
δ = L/(cap·n) + cap·σ²/2. ``tests/unit/test_power.py`` checks it against the two-phase gate simulated. The same
gambler's arithmetic with the confidence sequence's bets (``Scale.sequential``) models a sequential run: the
chance it has decided by each look, and so its expected size (``sequential_sizes``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from pytest_fairness.stats.gate import Threshold
from pytest_fairness.stats.intervals import MAX_BET, IntervalKind
from pytest_fairness.stats.lazy_scipy import sps

#: Decision probability the release profile and "needed" sample sizes aim for.
TARGET_POWER = 0.8
#: Ratio of the betting interval's noise term to sqrt(2·log(2/α)): 0.87-0.90 fitted, rounded up (module docstring).
_BETTING_NOISE = 0.95
#: The confidence sequence's modelled width times this keeps its chance to decide within the budget at or below
#: the simulated one (two-phase gates of 1,000-200,000 draws, clean shares 0.3-0.7; ``tests/unit/test_power.py``).
_SEQUENCE_NOISE = 1.15
#: Usable counts an expected decision probability averages over, at most (``decision_probability``).
_MIXTURE_POINTS = 200


@dataclass(frozen=True)
class GateShape:
    """How a gate reads its samples, for sizing (``Params.gate_shape``): ``means`` means bounded at once, each
    interval at ``confidence`` (e.g. Bonferroni over them) against ``threshold`` on one mean's scale; a
    passing truth needs every one of them to clear it, a failing one needs one; ``share`` of the measure's
    samples (e.g. the held-out half of its prompts) feed each mean. The default is one mean of all samples."""

    threshold: Threshold
    confidence: float
    means: int = 1
    share: float = 1.0


@dataclass(frozen=True)
class Scale:
    """What the power model needs to know about a measure's samples and interval."""

    kind: IntervalKind
    bounds: tuple[float, float] | None
    confidence: float = 0.95
    #: The bet-capped model of the betting interval (module docstring): for samples on a range far wider than
    #: their spread, e.g. a two-phase estimate's.
    capped: bool = False
    #: With ``capped``: the confidence sequence's width at n (its bets shrink like 1/sqrt(t log t); module
    #: docstring) instead of the fixed-n interval's: the chance that a sequential run has decided by n.
    sequential: bool = False


@dataclass(frozen=True)
class BettingFit:
    """How the betting interval's half-width combines its terms: ``noise`` scales sqrt(2·log(2/α))·sd/√n,
    ``floor`` the price of the bounded range, and the two add as a ``power``-norm (2: in quadrature)."""

    noise: float = _BETTING_NOISE
    floor: float = 1.0
    power: float = 2.0


#: The release profile's fit: cautious on purpose (the module docstring).
CAUTIOUS = BettingFit()


def half_width(n: int, sd: float, truth: float, far_end: float, scale: Scale, fit: BettingFit = CAUTIOUS) -> float:
    """Modelled half-width at ``n`` samples of the interval end facing ``far_end`` (a bound of the range); ``fit``
    weighs the betting interval's terms (the paired planner has its own, ``allocation.BETTING_FIT``)."""
    alpha = 1 - scale.confidence
    far = abs(far_end - truth) if math.isfinite(far_end) else 0.0
    if scale.kind == "bounded" and scale.capped and scale.bounds is not None:
        if scale.sequential:
            return _sequence_half_width(n, sd, far, scale.bounds, alpha)
        return _capped_half_width(n, sd, far, scale.bounds, math.log(2 / alpha))
    if scale.kind == "bounded":
        c = fit.noise * math.sqrt(2 * math.log(2 / alpha))
        floor = fit.floor * far / MAX_BET * math.expm1(math.log(2 / alpha) / _betting_steps(n, truth, far, scale))
        return ((c * sd / math.sqrt(n)) ** fit.power + floor**fit.power) ** (1 / fit.power)
    if scale.kind == "binary":
        c = float(sps.norm.ppf(1 - alpha / 2))
        floor = far * -math.expm1(math.log(alpha / 2) / n)
    else:
        c = float(sps.t.ppf(1 - alpha / 2, df=max(n - 1, 1)))
        floor = 0.0
    return math.sqrt((c * sd) ** 2 / n + floor**2)


def _capped_half_width(n: int, sd: float, far: float, bounds: tuple[float, float], log_odds: float) -> float:
    """The betting interval's half-width with a bet capped at MAX_BET over the distance to the far end
    (``Scale.capped``; module docstring), on the scale of ``bounds``."""
    span = bounds[1] - bounds[0]
    variance, far_unit = (sd / span) ** 2, far / span
    cap = MAX_BET / far_unit if far_unit > 0 else math.inf
    free = math.sqrt(2 * log_odds / (n * variance)) if variance > 0 else math.inf
    if free < cap:
        return _BETTING_NOISE * math.sqrt(2 * log_odds * variance / n) * span
    return (log_odds / (cap * n) + cap * variance / 2) * span


def _sequence_half_width(n: int, sd: float, far: float, bounds: tuple[float, float], alpha: float) -> float:
    """The confidence sequence's half-width after ``n`` samples (``Scale.sequential``): its gambler bets
    b_t = min(cap, c·g(t)), g(t) = 1/sqrt(t log(1 + t)), c = sqrt(2 log(2/α) / σ²), and rejects a mean δ away
    once Σ (b_t δ − b_t² σ²/2) reaches log(2/α) (the hedged capital's 1/α with the other gambler's share
    spent), so δ = (log(2/α) + σ²/2 Σ b_t²) / Σ b_t, on the unit scale (times the fitted ``_SEQUENCE_NOISE``)."""
    span = bounds[1] - bounds[0]
    variance, far_unit = max((sd / span) ** 2, 1e-300), far / span
    cap = MAX_BET / far_unit if far_unit > 0 else math.inf
    log_odds = math.log(2 / alpha)
    c = math.sqrt(2 * log_odds / variance)
    g, g1, g2 = _sequence_bets(n)
    capped = int(np.searchsorted(-g[:n], -cap / c)) if math.isfinite(cap) else 0  # the first t with c·g(t) < cap
    total = cap * capped + c * (g1[n] - g1[capped]) if capped else c * g1[n]
    squares = cap**2 * capped + c**2 * (g2[n] - g2[capped]) if capped else c**2 * g2[n]
    return _SEQUENCE_NOISE * (log_odds + variance / 2 * squares) / total * span


@cache
def _bet_shape(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = np.arange(1, size + 1, dtype=float)
    g = 1 / np.sqrt(t * np.log1p(t))
    return g, np.concatenate([[0.0], np.cumsum(g)]), np.concatenate([[0.0], np.cumsum(g**2)])


def _sequence_bets(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """g(t) for t = 1..(at least n), and the cumulative sums of g and g² (index k: the first k terms)."""
    return _bet_shape(max(2 ** math.ceil(math.log2(max(n, 1024))), n))


def _betting_steps(n: int, truth: float, far: float, scale: Scale) -> float:
    """How many of ``n`` near-constant scores bet the full MAX_BET, in effect, for the betting interval's floor.

    Its bets start from a prior variance of 1/4 (on the unit scale) that shrinks like 1/t on constant
    scores, so the bet grows like √t and reaches its cap (MAX_BET over the distance to the far end) only
    after t* = cap²·n·V/(2·log(2/α)) scores; summed, the first t* bet a third of the cap's worth less. When
    the cap is never reached (a truth close to the far end) the √t bets alone count. V is that prior plus
    the early estimates' pull towards 1/2 (about (π²/6 − 1)·(u − 1/2)² for scores at u).
    """
    if scale.bounds is None or far <= 0:
        return float(n)
    low, high = scale.bounds
    u = (truth - low) / (high - low)
    cap = MAX_BET * (high - low) / far
    prior = 0.25 + (math.pi**2 / 6 - 1) * (u - 0.5) ** 2
    log_odds = math.log(2 / (1 - scale.confidence))
    warmup = cap**2 * n * prior / (2 * log_odds)
    if warmup <= n:
        return n - warmup / 3
    return 2 / 3 * n * math.sqrt(2 * log_odds / prior) / cap


def _side_probability(n: int, truth: float, sd: float, edge: float, far_end: float, scale: Scale) -> float:
    """Chance that the interval end facing ``far_end`` lands beyond ``edge`` (on the truth's side)."""
    room = abs(edge - truth) - half_width(n, sd, truth, far_end, scale)
    if sd <= 0:
        return 1.0 if room > 0 else 0.0
    return 0.5 * math.erfc(-room * math.sqrt(n) / sd / math.sqrt(2))  # the normal CDF, without scipy's overhead


def decision_probability(
    n: int, truth: float, sd: float, threshold: Threshold, scale: Scale, usable: float = 1.0
) -> float:
    """Chance that a gate with ``n`` samples decides (passes or fails) when the true mean is ``truth``.

    With ``usable`` < 1 each sample is usable with that probability, independently: the gate then sees
    Binomial(n, usable) samples, and the chance is averaged over that count (the central part of its
    distribution, all but 1e-9 of it), so a size in prompts is judged by the answers it will likely yield.
    """
    if usable < 1:
        return _usable_probability(n, truth, sd, threshold, scale, usable)
    if n < 1:
        return 0.0
    if (threshold.max is not None and truth == threshold.max) or (threshold.min is not None and truth == threshold.min):
        return 0.0  # a truth on the threshold is never decided, however many samples
    if scale.kind == "binary":
        return _binary_probability(n, truth, threshold, scale.confidence)
    low, high = scale.bounds or (-math.inf, math.inf)
    if threshold.max is not None and truth > threshold.max:
        return _side_probability(n, truth, sd, threshold.max, low, scale)  # fails once the lower end clears max
    if threshold.min is not None and truth < threshold.min:
        return _side_probability(n, truth, sd, threshold.min, high, scale)
    # Passing needs both ends inside: one sample mean must clear both, so P(A and B) = P(A) + P(B) - 1.
    p = 1.0
    if threshold.max is not None:
        p += _side_probability(n, truth, sd, threshold.max, high, scale) - 1
    if threshold.min is not None:
        p += _side_probability(n, truth, sd, threshold.min, low, scale) - 1
    return max(p, 0.0)


def _usable_probability(n: int, truth: float, sd: float, threshold: Threshold, scale: Scale, usable: float) -> float:
    if n < 1 or usable <= 0:
        return 0.0
    count = sps.binom(n, usable)
    low, high = max(int(count.ppf(1e-9)), 1), int(count.isf(1e-9))
    if high - low < _MIXTURE_POINTS:
        counts, weights = np.arange(low, high + 1), count.pmf(np.arange(low, high + 1))
    else:  # a large n: equally likely quantiles of the count (its spread is then a small share of n)
        counts = count.ppf((np.arange(_MIXTURE_POINTS) + 0.5) / _MIXTURE_POINTS).astype(int)
        weights = np.full(_MIXTURE_POINTS, 1 / _MIXTURE_POINTS)
    if scale.kind == "binary" and truth not in (threshold.max, threshold.min):
        chances = _binary_probabilities(counts, truth, threshold, scale.confidence)
    else:
        chances = np.array([decision_probability(int(m), truth, sd, threshold, scale) for m in counts])
    return float(np.dot(weights, chances))


def _binary_probability(n: int, truth: float, threshold: Threshold, confidence: float) -> float:
    """Exact chance that a Clopper–Pearson gate decides when the count of ones is Binomial(n, truth).

    Clopper–Pearson inverts the binomial test, so its upper end at k ones is at most t exactly when
    P(X ≤ k | t) ≤ α/2, and its lower end at least t when P(X ≥ k | t) ≤ α/2: which counts decide is
    read off binomial quantiles at the threshold. (The normal model misjudges skewed, discrete counts:
    at p = 0.9 and n = 30 it says 82% where the gate decides in 65% of runs.)
    """
    return float(_binary_probabilities(np.array([n]), truth, threshold, confidence)[0])


def _binary_probabilities(n: np.ndarray, truth: float, threshold: Threshold, confidence: float) -> np.ndarray:
    """``_binary_probability`` for an array of sample sizes at once (the usable-count mixture needs many)."""
    half = (1 - confidence) / 2
    count = sps.binom(n, min(max(truth, 0.0), 1.0))

    def most_below(t: float) -> np.ndarray:  # largest k whose upper end is ≤ t (-1: none)
        if t >= 1:
            return n
        k = sps.binom.ppf(half, n, t)
        return np.where(sps.binom.cdf(k, n, t) <= half, k, k - 1)

    def fewest_above(t: float) -> np.ndarray:  # smallest k whose lower end is ≥ t (n + 1: none)
        return np.zeros_like(n) if t <= 0 else sps.binom.ppf(1 - half, n, t) + 1

    passing_low = np.zeros_like(n) if threshold.min is None else fewest_above(threshold.min)
    passing_high = n if threshold.max is None else most_below(threshold.max)
    inside = np.maximum(count.cdf(passing_high) - count.cdf(passing_low - 1), 0.0)
    p = np.where(passing_low <= passing_high, inside, 0.0)
    if threshold.max is not None:
        p = p + count.sf(fewest_above(threshold.max) - 1)
    if threshold.min is not None:
        p = p + count.cdf(most_below(threshold.min))
    return np.minimum(p, 1.0)


@cache  # pure; suites share thresholds, so collection sizes each (measure, threshold) once
def needed_samples(
    truth: float,
    sd: float,
    threshold: Threshold,
    scale: Scale,
    power: float = TARGET_POWER,
    cap: int = 10**7,
    usable: float = 1.0,
) -> int | None:
    """Fewest samples that decide with probability ``power`` at ``truth``; None if even ``cap`` do not.

    With ``usable`` < 1 the samples are prompts of which each yields a usable answer with that
    probability (``decision_probability``).
    """

    return fewest(lambda n: decision_probability(n, truth, sd, threshold, scale, usable), power, cap, least=2)


def fewest(chance: Callable[[int], float], power: float, cap: int, least: int = 1) -> int | None:
    """Fewest n in [least, cap] whose ``chance(n)`` (rising in n) is at least ``power``; None if ``cap`` falls short.

    Doubling then bisection: a few dozen evaluations of ``chance`` even at a cap of millions.
    """
    if chance(cap) < power:
        return None
    low, high = least - 1, least
    while chance(high) < power:
        low, high = high, min(2 * high, cap)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if chance(mid) >= power else (mid, high)
    return high


def design_truths(threshold: Threshold, bounds: tuple[float, float] | None, null: float = 0.0) -> tuple[float, ...]:
    """The truths a check is sized for, kept on the scale; ``Params.design_truths`` picks them per measure.

    A null of zero (no harm, no bias at 0): half and twice each threshold value, i.e. half and twice the
    bias it allows; empty for a threshold at zero, where "half" and "twice" name the threshold itself.
    A null elsewhere (a share whose no-bias value is 0.5): halving 0.7 gives a strong bias the other
    way and doubling it leaves the scale, both trivially decided, so the check is sized at the null
    itself (an unbiased model should pass) and at a clearly biased value beyond the threshold that
    should fail: halfway from the threshold to the end of the scale (0.85 for a share at most 0.7), or,
    on an open scale, as far beyond the threshold as the threshold is from the null. Truths on an edge
    are dropped: no sample size decides them.
    """
    low, high = bounds or (-math.inf, math.inf)
    edges = [e for e in (threshold.max, threshold.min) if e is not None]
    truths: list[float] = []
    for edge in edges:
        if edge == null:
            continue
        if null == 0:
            pair = (edge / 2, edge * 2)
        else:
            end = high if edge > null else low
            pair = (null, (edge + end) / 2 if math.isfinite(end) else 2 * edge - null)
        truths += [min(max(t, low), high) for t in pair]
    return tuple(t for t in dict.fromkeys(truths) if t not in edges)


@dataclass(frozen=True)
class Growth:
    """A sequential run's sizes at one truth: the chance it has decided by its last look, and the samples it is
    expected to draw (it stops at the first look that decides, else at the last)."""

    decided: float
    expected: float


def sequential_sizes(sizes: list[int], truth: float, sd: float, threshold: Threshold, scale: Scale) -> Growth:
    """A confidence sequence looked at ``sizes`` (``Scale.sequential``) at ``truth``: the chance that it has
    decided by each look is taken as the best single look's so far (a lower bound: a run may decide at an
    earlier look and not a later one, never the reverse, as the sequence only narrows), so the expected size
    is an upper bound."""
    by_look = np.maximum.accumulate([decision_probability(n, truth, sd, threshold, scale) for n in sizes])
    stopped = np.diff(np.concatenate([[0.0], by_look]))
    expected = float(np.dot(stopped, sizes) + sizes[-1] * (1 - by_look[-1]))
    return Growth(float(by_look[-1]), expected)
