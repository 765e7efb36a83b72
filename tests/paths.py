"""Where the tests find the repository and their own example files, whichever tier folder they are in."""

from pathlib import Path

#: tests/
TESTS = Path(__file__).resolve().parent
#: the repository's root
REPO = TESTS.parent
