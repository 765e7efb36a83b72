"""Reports compared field by field, but for what differs between any two runs: timing (and a shard's own section)."""

import re
from typing import Any


def untimed(value: Any) -> Any:
    """A JSON report without its timing (model seconds) and without a shard's own section."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in ("seconds", "shard")}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def untimed_markdown(text: str) -> str:
    """A Markdown report without its model time."""
    return re.sub(r"[\d.]+ s of model time", "_ s of model time", text)
