"""``history DIR [--last N] [--plots OUT]``: a Markdown table of the last runs that ``--fairness-history=DIR``
appended to, and one PNG trend per check (needs matplotlib)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    history = commands.add_parser("history", help="a Markdown table of the last runs and a trend plot per check")
    history.add_argument("folder", type=Path, help="the --fairness-history folder")
    history.add_argument("--last", type=int, default=10, help="runs in the table (default 10)")
    history.add_argument("--plots", type=Path, default=None, help="folder for the trend PNGs (default FOLDER/trends)")
    history.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pytest_fairness.report.history import load, markdown_table, plot_trends

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
