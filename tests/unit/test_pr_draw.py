"""What a pull-request check draws is worked out once a check and session: the replay check and the check's own
run ask it in turn, and working it out counts the tokens of every request of the baseline."""

import gc
from types import SimpleNamespace

from pytest_fairness.baseline import pr_draw
from pytest_fairness.planning.plan import RunShape


class Session:
    """A stand-in session (only its identity matters here: the worked-out shape is stubbed)."""


def test_a_checks_shape_is_worked_out_once_a_session(monkeypatch):
    worked: list[str] = []

    def work(session, check, entry):
        worked.append(check.label)
        return RunShape(entry, 303)

    monkeypatch.setattr(pr_draw, "_worked_out", work)
    career, power = SimpleNamespace(label="gender::implicit_bias[career]"), SimpleNamespace(label="power")
    one, other = Session(), Session()
    assert pr_draw.shape_for(one, career, 7) == pr_draw.shape_for(one, career, 7) == RunShape(7, 303)
    assert pr_draw.shape_for(one, power, 7) == RunShape(7, 303) and worked == [career.label, power.label]
    pr_draw.shape_for(other, career, 7)  # another session works it out anew
    assert worked == [career.label, power.label, career.label]
    held = len(pr_draw._SHAPES)
    del other
    gc.collect()
    assert len(pr_draw._SHAPES) == held - 1  # a finished session's shapes go with it
