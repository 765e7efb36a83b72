"""Noise must not pass a gate: the two cases that used to PASS on point intervals (issue: valid intervals)."""

import pytest

from pytest_fairness.measures.bai import decision
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner
from pytest_fairness.stats.gate import Outcome, Threshold, decide


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


def test_bonferroni_gates_widen_every_interval_and_say_what_they_control(pytester):
    args = [
        "--fairness-suite=religion",
        "--fairness-model=synthetic:iat?bias=0.3",
        "-k",
        "implicit",
        "-p",
        "no:randomly",
    ]
    plain = pytester.runpytest(*args, "--fairness-report=plain.json")
    plain.stdout.fnmatch_lines(["gate error rate: each gate errs with chance at most 5%*3 gates*"])
    family = pytester.runpytest(*args, "--fairness-multiplicity=bonferroni", "--fairness-report=family.json")
    family.stdout.fnmatch_lines(
        ["*98.3% CI*", "gate error rate: the chance that any of the 3 gates errs is at most 5%*"]
    )
    import json

    def widths(name):
        checks = json.loads((pytester.path / name).read_text())["checks"]
        return [c["result"]["ci"][1] - c["result"]["ci"][0] for c in checks]

    assert all(f > p for f, p in zip(widths("family.json"), widths("plain.json"), strict=True))
