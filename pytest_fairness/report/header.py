"""The lines pytest prints in its header: what a fairness run is about to run, before the first dot.

A reader of a CI log sees the model (and its fingerprint when the provider reports one), the judge,
seed, profile, sequential sampling, the cache and the baselines folder, so two logs can be compared
without opening the JSON report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
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


def gate_line(settings: Settings, drawn: Mapping[str, tuple[str, int | None]] | None = None, folder: str = "") -> str:
    """What the run is gated on, and the sizes it draws: a release's thresholds at its profile, or a pull request's
    committed baselines (in ``folder``) on their own items. ``drawn``: per check label its measure and its
    baseline's size (None: no baseline, or one whose model could not serve)."""
    if settings.gate != "pr":
        return f"fairness: gate release: each check against its threshold, at profile {settings.profile}'s sizes"
    where = (folder or settings.baseline.directory) + "/"
    if settings.baseline_ref is not None:
        where += f" as {settings.baseline_ref} holds it"
    sizes: dict[str, Counter[int]] = {}
    for measure, size in (drawn or {}).values():
        if size is not None:
            sizes.setdefault(measure, Counter())[size] += 1
    parts = [
        f"{measure} {', '.join(f'{n:,}' + (f' ({k} checks)' if k > 1 else '') for n, k in sorted(counts.items()))}"
        for measure, counts in sorted(sizes.items())  # by measure: the same line whatever order checks ran in
    ]
    missing = sum(size is None for _, size in (drawn or {}).values())
    rest = f"; {missing} without a usable baseline, at profile {settings.profile}" if missing else ""
    items = f": {'; '.join(parts)}" if parts else ""
    return (
        f"fairness: gate pr: each check against its committed baseline in {where}, drawing the baseline's items"
        f"{items}{rest}; each threshold's verdict shown beside"
    )


def header_lines(
    settings: Settings,
    *,
    fingerprint: str | None,
    entries: int | None,
    drawn: Mapping[str, tuple[str, int | None]] | None = None,
    line_folder: str = "",
) -> list[str]:
    """``fairness: model ..., judge ..., ...`` lines for pytest's header."""
    model = settings.model + (f" (fingerprint {fingerprint})" if fingerprint else "")
    judge = settings.judge or "the model under test"
    if settings.cache_mode.value == "off":
        cache = "off"
    else:
        held = "unreadable" if entries is None else f"{entries} entries"
        cache = f"{settings.cache_path} ({settings.cache_mode.value}, {held})"
    policy = settings.baseline
    shown = f"{policy.directory}/" if settings.baseline_ref is None else f"at {settings.baseline_ref}"
    folder = f"{shown} ({policy.mode}, alpha {policy.alpha:g})" if settings.baselines else "not compared"
    sequential = "on" if settings.sequential else "off"
    return [
        f"fairness: model {model}; judge {judge}",
        gate_line(settings, drawn, line_folder),
        f"fairness: seed {settings.seed}, profile {settings.profile}, sequential {sequential}"
        f", confidence {settings.confidence:g}, inconclusive -> {settings.inconclusive}",
        f"fairness: cache {cache}; baselines {folder}",
    ]
