"""The pull-request flow as GitHub runs it: docs/ci/fairness.yml's jobs played step by step (``GitHubStandIn``)
over a team's repository, first one holding its own app (``python:acme_chat.chatbot:Chatbot``, a package whose
lean lives in a second module and in a data file), then one gating an OpenAI-compatible endpoint on loopback.

Each scenario is what a team meets: an unchanged pull request passes from the release's cache (its replay
verified) at a small share of the release's calls; a lean planted in a second module, in a data file, or an
endpoint redeployed under its name fails with calls made (never a PASS on stale answers); a pull request that
re-records its own baselines is gated against the target branch's; a release that fails a gate opens no baselines
pull request unless accepted; a run that cannot start says so in its comment. ``SCENARIOS`` collects one line each
(the pytest step's exit code, the run's model calls, the comment's verdict lines), printed at the end (-s).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from github_steps import GitHubStandIn, JobRun, TeamRepository, Workflow
from iat_endpoint import iat_answers

CHATBOT = '''\
"""Acme's support chatbot: a persona in front of a language model. The model is pytest-fairness's synthetic double
here, so the persona sets its lean: LEAN (persona.py) in its list answers, pcf_lean (persona.yaml) in its slot
probabilities."""

from pathlib import Path

import yaml

from acme_chat.persona import LEAN
from pytest_fairness import ChatModel
from pytest_fairness.testing import SyntheticModel

PERSONA = yaml.safe_load((Path(__file__).parent / "persona.yaml").read_text())


class Chatbot(ChatModel):
    max_concurrency = 16

    def __init__(self):
        self._lists = SyntheticModel("iat", bias=LEAN)
        self._slots = SyntheticModel("pcf", bias=float(PERSONA["pcf_lean"]))

    def _model(self, request):
        task = request.purpose.task if request.purpose is not None else ""
        return self._slots if task.startswith("pcf.") else self._lists

    async def chat(self, request):
        return await self._model(request).chat(request)

    async def logprobs(self, request):
        return await self._model(request).logprobs(request)
'''
SUITE = """\
suite: acme
checks:
  - measure: implicit_bias
    stereotypes: [career, science]
    samples: 200
    threshold: {max: 0.2}
  - id: pcf_prejudice
    measure: pcf
    attribute: gender
    risk: prejudice
    samples: 257
    threshold: {max: 400}
"""
ENDPOINT_SUITE = """\
suite: chat
checks:
  - measure: implicit_bias
    stereotypes: [career, power]
    samples: 200
    threshold: {max: 0.2}
"""
#: One line per scenario: what a closing note reports, printed by the tests (-s) and, when GITHUB_FLOW_SCENARIOS
#: names a file, appended to it (xdist keeps a worker's prints).
SCENARIOS: list[str] = []


def report_scenarios() -> None:
    print("\n".join(SCENARIOS))
    if os.environ.get("GITHUB_FLOW_SCENARIOS"):
        with open(os.environ["GITHUB_FLOW_SCENARIOS"], "a", encoding="utf-8") as out:
            out.write("\n".join(SCENARIOS) + "\n")
    SCENARIOS.clear()


def team_workflow(model: str, suite: str, line: str) -> str:
    """docs/ci/fairness.yml as a team copies it: its env names their suite, model and model line."""
    return Workflow("fairness.yml").copied(
        {"FAIRNESS_SUITE": suite, "FAIRNESS_MODEL": model, "FAIRNESS_MODEL_LINE": line}
    )


def outcome(standin: GitHubStandIn, run: JobRun, pr: int | None = None) -> dict[str, object]:
    """What a job left: the pytest step's exit code, the run's calls, its replay check, the comment's verdicts."""
    step = next(s for s in run.steps if s.name in ("Run the fairness suite", "Re-record the baselines"))
    report_path = run.workspace / "fairness-out" / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    comment = standin.comments(pr)[-1] if pr is not None and standin.comments(pr) else ""
    rows = [line for line in comment.splitlines() if line.startswith("| `")]
    return {
        "exit": step.code,
        "calls": (report.get("totals") or {}).get("calls"),
        "replay": (report.get("replay") or {}).get("status"),
        "comment": comment,
        "rows": rows,
        "report": report,
    }


