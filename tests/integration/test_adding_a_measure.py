"""A new measure needs its own module and one registration: then suites, fixtures and the plan serve it."""

import json
import shutil
from collections.abc import Iterator

import pytest
from paths import TESTS

from pytest_fairness.measures import MEASURES

EXAMPLE = TESTS / "measure_example" / "share_of_yes.py"
CONFTEST = """
from share_of_yes import MEASURE
from pytest_fairness.measures import register

register(MEASURE)
"""
SUITE = """
suite: mine
checks:
  - measure: share_of_yes
    words: [sunshine, rain]
    framing: polite
    threshold: {max: 0.9}
"""
TEST = """
def test_share_of_yes_as_a_fixture(share_of_yes):
    result = share_of_yes("picnic", draws=3)
    assert result.n == 3 and result.params["draws"] == 3 and 0 <= result.estimate <= 1
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> Iterator[pytest.Pytester]:
    shutil.copy(EXAMPLE, pytester.path / "share_of_yes.py")
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", mine=SUITE)
    pytester.makepyfile(test_mine=TEST)
    pytester.makeini("[pytest]\nfairness_model = synthetic:iat\n")
    saved = dict(MEASURES)
    yield pytester
    MEASURES.clear()  # the runs are in this process: the registration must not outlive the test
    MEASURES.update(saved)


def test_a_registered_measure_runs_as_suite_checks_and_as_a_fixture(project):
    result = project.runpytest("--fairness-suite=mine.yaml", "--fairness-report=out.json", "-p", "no:randomly")
    result.assert_outcomes(passed=3)
    checks = {c["check"]: c for c in json.loads((project.path / "out.json").read_text())["checks"]}
    assert {"share_of_yes[sunshine]", "share_of_yes[rain]"} <= set(checks)
    assert checks["share_of_yes[rain]"]["result"]["params"]["framing"] == "polite"
    assert checks["share_of_yes[rain]"]["result"]["n"] == 4  # the quick profile's default sample size
    # It gates on Params.summarize: the betting interval its BOUNDS name, inside [0, 1] and never a point.
    # (The double's shares are all 0.5 here; a plain t interval would be the point [0.5, 0.5].)
    (lo, hi), mean = checks["share_of_yes[rain]"]["result"]["ci"], checks["share_of_yes[rain]"]["result"]["estimate"]
    assert 0.0 <= lo < mean < hi <= 1.0


def test_a_registered_measure_is_planned_without_calling_the_model(project):
    result = project.runpytest("--fairness-suite=mine.yaml", "--fairness-plan", "-p", "no:randomly")
    result.stdout.fnmatch_lines(["*mine::share_of_yes[[]sunshine[]]*4*", "*mine::share_of_yes[[]rain[]]*4*"])


def test_its_parameters_are_validated_from_its_params_alone(project):
    (project.path / "mine.yaml").write_text(SUITE.replace("framing: polite", "framing: rude"))
    result = project.runpytest("--fairness-suite=mine.yaml", "-p", "no:randomly")
    result.stderr.fnmatch_lines(["*unknown framing 'rude'; valid: plain, polite*"])
