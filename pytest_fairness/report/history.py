"""A fairness history across runs: one JSON line per run, trend plots and a Markdown table of the last runs.

``--fairness-history=DIR`` appends to ``DIR/history.jsonl`` at the end of every run; a release manager
then sees how each check moved across commits (``python -m pytest_fairness history DIR``).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_fairness.config.options import Option
from pytest_fairness.config.settings import Settings
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.report.output import Output, RunReport, Sinks
from pytest_fairness.report.status import STYLES
from pytest_fairness.report.tally import RunState
from pytest_fairness.stats.gate import Outcome
from pytest_fairness.util.fmt import finite, interval, num

FILE = "history.jsonl"


class HistoryLine(Output):
    """``--fairness-history=DIR``: one line per run that measured anything, appended to ``DIR/history.jsonl``."""

    options = (
        Option(
            "history",
            "append one line per run (time, commit, model, each check's estimate, interval and outcome) to "
            "DIR/history.jsonl; python -m pytest_fairness history DIR draws the trends",
        ),
    )

    def wanted(self, report: RunReport) -> bool:
        return super().wanted(report) and bool(report.records)

    def write(self, report: RunReport, sinks: Sinks) -> None:
        folder = Path(report.option(self.options[0]))
        append(folder, report.records, report.settings, report.run, rootdir=report.rootdir)


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


def entry(
    records: Sequence[CheckRecord],
    settings: Settings,
    run: RunState | None,
    *,
    sha: str | None,
    when: float | None = None,
) -> dict[str, Any]:
    """The history line of one run."""
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if when is None else when)),
        "commit": sha,
        "model": settings.model,
        "judge": settings.judge,
        "profile": settings.profile,
        "status": None if run is None else run.status,
        "checks": {
            rec.label: {
                "estimate": finite(rec.result.estimate),
                "ci": [finite(rec.result.ci[0]), finite(rec.result.ci[1])],
                "n": rec.result.n,
                "outcome": rec.outcome.value,
                "threshold": {} if rec.threshold is None else rec.threshold.as_dict(),
            }
            for rec in records
        },
    }


def append(
    folder: Path, records: Sequence[CheckRecord], settings: Settings, run: RunState | None, *, rootdir: Path
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
    legend = ", ".join(f"{s.letter} {o.value}" for o, s in STYLES.items())
    lines = [
        f"Last {len(shown)} run(s); model: {', '.join(sorted({str(r.get('model')) for r in shown}))}. "
        f"Each cell: estimate [interval] and outcome ({legend}).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for label in checks:
        cells = []
        for run in shown:
            c = run["checks"].get(label)
            cells.append("—" if c is None else f"{num(c['estimate'])} {interval(c['ci'])} {_letter(c['outcome'])}")
        lines.append(f"| `{label}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _letter(outcome: str) -> str:
    """An outcome's letter in the table (as in pytest's progress line); ``?`` for one this version lacks."""
    try:
        return STYLES[Outcome(outcome)].letter
    except ValueError:
        return "?"


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
