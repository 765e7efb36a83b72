"""Synthetic releases with item effects: each item has its own mean score, and a sample is noisy around it.

The paired gate's error rates depend on how a family's per-item scores split into the item's own effect
(which pairing cancels) and the noise of re-sampling one answer (which it does not). Each family here is
a population of items on the measure's own scale, with a latent item effect and a sampling rule as the
measure scores one sample, and a regression as a latent shift solved to move the population's mean by a
given amount. The pairing correlation ρ (two runs of one release, one sample per item each) is set by the
item effects' spread; ``rho`` reports it exactly (by quadrature), ``for_rho`` solves for it.

Where the sizes come from: implicit bias scores 4 + 4 attribute words (the religion IATs), decisions are
coin flips around the share (the religion suite's quick model: share 0.5), net harm has 4 name pairs per
drawn prompt (``names_per_group: 2``) rated 0.85 by a judge when harmful (the synthetic double's judge)
with the judge noise ``NetHarmParams.SPREAD``, quality's total SD is ``QualityParams.SPREAD``, PCF's per-
occupation risks match the embedded model's committed gender baseline (mean 166, SD 119 ×1000) and are
read exactly (log-probs), so an unchanged release repeats them and a changed one moves each occupation
by its own amount (``change_sd``). ρ itself is a parameter: 0.5 at the design point (Miller 2024 reports
0.3–0.7 for frontier models); ``benchmarks/paired_item_effects.py`` measures it for the embedded model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from scipy import optimize

from pytest_fairness.stats.lazy_scipy import sps

EPSILON = 0.01  # the implicit-bias score's ε (the authors' release)
#: Gauss–Hermite nodes for expectations over a standard normal item effect.
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def _iat(a: np.ndarray, d: np.ndarray, stigma: int, default: int) -> np.ndarray:
    """The implicit-bias score of the cell counts (a consistent stigma words, d consistent default words)."""
    b, c = default - d, stigma - a
    return a / (a + b + EPSILON) + d / (c + d + EPSILON) - 1


@dataclass(frozen=True)
class Family:
    """A population of items: ``latent(rng, shape)`` draws, per cluster of ``cluster_size`` items, each item's
    effect and its own change in a new release (shape (*shape, cluster_size, 2)); ``scores(rng, latent, shift,
    k)`` draws k samples per item at a release shifted by ``shift`` (shape (*shape, cluster_size, k));
    ``moments`` gives an item effect's (mean, variance) of one sample; ``scale`` bounds one sample."""

    name: str
    scale: tuple[float, float]
    cluster_size: int = 1

    def latent(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return rng.standard_normal((*shape, self.cluster_size, 2))

    def scores(self, rng: np.random.Generator, latent: np.ndarray, shift: float, k: int) -> np.ndarray:
        raise NotImplementedError

    def moments(self, z: np.ndarray, shift: float) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def mean(self, shift: float = 0.0) -> float:
        """The population's mean score at ``shift``."""
        return float(_WEIGHTS @ self.moments(_NODES, shift)[0])

    def rho(self) -> float:
        """Correlation of two independent samples of the same item across items (one release, K = 1)."""
        means, variances = self.moments(_NODES, 0.0)
        between = float(_WEIGHTS @ (means - _WEIGHTS @ means) ** 2)
        within = float(_WEIGHTS @ variances)
        return between / (between + within) if between + within > 0 else math.nan

    def variances(self) -> tuple[float, float]:
        """(between-item variance of the item means, mean within-item variance of one sample)."""
        means, variances = self.moments(_NODES, 0.0)
        return float(_WEIGHTS @ (means - _WEIGHTS @ means) ** 2), float(_WEIGHTS @ variances)

    def shift_for(self, difference: float) -> float:
        """The latent shift that moves the population's mean by ``difference`` (on the measure's scale)."""
        base = self.mean(0.0)
        return float(optimize.brentq(lambda s: self.mean(s) - base - difference, -8.0, 8.0, xtol=1e-10))


@dataclass(frozen=True)
class Implicit(Family):
    """Implicit bias: each of ``stigma`` + ``default`` attribute words goes to its consistent group with the
    item's probability Φ(theta + tau·z + shift)."""

    name: str = "implicit"
    scale: tuple[float, float] = (-1.0, 1.0)
    stigma: int = 4
    default: int = 4
    theta: float = float(sps.norm.ppf(0.6))  # the quick model's bias 0.2: p = 0.6
    tau: float = 0.0

    def _p(self, z: np.ndarray, shift: float) -> np.ndarray:
        return sps.norm.cdf(self.theta + self.tau * z + shift)

    def scores(self, rng: np.random.Generator, latent: np.ndarray, shift: float, k: int) -> np.ndarray:
        p = np.repeat(self._p(latent[..., 0], shift)[..., None], k, axis=-1)
        return _iat(rng.binomial(self.stigma, p), rng.binomial(self.default, p), self.stigma, self.default)

    @cached_property
    def _grid(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a, d = np.meshgrid(np.arange(self.stigma + 1), np.arange(self.default + 1), indexing="ij")
        return a.ravel(), d.ravel(), _iat(a.ravel(), d.ravel(), self.stigma, self.default)

    def moments(self, z: np.ndarray, shift: float) -> tuple[np.ndarray, np.ndarray]:
        a, d, score = self._grid
        p = self._p(np.asarray(z, dtype=float), shift)[..., None]
        pmf = sps.binom.pmf(a, self.stigma, p) * sps.binom.pmf(d, self.default, p)
        mean = pmf @ score
        return mean, pmf @ score**2 - mean**2


@dataclass(frozen=True)
class Decision(Family):
    """Decision bias: the stigma person gets the stereotyped option with the item's probability Φ(theta + tau·z)."""

    name: str = "decision"
    scale: tuple[float, float] = (0.0, 1.0)
    theta: float = 0.0
    tau: float = 0.0

    def _p(self, z: np.ndarray, shift: float) -> np.ndarray:
        return sps.norm.cdf(self.theta + self.tau * z + shift)

    def scores(self, rng: np.random.Generator, latent: np.ndarray, shift: float, k: int) -> np.ndarray:
        p = self._p(latent[..., 0], shift)[..., None]
        return (rng.random((*p.shape[:-1], k)) < p).astype(float)

    def moments(self, z: np.ndarray, shift: float) -> tuple[np.ndarray, np.ndarray]:
        p = self._p(np.asarray(z, dtype=float), shift)
        return p, p * (1 - p)


@dataclass(frozen=True)
class Quality(Family):
    """Quality disparity: a prompt's rating difference A − B is its own gap tau·z plus judge and answer noise
    of SD ``noise``, clipped to the 1–5 scale's [-4, 4]; a regression shifts every gap."""

    name: str = "quality"
    scale: tuple[float, float] = (-4.0, 4.0)
    tau: float = 0.0
    noise: float = 1.0

    def scores(self, rng: np.random.Generator, latent: np.ndarray, shift: float, k: int) -> np.ndarray:
        gap = (self.tau * latent[..., 0] + shift)[..., None]
        return np.clip(gap + self.noise * rng.standard_normal((*gap.shape[:-1], k)), *self.scale)

    def moments(self, z: np.ndarray, shift: float) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of clip(gap + noise·ε, −4, 4): the clipping matters once a gap nears the scale's end
        (a regression that puts items at the top of the scale)."""
        gap = self.tau * np.asarray(z, dtype=float) + shift
        lo, hi = self.scale
        a, b = (lo - gap) / self.noise, (hi - gap) / self.noise
        pa, pb, fa, fb = sps.norm.cdf(a), sps.norm.cdf(b), sps.norm.pdf(a), sps.norm.pdf(b)
        inside = pb - pa
        first = gap * inside + self.noise * (fa - fb)
        second = gap**2 * inside + 2 * gap * self.noise * (fa - fb) + self.noise**2 * (inside + a * fa - b * fb)
        mean = lo * pa + hi * (1 - pb) + first
        return mean, np.maximum(lo**2 * pa + hi**2 * (1 - pb) + second - mean**2, 0.0)


@dataclass(frozen=True)
class NetHarm(Family):
    """Net harm: a drawn prompt is prone to a harmful difference with probability ``prone`` (+ the regression's
    shift); each of its name pairs then shows one, rated ``rating`` by the judge, with probability ``q`` per
    sample; every rating carries the judge's noise ``judge_sd``. ρ is about q (the prone pairs' consistency)."""

    name: str = "net_harm"
    scale: tuple[float, float] = (-1.0, 1.0)
    cluster_size: int = 4
    prone: float = 0.01
    q: float = 0.5
    rating: float = 0.85
    judge_sd: float = 0.011

    def latent(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        prompt = rng.random((*shape, 1, 1))  # proneness is the prompt's, shared by its name pairs
        return np.broadcast_to(prompt, (*shape, self.cluster_size, 2))

    def scores(self, rng: np.random.Generator, latent: np.ndarray, shift: float, k: int) -> np.ndarray:
        prone = (latent[..., 0] < self.prone + shift)[..., None]
        size = (*prone.shape[:-1], k)
        harmful = prone & (rng.random(size) < self.q)
        noise = self.judge_sd * rng.standard_normal(size)
        return np.clip(self.rating * harmful + noise, *self.scale)

    def mean(self, shift: float = 0.0) -> float:
        return self.rating * self.q * min(max(self.prone + shift, 0.0), 1.0)

    def rho(self) -> float:
        between, within = self.variances()
        return between / (between + within)

    def variances(self) -> tuple[float, float]:
        f, event = self.prone, self.rating * self.q
        return event**2 * f * (1 - f), self.rating**2 * self.q * (1 - self.q) * f + self.judge_sd**2

    def shift_for(self, difference: float) -> float:
        return difference / (self.rating * self.q)


@dataclass(frozen=True)
class Pcf(Family):
    """PCF prejudice ×1000 per occupation, read exactly (log-probs): 1000·|2Φ(theta + tau·z) − 1|, so re-reading
    a release repeats it. A changed release moves each occupation's risk by the shift plus its own change of SD
    ``change_sd`` (×1000; drawn once per release), clipped to the scale: the change's heterogeneity, which
    pairing does not cancel, sets ρ."""

    name: str = "pcf"
    scale: tuple[float, float] = (0.0, 1000.0)
    theta: float = 0.0903  # with tau: mean 166, SD 119 (×1000), the embedded model's gender prejudice baseline
    tau: float = 0.2493
    change_sd: float = 100.0

    def _risk(self, z: np.ndarray) -> np.ndarray:
        return 1000 * np.abs(2 * sps.norm.cdf(self.theta + self.tau * z) - 1)

    def scores(self, rng: np.random.Generator, latent: np.ndarray, shift: float, k: int) -> np.ndarray:
        r = self._risk(latent[..., 0])
        if shift != 0:
            r = np.clip(r + shift + self.change_sd * latent[..., 1], *self.scale)
        return np.repeat(r[..., None], k, axis=-1)

    def _changed(self, z: np.ndarray, shift: float) -> np.ndarray:
        """Risks after a change, per item effect (rows) and change (columns, at the quadrature nodes)."""
        return np.clip(self._risk(z)[..., None] + shift + self.change_sd * _NODES, *self.scale)

    def moments(self, z: np.ndarray, shift: float) -> tuple[np.ndarray, np.ndarray]:
        z = np.asarray(z, dtype=float)
        r = self._risk(z) if shift == 0 else self._changed(z, shift) @ _WEIGHTS  # averaged over the change
        return r, np.zeros(z.shape)

    def shift_for(self, difference: float) -> float:
        base = self.mean(0.0)
        return float(optimize.brentq(lambda s: self.mean(s) - base - difference, -1000.0, 1000.0, xtol=1e-8))

    def rho(self) -> float:
        """Correlation across occupations of the risks before and after a change (re-reading one release
        repeats them exactly; pairing then leaves only the change's own heterogeneity)."""
        old, new = self._risk(_NODES), self._changed(_NODES, 0.0)
        w = _WEIGHTS[:, None] * _WEIGHTS
        m_old, m_new = float(_WEIGHTS @ old), float(np.sum(w * new))
        cov = float(np.sum(w * (old[:, None] - m_old) * (new - m_new)))
        v_old, v_new = float(_WEIGHTS @ (old - m_old) ** 2), float(np.sum(w * (new - m_new) ** 2))
        return cov / math.sqrt(v_old * v_new)


def for_rho(family: Family, rho: float, knob: str = "tau", high: float = 20.0) -> Family:
    """The family with the item effects' spread (``knob``) that gives pairing correlation ``rho``."""
    return replace(family, **{knob: optimize.brentq(lambda v: replace(family, **{knob: v}).rho() - rho, 1e-6, high)})


@dataclass(frozen=True)
class Trial:
    """One simulated comparison's size: ``clusters`` paired, ``k_old`` samples per item on the baseline (K0),
    ``k_new`` on the run (K)."""

    clusters: int
    k_old: int = 1
    k_new: int = 1


def paired_differences(
    family: Family, rng: np.random.Generator, trial: Trial, shift: float, baselines: int, reruns: int
) -> np.ndarray:
    """Per-cluster differences (run − baseline), shape (baselines, reruns, clusters): each baseline draws its
    items and records them once, each rerun re-samples the same items at a release shifted by ``shift``."""
    latent = family.latent(rng, (baselines, 1, trial.clusters))
    old = family.scores(rng, latent, 0.0, trial.k_old).mean(-1)
    new_latent = np.broadcast_to(latent, (baselines, reruns, *latent.shape[2:]))
    new = family.scores(rng, new_latent, shift, trial.k_new).mean(-1)
    return (new - old).mean(-1)


def unpaired_samples(
    family: Family, rng: np.random.Generator, clusters: int, shift: float, reps: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster means of a baseline and a run on independently drawn items, shape (reps, clusters) each:
    what today's unpaired comparison sees."""
    old = family.scores(rng, family.latent(rng, (reps, clusters)), 0.0, 1).mean((-1, -2))
    new = family.scores(rng, family.latent(rng, (reps, clusters)), shift, 1).mean((-1, -2))
    return old, new


#: The shapes of a regression on a baseline's items: every item alike, a quarter of them, or items that jump to
#: the top of the scale one after another until the margin is reached (about an eighth for implicit bias).
SHAPES = ("homogeneous", "concentrated", "top")
#: A latent shift that puts an item at the top of its scale.
_TOP = 8.0


def item_samples(
    family: Family, rng: np.random.Generator, z: np.ndarray, shift: np.ndarray, k: int, reps: int
) -> np.ndarray:
    """Samples of the items with latent effects ``z`` (n,) at per-item latent ``shift`` (n,): shape (reps, n, k)."""
    latent = np.broadcast_to(np.asarray(z, float)[None, :, None, None], (reps, z.size, 1, 2))
    return family.scores(rng, latent, np.asarray(shift, float)[:, None], k)[..., 0, :]


def at_margin_on_items(
    family: Family, shape: str, z: np.ndarray, margin: float, rng: np.random.Generator, share: float = 0.25
) -> np.ndarray:
    """Per-item latent shifts of a regression whose item means rise by exactly ``margin`` on average over the
    baseline's items ``z`` (not over the population: given the baseline, the change it must not let through):
    ``homogeneous`` every item alike, ``concentrated`` a random ``share`` of them alike (another random set when
    those cannot carry it), ``top`` items in a random order jump to the top of the scale until the margin is
    reached (the last one partly)."""
    base = family.moments(z, np.zeros_like(z))[0]
    target = margin * z.size

    def excess(shift: np.ndarray) -> float:
        return float(np.sum(family.moments(z, shift)[0] - base)) - target

    if shape == "homogeneous":
        return np.full_like(z, optimize.brentq(lambda s: excess(np.full_like(z, s)), -_TOP, _TOP))
    if shape == "concentrated":
        for _ in range(20):
            hit = np.zeros(z.size, bool)
            hit[rng.permutation(z.size)[: math.ceil(share * z.size)]] = True
            if excess(np.where(hit, 1.5 * _TOP, 0.0)) > 0:
                return np.where(
                    hit, optimize.brentq(lambda s, hit=hit: excess(np.where(hit, s, 0.0)), -_TOP, 1.5 * _TOP), 0.0
                )
        raise ValueError(f"no {share:.0%} of these items can carry a regression of {margin:g}")
    if shape == "top":
        rise = family.moments(z, np.full_like(z, _TOP))[0] - base
        order = rng.permutation(z.size)
        reached = np.cumsum(rise[order])
        last = int(np.searchsorted(reached, target))
        if last >= z.size:
            raise ValueError(f"these items cannot carry a regression of {margin:g}")
        shift = np.zeros_like(z)
        shift[order[:last]] = _TOP
        i, rest = order[last], target - (reached[last - 1] if last else 0.0)
        one = z[i : i + 1]
        shift[i] = optimize.brentq(
            lambda s: float(family.moments(one, np.array([s]))[0][0] - base[i]) - rest, -_TOP, _TOP
        )
        return shift
    raise ValueError(f"unknown shape {shape!r}: one of {', '.join(SHAPES)}")


def exact_differences_at_margin(
    family: Pcf, shape: str, z: np.ndarray, change: np.ndarray, margin: float, rng: np.random.Generator,
    share: float = 0.25,
) -> np.ndarray:  # fmt: skip
    """PCF (read exactly): per-occupation risk differences of a release changed occupation by occupation (each
    by the shift plus its own ``change``, SD ``change_sd``), whose mean over these occupations is exactly
    ``margin``: ``homogeneous`` every occupation changes, ``concentrated`` a random ``share`` of them, ``top``
    occupations in a random order jump to the top of the scale until the margin is reached."""
    risk, (lo, hi) = family._risk(z), family.scale
    if shape == "top":
        rise, order = hi - risk, rng.permutation(z.size)
        reached = np.cumsum(rise[order])
        last = int(np.searchsorted(reached, margin * z.size))
        d = np.zeros_like(z)
        d[order[:last]] = rise[order[:last]]
        d[order[last]] = margin * z.size - (reached[last - 1] if last else 0.0)
        return d
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}: one of {', '.join(SHAPES)}")
    hit = np.ones(z.size, bool) if shape == "homogeneous" else rng.random(z.size) < share

    def differences(shift: float) -> np.ndarray:
        return np.where(hit, np.clip(risk + shift + family.change_sd * change, lo, hi) - risk, 0.0)

    return differences(optimize.brentq(lambda s: float(differences(s).mean()) - margin, -hi, hi))
