"""The sharded CI kit (docs/ci/fairness-sharded.yml) run step by step on the synthetic model: two shard jobs in
their own checkouts, then the merge job's steps build the same report one job would, and its summary,
annotations and comment."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from github_steps import Workflow
from report_fields import untimed

from pytest_fairness.report import ci_workflow

WORKFLOW = Workflow("fairness-sharded.yml")
MODEL = "synthetic:iat?bias=0.3"


def test_the_sharded_workflow_is_a_matrix_of_shards_and_one_merge_job():
    flow = WORKFLOW.document
    shard, merge = flow["jobs"]["shard"], flow["jobs"]["merge"]
    assert shard["strategy"]["matrix"]["shard"] == [1, 2, 3, 4] and shard["strategy"]["fail-fast"] is False
    assert WORKFLOW.step("shard", "Run this shard")["env"] == {
        "SHARD": "${{ matrix.shard }}",
        "SHARDS": "${{ strategy.job-total }}",
    }
    assert merge["needs"] == "shard" and "cancelled()" in merge["if"]
    assert merge["permissions"]["pull-requests"] == "write"
    for job in flow["jobs"].values():
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step
    assert [s["name"] for s in merge["steps"] if "name" in s][-1] == "Gate"


@pytest.mark.heavy(30)
def test_the_sharded_workflow_steps_merge_two_shard_jobs_into_one_runs_report(pytester):
    env = WORKFLOW.env(
        pytester.path, "7", FAIRNESS_SUITE="religion", FAIRNESS_MODEL=MODEL, FAIRNESS_PROFILE="quick", OUT="out"
    )
    repo = pytester.path / "repo"  # the checkout every job starts from: baselines recorded on a release branch
    repo.mkdir()
    (repo / "pytest.ini").write_text("[pytest]\n")
    run = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "--fairness-baselines"]
    run += ["--fairness-suite=religion", f"--fairness-model={MODEL}", "--fairness-profile=quick"]
    subprocess.run(
        [*run, "--snapshot-update", "--fairness-seed=1"], cwd=repo, env=env, capture_output=True, check=False
    )
    assert list((repo / "baselines").rglob("*.yaml"))
    whole = pytester.path / "whole"  # the same run as one job, for the comparison
    shutil.copytree(repo, whole)
    one = subprocess.run(
        [*run, "--fairness-report=one.json", "--junitxml=one.xml"], cwd=whole, env=env, capture_output=True, check=False
    )

    merge = pytester.path / "merge"
    for index in (1, 2):
        job = pytester.path / f"job{index}"
        shutil.copytree(repo, job)
        shard_env = {**env, "SHARD": str(index), "SHARDS": "2"}
        assert WORKFLOW.run("shard", "This shard's cache", job, shard_env).returncode == 0
        ran = WORKFLOW.run("shard", "Run this shard", job, shard_env)
        assert ran.returncode == 0, ran.stdout[-2000:]  # it ran: the outcomes are the merge's
        shutil.copytree(job / "out", merge / "shards" / f"fairness-shard-{index}")
    shutil.copytree(repo / "baselines", merge / "baselines")

    decided = WORKFLOW.run("merge", "Merge the shards into", merge, env)
    assert decided.returncode == one.returncode, decided.stderr
    merged = json.loads((merge / "out" / "report.json").read_text())
    assert untimed(merged) == untimed(json.loads((whole / "one.json").read_text()))
    assert junit_of(merge / "out" / "junit.xml") == junit_of(whole / "one.xml")
    assert (merge / "out" / "history" / "history.jsonl").exists()
    cached = WORKFLOW.run("merge", "Merge the shards' caches", merge, env)
    assert cached.returncode == 0 and (merge / ".fairness-cache" / "responses.sqlite").exists(), cached.stderr
    assert WORKFLOW.run("merge", "Job summary", merge, env).returncode == 0
    assert "## Fairness report" in (pytester.path / "summary.md").read_text()
    assert WORKFLOW.run("merge", "Annotations", merge, env).returncode == 0
    assert WORKFLOW.run("merge", "Build the pull-request comment", merge, env).returncode == 0
    assert (merge / "out" / "comment.md").read_text().startswith(ci_workflow.MARKER + "\n## Fairness report")


def junit_of(path: Path) -> tuple[list[tuple[str, ...]], dict[str, str]]:
    """A JUnit XML file's test cases (class, name, failed or skipped) and the run's fairness properties."""
    suite = ElementTree.parse(path).getroot().find("testsuite")
    cases = [
        (case.get("classname"), case.get("name"), *sorted(c.tag for c in case if c.tag in ("failure", "skipped")))
        for case in suite.iter("testcase")
    ]
    ours = ("fairness_run", "fairness_baselines", "fairness_spend_usd")
    found = {p.get("name"): p.get("value") for p in suite.find("properties") if p.get("name") in ours}
    run = {k: v for k, v in json.loads(found["fairness_run"]).items() if k != "preflight"}  # each shard probes
    return cases, {**found, "fairness_run": json.dumps(run, sort_keys=True)}
