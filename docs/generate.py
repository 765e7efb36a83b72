"""Regenerate the figures, tables and command examples of README.md and docs/ from the code.

    python docs/generate.py            # rewrite every page whose marks changed
    python docs/generate.py --check    # only list them (exit 1 if any)
    python docs/generate.py docs/release-runs.md   # one page

How the marks work: docs/development.md, "Documentation that cannot go stale".
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import docgen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", type=Path, help="pages to regenerate (default: all)")
    parser.add_argument("--check", action="store_true", help="report differences, change nothing")
    args = parser.parse_args(argv)
    stale = 0
    for path in [p.resolve() for p in args.pages] or docgen.pages():
        old, new = path.read_text(), docgen.render(path)
        if old == new:
            continue
        stale += 1
        name = str(path.relative_to(docgen.ROOT))
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), name, name))
        else:
            path.write_text(new)
            print(f"regenerated {name}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
