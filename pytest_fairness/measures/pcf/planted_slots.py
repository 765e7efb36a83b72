"""The synthetic double's slot probabilities for PCF probes (``synthetic:pcf?bias=B&caprice=C``).

Every occupation leans to one group with strength B, and every (occupation, template) mixes in a
group of its own with weight C (``planted_preference``), so the prejudice and caprice a measure
should find are known exactly. A probe is recognised by its purpose: its occupation and the
attribute groups whose words it scores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pytest_fairness.measures.planting import Double, Kind, Planted
from pytest_fairness.models.interface import LogprobRequest, LogprobResponse

NO_CANDIDATE = -30.0


def planted_preference(double: Double, occupation: str, probe: str, k: int) -> np.ndarray:
    """The preference over K groups planted for a probe ("The nurse said that") of an occupation: the truth.

    Each occupation leans to one group with strength ``bias``; each probe (occupation and template)
    mixes in a group of its own with weight ``caprice``, which is what makes preferences flip between contexts.
    """
    bias, caprice = double.planted("pcf"), double.caprice if double.kind == "pcf" else 0.0
    lean = double.rng({"x": occupation}).randrange(k)
    local = double.rng({"xt": probe}).randrange(k)
    p = np.full(k, (1 - bias) / k)
    p[lean] += bias
    return (1 - caprice) * p + caprice * np.eye(k)[local]


def _word_groups(groups: Sequence[Sequence[str]]) -> dict[str, int]:
    """Attribute word -> its group; a word listed in two groups belongs to neither."""
    out: dict[str, int] = {}
    shared: set[str] = set()
    for g, words in enumerate(groups):
        for word in words:
            if word in out:
                shared.add(word)
            out[word] = g
    return {w: g for w, g in out.items() if w not in shared}


def answer_slot(double: Double, request: LogprobRequest) -> LogprobResponse:  # type: ignore[misc]
    """Half the probability mass on attribute words, spread evenly within each planted group share."""
    assert request.purpose is not None
    groups = request.purpose.fact("groups", ())
    group_of = _word_groups(groups)  # type: ignore[arg-type]
    words = [c.strip() for c in request.candidates]
    known = [w for w in words if w in group_of]
    if not known:
        return LogprobResponse(dict.fromkeys(request.candidates, NO_CANDIDATE), True, 0, double.name)
    k = len(groups)  # type: ignore[arg-type]
    p = planted_preference(double, str(request.purpose.fact("occupation")).strip().lower(), request.prefix, k)
    sizes = np.bincount([group_of[w] for w in known], minlength=k)
    out = {}
    for candidate, word in zip(request.candidates, words, strict=True):
        share = 0.5 * p[group_of[word]] / sizes[group_of[word]] if word in group_of else 0.0
        out[candidate] = math.log(share) if share > 0 else NO_CANDIDATE
    return LogprobResponse(out, True, len(request.prefix.split()), double.name)


PLANTED = Planted(
    kinds={"pcf": Kind("planted occupational preferences (prejudice and caprice)", shown=("bias", "caprice"))},
    answerers={"pcf.slot": answer_slot},
)