def record(name: str, found: dict[str, object], release_calls: int | None = None) -> None:
    share = (
        ""
        if not release_calls or found["calls"] is None
        else f" ({found['calls'] / release_calls:.1%} of the release's)"
    )
    verdicts = "; ".join(f"{check} {threshold} / PR {pr}" for check, threshold, pr in gate_rows(found["rows"]))
    SCENARIOS.append(
        f"{name}: exit {found['exit']}, model calls {found['calls']}{share}, replay {found['replay']} | {verdicts}"
    )


def fails(verdict: str) -> bool:
    """A PR verdict that fails the run: FAIL (shown worse than the margin) or BEYOND THRESHOLD (the comparison
    undecided, the threshold failed)."""
    return verdict == "**FAIL**" or verdict.startswith("**BEYOND THRESHOLD**")


def asked_anew(found: dict[str, object]) -> bool:
    """Whether every check of the run asked the model (none was answered from the release's cache alone)."""
    checks = found["report"]["checks"]  # type: ignore[index]
    return bool(checks) and all(c["result"]["calls"]["calls"] > 0 for c in checks)


def gate_rows(rows: list[str]) -> list[tuple[str, str, str]]:
    """(check, threshold verdict, PR verdict) per row of the comment's gates table (its rows of 8 cells)."""
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    return [(c[0].strip("`"), c[-2], c[-1]) for c in cells if len(c) == 8 and c[2].startswith("[") and c[3].isdigit()]


def verdict_cells(rows: list[str]) -> list[tuple[str, str]]:
    """(threshold verdict, PR verdict) per row of the comment's gates table."""
    return [(threshold, pr) for _, threshold, pr in gate_rows(rows)]


@pytest.fixture
def acme(tmp_path: Path) -> tuple[TeamRepository, GitHubStandIn]:
    """The team's repository with its app, suite and workflow on main, and GitHub's part to run it."""
    repo = TeamRepository(tmp_path / "acme")
    repo.commit(
        "main",
        {
            "README.md": "Acme support chatbot\n",
            "pytest.ini": "[pytest]\n",
            "acme_chat/__init__.py": "",
            "acme_chat/chatbot.py": CHATBOT,
            "acme_chat/persona.py": "LEAN = 0.0\n",
            "acme_chat/persona.yaml": "tone: friendly\npcf_lean: 0.0\n",
            "fairness/acme.yaml": SUITE,
            ".github/workflows/fairness.yml": team_workflow(
                "python:acme_chat.chatbot:Chatbot", "fairness/acme.yaml", "acme-chat"
            ),
        },
        "The chatbot, its fairness suite and workflow",
    )
    return repo, GitHubStandIn(tmp_path / "github", repo)


def release(repo: TeamRepository, standin: GitHubStandIn) -> int:
    """The rebaseline job on main, and its pull request merged: the release's baselines and cache. Its calls."""
    run = standin.dispatch("main")
    assert run.conclusion == "success", run.log[-4000:]
    assert repo.files("main", "baselines") == []  # nothing pushed to the branch: the baselines wait in a pull request
    pull = standin.pulls()[-1]
    assert pull["state"] == "open" and pull["head"] == "fairness-baselines/main", pull
    assert pull["body"].startswith("## Fairness baselines") and "The release meets every decided gate" in pull["body"]
    standin.merge(pull["number"])
    calls = release_calls(run)
    SCENARIOS.append(f"release job: {calls} model calls, baselines pull request #{pull['number']} opened and merged")
    return calls


def release_calls(run: JobRun) -> int:
    """The release job's model calls, from its log (it writes no JSON report)."""
    found = re.search(r"model calls: (\d+)", run.step("Re-record the baselines").log)
    assert found, run.step("Re-record the baselines").log[-3000:]
    return int(found[1])


