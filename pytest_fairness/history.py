"""A fairness history across runs: a Markdown table of the last runs and a trend plot per check.

The command line of ``report.history``, for the folder ``--fairness-history=DIR`` appends to:

    python -m pytest_fairness.history DIR            # Markdown table of the last runs on stdout
    python -m pytest_fairness.history DIR --plots OUT # and one PNG trend per check (needs matplotlib)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_fairness.report.history import load, markdown_table, plot_trends


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
