"""A comparison in words, rendered from its fields: head, both sides, the reason, and the run's adjustment.

The reason is read off the evidence in the order the comparison was decided (a missing estimate, no
margin, no SD, then the test), so a restated comparison renders its new status with its own reason.
"""

from __future__ import annotations

from pytest_fairness.records.comparison import Comparison, Side
from pytest_fairness.stats.gate import Outcome, Threshold
from pytest_fairness.stats.multiplicity import NAMES
from pytest_fairness.util.fmt import ci_label, interval, num


def explain(c: Comparison) -> str:
    """``gender::x REGRESSED: 0.1 (95% CI [...], n=40) -> 0.5 (...); difference +0.4, ...: why.``"""
    head = f"{c.check} {c.status.upper()}: "
    if c.before is None:
        assert c.after is not None, "a comparison has at least one side"
        return f"{head}there is no baseline to compare with; it measured {side_text(c.after)}."
    if c.after is None:
        return f"{head}the new run has no result for it; its baseline was {side_text(c.before)}."
    if c.paired is not None:
        reason = _paired_reason(c)
    else:
        reason = _noninferior_reason(c) if c.mode == "noninferiority" else _difference_reason(c)
        if c.unpaired:
            reason = f"unpaired comparison ({'one-sided' if c.mode == 'noninferiority' else 'Welch'}): {reason}"
    text = f"{head}{side_text(c.before)} -> {side_text(c.after)}; {reason}."
    if c.unpaired:
        text += f" Not paired item by item: {c.unpaired}."
    if c.before.model and c.after.model and c.before.model != c.after.model:
        text += f" Compared {c.after.model} with the baseline of {c.before.model}."
    if c.inputs_changed:
        text += (
            f" The inputs differ from the baseline ({'; '.join(c.inputs_changed)}): the difference mixes the model with"
            " a change of instrument; review it and re-record the baseline."
        )
    return text + _adjustment_note(c)


def side_text(side: Side) -> str:
    """``0.1 (95% CI [0.02, 0.18], n=40)``."""
    return f"{num(side.estimate, '.4g')} ({ci_label(side.confidence)} {interval(side.ci, '.4g')}, n={side.n})"


def _difference_reason(c: Comparison) -> str:
    """Difference mode: a change counts only if significant AND beyond the tolerance."""
    tolerance, alpha = c.tolerance, c.alpha
    if c.old is None and c.new is None:
        return "neither run has an estimate (e.g. the model could not serve the check either time): nothing moved"
    if c.old is None or c.new is None:
        return "an estimate is missing, so nothing can be tested"
    if c.ci is None or c.p is None:
        return (
            f"difference {num(c.difference, '+.3g')}; a side has no SD (n < 2), so only the tolerance "
            f"±{tolerance:g} applies"
        )
    evidence = (
        f"difference {num(c.difference, '+.3g')}, {ci_label(1 - alpha)} {interval(c.ci, '+.3g')}, Welch p = {c.p:.2g}"
    )
    if c.p >= alpha:
        return f"{evidence}: not significant at alpha = {alpha:g}, so it counts as noise"
    if c.difference is not None and abs(c.difference) <= tolerance:
        return f"{evidence}: significant but within the tolerance ±{tolerance:g}"
    sign = c.threshold.harm_direction(c.old, c.new)
    reason = (
        f"significant at alpha = {alpha:g} and beyond the tolerance ±{tolerance:g}; {_direction(c.threshold, sign)}"
    )
    if c.own_status == "improved":
        reason += "; re-record the baseline to keep the gain"
    return f"{evidence}: {reason}"


