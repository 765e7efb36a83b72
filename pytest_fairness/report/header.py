"""The lines pytest prints in its header: what a fairness run is about to run, before the first dot.

A reader of a CI log sees the model (and its fingerprint when the provider reports one), the judge,
seed, profile, sequential sampling, the cache and the baselines folder, so two logs can be compared
without opening the JSON report.
"""

from __future__ import annotations

from pathlib import Path

from pytest_fairness.config.settings import Settings


def cache_entries(path: Path) -> int | None:
    """How many responses the cache holds; None when it cannot be read (the run reports why, later)."""
    if not path.exists():
        return 0
    from pytest_fairness.models.cache import ResponseCache

    try:
        cache = ResponseCache(path, read_only=True)
    except Exception:  # a damaged cache is the preflight's to report, with its fix
        return None
    try:
        return len(cache)
    finally:
        cache.close()


def header_lines(settings: Settings, *, fingerprint: str | None, entries: int | None) -> list[str]:
    """``fairness: model ..., judge ..., ...`` lines for pytest's header."""
    model = settings.model + (f" (fingerprint {fingerprint})" if fingerprint else "")
    judge = settings.judge or "the model under test"
    if settings.cache_mode.value == "off":
        cache = "off"
    else:
        held = "unreadable" if entries is None else f"{entries} entries"
        cache = f"{settings.cache_path} ({settings.cache_mode.value}, {held})"
    policy = settings.baseline
    folder = f"{policy.directory}/ ({policy.mode}, alpha {policy.alpha:g})" if settings.baselines else "not compared"
    sequential = "on" if settings.sequential else "off"
    return [
        f"fairness: model {model}; judge {judge}",
        f"fairness: seed {settings.seed}, profile {settings.profile}, sequential {sequential}"
        f", confidence {settings.confidence:g}, inconclusive -> {settings.inconclusive}",
        f"fairness: cache {cache}; baselines {folder}",
    ]
