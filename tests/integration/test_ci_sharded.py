"""The sharded CI kit (docs/ci/fairness-sharded.yml) on the synthetic model: its shard jobs' steps merged into the
report one job would make; and its jobs played as GitHub runs them over a team's repository (``GitHubStandIn``): a
pull request gated against the target branch's baselines even when it commits its own, a release re-recorded shard
by shard into one baselines pull request whose body is the diff table, a failing release proposing nothing unless
accepted."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from github_steps import GitHubStandIn, JobRun, TeamRepository, Workflow, git, runner_env
from report_fields import untimed

from pytest_fairness.report import ci_workflow

WORKFLOW = Workflow("fairness-sharded.yml")
MODEL = "synthetic:iat?bias=0.3"
LINE = "team"
#: The steps the sharded workflow's jobs share with fairness.yml's, word for word (one rule, one place).
SHARED = {
    "merge": ("gate", ["Baseline changes in this pull request", "Post or update the sticky comment"]),
    "rebaseline": (
        "rebaseline",
        ["The baseline-diff table", "Open or update the baselines pull request", "A release that fails a gate"],
    ),
}


def test_the_sharded_workflow_is_a_matrix_of_shards_then_a_merge_or_a_rebaseline_job():
    flow = WORKFLOW.document
    shard, merge, rebaseline = (flow["jobs"][name] for name in ("shard", "merge", "rebaseline"))
    assert shard["strategy"]["matrix"]["shard"] == [1, 2, 3, 4] and shard["strategy"]["fail-fast"] is False
    for step in ("Run this shard against", "Re-record this shard's baselines"):
        assert WORKFLOW.step("shard", step)["env"] == {
            "SHARD": "${{ matrix.shard }}",
            "SHARDS": "${{ strategy.job-total }}",
        }
    pr_run = WORKFLOW.step("shard", "Run this shard against")["run"]
    assert "--fairness-gate=pr" in pr_run and '--fairness-baseline-ref="origin/$GITHUB_BASE_REF"' in pr_run
    assert "--snapshot-update" in WORKFLOW.step("shard", "Re-record this shard's baselines")["run"]
    assert merge["needs"] == "shard" and "cancelled()" in merge["if"] and "pull_request" in merge["if"]
    assert merge["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert rebaseline["needs"] == "shard" and rebaseline["if"] == "github.event_name == 'workflow_dispatch'"
    assert rebaseline["permissions"] == {"contents": "write", "pull-requests": "write"}
    for job in flow["jobs"].values():
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step
            assert "git push" not in step.get("run", "")  # the baselines branch is pushed by ci baselines-pr only
    assert [s["name"] for s in merge["steps"] if "name" in s][-1] == "Gate"
    names = [s.get("name", s.get("uses")) for s in merge["steps"]]
    assert names.index("Upload JSON, JUnit, Markdown and plots") < names.index("Job summary")
    single = Workflow("fairness.yml")
    for job, (theirs, steps) in SHARED.items():
        for name in steps:
            assert WORKFLOW.step(job, name)["run"] == single.step(theirs, name)["run"], name


@pytest.mark.heavy(30)
def test_the_sharded_workflow_steps_merge_two_shard_jobs_into_one_runs_report(pytester):
    env = WORKFLOW.env(
        pytester.path, "7", FAIRNESS_SUITE="religion", FAIRNESS_MODEL=MODEL, FAIRNESS_MODEL_LINE=LINE,
        OUT="out", GITHUB_BASE_REF="main",
    )  # fmt: skip
    repo = pytester.path / "repo"  # the checkout every job starts from: baselines recorded on the target branch
    repo.mkdir()
    (repo / "pytest.ini").write_text("[pytest]\n")
    run = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider"]
    run += ["--fairness-suite=religion", f"--fairness-model={MODEL}", f"--fairness-baseline-model={LINE}"]
    subprocess.run(
        [*run, "--fairness-baselines", "--snapshot-update", "--fairness-profile=quick", "--fairness-seed=1"],
        cwd=repo, env=env, capture_output=True, check=False,
    )  # fmt: skip
    assert list((repo / "baselines").rglob("*.yaml"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-q", "-m", "baselines")
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")  # what the fetch step leaves
    whole = pytester.path / "whole"  # the same run as one job, for the comparison
    shutil.copytree(repo, whole)
    gate = ["--fairness-gate=pr", "--fairness-baseline-ref=origin/main"]
    one = subprocess.run(
        [*run, *gate, "--fairness-report=one.json", "--junitxml=one.xml"],
        cwd=whole, env=env, capture_output=True, check=False,
    )  # fmt: skip

    merge = pytester.path / "merge"
    for index in (1, 2):
        job = pytester.path / f"job{index}"
        shutil.copytree(repo, job)
        shard_env = {**env, "SHARD": str(index), "SHARDS": "2"}
        assert WORKFLOW.run("shard", "This shard's cache", job, shard_env).returncode == 0
        ran = WORKFLOW.run("shard", "Run this shard against", job, shard_env)
        assert ran.returncode == 0, ran.stdout[-2000:]  # it ran: the outcomes are the merge's
        shutil.copytree(job / "out", merge / "shards" / f"fairness-shard-{index}")

    decided = WORKFLOW.run("merge", "Merge the shards into", merge, env)
    assert decided.returncode == one.returncode, decided.stderr
    merged = json.loads((merge / "out" / "report.json").read_text())
    assert merged["settings"]["gate"] == "pr"
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


#: 160 items a check: enough to pair a pull request with its baseline (issue 46's margin needs >= 158).
SUITE = """\
suite: team
checks:
  - measure: implicit_bias
    stereotypes: [career, science]
    samples: 160
    threshold: {max: 0.2}
