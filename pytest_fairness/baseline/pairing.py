"""A comparison with the baseline on the same items: the paired verdict a ``Comparison`` carries.

When the run and its baseline share items (``baseline.items_file``), the comparison is decided on the
per-cluster differences of their scores (``stats.paired.noninferiority``): a non-inferiority test against the check's
margin (its tolerance, else the measure's ``PR_MARGIN``) on the harmful side, both verdicts at the level that holds
given the one recorded baseline (``baseline_level``; ``exact_level`` for PASS where both sides were read exactly),
a fixed-size run's differences read in a seeded random order. In ``difference`` mode the comparison is
"regressed" when the run is shown worse than the margin, "within margin" when shown within it, and "undecided"
otherwise; in ``noninferiority`` mode "non-inferior" when shown within it. Whatever keeps a check from pairing
(no items file, an edited one, another seed, a mismatched item, sequential looks that re-scored their items) is
one line in ``Comparison.unpaired``, and the comparison stays the unpaired one (Welch), named as such.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pytest_fairness.baseline.items_file import RecordedItems
from pytest_fairness.records.comparison import Comparison, Status, paired_status
from pytest_fairness.stats.gate import Outcome
from pytest_fairness.stats.paired.allocation import fewest_for_identical
from pytest_fairness.stats.paired.matching import ItemScores, PairingError, pair_items
from pytest_fairness.stats.paired.noninferiority import PairedGate, compare_paired


@dataclass(frozen=True)
class PairingInputs:
    """What a check brings to its pairing: its own items (rounded as a file keeps them), the score's range,
    the measure's default margin, whether the run grew sequentially (always-valid bounds), whether both sides
    read their items ``exact``-ly (nothing re-sampled), the key of a fixed-size run's random decision order
    (``order_key``: the baseline's seed, the check and the model), and why its sequential looks cannot be
    paired (``resampled``: they re-scored items an earlier look had scored; "" when they did not)."""

    items: Sequence[ItemScores]
    scale: tuple[float, float] | None
    default_margin: float | None
    sequential: bool = False
    exact: bool = False
    order_key: str | None = None
    resampled: str = ""


def why_unpaired(comparison: Comparison, recorded: RecordedItems, run: PairingInputs) -> str:
    """Why this comparison (with both sides) cannot be paired, in one line; "" when it can be tried."""
    if comparison.old is None or comparison.new is None:
        return "a side has no estimate"
    if comparison.inputs_changed:
        return "the inputs differ from the baseline's, so its items are other items"
    if run.scale is None:
        return "the measure's scores are not bounded, so the paired interval does not apply"
    if recorded.problem:
        return recorded.problem
    if run.resampled:
        return run.resampled
    if not run.items:
        return "this run reports no per-item scores for the measure"
    if margin_of(comparison, run) is None:
        return "the check has no margin (set its tolerance)"
    return ""


def margin_of(comparison: Comparison, run: PairingInputs) -> float | None:
    """The paired margin: the check's tolerance when set, else the measure's default."""
    if comparison.tolerance > 0:
        return comparison.tolerance
    return run.default_margin if run.default_margin and run.default_margin > 0 else None


def paired(comparison: Comparison, recorded: RecordedItems, run: PairingInputs) -> Comparison:
    """The comparison decided on the items it shares with its baseline, or the unpaired one with its reason."""
    if comparison.before is None or comparison.after is None:
        return comparison  # new or missing: nothing to compare either way
    problem = why_unpaired(comparison, recorded, run)
    if problem:
        return replace(comparison, unpaired=problem)
    try:
        pairing = pair_items(recorded.items, run.items)
    except PairingError as exc:
        return replace(comparison, unpaired=_pairing_problem(exc))
    margin, scale = margin_of(comparison, run), run.scale
    assert margin is not None and scale is not None
    side = comparison.threshold.harmful_side()
    gate = PairedGate(margin, side, comparison.alpha, sequential=run.sequential, exact=run.exact)
    fewest = _fewest(scale[1] - scale[0], margin, gate.passing_level)
    if pairing.differences.size < fewest:
        return replace(comparison, unpaired=_too_few(pairing.differences.size, fewest, margin))
    decided = compare_paired(pairing, scale, gate, order_key=run.order_key)
    status: Status
    if comparison.mode == "noninferiority":
        status = "non-inferior" if decided.outcome is Outcome.PASS else "not non-inferior"
        p = decided.p_worse
    else:
        status = paired_status(decided.outcome)
        p = decided.p_beyond
    return replace(
        comparison,
        status=status,
        difference=float(pairing.differences.mean()),
        ci=decided.interval,
        p=p,
        paired=decided,
    )


@functools.cache
def _fewest(width: float, margin: float, level: float) -> int:
    """Fewest clusters that pass identical answers at the PASS ``level``."""
    return fewest_for_identical(width, margin, level) if margin < width else 2


def _too_few(clusters: int, fewest: int, margin: float) -> str:
    """Below the clusters that even identical answers need to pass the margin, the paired interval decides
    nothing either way a Welch test would not: the comparison stays unpaired, chosen by size, not by result."""
    return (
        f"{clusters} shared prompts are too few for the paired interval to show the margin {margin:g} "
        f"(it needs {fewest}); record the baseline and run at that size to pair"
    )


def _pairing_problem(exc: PairingError) -> str:
    text = str(exc)
    if "shares no item" in text:
        return "the run shares no item with its baseline (another seed, or other prompts): nothing can be paired"
    return f"its items do not match this run's: {text}"
