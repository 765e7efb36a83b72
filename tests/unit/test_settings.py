"""Every option is declared once and read once, into the typed ``Settings``; the gate family is fixed once."""

from __future__ import annotations

import re
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

import pytest_fairness
from pytest_fairness.config.baseline_policy import FAIL_ON
from pytest_fairness.config.options import GATES, INCONCLUSIVE_POLICIES, OPTIONS
from pytest_fairness.config.settings import Settings, SettingsError
from pytest_fairness.measures import PROFILES
from pytest_fairness.records.comparison import MODES
from pytest_fairness.report.formats import output_options
from pytest_fairness.report.terminal import error_rate_line
from pytest_fairness.run.session import FairnessSession
from pytest_fairness.stats.gate import GATE_MULTIPLICITY, GateFamily
from pytest_fairness.stats.multiplicity import METHODS

PACKAGE = Path(pytest_fairness.__file__).parent
#: A valid value other than the default for every option (a new option needs a line here, and a field).
GIVEN = {
    "suite": ["gender,race"],
    "model": "synthetic:iat",
    "judge": "synthetic:harm",
    "judge_reference": "synthetic:harm?bias=0.1",
    "judge_calibration": __file__,  # any file that exists: its contents are read by the measure
    "seed": "3",
    "profile": "paper",
    "cache": "elsewhere.sqlite",
    "cache_mode": "off",
    "inconclusive": "skip",
    "max_concurrency": "2",
    "max_attempts": "1",
    "confidence": "0.9",
    "multiplicity": "bonferroni",
    "plan": True,
    "progress": "off",
    "budget": "1.5",
    "batch": True,
    "batch_wait": "2",
    "sequential": True,
    "baselines": True,
    "gate": "pr",
    "pr_threshold": "inconclusive",
    "shard": "2/4",
    "samples_per_item": "3",
    "baseline_tolerance": "0.1",
    "baseline_alpha": "0.1",
    "baseline_multiplicity": "bh",
    "baseline_mode": "noninferiority",
    "baseline_fail_on": "change",
    "baseline_dir": "elsewhere",
    "baseline_model": "a-model-line",
}


def _read(values: dict[str, object]) -> Settings:
    return Settings.from_values(values.get, Path("."), output_options())


def test_unset_options_give_the_declared_defaults():
    assert Settings.from_values(lambda name: None, Path(".")) == Settings()
    assert _read({}).outputs == {option.name: None for option in output_options()}


@pytest.mark.parametrize("name", sorted(GIVEN))
def test_every_option_is_read_into_the_settings(name):
    assert {option.name for option in OPTIONS} == set(GIVEN)
    assert _read({name: GIVEN[name]}) != _read({})


def test_the_values_read_are_typed():
    settings = _read(GIVEN | {"report": "out/r.json"})
    assert settings.suites == ("gender", "race") and settings.seed == 3 and settings.confidence == 0.9
    assert settings.progress is None and settings.budget == 1.5 and settings.model_named
    assert settings.baseline.method == "bh" and settings.baseline.fail_on == "change"
    assert settings.outputs["report"] == "out/r.json" and settings.samples_per_item == 3


def test_choices_name_the_constants_they_are_checked_against():
    choices = {option.name: option.choices for option in OPTIONS if option.choices is not None}
    assert choices["profile"] is PROFILES and choices["multiplicity"] is GATE_MULTIPLICITY
    assert choices["inconclusive"] is INCONCLUSIVE_POLICIES and choices["baseline_multiplicity"] is METHODS
    assert choices["baseline_mode"] is MODES and choices["baseline_fail_on"] is FAIL_ON
    assert choices["gate"] is GATES


def test_the_pull_request_gate_compares_with_the_baselines():
    assert _read({"gate": "pr"}).baselines and not _read({}).baselines


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("profile", "huge", "--fairness-profile='huge' is not a profile; valid: quick, paper, release"),
        ("multiplicity", "holm", "--fairness-multiplicity='holm'; valid: none, bonferroni"),
        ("progress", "soon", "--fairness-progress='soon': give seconds"),
        ("suite", [""], "--fairness-suite is empty; give a built-in suite"),
        ("confidence", "2", "--fairness-confidence must be a number in [0.5, 0.999], got '2'"),
        ("budget", "lots", "--fairness-budget (USD) must be a number >= 0, got 'lots'"),
        ("samples_per_item", "0", "--fairness-samples-per-item must be a whole number in [1, 16], got '0'"),
        ("samples_per_item", "2.5", "--fairness-samples-per-item must be a whole number in [1, 16], got '2.5'"),
    ],
)
def test_a_bad_value_names_the_option_and_what_it_accepts(name, value, message):
    with pytest.raises(SettingsError, match=re.escape(message)):
        _read({name: value})


def test_options_are_read_from_pytest_in_one_place_only():
    readers = {
        path.relative_to(PACKAGE).as_posix(): len(re.findall(r"\.(?:getoption|getini)\(", path.read_text()))
        for path in PACKAGE.rglob("*.py")
    }
    assert {path: n for path, n in readers.items() if n} == {"plugin/__init__.py": 2}


def test_the_gate_family_is_fixed_once_collection_knows_the_checks():
    session = FairnessSession(Settings(multiplicity="bonferroni", confidence=0.9))
    assert session.family == GateFamily(1, 0.9, "bonferroni") and session.family.gate_confidence == 0.9
    family = session.collected(4)
    assert session.family is family and family.gate_confidence == pytest.approx(1 - 0.1 / 4)
    with pytest.raises(FrozenInstanceError):
        family.size = 5  # type: ignore[misc]
    assert session.collected(4) == family  # every xdist worker sees the same selection
    with pytest.raises(RuntimeError, match="fixed at 4 checks"):
        session.collected(5)


def test_the_report_states_the_error_rate_of_the_family_it_is_given():
    assert "any of the 4 gates errs is at most 10%" in error_rate_line(GateFamily(4, 0.9, "bonferroni"))
    assert "each interval at 97.5%" in error_rate_line(GateFamily(4, 0.9, "bonferroni"))
    assert "each gate errs with chance at most 5%; over 4 gates" in error_rate_line(GateFamily(4, 0.95))
