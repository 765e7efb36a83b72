"""Prejudice–Caprice Framework (Liu et al., spec §1): how much of a model's bias is steady, how much erratic.

For each occupation x (X) and context template t, the model's preference p_{t,x} is a distribution
over the K groups of an attribute (Y). A convex criterion J scores its distance from the unbiased p*:

    r_x   = Σ_t π_t J(p_{t,x})       risk of using the model across its contexts      (Eq. 4)
    r^p_x = J(Σ_t π_t p_{t,x})       risk of its context-averaged preference: prejudice (Eq. 5)
    r^c_x = r_x - r^p_x >= 0         what preferences that flip between contexts add: caprice (Eq. 6)

and R, R^p, R^c are their ω-weighted means over occupations (Eq. 7–9), so R = R^p + R^c exactly.
Everything here is pure numpy/scipy over arrays shaped [occupation, template, group] on the 0..1
scale; reading preferences out of a model is the probing layer's job. Groups are indexed from 0.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from pytest_fairness.stats.lazy_scipy import sps

FLOAT_TOL = 1e-12  # float noise on values in [0, 1]: caprice clamp, ties between groups (spec §7.2 #18)


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _check_norm(norm: float) -> None:
    """ℓ∞ (the paper's Eq. 3) or ℓ^k for a positive integer k (Eq. 14): the convex choices."""
    numeric = isinstance(norm, numbers.Real) and not isinstance(norm, bool)
    if numeric and (norm == math.inf or (float(norm).is_integer() and norm >= 1)):
        return
    raise ValueError(f"norm must be math.inf or a positive integer, got {norm!r}")


def _reference(k: int, p_star: ArrayLike | None) -> np.ndarray:
    """p*: uniform unless given (the paper only uses uniform; spec §1.2 extension otherwise)."""
    if k < 2:
        raise ValueError(f"PCF compares K >= 2 groups, got K = {k}")
    if p_star is None:
        return np.full(k, 1.0 / k)
    ref = np.asarray(p_star, dtype=float)
    if ref.shape != (k,):
        raise ValueError(f"p_star needs one entry per group ({k}), got shape {ref.shape}")
    if not (np.all(np.isfinite(ref)) and np.all(ref >= 0) and np.all(ref < 1) and math.isclose(ref.sum(), 1.0)):
        raise ValueError(f"p_star must be a distribution over the groups (entries in [0, 1) summing to 1), got {ref}")
    return ref


def _directions(ref: np.ndarray) -> np.ndarray:
    """Rows d_y: 1 at y and -p*_y / (1 - p*_y) elsewhere, which is -1/(K-1) for the uniform p*."""
    d = np.repeat((-ref / (1.0 - ref))[:, None], ref.size, axis=1)
    np.fill_diagonal(d, 1.0)
    return d


def stereotype_direction(k: int, y: int, p_star: ArrayLike | None = None) -> np.ndarray:
    """d_y of Eq. 1, for group ``y`` counted from 0.

    It gives the only linear S_y that is 0 at p*, 1 when all mass is on y, and blind to how the other
    groups share the rest (App. 8.1). A non-uniform ``p_star`` is the spec §1.2 extension.
    """
    ref = _reference(k, p_star)
    if not 0 <= y < k:
        raise ValueError(f"group index y must be in 0..{k - 1}, got {y}")
    return _directions(ref)[y]


def stereotypes(p: ArrayLike, p_star: ArrayLike | None = None) -> np.ndarray:
    """S_y(p) = <d_y, p> for every group (Eq. 2): array (..., K) for preferences (..., K).

    Positive means p leans to y more than p* does; the maximum is 1. For K = 2, S = (p1 - p2, p2 - p1).
    """
    arr = np.asarray(p, dtype=float)
    return arr @ _directions(_reference(arr.shape[-1], p_star)).T


def criterion(p: ArrayLike, norm: float = math.inf, p_star: ArrayLike | None = None) -> np.ndarray:
    """J(p) = ‖(S_y(p))⁺‖: the discrimination risk of preferences (..., K), in [0, 1] for the uniform p*.

    ``norm=math.inf`` is the paper's default (Eq. 3: the largest positive stereotype); ℓ^k (Eq. 14) is
    larger or equal for K >= 3 and identical for K = 2. Every choice is convex, which keeps caprice >= 0.
    """
    _check_norm(norm)
    return np.linalg.norm(np.maximum(stereotypes(p, p_star), 0.0), ord=norm, axis=-1)


def _normalised(values: ArrayLike, what: str, n: int | None = None, axis: str = "") -> np.ndarray:
    w = np.asarray(values, dtype=float)
    if w.ndim != 1 or w.size == 0:
        raise ValueError(f"{what} must be a non-empty 1-D sequence, got shape {w.shape}")
    if n is not None and w.size != n:
        raise ValueError(f"{what} has {w.size} entries but the preferences have {n} {axis}")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{what} must be finite, got {w}")
    if np.any(w < 0):
        i = int(np.argmax(w < 0))
        raise ValueError(f"{what} must be non-negative; entry {i} is {w[i]}")
    total = w.sum()
    if total <= 0:
        raise ValueError(f"{what} are all zero; at least one must be positive")
    return w / total


def weigh_templates(counts: ArrayLike) -> np.ndarray:
    """π_t = Count(t) / total count of the templates actually used (spec §3.3).

    Truncating to a top N therefore renormalises over the N. A zero count gives weight 0; negative or
    all-zero counts are rejected.
    """
    return _normalised(counts, "template counts")


@dataclass(frozen=True, eq=False)
class OccupationWeights:
    """ω over the occupations, aligned with them, and the terms the employment mapping did not cover."""

    weights: np.ndarray
    unmapped: tuple[str, ...]


def weigh_occupations(occupations: Sequence[str], employment: Mapping[str, float] | None = None) -> OccupationWeights:
    """Uniform ω by default, else ω ∝ employment (spec §3.1).

    The paper publishes neither employment numbers nor how its terms map to labour statistics, so the
    mapping is the user's. Terms it leaves out get weight 0 and are listed in ``unmapped`` rather than
    guessed; keys that are not occupations are ignored, so one mapping can serve several lists.
    """
    terms = list(occupations)
    if not terms:
        raise ValueError("no occupations given")
    if employment is None:
        return OccupationWeights(_frozen(np.full(len(terms), 1.0 / len(terms))), ())
    unmapped = tuple(t for t in terms if t not in employment)
    if len(unmapped) == len(terms):
        raise ValueError("the employment mapping covers none of the occupations")
    counts = np.array([employment.get(t, 0.0) for t in terms], dtype=float)
    bad = ~np.isfinite(counts) | (counts < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"employment of {terms[i]!r} must be a non-negative number, got {counts[i]}")
    return OccupationWeights(_frozen(_normalised(counts, "employment of the mapped occupations")), unmapped)


@dataclass(frozen=True, eq=False)
class Calibration:
    """What Eq. 10 gives for cells of any shape (...).

    ``preference`` (..., K) sums to 1 per cell; ``mass`` (...) is the attribute-word probability it was
    divided by, the coverage to report; ``fallback`` (...) marks the cells set to p* because that was 0.
    """

    preference: np.ndarray
    mass: np.ndarray
    fallback: np.ndarray

    @property
    def n_fallback(self) -> int:
        return int(np.count_nonzero(self.fallback))


def calibrate_preference(
    word_probs: Mapping[str, ArrayLike], groups: Sequence[Sequence[str]], *, p_star: ArrayLike | None = None
) -> Calibration:
    """Eq. 10: add up the slot probabilities of each group's words and renormalise over the groups.

    Values may be scalars, or arrays of one shape (e.g. [occupation, template]) to build a whole
    preference tensor at once. A word in two groups (``canary`` in the paper's gender lists) counts in
    both, and the denominator is the sum of the group sums, so a preference always sums to 1 (spec §7.2
    #9). Cells where no attribute word has any mass become p*, with a warning (spec §7.2 #12).
    """
    ref = _reference(len(groups), p_star)
    for i, group in enumerate(groups):
        if isinstance(group, str) or len(group) == 0:
            raise ValueError(f"group {i} must be a non-empty sequence of words, got {group!r}")
        if len(set(group)) != len(group):
            raise ValueError(f"group {i} lists a word twice, which would count its mass twice: {list(group)}")
    words = sorted({w for group in groups for w in group})
    missing = [w for w in words if w not in word_probs]
    if missing:
        raise ValueError(f"no probability for {', '.join(missing)}; give 0.0 for words the model gave no mass")
    values = dict(
        zip(words, np.broadcast_arrays(*(np.asarray(word_probs[w], dtype=float) for w in words)), strict=True)
    )
    for word, v in values.items():
        if not np.all(np.isfinite(v) & (v >= 0)):
            raise ValueError(f"probabilities of {word!r} must be finite and non-negative, got {v}")
    numerators = np.stack([np.sum([values[w] for w in group], axis=0) for group in groups], axis=-1)
    mass = numerators.sum(axis=-1)
    fallback = mass == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        preference = np.where(fallback[..., None], ref, numerators / mass[..., None])
    if fallback.any():
        n = int(np.count_nonzero(fallback))
        warnings.warn(f"{n} cell(s) put no mass on any attribute word and were set to p*", RuntimeWarning, stacklevel=2)
    return Calibration(_frozen(preference), _frozen(mass), _frozen(fallback))


def _preferences(preferences: ArrayLike) -> np.ndarray:
    """Validated [occupation, template, group] tensor with every cell renormalised to sum to 1."""
    p = np.asarray(preferences, dtype=float)
    if p.ndim != 3:
        raise ValueError(f"preferences must be an array [occupation, template, group]; got {p.ndim} dimension(s)")
    if 0 in p.shape[:2]:
        raise ValueError(f"preferences need at least one occupation and one template; got shape {p.shape}")
    if p.shape[2] < 2:
        raise ValueError(f"preferences need K >= 2 groups on the last axis; got K = {p.shape[2]}")
    if not np.all(np.isfinite(p)):
        x, t, y = np.argwhere(~np.isfinite(p))[0]
        raise ValueError(f"preferences must be finite; preferences[{x}, {t}, {y}] is {p[x, t, y]}")
    if np.any(p < 0):
        x, t, y = np.argwhere(p < 0)[0]
        raise ValueError(f"preferences must be non-negative; preferences[{x}, {t}, {y}] is {p[x, t, y]}")
    total = p.sum(axis=-1, keepdims=True)
    if np.any(total == 0):
        x, t = np.argwhere(total[..., 0] == 0)[0]
        raise ValueError(f"preferences[{x}, {t}] is all zero; calibrate_preference sets such cells to p*")
    return p / total


def _weights(values: ArrayLike | None, n: int, what: str, axis: str) -> np.ndarray:
    if values is None:
        return np.full(n, 1.0 / n)
    return _normalised(values, what, n, axis)


def caprice(r: ArrayLike, r_prejudice: ArrayLike, tol: float = FLOAT_TOL) -> np.ndarray:
    """Eq. 6, r^c = r - r^p, which Jensen's inequality keeps >= 0 when J is convex.

    A gap less than ``tol`` below zero is float noise and becomes 0; a larger one means a bug or a
    non-convex criterion, so it raises instead of being hidden.
    """
    gap = np.asarray(r, dtype=float) - np.asarray(r_prejudice, dtype=float)
    if np.any(gap < -tol):
        raise ValueError(f"caprice {gap.min():.3g} is below zero: r < r^p, which a convex criterion cannot give")
    return np.maximum(gap, 0.0)


class ConditionalRisks(NamedTuple):
    """Per-occupation risks (Eq. 4–6) and the context-averaged preference p̄_x behind r^p_x."""

    r: np.ndarray
    r_prejudice: np.ndarray
    r_caprice: np.ndarray
    mean_preference: np.ndarray


def conditional_risks(
    preferences: ArrayLike,
    template_weights: ArrayLike | None = None,
    *,
    norm: float = math.inf,
    p_star: ArrayLike | None = None,
) -> ConditionalRisks:
    """r_x, r^p_x, r^c_x for a tensor [occupation, template, group]; template weights default to uniform."""
    p = _preferences(preferences)
    pi = _weights(template_weights, p.shape[1], "template_weights", "templates")
    r = criterion(p, norm, p_star) @ pi
    mean = np.einsum("t,xtk->xk", pi, p)
    r_prejudice = criterion(mean, norm, p_star)
    return ConditionalRisks(r, r_prejudice, caprice(r, r_prejudice), mean)


class Overall(NamedTuple):
    """R, R^p, R^c (Eq. 7–9)."""

    R: float
    prejudice: float
    caprice: float


def overall_risks(
    r: ArrayLike, r_prejudice: ArrayLike, r_caprice: ArrayLike, occupation_weights: ArrayLike | None = None
) -> Overall:
    """ω-weighted means over occupations (uniform by default); R = R^p + R^c because the mean is linear."""
    per_x = [np.asarray(v, dtype=float) for v in (r, r_prejudice, r_caprice)]
    if any(v.ndim != 1 or v.shape != per_x[0].shape for v in per_x):
        raise ValueError(f"r, r_prejudice and r_caprice must be 1-D of one length, got {[v.shape for v in per_x]}")
    omega = _weights(occupation_weights, per_x[0].size, "occupation_weights", "occupations")
    return Overall(*(float(omega @ v) for v in per_x))


@dataclass(frozen=True)
class Diagnostics:
    """Shape of one per-occupation risk across occupations (spec §5.6).

    The paper reads r^p as roughly normal and r^c as fat-tailed without reporting any statistic; these
    are the moments (skewness and excess kurtosis are scipy's, Fisher's definitions) and a Shapiro–Wilk
    test, chosen because it is valid from 3 values where D'Agostino's needs 8. Undefined entries are NaN:
    sd below 2 values, shape and test below 3 values or when the values are all equal.
    """

    n: int
    mean: float
    sd: float
    skewness: float
    excess_kurtosis: float
    max: float
    normality_statistic: float
    normality_p: float


def diagnostics(values: ArrayLike) -> Diagnostics:
    """Unweighted summary of per-occupation risks, as the paper's histograms are."""
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("diagnostics need at least one value")
    sd = float(x.std(ddof=1)) if x.size > 1 else math.nan
    if x.size < 3 or np.ptp(x) <= FLOAT_TOL:
        return Diagnostics(x.size, float(x.mean()), sd, math.nan, math.nan, float(x.max()), math.nan, math.nan)
    test = sps.shapiro(x)
    return Diagnostics(
        n=x.size,
        mean=float(x.mean()),
        sd=sd,
        skewness=float(sps.skew(x)),
        excess_kurtosis=float(sps.kurtosis(x)),
        max=float(x.max()),
        normality_statistic=float(test.statistic),
        normality_p=float(test.pvalue),
    )


def _top_groups(p: np.ndarray) -> np.ndarray:
    """Boolean (..., K): the groups tied (within float noise) for the largest share."""
    return p >= p.max(axis=-1, keepdims=True) - FLOAT_TOL


@dataclass(frozen=True, eq=False)
class PcfRisks:
    """Everything :func:`risks` computes, on the 0..1 scale; per-occupation arrays follow the input's X axis.

    The directional fields are extensions (spec §1.9): the paper defines no per-group risk, only the
    stereotype S_y, whose sign on the context-averaged preference says which group an occupation leans
    to (its "average gender prediction": for gender, y = 0 is male, so ``stereotype[:, 0] > 0`` is
    pro-male and ``directional[0]`` the pro-male tendency over all occupations).
    """

    R: float
    prejudice: float
    caprice: float
    r: np.ndarray  # (n_X,) Eq. 4
    r_prejudice: np.ndarray  # (n_X,) Eq. 5
    r_caprice: np.ndarray  # (n_X,) Eq. 6
    mean_preference: np.ndarray  # (n_X, K) p̄_x = Σ_t π_t p_{t,x}
    leaning: np.ndarray  # (n_X,) arg-max group of p̄_x, -1 when groups tie for it
    stereotype: np.ndarray  # (n_X, K) S_y(p̄_x), signed
    directional: np.ndarray  # (K,) ω-weighted mean of S_y(p̄_x): > 0 means the model leans to y overall
    leaning_share: np.ndarray  # (K,) ω-weighted share of occupations that lean to y
    flip_rate: np.ndarray  # (n_X,) π-mass of contexts whose favourite group is not p̄_x's (> 0 iff caprice, for ℓ∞)
    prejudice_diagnostics: Diagnostics  # of r^p_x over occupations with ω_x > 0
    caprice_diagnostics: Diagnostics  # of r^c_x over occupations with ω_x > 0
    template_weights: np.ndarray  # π, normalised
    occupation_weights: np.ndarray  # ω, normalised
    norm: float
    p_star: np.ndarray

    def scaled(self, factor: float = 1000.0) -> Overall:
        """(R, R^p, R^c) × ``factor``: the paper's tables show ×1000 with two decimals."""
        return Overall(self.R * factor, self.prejudice * factor, self.caprice * factor)


def _flip_rate(p: np.ndarray, pi: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """π-mass of the contexts whose top groups exclude p̄_x's top group (spec §1.9).

    Ties count as agreement, and when p̄_x has tied top groups the one contexts disagree with least is
    taken, so the rate is non-zero exactly when the ℓ∞ caprice is.
    """
    missed = np.einsum("t,xtk->xk", pi, (~_top_groups(p)).astype(float))
    return np.where(_top_groups(mean), missed, np.inf).min(axis=-1)


def risks(
    preferences: ArrayLike,
    template_weights: ArrayLike | None = None,
    occupation_weights: ArrayLike | None = None,
    *,
    norm: float = math.inf,
    p_star: ArrayLike | None = None,
) -> PcfRisks:
    """The whole framework (spec Fig. 2) on preferences [occupation, template, group].

    Cells are renormalised to sum to 1. Weights may be raw template counts and employment numbers (they
    are normalised) and default to uniform; a zero weight drops that template or occupation.
    """
    p = _preferences(preferences)
    n_x, n_t, k = p.shape
    ref = _reference(k, p_star)
    pi = _weights(template_weights, n_t, "template_weights", "templates")
    omega = _weights(occupation_weights, n_x, "occupation_weights", "occupations")
    cond = conditional_risks(p, pi, norm=norm, p_star=ref)
    overall = overall_risks(cond.r, cond.r_prejudice, cond.r_caprice, omega)
    top = _top_groups(cond.mean_preference)
    leaning = np.where(top.sum(axis=-1) == 1, top.argmax(axis=-1), -1)
    stereotype = stereotypes(cond.mean_preference, ref)
    counted = omega > 0
    return PcfRisks(
        R=overall.R,
        prejudice=overall.prejudice,
        caprice=overall.caprice,
        r=_frozen(cond.r),
        r_prejudice=_frozen(cond.r_prejudice),
        r_caprice=_frozen(cond.r_caprice),
        mean_preference=_frozen(cond.mean_preference),
        leaning=_frozen(leaning),
        stereotype=_frozen(stereotype),
        directional=_frozen(omega @ stereotype),
        leaning_share=_frozen(np.array([omega[leaning == y].sum() for y in range(k)])),
        flip_rate=_frozen(_flip_rate(p, pi, cond.mean_preference)),
        prejudice_diagnostics=diagnostics(cond.r_prejudice[counted]),
        caprice_diagnostics=diagnostics(cond.r_caprice[counted]),
        template_weights=_frozen(pi),
        occupation_weights=_frozen(omega),
        norm=norm,
        p_star=_frozen(ref),
    )
