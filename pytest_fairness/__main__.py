"""``python -m pytest_fairness <command>``: see ``cli.main``."""

import sys

from pytest_fairness.cli.main import main

sys.exit(main())
