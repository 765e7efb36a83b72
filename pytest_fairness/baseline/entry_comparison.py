"""Comparing a new entry with its baseline entry: the statistical verdict of one check, and of two sets.

Two modes: ``difference`` (a Welch test of "no change"; a change counts only when it is both significant
and larger than the check's tolerance) and ``noninferiority`` (passes only when the interval of new - old
lies within the tolerance on the harmful side). Each verdict is the comparison's own; ``decide_run``
adjusts a run's together. This module reads the measure registry (which parameters only size the sample),
so the package re-exports it after the comparison's pure parts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_fairness.baseline.entry import Entry
from pytest_fairness.baseline.welch import noninferiority, welch
from pytest_fairness.measures import MEASURES
from pytest_fairness.records.comparison import MODES, Comparison, Interval, Mode, Side, Status
from pytest_fairness.stats.gate import Threshold
from pytest_fairness.util.fmt import finite

_Verdict = tuple[Status, float | None, Interval | None, float | None]


def sample_params(measure: str) -> frozenset[str]:
    """Parameters that decide how many and which samples are drawn, not what is measured: a baseline
    recorded with another seed, sample size or sizing assumption is still the same instrument. Read from the
    measure's parameters (``Params.sizing_fields``); for an unknown measure, every registered measure's."""
    known = MEASURES.get(measure)
    measures = [known] if known else list(MEASURES.values())
    return frozenset({"seed"}.union(*(m.params.sizing_fields() for m in measures)))


def same_protocol(old: str | None, new: str | None) -> bool:
    """Whether two fidelity statements name the same protocol. A baseline written before fidelity and run notes
    were told apart kept what its run's data did after its protocol ("...; k shrank from 7 to 2"): its protocol is
    the part the other statement starts with."""
    if old == new or old is None or new is None:
        return old == new
    shorter, longer = sorted((old, new), key=len)
    return longer.startswith(shorter + "; ")


def inputs_changed(old: Entry, new: Entry) -> tuple[str, ...]:
    """What differs in the instrument (measure, protocol, data and template versions, judge, parameters).

    Seed and sample size are left out: those only change which samples are drawn, and the test
    accounts for them. The model id is left out too: comparing models is the point of a release diff. So is what
    a run's data did (a brainstorm batch that shrank, a judge correction measured on its pairs): the protocol is
    the instrument, a run's notes are not (``MeasureResult.protocol``).
    """
    changes = [
        f"{key}: {getattr(old, key)} -> {getattr(new, key)}"
        for key in ("measure", "subject")
        if getattr(old, key) != getattr(new, key)
    ]
    if not same_protocol(old.fidelity, new.fidelity):
        changes.append(f"fidelity: {old.fidelity} -> {new.fidelity}")
    ignored = sample_params(str(new.measure or old.measure))
    for group in ("versions", "params"):
        a, b = getattr(old, group), getattr(new, group)
        for key in sorted(set(a) | set(b)):
            if not (group == "params" and key in ignored) and a.get(key) != b.get(key):
                changes.append(f"{group}.{key}: {a.get(key)} -> {b.get(key)}")
    return tuple(changes)


def _different(old: Entry, new: Entry, tolerance: float, alpha: float, threshold: Threshold) -> _Verdict:
    """Difference mode: a change counts only if significant AND beyond the tolerance."""
    m0, m1 = finite(old.estimate), finite(new.estimate)
    if m0 is None and m1 is None:
        return "unchanged", None, None, None  # measured neither time (e.g. it cannot serve): nothing moved
    if m0 is None or m1 is None:
        return "changed", None, None, None
    test = welch(old, new, alpha)
    if test is None:
        diff = m1 - m0
        return ("unchanged" if abs(diff) <= tolerance else "changed"), diff, None, None
    diff, ci, p = test
    if p >= alpha or abs(diff) <= tolerance:
        return "unchanged", diff, ci, p
    sign = threshold.harm_direction(m0, m1)
    return ("regressed" if sign > 0 else "improved" if sign < 0 else "changed"), diff, ci, p


def _noninferior(old: Entry, new: Entry, margin: float, alpha: float, threshold: Threshold) -> _Verdict:
    """Non-inferiority mode: passes only when the interval shows it is no worse than the margin allows."""
    m0, m1 = finite(old.estimate), finite(new.estimate)
    if m0 is None or m1 is None:
        return "not non-inferior", None, None, None
    if margin <= 0:
        return "not non-inferior", m1 - m0, None, None
    test = noninferiority(old, new, margin, alpha, threshold)
    if test is None:
        return "not non-inferior", m1 - m0, None, None
    diff, ci, p = test
    return ("non-inferior" if p < alpha else "not non-inferior"), diff, ci, p


def _side(entry: Entry) -> Side:
    """One side of a comparison as its entry recorded it."""
    lo, hi = entry.ci
    return Side(finite(entry.estimate), (finite(lo), finite(hi)), float(entry.confidence), entry.n, entry.model_id)


def _threshold(old: Entry | None, new: Entry | None) -> Threshold:
    """The threshold that says which way is harmful: the new entry's, else the baseline's; its finite sides."""
    chosen = next((e.threshold for e in (new, old) if e is not None and e.threshold != Threshold()), Threshold())
    return Threshold.from_dict(chosen.as_dict())


def compare(
    baseline_entry: Entry | None,
    new_entry: Entry | None,
    tolerance: float = 0.0,
    *,
    alpha: float = 0.05,
    mode: Mode = "difference",
) -> Comparison:
    """Compare a new entry with its baseline entry (either may be None: ``new`` / ``missing``).

    The verdict is this comparison's own, at ``alpha``; a run with several comparisons adjusts them
    together with ``decide_run``.
    """
    old, new = baseline_entry, new_entry
    either = new or old
    assert either is not None, "compare() needs at least one entry"
    key, threshold = either.key, _threshold(old, new)
    before, after = (None if e is None else _side(e) for e in (old, new))
    if old is None or new is None:
        status: Status = "new" if old is None else "missing"
        return Comparison(key, status, before, after, None, None, None, tolerance, alpha, threshold, mode=mode)
    if mode not in MODES:
        raise ValueError(f"unknown baseline mode {mode!r}; valid: {', '.join(MODES)}")
    decide = _noninferior if mode == "noninferiority" else _different
    status, diff, ci, p = decide(old, new, tolerance, alpha, threshold)
    return Comparison(
        key, status, before, after, diff, ci, p, tolerance, alpha, threshold, inputs_changed(old, new), mode=mode
    )


def compare_entries(
    old: Sequence[Entry],
    new: Sequence[Entry],
    tolerance: float | Mapping[str, float] = 0.0,
    *,
    alpha: float = 0.05,
    mode: Mode = "difference",
) -> list[Comparison]:
    """Pair two sets of entries by ``suite::check`` and compare each pair; one-sided ones are new/missing.

    ``tolerance`` is one number for every check or a mapping from ``suite::check`` to its tolerance
    (checks not in the mapping get 0). Each verdict is its own; ``decide_run`` adjusts them together.
    """
    before = {e.key: e for e in old}
    after = {e.key: e for e in new}

    def tol(key: str) -> float:
        return float(tolerance.get(key, 0.0)) if isinstance(tolerance, Mapping) else float(tolerance)

    keys = sorted(set(before) | set(after))
    return [compare(before.get(k), after.get(k), tol(k), alpha=alpha, mode=mode) for k in keys]
