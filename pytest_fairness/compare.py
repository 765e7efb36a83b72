"""Alias of ``python -m pytest_fairness compare``, for workflows written before the one command line."""

import sys

from pytest_fairness.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["compare", *sys.argv[1:]]))
