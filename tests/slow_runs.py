"""A pytest process running one slow check against the fake server, for the tests that stop it midway."""

from __future__ import annotations

import sys
from pathlib import Path

from fake_openai import FakeOpenAI


def slow_run(folder: Path, server: FakeOpenAI, samples: int, concurrency: int) -> tuple[list[str], Path]:
    """Write a one-check implicit-bias suite of ``samples`` prompts and a bare pytest.ini into ``folder``: the
    command line of a pytest process that runs it against ``server``, and the response cache it fills."""
    (folder / "slow.yaml").write_text(
        "suite: slow\nchecks:\n  - measure: implicit_bias\n    stereotype: age\n"
        f"    samples: {samples}\n    threshold: {{max: 0.5}}\n"
    )
    (folder / "pytest.ini").write_text("[pytest]\n")
    cache = folder / "cache.sqlite"
    model = f"--fairness-model=openai:fake@{server.base_url}?concurrency={concurrency}"
    args = [sys.executable, "-m", "pytest", "--fairness-suite=slow.yaml", f"--fairness-cache={cache}", model]
    return [*args, "-p", "no:cacheprovider"], cache
