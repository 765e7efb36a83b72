"""The syrupy extension end to end: baselines written under baselines/<model>/, matched with tolerance."""

import json

import numpy as np
import pytest
import syrupy

from pytest_fairness.baseline import baseline_entry, model_folder, render_baseline
from pytest_fairness.baseline.entry_comparison import compare
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.explain import explain
from pytest_fairness.records.measure_result import MeasureResult
from pytest_fairness.stats.gate import Outcome, Threshold
from pytest_fairness.stats.intervals import summarize

MODEL = "synthetic:iat?bias=0.3&unusable=0&seed=0"


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch):
    """In-process pytester runs inherit the outer worker's variables, and syrupy then stays silent."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


def baseline_path(model=MODEL):
    return f"baselines/{model_folder(model)}/gender.implicit_bias[career].yaml"


BASELINE = baseline_path()
TEST_FILE = """
import json, pathlib
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.baseline.snapshot import match_baseline

def test_career_matches_its_baseline(snapshot):
    record = CheckRecord.from_dict(json.loads(pathlib.Path("record.json").read_text()))
    match_baseline(snapshot, record, tolerance=0.05)
"""


def record(mean, seed, model=MODEL, n=40):
    x = np.clip(np.random.default_rng(seed).normal(mean, 0.3, n), -1, 1)
    result = MeasureResult(
        measure="implicit_bias",
        subject="career",
        summary=summarize(x, null=0.0),
        n_unusable=0,
        unusable_examples=[],
        fidelity="faithful",
        model_id=model,
        versions={"stimuli": "acde420f22cc", "prompts": "cd01bf585713"},
        params={"stereotype": "career", "iterations": n, "seed": seed},
    )
    return CheckRecord("gender", "implicit_bias[career]", Outcome.PASS, Threshold(max=0.2), result)


@pytest.fixture(autouse=True)
def _isolate_syrupy():
    """In-process pytester runs replace syrupy's module-level session; give the outer run its own back."""
    saved = syrupy._syrupy
    yield
    syrupy._syrupy = saved


@pytest.fixture
def project(pytester):
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_career=TEST_FILE)
    return pytester


def run_with(project, rec, *args):
    (project.path / "record.json").write_text(json.dumps(rec.to_dict()))
    # No hypothesis plugin: pytester restores sys.modules after each run, and it re-imports hypothesis (1.5 s).
    return project.runpytest("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


def commit_baseline(project, rec):
    path = project.path / baseline_path(rec.result.model_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_baseline([baseline_entry(rec)]))
    return path


def test_snapshot_update_writes_the_readable_yaml_under_baselines_model(project):
    rec = record(0.1, seed=1)
    result = run_with(project, rec, "--snapshot-update")
    result.assert_outcomes(passed=1)
    assert (project.path / BASELINE).read_text() == render_baseline([baseline_entry(rec)])
    result.stdout.fnmatch_lines(["*1 snapshot generated*"])


def test_a_rerun_that_differs_by_noise_matches_and_leaves_the_file_alone(project):
    path = commit_baseline(project, record(0.1, seed=1))
    before = path.read_text()
    run_with(project, record(0.1, seed=2)).assert_outcomes(passed=1)
    assert path.read_text() == before  # noise never churns a committed baseline


def test_snapshot_update_rewrites_a_baseline_that_still_matches(project):
    # Re-recording with more samples must replace the file, even though the comparison says "matches".
    path = commit_baseline(project, record(0.1, seed=1, n=10))
    bigger = record(0.1, seed=2, n=50)
    run_with(project, bigger).assert_outcomes(passed=1)  # it matches...
    result = run_with(project, bigger, "--snapshot-update")
    result.assert_outcomes(passed=1)
    assert path.read_text() == render_baseline([baseline_entry(bigger)])  # ...and is re-recorded all the same
    assert "n: 50\n" in path.read_text()
    result.stdout.fnmatch_lines(["*1 snapshot updated*"])


def test_a_regression_fails_with_the_explanation_and_a_diff(project):
    commit_baseline(project, record(0.1, seed=1))
    result = run_with(project, record(0.45, seed=2))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*BaselineMismatch: gender::implicit_bias[[]career[]] REGRESSED: 0.* -> 0.*; difference +0.*"
            "beyond the tolerance ±0.05; it rose towards the maximum (≤ 0.2).",
            f"*--- baseline */{model_folder(MODEL)}/gender.implicit_bias[[]career[]].yaml",
            "*+++ this run",
            "*-  estimate: 0.*",
            "*+  estimate: 0.*",
        ]
    )


