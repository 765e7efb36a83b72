"""Alias of ``python -m pytest_fairness ci``, for workflows written before the one command line."""

import sys

from pytest_fairness.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["ci", *sys.argv[1:]]))
