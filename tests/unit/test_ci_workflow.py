"""What the CI steps build from a run's reports when the run went wrong or the report points outside the
repository: annotations on files the repository holds, plots as links (never a broken image), and a comment
that says a run could not start."""

from __future__ import annotations

from pytest_fairness.report import ci_workflow


def test_an_annotation_points_at_a_suite_file_in_the_repository_else_at_the_workflow():
    inside = {"file": "fairness/acme.yaml", "line": 4}
    assert ci_workflow.in_repository(inside, ".github/workflows/fairness.yml") == inside
    for outside in ("../../venv/lib/pytest_fairness/suites/gender.yaml", "/opt/suites/gender.yaml"):
        moved = ci_workflow.in_repository({"file": outside, "line": 9}, ".github/workflows/fairness.yml")
        assert moved == {"file": ".github/workflows/fairness.yml"}
    assert ci_workflow.in_repository({"file": "/opt/x.yaml", "line": 1}, None) is None


def test_the_workflow_file_is_read_from_githubs_workflow_ref():
    ref = "acme/chatbot/.github/workflows/fairness.yml@refs/pull/3/merge"
    assert ci_workflow.workflow_file(ref) == ".github/workflows/fairness.yml"
    assert ci_workflow.workflow_file(None) is None


def test_a_run_that_could_not_start_is_one_error_annotation_with_its_reason():
    report = {"run": {"status": "not started", "stopped": "pre-flight: /v1/chat/completions refused"}, "checks": []}
    (line,) = ci_workflow.workflow_commands(report, ".github/workflows/fairness.yml")
    assert line.startswith("::error file=.github/workflows/fairness.yml,title=fairness::")
    assert "could not start: pre-flight: /v1/chat/completions refused" in line
    (missing,) = ci_workflow.not_started(None, "wf.yml")
    assert "pytest wrote no report" in missing
    assert ci_workflow.not_started({"run": {"status": "complete"}}, "wf.yml") == []


def test_plots_become_links_to_the_artefact_and_urls_stay_images():
    text = "![trend](out/plots/implicit_bias.png) and ![logo](https://example.org/a.png)"
    shown = ci_workflow.visible(text, artifact_url="https://gh/artifacts/1")
    assert "[trend (`plots/implicit_bias.png` in the run's artefact)](https://gh/artifacts/1)" in shown
    assert "![logo](https://example.org/a.png)" in shown
    assert "![" not in ci_workflow.visible("![trend](plots/a.png)")  # no link to give: the name in words


def test_a_comment_without_a_report_says_the_run_could_not_start_and_keeps_the_baseline_table():
    body = ci_workflow.comment(None, run_url="https://run", more=["## Fairness baselines\n\ntable\n"])
    assert body.startswith(ci_workflow.MARKER + "\n## Fairness report\n\n**The fairness run could not start**")
    assert "## Fairness baselines" in body and body.rstrip().endswith("(https://run)")
