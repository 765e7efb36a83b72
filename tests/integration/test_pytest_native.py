"""A fairness run read through pytest's own screens: outcome categories, markers, header, live progress, --lf,
the history file, and the CI kit (docs/ci/fairness.yml) run step by step on the synthetic model."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
import yaml
from github_steps import Workflow
from in_process import pr_suite
from paths import REPO

from pytest_fairness.config import suite
from pytest_fairness.report import ci_workflow, history
from pytest_fairness.report.progress import Display, Emitter, Tick

# On this model (60% of answers unusable) the four checks reach one outcome each.
MIXED_MODEL = "--fairness-model=synthetic:iat?bias=0.9&unusable=0.6"
MIXED = """\
suite: mixed
checks:
  - id: passes
    measure: implicit_bias
    stereotype: career
    samples: 20
    threshold: {max: 1.0}
  - id: fails
    measure: implicit_bias
    stereotype: power
    samples: 40
    threshold: {max: 0.2}
  - id: undecided
    measure: implicit_bias
    stereotype: career
    samples: 4
    threshold: {max: 0.9}
  - id: unserved
    measure: implicit_bias
    stereotype: science
    samples: 20
    threshold: {max: 0.2}
"""


@pytest.fixture
def mixed(pytester: pytest.Pytester) -> str:
    pytester.makefile(".yaml", mixed=MIXED)
    return "--fairness-suite=mixed.yaml"


def test_each_outcome_has_its_own_letter_word_and_count_and_the_exit_code_follows_the_policy(pytester, mixed):
    result = pytester.runpytest(mixed, MIXED_MODEL, "-p", "no:randomly", "--junitxml=out.xml")
    result.stdout.fnmatch_lines(["fairness/mixed .FIC*", "*= 1 failed, 1 passed, 1 inconclusive, 1 cannot serve in *"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # --fairness-inconclusive=fail (default)
    # pytest's FAILURES list only failed tests: the undecided ones are explained in their own section.
    result.stdout.fnmatch_lines(["*= inconclusive and cannot-serve checks =*", "undecided: INCONCLUSIVE (*"])
    verbose = pytester.runpytest(mixed, MIXED_MODEL, "-p", "no:randomly", "-v", "-k", "undecided or unserved")
    verbose.stdout.fnmatch_lines(["*mixed::undecided INCONCLUSIVE*", "*mixed::unserved CANNOT SERVE*"])
    # JUnit keeps them apart: a status property and the failure message's first words.
    cases = {c.get("name"): c for c in ElementTree.parse(pytester.path / "out.xml").iter("testcase")}
    for name, value, word in [("undecided", "inconclusive", "INCONCLUSIVE"), ("unserved", "cannot_serve", "CANNOT")]:
        props = {p.get("name"): p.get("value") for p in cases[name].iter("property")}
        assert props["fairness_status"] == value
        assert cases[name].find("failure").get("message").startswith(f"{name}: {word}")
    assert "fairness_status" not in {p.get("name") for p in cases["fails"].iter("property")}
    # --fairness-inconclusive=pass forgives the gate the sample could not decide, never the check that cannot serve
    tolerated = pytester.runpytest(mixed, MIXED_MODEL, "-k", "not fails", "--fairness-inconclusive=pass")
    tolerated.stdout.fnmatch_lines(["*= 1 passed, 1 deselected, 1 inconclusive, 1 cannot serve in *"])
    assert tolerated.ret == pytest.ExitCode.TESTS_FAILED
    forgiven = pytester.runpytest(mixed, MIXED_MODEL, "-k", "passes or undecided", "--fairness-inconclusive=pass")
    forgiven.stdout.fnmatch_lines(["*= 1 passed, 2 deselected, 1 inconclusive in *"])
    assert forgiven.ret == pytest.ExitCode.OK


def _selected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stdout.lines if line.startswith("fairness/")]


def test_markers_select_by_measure_suite_and_judge_under_strict_markers(pytester):
    args = ["--fairness-suite=gender", "--fairness-model=synthetic:iat", "--collect-only", "-q", "--strict-markers"]
    no_judge = _selected(pytester.runpytest(*args, "-m", "not judge"))
    assert no_judge and all("implicit_bias" in n or "pcf" in n for n in no_judge)
    judged = _selected(pytester.runpytest(*args, "-m", "judge"))
    assert judged and not set(judged) & set(no_judge)
    assert all("decision_bias" in n for n in _selected(pytester.runpytest(*args, "-m", "decision_bias")))
    assert len(_selected(pytester.runpytest(*args, "-m", "gender and pcf"))) == 2
    markers = pytester.runpytest("--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.judge: fairness checks whose measure calls a judge*"])
    markers.stdout.fnmatch_lines(["@pytest.mark.net_harm: fairness checks of the net_harm measure"])


def test_collecting_only_lists_the_checks_and_does_not_call_the_run_interrupted(pytester):
    result = pytester.runpytest("--fairness-suite=gender", "--fairness-model=synthetic:iat", "--collect-only", "-q")
    assert result.ret == 0 and len(_selected(result)) == 14
    assert "interrupted" not in result.stdout.str() and "not run" not in result.stdout.str()


def test_the_header_says_what_is_run(pytester, mixed):
    pytester.runpytest(mixed, MIXED_MODEL, "-k", "passes")  # fills the cache
    result = pytester.runpytest(mixed, MIXED_MODEL, "--fairness-seed=7", "--fairness-sequential", "--collect-only")
    result.stdout.fnmatch_lines(
        [
            "fairness: model synthetic:iat?bias=0.9&unusable=0.6; judge the model under test",
            "fairness: seed 7, profile quick, sequential on, confidence 0.95, inconclusive -> fail",
            "fairness: cache *responses.sqlite (rw, 20 entries); baselines not compared",
        ]
    )
    plain = pytester.runpytest("--collect-only")  # no fairness run: no header lines
    assert not [line for line in plain.stdout.lines if line.startswith("fairness:")]


@pytest.mark.heavy(8)
def test_progress_reaches_the_controller_under_xdist(pytester, mixed):
    result = pytester.runpytest(mixed, MIXED_MODEL, "-n", "2", "--fairness-progress=0", "-p", "no:randomly")
    lines = [line for line in result.stdout.lines if re.match(r"  \[gw[01]\] mixed::", line)]
    assert any(re.search(r"mixed::fails: round 1, n=40, requests \d+/40 \(\d+s\)", line) for line in lines), lines
    assert {line.split()[0] for line in lines} <= {"[gw0]", "[gw1]"}
    result.stdout.fnmatch_lines(["*1 failed, 1 passed, 1 inconclusive, 1 cannot serve*"])  # no extra counts
    # That the default (a line per 5 s) prints nothing for these quick checks under xdist is checked on the
    # workflow's gate run, which runs them so (test_the_workflow_steps_build_the_summary_...).


def test_progress_in_a_serial_run_names_the_sequential_round(pytester):
    pytester.makefile(
        ".yaml",
        grow="suite: grow\nchecks:\n  - measure: implicit_bias\n    stereotype: power\n    samples: 4\n"
        "    budget: 20\n    threshold: {max: 0.25}\n",
    )
    result = pytester.runpytest(
        "--fairness-suite=grow.yaml",
        "--fairness-model=synthetic:iat?bias=0.25",
        "--fairness-sequential",
        "--fairness-progress=0",
    )
    result.stdout.fnmatch_lines(["  grow::implicit_bias[[]power[]]: round 1, n=4, requests */4 (*s)"])
    result.stdout.fnmatch_lines(["  grow::implicit_bias[[]power[]]: round 2, n=*, requests */* (*s)"])


def test_last_failed_reruns_failed_and_undecided_checks(pytester, mixed):
    first = pytester.runpytest(mixed, MIXED_MODEL, "--fairness-inconclusive=pass")
    first.stdout.fnmatch_lines(["*1 failed, 1 passed, 1 inconclusive, 1 cannot serve*"])
    rerun = pytester.runpytest(mixed, MIXED_MODEL, "--lf", "-v")
    rerun.stdout.fnmatch_lines(["run-last-failure: rerun previous 3 failures*"])
    ran = {m.group(1) for line in rerun.stdout.lines if (m := re.search(r"mixed::(\w+) ", line))}
    assert ran == {"fails", "undecided", "unserved"}


class FakeScreen:
    def __init__(self) -> None:
        self.out: list[tuple[str, str]] = []

    def write(self, content: str, **markup: bool) -> None:
        self.out.append(("write", content))

    def rewrite(self, line: str, **markup: bool) -> None:
        self.out.append(("rewrite", line))


def _tick(nodeid: str, done: int, elapsed: float) -> Tick:
    return Tick(nodeid, nodeid, 1, 10, done, 10, elapsed, "gw0")


def test_a_log_gets_at_most_one_line_per_check_every_interval():
    now = [0.0]
    screen = FakeScreen()
    display = Display(screen, tty=False, interval=5.0, clock=lambda: now[0])
    for second in range(0, 21):
        now[0] = float(second)
        display.update(_tick("a", second % 10, float(second)))
    lines = [text for kind, text in screen.out if kind == "write"]
    assert len(lines) == 4  # at 5, 10, 15 and 20 s: nothing in the first 5 s, then one line per 5 s
    display.before_output()
    assert screen.out[-1] == ("write", "\n")


def test_a_terminal_rewrites_one_status_line_of_every_running_check():
    screen = FakeScreen()
    display = Display(screen, tty=True, interval=5.0, clock=lambda: 100.0)
    display.update(_tick("a", 1, 0))
    display.update(_tick("b", 10, 0))  # a finished request batch is always drawn
    assert [kind for kind, _ in screen.out] == ["write", "rewrite", "rewrite"]
    assert screen.out[-1][1] == "  running: a r1 n=10 1/10 | b r1 n=10 10/10"
    display.finished("a")
    off = Display(FakeScreen(), tty=False, interval=None)
    off.update(_tick("a", 1, 99))
    assert not off.screen.out  # type: ignore[attr-defined]


def test_an_emitter_throttles_but_always_sends_a_new_round_and_the_last_request():
    now, sent = [0.0], []
    emit = Emitter("id", "label", 10, sent.append, min_gap=1.0, clock=lambda: now[0])
    emit(1, 10)
    emit(2, 10)  # too soon
    emit(10, 10)  # the last one
    emit.begin_round(2, 15)
    emit(1, 15)
    assert [(t.round, t.n, t.done) for t in sent] == [(1, 10, 1), (1, 10, 10), (2, 15, 1)]


def test_suite_checks_know_their_line():
    lines = MIXED.splitlines()
    checks = suite.parse(yaml.safe_load(MIXED), "mixed", None, suite._entry_lines(MIXED)).checks
    for check in checks:
        assert lines[check.line - 1].strip() == f"- id: {check.id}"
    gender = Path(suite.resolve("gender")).read_text().splitlines()
    for check in suite.load("gender").checks:
        assert gender[check.line - 1].lstrip().startswith("- ")


def test_history_appends_a_line_per_run_and_draws_the_trends(pytester, mixed):
    for seed in ("1", "2"):
        pytester.runpytest(
            mixed, MIXED_MODEL, "-k", "passes or fails", f"--fairness-seed={seed}", "--fairness-history=h"
        )
    runs = history.load(pytester.path / "h")
    assert len(runs) == 2 and runs[0]["model"] == "synthetic:iat?bias=0.9&unusable=0.6"
    fails = runs[1]["checks"]["mixed::fails"]
    assert fails["outcome"] == "fail" and fails["ci"][0] <= fails["estimate"] <= fails["ci"][1]
    out = subprocess.run(
        [sys.executable, "-m", "pytest_fairness", "history", str(pytester.path / "h")],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    rows = {line.split("`")[1]: line for line in out.stdout.splitlines() if line.startswith("| `mixed::")}
    assert set(rows) == {"mixed::fails", "mixed::passes"}
    assert rows["mixed::fails"].count(" F |") == 2 and rows["mixed::passes"].count(" P |") == 2
    assert sorted(p.name for p in (pytester.path / "h" / "trends").iterdir()) == [
        "mixed__fails.png",
        "mixed__passes.png",
    ]


# -- the CI kit ----------------------------------------------------------------------------------------

WORKFLOW = Workflow("fairness.yml")


def test_the_workflow_is_a_github_actions_workflow():
    flow = WORKFLOW.document
    triggers = flow.get("on", flow.get(True))  # YAML 1.1 reads the key `on` as true
    assert "pull_request" in triggers and "workflow_dispatch" in triggers
    for job in flow["jobs"].values():
        assert job["runs-on"] and job["steps"]
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step
    uploads = [s for s in flow["jobs"]["gate"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert uploads and uploads[0]["if"] == "always()"
    assert flow["jobs"]["gate"]["permissions"]["pull-requests"] == "write"
    assert "--snapshot-update" in WORKFLOW.step("rebaseline", "Re-record")["run"]


def _workflow_env(path: Path, suite: str, model: str) -> dict[str, str]:
    return WORKFLOW.env(path, "42", FAIRNESS_SUITE=suite, FAIRNESS_MODEL=model, OUT="out")


@pytest.mark.heavy(15)
def test_the_workflow_steps_build_the_summary_annotations_comment_and_artefacts(pytester, mixed):
    summary = pytester.path / "summary.md"
    env = _workflow_env(pytester.path, "mixed.yaml", MIXED_MODEL.split("=", 1)[1])
    recorded = WORKFLOW.run("rebaseline", "Re-record", pytester.path, env)  # a release branch's baselines
    assert list((pytester.path / "baselines").rglob("*")), recorded.stdout[-2000:] + recorded.stderr[-2000:]
    run = WORKFLOW.run("gate", "Run the fairness suite", pytester.path, env)
    assert run.returncode == 1, run.stdout[-3000:]  # the gate fails: the workflow's last step says so
    assert "requests" not in run.stdout  # xdist, default progress (a line per 5 s): quick checks print none
    out = pytester.path / "out"
    assert {"report.json", "report.md", "junit.xml"} <= {p.name for p in out.iterdir()}
    assert list((out / "plots").glob("*.png")) and (out / "history" / "history.jsonl").exists()

    assert WORKFLOW.run("gate", "Job summary", pytester.path, env).returncode == 0
    text = summary.read_text()
    assert "**Baselines**" in text and "| check | baseline → this run | difference | adjusted p | verdict |" in text
    assert re.search(r"\| `mixed::fails` \| [\d.]+ → [\d.]+ \|", text)

    notes = WORKFLOW.run("gate", "Annotations", pytester.path, env)
    assert notes.returncode == 0
    commands = notes.stdout.splitlines()
    lines = (pytester.path / "mixed.yaml").read_text().splitlines()
    by_check = {re.search(r"title=fairness mixed%3A%3A(\w+)", c).group(1): c for c in commands}
    # its checks are too small to pair: what their thresholds decided is named so, a pass among them a warning too
    assert set(by_check) == {"fails", "passes", "undecided", "unserved"}
    assert "::BEYOND THRESHOLD: " in by_check["fails"] and "::WITHIN THRESHOLD: " in by_check["passes"]
    for check, command in by_check.items():
        line = int(re.search(r",line=(\d+),", command).group(1))
        assert lines[line - 1].strip() == f"- id: {check}"
        assert command.startswith("::error file=mixed.yaml," if check == "fails" else "::warning file=mixed.yaml,")

    assert WORKFLOW.run("gate", "Build the pull-request comment", pytester.path, env).returncode == 0
    comment = (out / "comment.md").read_text()
    assert comment.startswith(ci_workflow.MARKER + "\n## Fairness report")
    assert comment.rstrip().endswith("(https://github.example/team/model/actions/runs/42)")
    assert (out / "fairness.html").stat().st_size > 0  # the evidence page, uploaded before the comment links it
    names = [s.get("name", "") for s in WORKFLOW.steps("gate")]
    assert names.index(WORKFLOW.step("gate", "Upload")["name"]) < names.index(
        WORKFLOW.step("gate", "Build the")["name"]
    )
    linked = WORKFLOW.run(
        "gate", "Build the pull-request comment", pytester.path, env | {"ARTIFACT_URL": "https://a/1"}
    )
    assert (
        linked.returncode == 0
        and "`fairness.html` in [the fairness-report artefact](https://a/1)" in (out / "comment.md").read_text()
    )
    shown = [c.replace("%25", "%") for c in by_check.values()]  # as GitHub shows them: the page's check and item
    assert all(re.search(r"evidence: fairness\.html#check=mixed%3A%3A\w+&item=\S+", c) for c in shown)
    assert (
        "gh api" in WORKFLOW.step("gate", "Post or update")["run"]
        and ci_workflow.MARKER in WORKFLOW.step("gate", "Post or update")["run"]
    )


@pytest.mark.heavy(15)
def test_the_workflows_pull_request_gate_passes_an_unchanged_model_from_the_cache_and_fails_a_planted_regression(
    pytester,
):
    pytester.makefile(".yaml", pr=pr_suite())
    release = _workflow_env(pytester.path, "pr.yaml", "synthetic:iat?bias=0.1")
    recorded = WORKFLOW.run("rebaseline", "Re-record", pytester.path, release)
    items = list((pytester.path / "baselines").rglob("*.items.tsv"))
    assert len(items) == 3, recorded.stdout[-2000:] + recorded.stderr[-2000:]

    unchanged = WORKFLOW.run("gate", "Run the fairness suite", pytester.path, release)
    assert unchanged.returncode == 0, unchanged.stdout[-3000:]
    report = json.loads((pytester.path / "out" / "report.json").read_text())
    assert sum(c["result"]["calls"]["calls"] for c in report["checks"]) == 0  # every answer from the release's cache
    assert {c["outcome"] for c in report["checks"]} == {"pass"}
    assert {c["baseline"]["paired"]["outcome"] for c in report["checks"]} == {"pass"}

    planted = _workflow_env(pytester.path, "pr.yaml", "synthetic:iat?bias=0.9")
    regressed = WORKFLOW.run("gate", "Run the fairness suite", pytester.path, planted)
    assert regressed.returncode == 1, regressed.stdout[-3000:]
    assert WORKFLOW.run("gate", "Build the pull-request comment", pytester.path, planted).returncode == 0
    comment = (pytester.path / "out" / "comment.md").read_text()
    assert "pr::islam" in comment and "REGRESSED" in comment.upper()


def test_a_long_report_is_cut_to_githubs_comment_limit():
    body = ci_workflow.comment("x" * 100_000, run_url="https://r")
    assert (
        len(body) <= ci_workflow.COMMENT_LIMIT
        and body.startswith(ci_workflow.MARKER)
        and body.rstrip().endswith("(https://r)")
    )