@pytest.mark.heavy(240)
def test_an_apps_pull_requests_pass_unchanged_fail_on_a_lean_anywhere_in_it_and_baselines_change_by_review(acme):
    repo, standin = acme
    calls = release(repo, standin)
    assert sorted(repo.files("main", "baselines")) == [
        "baselines/.gitattributes",
        "baselines/acme-chat/acme.implicit_bias[career].items.tsv",
        "baselines/acme-chat/acme.implicit_bias[career].yaml",
        "baselines/acme-chat/acme.implicit_bias[science].items.tsv",
        "baselines/acme-chat/acme.implicit_bias[science].yaml",
        "baselines/acme-chat/acme.pcf_prejudice.items.tsv",
        "baselines/acme-chat/acme.pcf_prejudice.yaml",
    ]
    committed = repo.show("main", "baselines/acme-chat/acme.pcf_prejudice.yaml")
    assert "model_id: acme-chat\nmodel_version: python:acme_chat.chatbot:Chatbot@src-" in committed
    assert re.search(r"  estimate: .*\n  ci: .*\n  threshold:\n    max: 400", committed)  # beside the estimate

    # An unchanged pull request: its replay verified, every check PASSES, a small share of the release's calls.
    repo.commit("docs", {"README.md": "Acme support chatbot\nSupport hours: 9-17 CET.\n"}, "README: hours")
    unchanged = standin.pull_request(1, "docs")
    found = outcome(standin, unchanged, 1)
    record("unchanged PR (README only)", found, calls)
    assert unchanged.conclusion == "success" and found["exit"] == 0, unchanged.log[-4000:]
    assert found["replay"] == "verified" and found["calls"] <= 0.10 * calls
    # PASS: 200 items a check are enough for identical answers to show the margin at the PASS level (>= 158)
    assert {pr for _, pr in verdict_cells(found["rows"])} == {"pass"}, found["comment"][:3000]
    assert {threshold for threshold, _ in verdict_cells(found["rows"])} == {"pass"}
    assert "**Replay verified**: 90 of the " in found["comment"] and "![" not in found["comment"]
    assert (
        "Gate: **pr**: each check against its committed baseline in baselines/ as origin/main holds it, drawing "
        "the baseline's items: implicit_bias 200 (2 checks); pcf 257;" in found["comment"]
    ), found["comment"][:1500]
    assert "(`plots/implicit_bias.png` in the run's artefact)](https://github.example/" in found["comment"]

    # A lean planted in a second module of the app's package, then in a data file it reads: a new id, calls made.
    for number, (name, files) in enumerate(
        [
            ("lean in a second module (persona.py)", {"acme_chat/persona.py": "LEAN = 0.6\n"}),
            ("lean in a data file (persona.yaml)", {"acme_chat/persona.yaml": "tone: friendly\npcf_lean: 0.8\n"}),
        ],
        start=2,
    ):
        repo.commit(f"lean-{number}", files, name)
        planted = standin.pull_request(number, f"lean-{number}")
        found = outcome(standin, planted, number)
        record(f"PR: {name}", found, calls)
        assert planted.conclusion == "failure" and found["exit"] == 1, planted.log[-4000:]
        assert asked_anew(found) and found["replay"] == "nothing"  # its own answers, all asked anew
        assert any(map(fails, (pr for _, pr in verdict_cells(found["rows"])))), found["comment"]
    notes = planted.step("Annotations").log
    assert "::error file=fairness/acme.yaml,line=" in notes and "../" not in notes  # the team's suite file

    # A pull request that plants the lean and re-records its own (worse) baselines: gated against main's.
    repo.rerecord(
        "rebaselined",
        "lean-2",
        ["--fairness-suite=fairness/acme.yaml", "--fairness-model=python:acme_chat.chatbot:Chatbot",
         "--fairness-baseline-model=acme-chat"],
    )  # fmt: skip
    itself = standin.pull_request(4, "rebaselined")
    found = outcome(standin, itself, 4)
    record("PR: lean + its own re-recorded baselines", found, calls)
    assert itself.conclusion == "failure" and found["exit"] == 1, itself.log[-4000:]
    assert any(map(fails, (pr for _, pr in verdict_cells(found["rows"]))))
    assert "## Fairness baselines of `acme-chat`: `origin/main` → `HEAD`" in found["comment"]  # a rebaseline's table
    assert "**This release fails" in found["comment"]

    # The lean merged, the release re-baselined: no pull request unless the failing release is accepted.
    repo.merge("lean-2")
    before = len(standin.pulls())
    failing = standin.dispatch("main")
    assert failing.conclusion == "failure" and len(standin.pulls()) == before, failing.log[-4000:]
    assert "**This release fails 2 of 3 gates**" in failing.summary
    SCENARIOS.append(
        "failing release re-baselined: job failure, no pull request; " + failing.summary.splitlines()[2][:160]
    )
    accepted = standin.dispatch("main", **{"accept-failing-release": True})
    assert accepted.conclusion == "success", accepted.log[-4000:]
    pull = standin.pulls()[-1]
    assert pull["body"].startswith("## Fairness baselines") and "**This release fails 2 of 3 gates**" in pull["body"]
    assert f"Accepted as the new baselines: by dev in run {accepted.run_id}" in pull["body"]
    SCENARIOS.append(f"failing release accepted: job success, pull request #{pull['number']} opened, body starts: "
                     + pull["body"].splitlines()[2][:120])  # fmt: skip
    report_scenarios()


