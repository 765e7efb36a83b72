"""The paper's reference models (Liu et al. §4.1, App. 8.6; spec §4): preference tensors whose risks are
known, to calibrate the ×1000 scale and to test any implementation of the risks against.

Each returns ``P`` of shape (occupations, templates, K). With equal weights, ``pcf.risks(P)`` gives
R / R^p / R^c of 0/0/0 (unbiased), 1/1/0 (stereotyped) and, as the numbers of templates grows,
1/0/1 (randomly stereotyped) and, for K = 2, 0.5/0/0.5 (randomly initialised, the appendix's u ~ U(0, 1)).
"""

from __future__ import annotations

import numpy as np

#: Population risks (R, R^p, R^c) of each reference model, as Table 2 prints them ×1000 (binary groups).
KNOWN_RISKS: dict[str, tuple[float, float, float]] = {
    "unbiased": (0.0, 0.0, 0.0),
    "stereotyped": (1.0, 1.0, 0.0),
    "randomly_stereotyped": (1.0, 0.0, 1.0),
    "randomly_initialised": (0.5, 0.0, 0.5),
}


def unbiased(n_x: int, n_t: int, k: int = 2) -> np.ndarray:
    """The uniform preference in every context: no risk at all."""
    return np.full((n_x, n_t, k), 1.0 / k)


def stereotyped(n_x: int, n_t: int, k: int = 2, seed: int = 0) -> np.ndarray:
    """Each occupation always prefers one group ("all nurses are female"): prejudice only."""
    groups = np.random.default_rng(seed).integers(k, size=n_x)
    return np.broadcast_to(np.eye(k)[groups][:, None, :], (n_x, n_t, k)).copy()


def randomly_stereotyped(n_x: int, n_t: int, k: int = 2, seed: int = 0) -> np.ndarray:
    """A one-hot preference drawn afresh in every context: caprice only (in the limit of many templates)."""
    groups = np.random.default_rng(seed).integers(k, size=(n_x, n_t))
    return np.eye(k)[groups]


def randomly_initialised(n_x: int, n_t: int, seed: int = 0) -> np.ndarray:
    """Binary preferences (u, 1 - u) with u ~ U(0, 1) in every context (App. 8.6's definition)."""
    u = np.random.default_rng(seed).uniform(size=(n_x, n_t))
    return np.stack([u, 1 - u], axis=-1)
