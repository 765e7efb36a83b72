"""A pull-request run split into shards and merged decides as the run unsharded, by the pull-request rules: a
check that could not serve at its baseline and still cannot is reported, not blocking; one that could then and
cannot now is a regression."""

import json
from pathlib import Path

import pytest
from in_process import INPROCESS, pr_suite
from report_fields import untimed, untimed_markdown

from pytest_fairness.cli.main import main

SUITE = pr_suite(samples=40)
COMMON = ["--fairness-suite=pr.yaml", "--fairness-baseline-model=line"]
UNSERVED = "--fairness-model=synthetic:iat?bias=0.1&unusable=0.9"

#: In-process runs: the outer run's xdist variables and syrupy session are undone around each one.
pytestmark = pytest.mark.usefixtures("in_process_syrupy")


def _run(pytester: pytest.Pytester, name: str, *args: str) -> pytest.RunResult:
    files = [f"--fairness-cache={name}.sqlite", f"--fairness-report={name}.json", f"--fairness-markdown={name}.md"]
    return pytester.runpytest(*INPROCESS, *COMMON, *args, *files)


def _outputs(folder: Path, name: str) -> tuple[dict, str]:
    return json.loads((folder / f"{name}.json").read_text()), (folder / f"{name}.md").read_text()


def _merged_and_whole(pytester: pytest.Pytester, *args: str) -> tuple[int, dict]:
    """The pull-request run unsharded and merged from two shards: the same report, Markdown and exit status."""
    whole = _run(pytester, "whole", "--fairness-gate=pr", *args)
    report, markdown = _outputs(pytester.path, "whole")
    shards = [_run(pytester, f"shard{i}", "--fairness-gate=pr", *args, f"--fairness-shard={i}/2") for i in (1, 2)]
    assert [s.ret for s in shards] == [pytest.ExitCode.OK] * 2  # a shard's status says only that it ran
    paths = [str(pytester.path / f"shard{i}.json") for i in (1, 2)]
    out = ["--report", str(pytester.path / "merged.json"), "--markdown", str(pytester.path / "merged.md")]
    assert main(["merge", *paths, *out]) == whole.ret
    merged, merged_markdown = _outputs(pytester.path, "merged")
    assert untimed(merged) == untimed(report) and untimed_markdown(merged_markdown) == untimed_markdown(markdown)
    assert merged["settings"]["gate"] == "pr"
    return whole.ret, merged


def test_a_merged_pull_request_run_reports_cannot_serve_then_and_now_without_blocking(pytester):
    pytester.makefile(".yaml", pr=SUITE)
    _run(pytester, "release", UNSERVED, "--fairness-baselines", "--snapshot-update")
    status, merged = _merged_and_whole(pytester, UNSERVED)
    assert status == pytest.ExitCode.OK
    gates = [c["result"]["details"]["pr_gate"] for c in merged["checks"]]
    assert {c["outcome"] for c in merged["checks"]} == {"cannot_serve"} and len(gates) == 3
    assert all("could not serve at the baseline either" in g["why"] for g in gates)


def test_a_merged_pull_request_run_fails_a_check_that_served_at_its_baseline_and_cannot_now(pytester):
    pytester.makefile(".yaml", pr=SUITE)
    _run(pytester, "release", "--fairness-model=synthetic:iat?bias=0.1", "--fairness-baselines", "--snapshot-update")
    status, merged = _merged_and_whole(pytester, UNSERVED)
    assert status == pytest.ExitCode.TESTS_FAILED
    gates = [c["result"]["details"]["pr_gate"] for c in merged["checks"]]
    assert all("served at the baseline and cannot now: a regression" in g["why"] for g in gates)