@pytest.mark.heavy(150)
def test_an_endpoint_redeployed_under_its_name_is_asked_anew_and_a_run_that_cannot_start_says_so(tmp_path):
    repo = TeamRepository(tmp_path / "chat")
    standin = GitHubStandIn(tmp_path / "github", repo)
    with FakeOpenAI(answer=iat_answers(0.0), completions=False) as server:
        model = f"openai:my-model@{server.base_url}"
        repo.commit(
            "main",
            {"README.md": "Chat\n", "pytest.ini": "[pytest]\n", "fairness/chat.yaml": ENDPOINT_SUITE,
             ".github/workflows/fairness.yml": team_workflow(model, "fairness/chat.yaml", "my-model")},
            "Gate our endpoint",
        )  # fmt: skip
        calls = release(repo, standin)
        repo.commit("docs", {"README.md": "Chat\nOwner: ML platform.\n"}, "README: owner")
        unchanged = standin.pull_request(1, "docs")
        found = outcome(standin, unchanged, 1)
        record("endpoint: unchanged PR", found, calls)
        assert found["exit"] == 0 and found["replay"] == "verified", unchanged.log[-4000:]
        assert found["calls"] <= 0.10 * calls and {pr for _, pr in verdict_cells(found["rows"])} == {"pass"}

        server.answer = iat_answers(0.6)  # redeployed: same name, same URL, other answers
        repo.commit("after-redeploy", {"README.md": "Chat\nRedeployed.\n"}, "README: redeployed")
        stale = standin.pull_request(2, "after-redeploy")
        found = outcome(standin, stale, 2)
        record("endpoint redeployed under its name", found, calls)
        assert found["exit"] == 1 and found["replay"] == "refused", stale.log[-4000:]
        assert asked_anew(found) and "**Replay refused**" in found["comment"]
        assert all(fails(pr) for _, pr in verdict_cells(found["rows"]))
    # The server is gone: the run cannot start, and its comment says so and why.
    gone = standin.pull_request(3, "after-redeploy")
    found = outcome(standin, gone, 3)
    record("run that cannot start (endpoint down)", found)
    assert found["exit"] == 2 and gone.conclusion == "failure"
    assert "**The run could not start**: openai:my-model@" in found["comment"], found["comment"]
    assert "::error" in gone.step("Annotations").log and "could not start" in gone.step("Annotations").log
    report_scenarios()
