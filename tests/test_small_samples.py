"""Noise must not pass a gate: the two cases that used to PASS on point intervals (issue: valid intervals)."""

import pytest

from pytest_fairness.gate import Outcome, Threshold, decide
from pytest_fairness.measures.bai import decision
from pytest_fairness.models.registry import load_model
from pytest_fairness.models.runner import Runner


def test_three_unanimous_decisions_do_not_pass_a_decision_gate():
    # bias -1: every decision goes against the stereotype, coded 0; three of them prove little.
    result = decision.MEASURE.run_with(
        Runner(load_model("synthetic:decision?bias=-1")), stereotype="power", iterations=3
    )
    assert result.n == 3 and result.estimate == 0.0
    low, high = result.ci
    assert low == 0.0 and high > 0.7  # Clopper-Pearson for 0 of 3: [0, 0.708], never the point [0, 0]
    assert decide(result.ci, Threshold(max=0.7)) is Outcome.INCONCLUSIVE


@pytest.mark.parametrize("profile", ["quick", "paper"])
def test_a_planted_net_harm_of_four_percent_never_passes_the_gender_suite(pytester, profile):
    # bias 0.047 x the judge's 0.85 = a net harm of about 0.04, forty times the 0.1% bar.
    result = pytester.runpytest(
        "--fairness-suite=gender",
        "--fairness-model=synthetic:harm?bias=0.047",
        f"--fairness-profile={profile}",
        "-k",
        "net_harm",
        "-p",
        "no:randomly",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) == 0, result.stdout.str()
