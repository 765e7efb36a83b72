"""What a pull-request check draws: its committed baseline's seed and items, all of them × the paired planner's K.

One place decides it for the run (``check_item.CheckItem``), --fairness-plan and the budget check
(``planning.Planner.plan``), so that a plan prices what the run will send: a pull request draws its baseline's
items (its seed, its size), a fixed-size one every one of them × K answers an item, so that its claim covers
the baseline's items rather than a prefix of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol
from weakref import WeakKeyDictionary

from pytest_fairness.baseline.pr_gate import PairedSize, paired_size, same_items
from pytest_fairness.config import suite
from pytest_fairness.planning.plan import Planner, RunShape, dollars

if TYPE_CHECKING:
    from pytest_fairness.baseline.entry import Entry
    from pytest_fairness.config.settings import Settings
    from pytest_fairness.models.runner import Runner


class SessionLike(Protocol):
    """What this module reads of a run's session (``session.FairnessSession``, which calls it for its planner)."""

    settings: Settings

    @property
    def runner(self) -> Runner: ...

    @property
    def planner(self) -> Planner: ...


def baseline_line(session: SessionLike) -> str:
    """The model line whose committed baselines the run reads: --fairness-baseline-model, else the model's id."""
    return session.settings.baseline.model or session.runner.model.model_id


def committed_entry(session: SessionLike, check: suite.Check) -> Entry | None:
    """A check's committed baseline entry (its seed and size are a pull-request run's), if any."""
    from pytest_fairness.baseline.snapshot import recorded_entry

    settings = session.settings
    return recorded_entry(settings.root, settings.baseline.directory, baseline_line(session), check.suite, check.id)


def pr_shape(session: SessionLike, check: suite.Check) -> RunShape | None:
    """What a pull-request check draws (None outside such a run, or without a committed baseline)."""
    if session.settings.gate != "pr" or (entry := committed_entry(session, check)) is None:
        return None
    return shape_for(session, check, entry)


def shape_for(session: SessionLike, check: suite.Check, entry: Entry) -> RunShape:
    """What a pull-request check with the committed baseline ``entry`` draws: its baseline's seed and items, all
    of them × the paired planner's K for a fixed-size one; a sequential one grows through them.

    Worked out once a check and session: the replay check asks it of every check before the first one runs, and
    each check again when it runs, and the paired planner counts the tokens of all the baseline's requests (the
    embedded model's four implicit-bias checks: about 20 s a time, profiled on a loaded machine)."""
    shapes = _SHAPES.setdefault(session, {})
    if check.label not in shapes:
        shapes[check.label] = _worked_out(session, check, entry)
    return shapes[check.label]


#: Each live session's shapes by check label (dropped with the session).
_SHAPES: WeakKeyDictionary[SessionLike, dict[str, RunShape]] = WeakKeyDictionary()


def _worked_out(session: SessionLike, check: suite.Check, entry: Entry) -> RunShape:
    """``shape_for``'s answer, worked out."""
    seed, size = same_items(entry, check.measure.samples)
    planned = paired_plan(session, check, entry)
    if planned is None:
        return RunShape(seed, size)
    return RunShape(seed, planned.size, planned.samples_per_item, planned.line())


def paired_plan(session: SessionLike, check: suite.Check, entry: Entry | None) -> PairedSize | None:
    """The paired planner's K for a fixed-size pull-request check, which draws all of its baseline ``entry``'s
    items. None outside such a run (a release run, or a sequential one: it grows through the baseline's items),
    when the option or the suite key gives K, for a measure that takes one sample per item, or without the
    baseline's items."""
    from pytest_fairness.baseline.snapshot import entry_path, items_beside

    settings = session.settings
    if settings.gate != "pr" or settings.sequential or settings.samples_per_item or check.samples_per_item:
        return None
    if not check.measure.params.PER_ITEM_MEAN or check.measure.bounds is None:
        return None
    policy = settings.baseline
    seed, size = same_items(entry, check.measure.samples)
    path = entry_path(settings.root, policy.directory, baseline_line(session), check.suite, check.id)
    recorded = items_beside(path, entry)
    tolerance = check.tolerance if check.tolerance is not None else policy.tolerance
    margin = tolerance if tolerance > 0 else check.params.pr_margin()
    if size is None or recorded.problem or len(recorded.items) < 2 or not margin:
        return None
    k_old = min(len(item.scores) for item in recorded.items)
    planner = session.planner
    row = planner.cost(check, check.params.with_samples(size), set(), k_old, seed)  # the baseline's own requests
    model_usd = dollars(planner.prices["model"], row.prompt_tokens, row.completion_tokens).standard
    judge_usd = 0.0 if row.judge_usd is None else row.judge_usd.standard  # the judge reads each of the K answers
    usd = None if model_usd is None or judge_usd is None else model_usd + judge_usd
    low, high = check.measure.bounds
    samples = len(recorded.items) * k_old  # what the row prices: the baseline's items × K0 answers each
    per_sample = None if usd is None else usd / samples
    cached = 0 < row.requests == row.cached  # the baseline's own answers: nothing to plan, nothing to pay
    return paired_size(
        recorded.items, size, margin, high - low, per_sample, policy.alpha, cached, row.requests / samples
    )
