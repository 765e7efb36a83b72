"""What servers say about their rate limits: Retry-After, ``retry-after-ms`` and OpenAI's ``x-ratelimit-*`` headers.

Pure readers of response headers (``models.ratelimit`` acts on them), and ``Credit``, the request budget
a server last reported, which paces requests while it runs low.
"""

from __future__ import annotations

import contextlib
import email.utils
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

MAX_WAIT_SECONDS = 120.0  # a pause longer than this from a header is treated as a garbled header


@dataclass(frozen=True)
class Credit:
    """The server's request budget as it last told it (``x-ratelimit-*-requests``): ``tokens`` requests left at
    ``at``, refilling at ``refill`` a second up to ``limit``, whole again at ``until``.

    Servers refill continuously (or slide a window), and the reset header says when the budget is *whole*:
    waiting for it after every exhausted budget would idle, so the refill rate paces requests instead.
    """

    tokens: float
    at: float
    refill: float
    limit: float
    until: float

    @classmethod
    def told(cls, remaining: int, reset: float, limit: int | None, now: float, others: int) -> Credit:
        """What a response says, read while ``others`` more requests of ours may have reached the server after it."""
        top = float(limit if limit is not None else remaining)
        refill = (top - remaining) / reset if reset > 0 and top > remaining else 0.0
        return cls(float(remaining - others), now, refill, top, now + reset)

    def available(self, now: float) -> float:
        if now >= self.until:
            return self.limit
        return min(self.limit, self.tokens + (now - self.at) * self.refill)

    def wait(self, now: float) -> float:
        """Seconds until one request may be sent (0: now)."""
        short = 1.0 - self.available(now)
        if short <= 0:
            return 0.0
        return min(short / self.refill, self.until - now) if self.refill > 0 else self.until - now

    def spend(self, now: float) -> Credit:
        return replace(self, tokens=self.available(now) - 1.0, at=now)


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration(text: str | None) -> float | None:
    """Seconds in a reset header: ``"1s"``, ``"6m0s"``, ``"20ms"``, ``"1h2m3.5s"`` (OpenAI's style) or a number."""
    if not text:
        return None
    text = text.strip()
    with contextlib.suppress(ValueError):
        return max(0.0, float(text))
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT[u] for n, u in parts)


def _lower(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Header names in lower case; litellm's ``llm_provider-`` prefix on the provider's own headers dropped."""
    out: dict[str, str] = {}
    for name, value in (headers or {}).items():
        name = name.lower()
        out[name.removeprefix("llm_provider-")] = str(value)
    return out


def tokens_reset(headers: Mapping[str, str] | None) -> float | None:
    """Seconds until ``x-ratelimit-reset-tokens`` when ``x-ratelimit-remaining-tokens`` says the token budget is
    spent. (How many tokens a request takes is not known here, so its refill cannot pace requests: they wait.)"""
    found = _lower(headers)
    with contextlib.suppress(KeyError, ValueError):
        if float(found["x-ratelimit-remaining-tokens"]) <= 0:
            wait = duration(found.get("x-ratelimit-reset-tokens"))
            return wait if wait is not None and wait <= MAX_WAIT_SECONDS else None
    return None


def request_budget(headers: Mapping[str, str] | None) -> tuple[int, float, int | None] | None:
    """``x-ratelimit-remaining-requests``, the seconds until ``x-ratelimit-reset-requests`` and
    ``x-ratelimit-limit-requests`` (None when not sent); None without the first two."""
    found = _lower(headers)
    reset = duration(found.get("x-ratelimit-reset-requests"))
    try:
        remaining = int(float(found["x-ratelimit-remaining-requests"]))
    except (KeyError, ValueError):
        return None
    limit = None
    with contextlib.suppress(KeyError, ValueError):
        limit = int(float(found["x-ratelimit-limit-requests"]))
    return (remaining, reset, limit) if reset is not None else None


def server_wait(headers: Mapping[str, str] | None, now: float) -> float | None:
    """How long a 429 asks us to wait: ``retry-after-ms``, Retry-After (seconds or an HTTP date), else until a
    spent ``x-ratelimit-*`` budget allows one more request; None when the server did not say."""
    found = _lower(headers)
    with contextlib.suppress(ValueError):
        if "retry-after-ms" in found:
            return min(MAX_WAIT_SECONDS, max(0.0, float(found["retry-after-ms"]) / 1000))
    value = found.get("retry-after")
    if value is not None:
        with contextlib.suppress(ValueError):
            return min(MAX_WAIT_SECONDS, max(0.0, float(value)))
        with contextlib.suppress(TypeError, ValueError):
            return min(MAX_WAIT_SECONDS, max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - now))
    waits = [tokens_reset(found)]
    budget = request_budget(found)
    if budget is not None and budget[0] <= 0:
        waits.append(Credit.told(*budget, now=now, others=0).wait(now))
    known = [w for w in waits if w is not None]
    return min(MAX_WAIT_SECONDS, max(known)) if known else None
