"""A new report format is its own module and one registration: its option reaches it read and typed."""

import csv
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from paths import REPO, TESTS

from pytest_fairness.report.formats import OUTPUTS

EXAMPLE = TESTS / "output_example" / "csv_output.py"
CONFTEST = """
from csv_output import CsvFile
from pytest_fairness import register_output


def pytest_addoption(parser):
    register_output(CsvFile(), parser)
"""
SUITE = "--fairness-suite=gender"
MODEL = "--fairness-model=synthetic:iat?bias=0.9"


@pytest.fixture
def project(pytester: pytest.Pytester) -> Iterator[pytest.Pytester]:
    shutil.copy(EXAMPLE, pytester.path / "csv_output.py")
    pytester.makeconftest(CONFTEST)
    saved = list(OUTPUTS)
    yield pytester
    OUTPUTS[:] = saved  # the runs are in this process: the registration must not outlive the test


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def test_a_registered_format_writes_every_check_the_json_report_holds(project):
    result = project.runpytest(
        SUITE, MODEL, "-k", "implicit", "--fairness-csv=out/checks.csv", "--fairness-report=r.json"
    )
    result.assert_outcomes(failed=4)
    rows = _rows(project.path / "out" / "checks.csv")
    checks = json.loads((project.path / "r.json").read_text())["checks"]
    assert [r["check"] for r in rows] == [f"{c['suite']}::{c['check']}" for c in checks]
    for row, check in zip(rows, checks, strict=True):
        assert float(row["estimate"]) == check["result"]["estimate"] and row["outcome"] == check["outcome"] == "fail"
        assert [float(row["ci_low"]), float(row["ci_high"])] == check["result"]["ci"]


def test_its_option_is_an_ini_key_too_and_is_listed_in_the_help(project):
    project.makeini("[pytest]\nfairness_csv = from-ini.csv\n")
    project.runpytest(SUITE, MODEL, "-k", "implicit_bias and career")
    assert [r["check"] for r in _rows(project.path / "from-ini.csv")] == ["gender::implicit_bias[career]"]
    project.runpytest("--help").stdout.fnmatch_lines(["*--fairness-csv=FAIRNESS_CSV*", "*write one CSV row per check*"])


def test_without_its_option_it_writes_nothing(project):
    project.runpytest(SUITE, MODEL, "-k", "implicit_bias and career")
    assert not list(project.path.glob("**/*.csv"))


def test_the_walkthrough_quotes_the_example_as_it_is():
    """Every line of docs/adding-a-report-format.md's code (but its elisions) is in the example or its conftest."""
    doc = (REPO / "docs" / "adding-a-report-format.md").read_text()
    example = EXAMPLE.read_text() + CONFTEST
    quoted = [line.strip() for block in re.findall(r"```python\n(.*?)```", doc, re.S) for line in block.splitlines()]
    assert [line for line in quoted if line and "..." not in line and line not in example] == []
