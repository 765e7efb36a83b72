"""The one command line, ``python -m pytest_fairness <command>``: its parser and the table of commands.

The spellings of earlier releases (``python -m pytest_fairness ci``, ``.compare``, ``.history``) are kept as
aliases (the modules of those names) for workflows already copied; new commands are added here only.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from pytest_fairness.cli import baselines_diff, cache_tools, ci_steps, history_table, merge_shards, release_compare

PROG = "python -m pytest_fairness"
#: Every command, in the order ``--help`` lists them: each module's ``register`` adds its sub-parser.
COMMANDS = (merge_shards, cache_tools, release_compare, baselines_diff, ci_steps, history_table)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog=PROG, description="pytest-fairness outside pytest: shards, baselines, CI.")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(commands)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.run(args)