"""
TEAM_MODEL = "synthetic:iat?bias=0"
LEANING = "synthetic:iat?bias=0.6"


def team_workflow(model: str) -> str:
    """The sharded workflow as a team copies it: their suite, model and line, two shards."""
    return WORKFLOW.copied(
        {"FAIRNESS_SUITE": "fairness/team.yaml", "FAIRNESS_MODEL": model, "FAIRNESS_MODEL_LINE": LINE},
        {"shard: [1, 2, 3, 4]": "shard: [1, 2]"},
    )


def shards_of(run: JobRun) -> list[JobRun]:
    shards = [job for job in run.earlier if job.job == "shard"]
    assert [job.conclusion for job in shards] == ["success", "success"], "\n".join(j.log[-3000:] for j in shards)
    return shards


def check_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| `team::")]


@pytest.mark.heavy(120)
def test_sharded_jobs_gate_a_pull_request_on_the_targets_baselines_and_re_baseline_through_a_pull_request(tmp_path):
    repo = TeamRepository(tmp_path / "team")
    standin = GitHubStandIn(tmp_path / "github", repo, workflow="fairness-sharded.yml")
    repo.commit(
        "main",
        {"README.md": "Team model\n", "pytest.ini": "[pytest]\n", "fairness/team.yaml": SUITE,
         ".github/workflows/fairness-sharded.yml": team_workflow(TEAM_MODEL)},
        "The model's fairness suite and sharded workflow",
    )  # fmt: skip

    # The release: each shard re-records its own checks, the rebaseline job joins them into one pull request.
    release = standin.dispatch("main")
    assert release.job == "rebaseline" and release.conclusion == "success", release.log[-4000:]
    written = [
        sorted(p.relative_to(job.artifacts / f"fairness-shard-{i}").as_posix()
               for p in (job.artifacts / f"fairness-shard-{i}" / "baselines").rglob("*.yaml"))
        for i, job in enumerate(shards_of(release), start=1)
    ]  # fmt: skip
    assert all(written) and not set(written[0]) & set(written[1])  # each shard's own checks, none twice
    assert repo.files("main", "baselines") == []  # never pushed to the branch
    pull = standin.pulls()[-1]
    assert pull["head"] == "fairness-baselines/main" and pull["base"] == "main" and pull["state"] == "open"
    assert pull["body"].startswith("## Fairness baselines") and "The release meets every decided gate" in pull["body"]
    assert len(check_rows(pull["body"])) == 2  # both shards' checks in the one table
    assert sorted(f for f in repo.files("fairness-baselines/main", "baselines") if f.endswith(".yaml")) == sorted(
        written[0] + written[1]
    )
    standin.merge(pull["number"])
    career = f"baselines/{LINE}/team.implicit_bias[career].yaml"
    committed = repo.show("main", career)

    # A pull request that plants a lean and commits its own re-recorded (worse) baselines: gated against main's.
    repo.commit("lean", {".github/workflows/fairness-sharded.yml": team_workflow(LEANING)}, "A leaning model")
    repo.rerecord(
        "rebaselined", "lean", ["--fairness-suite=fairness/team.yaml", f"--fairness-model={LEANING}",
                                f"--fairness-baseline-model={LINE}"],
    )  # fmt: skip
    itself = standin.pull_request(1, "rebaselined")
    shards_of(itself)
    assert itself.job == "merge" and itself.conclusion == "failure", itself.log[-4000:]
    assert itself.step("Merge the shards into").code == 1
    report = json.loads((itself.workspace / "fairness-out" / "report.json").read_text())
    assert report["settings"]["gate"] == "pr" and all(c["result"]["calls"]["calls"] > 0 for c in report["checks"])
    assert {c["outcome"] for c in report["checks"]} == {"fail"}, [c["outcome"] for c in report["checks"]]
    (comment,) = standin.comments(1)
    assert f"## Fairness baselines of `{LINE}`: `origin/main` → `HEAD`" in comment and "**This release fails" in comment
    assert "(https://github.example/acme/chatbot/actions/runs/" in comment  # the uploaded report linked
    calls = report["totals"]["calls"]

    # The lean merged, the release re-baselined: it fails its gates, so no pull request unless accepted.
    repo.merge("lean")
    before = len(standin.pulls())
    failing = standin.dispatch("main")
    shards_of(failing)
    assert failing.conclusion == "failure" and len(standin.pulls()) == before, failing.log[-4000:]
    assert "**This release fails 2 of 2 gates**" in failing.summary
    assert failing.step("Open or update the baselines pull request").outcome == "skipped"
    assert repo.show("main", career) == committed  # the failing release reached no branch
    accepted = standin.dispatch("main", **{"accept-failing-release": True})
    shards_of(accepted)
    assert accepted.conclusion == "success", accepted.log[-4000:]
    pull = standin.pulls()[-1]
    assert len(standin.pulls()) == before + 1 and pull["state"] == "open"
    assert pull["body"].startswith("## Fairness baselines") and "**This release fails 2 of 2 gates**" in pull["body"]
    assert f"Accepted as the new baselines: by dev in run {accepted.run_id}" in pull["body"]
    print(f"sharded: PR with its own worse baselines: exit 1, {calls} model calls; failing release: no PR; "
          f"accepted: PR #{pull['number']}")  # fmt: skip


@pytest.mark.heavy(5)
def test_baselines_pr_opens_one_pull_request_then_updates_its_body_and_never_pushes_the_branch(tmp_path):
    repo = TeamRepository(tmp_path / "team")
    repo.commit("main", {"README.md": "Team\n", "baselines/team/a.yaml": "estimate: 0.1\n"}, "start")
    standin = GitHubStandIn(tmp_path / "github", repo)
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(repo.origin), str(checkout))
    env = runner_env(standin.home) | {"GH_STAND_IN": str(standin.gh), "GITHUB_REF_NAME": "main"}
    propose = [sys.executable, "-m", "pytest_fairness", "ci", "baselines-pr", "--body-file", "body.md"]

    def proposed(estimate: str, body: str) -> subprocess.CompletedProcess[str]:
        (checkout / "baselines" / "team" / "a.yaml").write_text(f"estimate: {estimate}\n")
        (checkout / "body.md").write_text(body)
        return subprocess.run(propose, cwd=checkout, env=env, capture_output=True, text=True, check=False)

    unchanged = proposed("0.1", "same")
    assert unchanged.returncode == 0 and "did not change: no pull request" in unchanged.stdout
    assert standin.pulls() == []
    first = proposed("0.2", "first table")
    assert first.returncode == 0 and "Opened the baselines pull request" in first.stdout, first.stderr
    git(checkout, "checkout", "-q", "main")
    second = proposed("0.3", "second table")
    assert second.returncode == 0 and "Updated the baselines pull request #100" in second.stdout, second.stderr
    (pull,) = standin.pulls()
    assert (pull["head"], pull["base"], pull["body"]) == ("fairness-baselines/main", "main", "second table")
    assert repo.show("fairness-baselines/main", "baselines/team/a.yaml") == "estimate: 0.3\n"
    assert repo.show("main", "baselines/team/a.yaml") == "estimate: 0.1\n"  # the branch itself untouched


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
