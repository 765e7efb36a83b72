"""Two sets of committed baselines compared check by check: what a re-recorded release changes, for its review.

A release's baselines change in a pull request (the rebaseline job's, or a team's own). The YAML diff shows two
numbers per check among a few thousand lines of per-item scores; what a reviewer needs is per check the estimate
before and after with their intervals and sizes, the change and whether it is beyond noise on the items both
files keep (the same paired comparison a pull request's gate makes, ``baseline.pairing``), the threshold and
whether the new baseline meets it, the model version it was recorded from, and whether the new baseline is large
enough for a pull request to pass on identical answers. ``report.baseline_diff`` renders it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from pytest_fairness.baseline.entry import Entry, parse_baseline
from pytest_fairness.baseline.entry_comparison import compare
from pytest_fairness.baseline.pairing import PairingInputs, fewest_to_pair, paired
from pytest_fairness.baseline.snapshot import items_beside
from pytest_fairness.measures import MEASURES, ParamsError
from pytest_fairness.records.comparison import Comparison
from pytest_fairness.stats.gate import Outcome, decide


@dataclass(frozen=True)
class Recorded:
    """One check's committed baseline: its entry and the YAML file it was read from (its items lie beside it)."""

    path: Path
    entry: Entry


@dataclass(frozen=True)
class CheckChange:
    """A check in both, one or the other set: the comparison of after with before (paired on the items both keep,
    else unpaired with why; None when a side is missing), each side's own threshold verdict (``CANNOT_SERVE``
    when its run could not serve the check; None without a side), and why a pull request could not pass on
    identical answers against the new baseline ("" when it can, or the measure keeps no items)."""

    key: str
    before: Entry | None
    after: Entry | None
    comparison: Comparison | None
    verdict_before: Outcome | None
    verdict_after: Outcome | None
    too_small: str = ""

    @property
    def changed(self) -> bool:
        """Whether anything a reviewer reads moved: an estimate, an interval, n, a side, or the instrument."""
        if self.before is None or self.after is None:
            return True
        keep = ("estimate", "ci", "n", "n_unusable", "threshold", "unserved", "fidelity", "versions")
        return any(getattr(self.before, k) != getattr(self.after, k) for k in keep)


def read_folder(folder: Path) -> dict[str, Recorded]:
    """The baselines of one model folder by ``suite::check``; ValueError naming a file that cannot be read."""
    found: dict[str, Recorded] = {}
    for path in sorted(folder.glob("*.yaml")):
        try:
            entries = parse_baseline(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: {exc}") from None
        for entry in entries:
            found[entry.key] = Recorded(path, entry)
    return found


def threshold_verdict(entry: Entry | None) -> Outcome | None:
    """A baseline's own verdict against its threshold (its interval read as a release gate reads it)."""
    if entry is None:
        return None
    if entry.could_not_serve:
        return Outcome.CANNOT_SERVE
    lo, hi = entry.ci
    if lo is None or hi is None:
        return Outcome.INCONCLUSIVE
    return decide((float(lo), float(hi)), entry.threshold)


def default_margin(entry: Entry) -> float | None:
    """The paired margin a pull request would use for the check (its measure's, for its recorded parameters)."""
    measure = MEASURES.get(str(entry.measure))
    if measure is None:
        return None
    known = {f.name for f in fields(measure.params)}
    try:
        return measure.params(**{k: v for k, v in entry.params.items() if k in known}).pr_margin()
    except (ParamsError, TypeError, ValueError):
        return measure.params.PR_MARGIN


def _scale(entry: Entry) -> tuple[float, float] | None:
    measure = MEASURES.get(str(entry.measure))
    return None if measure is None else measure.bounds


def too_small(recorded: Recorded, alpha: float, tolerance: float = 0.0) -> str:
    """Why a pull request against this baseline could not pass on identical answers: too few of its items for the
    paired interval to show its margin ("" when it has enough, or keeps no items to pair on)."""
    entry, scale = recorded.entry, _scale(recorded.entry)
    margin = tolerance if tolerance > 0 else default_margin(entry)
    if entry.items is None or entry.could_not_serve or scale is None or not margin:
        return ""
    items = items_beside(recorded.path, entry)
    if items.problem:
        return ""
    clusters = len({item.cluster for item in items.items})
    fewest = fewest_to_pair(scale[1] - scale[0], margin, alpha)
    if clusters >= fewest:
        return ""
    return (
        f"{clusters} items: even identical answers cannot show the margin {margin:g} (it needs {fewest}); "
        "record at the release profile"
    )


def change(key: str, old: Recorded | None, new: Recorded | None, alpha: float = 0.05) -> CheckChange:
    """One check's change from ``old`` to ``new`` (either may be missing)."""
    before, after = (None if r is None else r.entry for r in (old, new))
    comparison = None
    if old is not None and new is not None:
        comparison = compare(old.entry, new.entry, 0.0, alpha=alpha)
        recorded, own = items_beside(old.path, old.entry), items_beside(new.path, new.entry)
        if not own.problem:
            inputs = PairingInputs(own.items, _scale(new.entry), default_margin(new.entry))
            comparison = paired(comparison, recorded, inputs)
    small = "" if new is None else too_small(new, alpha)
    return CheckChange(key, before, after, comparison, threshold_verdict(before), threshold_verdict(after), small)


def diff_folders(old: Mapping[str, Recorded], new: Mapping[str, Recorded], alpha: float = 0.05) -> list[CheckChange]:
    """Every check of either set, by suite and check name."""
    return [change(key, old.get(key), new.get(key), alpha) for key in sorted(set(old) | set(new))]