def test_a_check_without_baseline_fails_and_says_how_to_record_one(project):
    result = run_with(project, record(0.1, seed=1))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*no baseline at */{model_folder(MODEL)}/*; record it with --snapshot-update"])


def test_an_unreadable_baseline_fails_clearly_and_is_rewritten_on_update(project):
    path = project.path / BASELINE
    path.parent.mkdir(parents=True)
    path.write_text("estimate: [unbalanced\n")
    failed = run_with(project, record(0.1, seed=1))
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*the baseline at * cannot be read (not valid YAML*rewrite it with --snapshot-update"])
    run_with(project, record(0.1, seed=1), "--snapshot-update").assert_outcomes(passed=1)
    assert path.read_text().startswith("# pytest-fairness baseline")


def test_other_models_baselines_are_kept_and_never_flagged(project):
    other = commit_baseline(project, record(0.1, seed=1, model="openai:gpt-4o"))
    assert other.parent.name == "openai_gpt-4o"
    result = run_with(project, record(0.1, seed=1), "--snapshot-update")
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    assert other.exists() and (project.path / BASELINE).exists()
    assert "unused" not in result.stdout.str()


def test_custom_items_like_suite_checks_use_the_extension_through_snapshot_for_item(project):
    project.makeconftest(
        """
        import json, pathlib
        import pytest
        from pytest_fairness.records.check_record import CheckRecord
        from pytest_fairness.baseline.snapshot import match_baseline, snapshot_for_item

        class Check(pytest.Item):
            def runtest(self):
                record = CheckRecord.from_dict(json.loads(pathlib.Path("record.json").read_text()))
                match_baseline(snapshot_for_item(self), record, tolerance=0.05)

        class Suite(pytest.File):
            def collect(self):
                yield Check.from_parent(self, name="implicit_bias[career]")

        def pytest_collect_file(parent, file_path):
            if file_path.suffix == ".suite":
                return Suite.from_parent(parent, path=file_path)
        """
    )
    (project.path / "gender.suite").write_text("")
    run_with(project, record(0.1, seed=1), "gender.suite", "--snapshot-update").assert_outcomes(passed=1)
    assert (project.path / BASELINE).exists()
    run_with(project, record(0.1, seed=2), "gender.suite").assert_outcomes(passed=1)
    failed = run_with(project, record(0.45, seed=2), "gender.suite")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*REGRESSED*"])


def test_a_checks_comparison_with_its_baseline_is_worked_out_once(monkeypatch):
    """Matching, the diff and the record's comparison read one comparison, not one each from the YAML."""
    from pytest_fairness.baseline import snapshot

    calls = []

    def counted(*args, **kwargs):
        calls.append(args)
        return compare(*args, **kwargs)

    monkeypatch.setattr(snapshot, "compare", counted)
    old, new = (render_baseline([baseline_entry(record(0.1 + 0.01 * i, 70 + i))]) for i in range(2))
    extension = snapshot.FairnessBaselineExtension.configured(tolerance=0.05)()
    assert extension.matches(serialized_data=new, snapshot_data=old)
    lines = list(extension.diff_lines(new, old))
    assert lines[0] == explain(extension.comparison(new, old)) and len(calls) == 1
