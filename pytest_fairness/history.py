"""A fairness history across runs: one JSON line per run, trend plots and a Markdown table of the last runs.

``--fairness-history=DIR`` appends to ``DIR/history.jsonl`` at the end of every run; a release manager
then sees how each check moved across commits:

    python -m pytest_fairness.history DIR            # Markdown table of the last runs on stdout
    python -m pytest_fairness.history DIR --plots OUT # and one PNG trend per check (needs matplotlib)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_fairness.record import CheckRecord
from pytest_fairness.report.format import interval, num
from pytest_fairness.report.tally import RunState

FILE = "history.jsonl"
#: Letters of the outcomes in the table (the same as pytest's progress line).
LETTERS = {"pass": "P", "fail": "F", "inconclusive": "I", "cannot_serve": "C", "measured": "M"}


def commit(rootdir: Path) -> str | None:
    """The commit under test: CI's variable when set, else git's HEAD, else None (not a repository)."""
    for name in ("GITHUB_SHA", "CI_COMMIT_SHA", "GIT_COMMIT"):
        if os.environ.get(name):
            return os.environ[name]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=rootdir, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _finite(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def entry(
    records: Sequence[CheckRecord],
    settings: Mapping[str, Any],
    run: RunState | None,
    *,
    sha: str | None,
    when: float | None = None,
) -> dict[str, Any]:
    """The history line of one run."""
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if when is None else when)),
        "commit": sha,
        "model": settings.get("model"),
        "judge": settings.get("judge"),
        "profile": settings.get("profile"),
        "status": None if run is None else run.status,
        "checks": {
            rec.label: {
                "estimate": _finite(rec.result.estimate),
                "ci": [_finite(rec.result.ci[0]), _finite(rec.result.ci[1])],
                "n": rec.result.n,
                "outcome": rec.outcome.value,
                "threshold": {} if rec.threshold is None else rec.threshold.as_dict(),
            }
            for rec in records
        },
    }


def append(
    folder: Path, records: Sequence[CheckRecord], settings: Mapping[str, Any], run: RunState | None, *, rootdir: Path
) -> Path:
    """Append this run's line to ``folder/history.jsonl`` (created with its folder); returns the file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / FILE
    line = json.dumps(entry(records, settings, run, sha=commit(rootdir)), sort_keys=True, allow_nan=False)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    return path


def load(folder: Path) -> list[dict[str, Any]]:
    """Every run of a history, oldest first; a line that is not JSON (a cut write) is skipped."""
    path = folder / FILE
    if not path.exists():
        return []
    runs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            runs.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return runs


def _run_label(run: Mapping[str, Any]) -> str:
    sha = run.get("commit") or ""
    return f"{run['time'][:16].replace('T', ' ')}" + (f" `{sha[:8]}`" if sha else "")


def markdown_table(runs: Sequence[Mapping[str, Any]], last: int = 10) -> str:
    """One row per check, one column per run (newest last): estimate, interval and outcome letter."""
    shown = list(runs)[-last:]
    if not shown:
        return "No runs recorded yet.\n"
    checks = list(dict.fromkeys(label for run in shown for label in run["checks"]))
    header = ["check", *(_run_label(run) for run in shown)]
    lines = [
        f"Last {len(shown)} run(s); model: {', '.join(sorted({str(r.get('model')) for r in shown}))}. "
        f"Each cell: estimate [interval] and outcome ({', '.join(f'{v} {k}' for k, v in LETTERS.items())}).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for label in checks:
        cells = []
        for run in shown:
            c = run["checks"].get(label)
            cells.append(
                "—" if c is None else f"{num(c['estimate'])} {interval(c['ci'])} {LETTERS.get(c['outcome'], '?')}"
            )
        lines.append(f"| `{label}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_trends(runs: Sequence[Mapping[str, Any]], out: Path) -> list[Path]:
    """One PNG per check: its estimate and interval per run, and its threshold. Needs matplotlib."""
    from matplotlib.figure import Figure

    out.mkdir(parents=True, exist_ok=True)
    written = []
    checks = list(dict.fromkeys(label for run in runs for label in run["checks"]))
    for label in checks:
        points = [(i, run["checks"][label]) for i, run in enumerate(runs) if label in run["checks"]]
        xs = [i for i, c in points if c["estimate"] is not None]
        ys = [c["estimate"] for _, c in points if c["estimate"] is not None]
        lows = [y - (c["ci"][0] if c["ci"][0] is not None else y) for y, (_, c) in zip(ys, points, strict=False)]
        highs = [(c["ci"][1] if c["ci"][1] is not None else y) - y for y, (_, c) in zip(ys, points, strict=False)]
        fig = Figure(figsize=(7, 3))
        ax = fig.subplots()
        ax.errorbar(xs, ys, yerr=[lows, highs], fmt="o-", capsize=3)
        threshold = points[-1][1].get("threshold") or {}
        for bound in (threshold.get("min"), threshold.get("max")):
            if bound is not None:
                ax.axhline(bound, color="#C44E52", linestyle="--", label="threshold")
        ax.set_xticks(range(len(runs)), [_run_label(r).replace("`", "") for r in runs], rotation=30, fontsize=7)
        ax.set_title(label)
        ax.set_ylabel("estimate")
        fig.tight_layout()
        path = out / (label.replace("::", "__").replace("/", "_").replace(" ", "_") + ".png")
        fig.savefig(path, dpi=100)
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_fairness.history", description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the --fairness-history folder")
    parser.add_argument("--last", type=int, default=10, help="runs in the table (default 10)")
    parser.add_argument("--plots", type=Path, default=None, help="folder for the trend PNGs (default FOLDER/trends)")
    args = parser.parse_args(argv)
    runs = load(args.folder)
    sys.stdout.write(markdown_table(runs, args.last))
    if runs:
        try:
            written = plot_trends(runs, args.plots or args.folder / "trends")
        except ImportError:
            print("(no trend plots: pip install matplotlib)", file=sys.stderr)
        else:
            print(f"{len(written)} trend plot(s) in {args.plots or args.folder / 'trends'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
