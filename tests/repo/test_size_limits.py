"""Smell detectors for the package's shape, not targets: a module far longer than its peers, or a function
longer than a screen, is usually two ideas in one; and two modules of one name are two ideas a reader
cannot tell apart in an import, a traceback or a search."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest_fairness

ROOT = Path(pytest_fairness.__file__).parent
#: Generous on purpose: split a module by idea, never to fit a number (docs/architecture.md).
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 80
#: The older spellings of commands, kept as thin aliases of ``python -m pytest_fairness <command>``.
ALIASES = frozenset({"ci.py", "compare.py", "history.py"})


def _sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted(ROOT.rglob("*.py"))}


def long_modules(sources: dict[str, str], limit: int = MAX_MODULE_LINES) -> dict[str, int]:
    return {path: n for path, text in sources.items() if (n := len(text.splitlines())) > limit}


def long_functions(sources: dict[str, str], limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """``path:line name`` -> lines, for every function (methods and nested ones too) longer than ``limit``."""
    found = {}
    for path, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    found[f"{path}:{node.lineno} {node.name}"] = length
    return found


def shared_names(paths: list[str]) -> dict[str, list[str]]:
    """Module file names that more than one module of the package has (``__init__`` and aliases aside)."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        name = Path(path).name
        if name not in {"__init__.py", "__main__.py"} and path not in ALIASES:
            by_name[name].append(path)
    return {name: where for name, where in by_name.items() if len(where) > 1}


def test_no_module_is_far_longer_than_its_peers():
    assert long_modules(_sources()) == {}


def test_no_function_is_longer_than_a_screen():
    assert long_functions(_sources()) == {}


def test_no_two_modules_share_a_name():
    assert shared_names(list(_sources())) == {}


def test_the_aliases_are_only_aliases():
    for alias in ALIASES:
        assert len((ROOT / alias).read_text().splitlines()) < 10, alias


def test_the_detectors_find_a_long_module_a_long_method_and_a_shared_name():
    body = "\n".join(f"        x{i} = {i}" for i in range(81))
    source = f"class A:\n    def short(self):\n        pass\n\n    def long(self):\n{body}\n"
    assert long_functions({"a.py": source}) == {"a.py:5 long": 82}
    assert long_modules({"a.py": source}, limit=60) == {"a.py": 86}
    assert shared_names(["stats/items.py", "baseline/items.py", "a/__init__.py", "b/__init__.py"]) == {
        "items.py": ["stats/items.py", "baseline/items.py"]
    }
