"""Four shards as four CI jobs would run them: separate pytest processes, working folders, caches and environments,
against the stub OpenAI server; merged, they equal one process running the whole suite, and their merged cache
replays the run without a call."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, measure_requests
from harm_judges import chatbot_and_judge
from report_fields import untimed

from pytest_fairness.cli.main import main

#: Four checks of four subjects: four sharing groups, so four shards get one each.
SUITE = "suite: fourway\nchecks:\n" + "".join(
    f"  - id: harm_{who}\n    measure: net_harm\n    comparison: {who}\n    samples: 4\n    max_tokens: 40\n"
    "    threshold: {max: 0.5}\n"
    for who in ("gender", "asian", "black", "hispanic")
)


def job(folder: Path, server: FakeOpenAI, *extra: str) -> subprocess.Popen:
    """A CI job: its own checkout (the suite file), cache, report and environment, started as a process."""
    folder.mkdir(exist_ok=True)
    (folder / "fourway.yaml").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "FAIRNESS"))}
    env |= {"HOME": str(folder), "TMPDIR": str(folder), "OPENAI_API_KEY": "sk-fake"}
    args = ["-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-q"]
    files = ["--fairness-report=report.json", "--fairness-markdown=report.md", "--fairness-cache=cache.sqlite"]
    model = f"--fairness-model=openai:fake@{server.base_url}"
    command = [sys.executable, "-m", "pytest", *args, "--fairness-suite=fourway.yaml", model, *files, *extra]
    return subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finished(process: subprocess.Popen) -> int:
    out, _ = process.communicate(timeout=300)
    assert process.returncode in (0, 1), out
    return process.returncode


@pytest.mark.heavy(60)
def test_four_shard_processes_merged_equal_one_process(tmp_path):
    with FakeOpenAI(answer=chatbot_and_judge) as server:
        jobs = [job(tmp_path / f"job{i}", server, f"--fairness-shard={i}/4") for i in (1, 2, 3, 4)]
        one = job(tmp_path / "whole", server)
        assert [finished(p) for p in jobs] == [0, 0, 0, 0]
        status = finished(one)
        reports = [str(tmp_path / f"job{i}" / "report.json") for i in (1, 2, 3, 4)]
        assert all(json.loads(Path(r).read_text())["shard"]["checks"] for r in reports), "one check per shard"
        merged = tmp_path / "merged"
        files = ["--report", str(merged / "r.json"), "--markdown", str(merged / "r.md")]
        assert main(["merge", *reports, *files]) == status
        whole = json.loads((tmp_path / "whole" / "report.json").read_text())
        together = json.loads((merged / "r.json").read_text())
        # The results are one process's; the accounting is what the shards paid: a request that two shards'
        # checks both send is a cache hit in one process and a call in each shard (a restored cache avoids it).
        assert unaccounted(together) == unaccounted(whole)
        for mine, its in zip(together["checks"], whole["checks"], strict=True):
            answered = (mine["result"]["calls"], its["result"]["calls"])
            assert len({c["calls"] + c["cache_hits"] for c in answered}) == 1
        assert results_of((merged / "r.md").read_text()) == results_of((tmp_path / "whole/report.md").read_text())
        assert whole["totals"]["calls"] > 0 and any(c["result"]["summary"]["mean"] for c in whole["checks"])

        caches = [str(tmp_path / f"job{i}" / "cache.sqlite") for i in (1, 2, 3, 4)]
        assert main(["cache", "merge", "--into", str(merged / "cache.sqlite"), *caches]) == 0
        sent = len(measure_requests(server))
        replay = tmp_path / "replay"
        replay.mkdir()
        (replay / "cache.sqlite").write_bytes((merged / "cache.sqlite").read_bytes())
        again = job(replay, server, "--fairness-cache-mode=replay")
        assert finished(again) == status and len(measure_requests(server)) == sent  # the replay cost nothing
    replayed = json.loads((replay / "report.json").read_text())["checks"]
    assert [c["result"]["summary"] for c in replayed] == [c["result"]["summary"] for c in whole["checks"]]


def unaccounted(report: dict) -> dict:
    """A report without timing, the shard section, and the calls each check and the run paid."""
    out = untimed(report)
    out.pop("totals")
    for check in out["checks"]:
        check["result"].pop("calls")
    return out


def results_of(markdown: str) -> str:
    """A Markdown report up to its accounting."""
    return markdown.split("**Accounting**")[0]