def _noninferior_reason(c: Comparison) -> str:
    """Non-inferiority mode: passes only when the interval shows it is no worse than the margin allows."""
    margin, alpha = c.tolerance, c.alpha
    if c.old is None or c.new is None:
        return "an estimate is missing, so non-inferiority cannot be shown"
    if margin <= 0:
        return (
            "non-inferiority needs a margin above 0: set the check's tolerance in the suite or "
            "--fairness-baseline-tolerance (how much worse than the baseline is acceptable)"
        )
    if c.ci is None or c.p is None:
        return f"difference {num(c.difference, '+.3g')}; a side has no SD (n < 2), so non-inferiority cannot be shown"
    evidence = (
        f"difference {num(c.difference, '+.3g')}, {ci_label(1 - 2 * alpha)} {interval(c.ci, '+.3g')}, "
        f"p = {c.p:.2g} for 'worse by at least {margin:g}'; {_harm_words(c.threshold)}"
    )
    if c.own_status == "non-inferior":
        return f"{evidence}: on its own, shown no worse than the baseline by more than {margin:g}"
    return f"{evidence}: not shown to be within the margin {margin:g}"


def _paired_reason(c: Comparison) -> str:
    """A paired comparison: the difference on the shared items against the margin, what pairing bought, and the
    items the verdict is about."""
    e = c.paired
    assert e is not None
    rho = "n/a" if e.rho is None else f"{e.rho:.2f}"
    unpaired = "∞" if e.unpaired_n is None else f"{e.unpaired_n:,.0f}"
    order = f", differences in a {e.order} order" if e.order else ""
    evidence = (
        f"paired on {e.items} items in {e.clusters} clusters ({e.method}{order}; ρ = {rho}, effective n"
        f" {e.effective_n:,.0f}; an unpaired comparison would need about {unpaired} per side): difference"
        f" {num(c.difference, '+.3g')}, {ci_label(1 - 2 * e.pass_alpha)} {interval(e.interval, '+.3g')};"
        f" {_harm_words(c.threshold)}"
    )
    if e.undrawn:
        evidence += f"; {e.undrawn} baseline items not drawn by this run"
    margin, items = f"the margin {e.margin:g}", e.items_claimed()
    if e.outcome is Outcome.FAIL:
        shown = f"shown worse than {margin} on {items} (p = {e.p_beyond:.2g} at the FAIL level {e.fail_alpha:g})"
    elif e.outcome is Outcome.PASS:
        shown = (
            f"shown within {margin} on {items} (p = {e.p_worse:.2g} for 'worse by at least {e.margin:g}', at the"
            f" PASS level {e.pass_alpha:g})"
        )
    else:
        shown = (
            f"neither shown within nor worse than {margin} on {items} (PASS needs its bound within it at"
            f" {e.pass_alpha:g}, FAIL its other bound beyond it at {e.fail_alpha:g})"
        )
    return f"{evidence}: {shown}"


def _adjustment_note(c: Comparison) -> str:
    """What the run's adjustment did to this comparison; nothing when the run adjusts nothing."""
    a = c.adjusted
    if a is None or a.method == "none":
        return ""
    if c.status == a.own:
        outcome = "the result stands"
    elif c.status == "unchanged":
        outcome = "the change is within the run's sampling noise"
    elif c.status == "undecided":
        outcome = f"it is not shown worse than the margin at {c.level(c.alpha):g} across the run"
    else:
        outcome = "non-inferiority is not shown across the run"
    return f" Adjusted across the run's {a.tested} tested comparisons ({NAMES[a.method]}): p = {a.p:.2g}, so {outcome}."


def _harm_words(threshold: Threshold) -> str:
    side = threshold.harmful_side()
    where = threshold.describe()
    if side > 0:
        return f"higher is worse ({where})"
    if side < 0:
        return f"lower is worse ({where})"
    return f"a move either way can be worse ({where}), so both sides are tested"


def _direction(threshold: Threshold, sign: int) -> str:
    """Why a move is harmful or helpful, in the threshold's own terms."""
    where, lo, hi = threshold.describe(), threshold.min, threshold.max
    if lo is not None and hi is not None:
        text = "away from" if sign > 0 else "towards"
        return f"it moved {text} the centre of the allowed range {where}"
    if hi is not None:
        return f"it rose towards the maximum ({where})" if sign > 0 else f"it fell away from the maximum ({where})"
    if lo is not None:
        return f"it fell towards the minimum ({where})" if sign > 0 else f"it rose away from the minimum ({where})"
    return "the check has no threshold to say which way is harmful"
