import math

import pytest

from pytest_fairness.stats.gate import GateError, Outcome, Threshold, decide


@pytest.mark.parametrize(
    ("ci", "outcome"),
    [((0.0, 0.1), Outcome.PASS), ((0.25, 0.4), Outcome.FAIL), ((0.1, 0.3), Outcome.INCONCLUSIVE)],
)
def test_max_threshold_decides_from_the_whole_interval(ci, outcome):
    assert decide(ci, Threshold(max=0.2)) is outcome


def test_abs_max_is_a_two_sided_range():
    t = Threshold.from_mapping({"abs_max": 0.1}, "x")
    assert (t.min, t.max) == (-0.1, 0.1)
    assert decide((-0.3, -0.2), t) is Outcome.FAIL
    assert decide((-0.05, 0.05), t) is Outcome.PASS
    assert t.describe() == "|x| ≤ 0.1"


def test_an_undefined_interval_is_inconclusive():
    assert decide((math.nan, math.nan), Threshold(max=1.0)) is Outcome.INCONCLUSIVE


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (0.2, "must be a mapping"),
        ({"maximum": 0.2}, "unknown threshold key"),
        ({"max": "low"}, "must be a number"),
        ({"min": 0.5, "max": 0.1}, "is above max"),
        ({"abs_max": 0.1, "max": 0.2}, "either abs_max or min/max"),
    ],
)
def test_bad_thresholds_are_rejected_with_the_fix(raw, message):
    with pytest.raises(GateError, match=message):
        Threshold.from_mapping(raw, "suite.yaml: checks[0].threshold")
