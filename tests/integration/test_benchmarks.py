"""Every command benchmarks/README.md documents runs at HEAD: each at a tiny size, in a subprocess, to exit 0.

A benchmark's figures take minutes to hours; what can break unnoticed is the script itself (an import that moved,
an option renamed). The table below gives each documented script a tiny run; a script the README names without
an entry here fails ``test_every_documented_benchmark_has_a_tiny_run``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO as ROOT

README = ROOT / "benchmarks" / "README.md"
#: The gender suite's main job, as the README runs it, on one cheap check of the synthetic double.
MAIN_JOB = "pytest --fairness-suite=gender -p no:cacheprovider -n 2 --dist loadgroup --fairness-sequential -v"
TINY_SUITE = "suite: tiny\nchecks:\n  - measure: implicit_bias\n    stereotype: career\n    threshold: {max: 0.2}\n"
#: Each documented script and a tiny run of it ("{checkout}": this checkout, as the "other" one; "{suite}": a
#: one-check suite file).
TINY: dict[str, list[str]] = {
    "http_throughput.py": ["--latency", "0.001", "--rounds", "1", "--scale", "0.01"],
    "cache_warm.py": ["--suite", "{suite}", "--model", "synthetic:iat", "--rounds", "1"],
    "pcf_grid.py": ["--occupations", "1", "--chunk", "1", "--templates", "1"],
    "batched_scoring.py": ["--rounds", "1"],
    "rate_limits.py": ["--rate", "500", "--latency", "0.001", "--samples", "4", "--rounds", "1"],
    "chat_generation.py": ["--rounds", "1", "--tokens", "2", "--only", "start-up"],
    "pcf_http.py": ["--occupations", "2", "--templates", "1", "--latency", "0", "--rounds", "1"],
    "slow_backend.py": ["--scale", "200", "--rounds", "1", "-k", "decision_bias and career"],
    "plugin_overhead.py": ["{checkout}", "--rounds", "1"],
    "harm_memory.py": ["--scales", "0.002", "--biases", "0.3"],
    "plan_speed.py": ["{checkout}", "--rounds", "1", "-k", "implicit_bias and career"],
    "shard_balance.py": ["--profile", "quick", "--shards", "2"],
    "paired_gate.py": ["limits"],
    "harm_gate.py": ["--runs", "3", "--screens", "1", "--scale", "0.01"],
    "axes_gate.py": ["stream", "2"],
}
#: More tiny runs of a script whose README shows several commands.
ALSO: list[tuple[str, list[str]]] = [
    ("paired_gate.py", ["power", "--scale", "0.01"]),
    ("axes_gate.py", ["run", "fair", "1", "40"]),
    ("harm_gate.py", ["--runs", "2", "--parts", "reference", "--scale", "0.01", "--reference-spread", "0.011"]),
]


def documented() -> set[str]:
    """The scripts benchmarks/README.md runs (``python benchmarks/NAME.py``)."""
    return set(re.findall(r"python benchmarks/(\w+\.py)", README.read_text()))


def test_every_documented_benchmark_has_a_tiny_run():
    assert documented() <= set(TINY), sorted(documented() - set(TINY))
    assert MAIN_JOB in README.read_text()


def _env() -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OPENAI_", "FAIRNESS_"))}
    return {**keep, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OMP_NUM_THREADS": "1"}


@pytest.mark.heavy(40)
@pytest.mark.parametrize(("script", "args"), [*TINY.items(), *ALSO], ids=lambda x: x if isinstance(x, str) else "")
def test_a_documented_benchmark_runs_at_a_tiny_size(script: str, args: list[str], tmp_path: Path):
    suite = tmp_path / "tiny.yaml"
    suite.write_text(TINY_SUITE)
    argv = [a.replace("{checkout}", str(ROOT)).replace("{suite}", str(suite)) for a in args]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *argv],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    assert done.stdout.strip()


@pytest.mark.heavy(40)
def test_the_main_jobs_command_runs_on_one_check(tmp_path: Path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    command = [*MAIN_JOB.split(), "--fairness-model=synthetic:iat?bias=0", "-k", "implicit_bias and career"]
    done = subprocess.run(
        [sys.executable, "-m", *command],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
