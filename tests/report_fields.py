"""Reports compared field by field, but for what differs between any two runs: timing, a shard's own section, and
what the run asked before its first check (each shard probes its model and checks its own replay)."""

import re
from typing import Any

#: The keys of a run's accounting, summed in ``totals`` (``models.runner.COUNTERS`` as the JSON writes them).
_BEFORE = ("calls", "cache_hits", "retries", "prompt_tokens", "completion_tokens", "usd", "unpriced", "batched")


def untimed(value: Any) -> Any:
    """A JSON report without its timing (model seconds), a shard's own section, and what its pre-flight and replay
    check asked (taken out of its totals too)."""
    if isinstance(value, dict) and isinstance(value.get("run"), dict) and "totals" in value:
        before = value["run"].get("preflight", {})
        totals = {k: (v - before.get(k, 0) if k in _BEFORE else v) for k, v in value["totals"].items()}
        run = {k: v for k, v in value["run"].items() if k != "preflight"}
        value = {**{k: v for k, v in value.items() if k != "replay"}, "totals": totals, "run": run}
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in ("seconds", "shard")}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def untimed_markdown(text: str) -> str:
    """A Markdown report without its model time, and without what it asked before its first check."""
    text = re.sub(r"[\d.]+ s of model time", "_ s of model time", text)
    text = re.sub(
        r"\*\*Accounting\*\*: \d+ model calls( \(\d+ before the first check[^)]*\))?", "**Accounting**:", text
    )
    text = re.sub(r"\d+ prompt \+ \d+ completion tokens", "_ tokens", text)
    return "\n".join(
        line for line in text.splitlines() if not line.startswith(("**Replay", "| before the first check |"))
    )
