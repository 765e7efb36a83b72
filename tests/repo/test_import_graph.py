"""The package's import graph, read from the source: no cycle, no arrow up between the layers that
docs/architecture.md names (its table is read here), and model access independent of measures.

Every import counts: at module level, inside a function, and under ``if TYPE_CHECKING`` (an annotation
that needs a module above is an arrow up all the same). Importing ``a.b.c`` runs ``a/__init__`` and
``a/b/__init__`` too, so a module depends on every package on the way to what it imports.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from paths import REPO

import pytest_fairness

sys.path.insert(0, str(REPO / "docs"))
from docgen.layers import read_layers

ROOT = Path(pytest_fairness.__file__).parent

#: The layers, bottom first, as docs/architecture.md names them: a module imports its own layer or the ones
#: below. A module belongs to the layer of its longest listed prefix ("" is the package's facade).
LAYERS = read_layers()


def module_name(path: Path, root: Path) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every module an AST imports (absolute names), ``if TYPE_CHECKING:`` blocks included."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # "from pkg import module"
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, with the packages each import runs on the way."""
    sources = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in sources.items():
        names = imported_names(ast.parse(path.read_text()), module, path.name == "__init__.py")
        edges = set()
        for name in names:
            parts = name.split(".")
            edges.update(p for p in (".".join(parts[:i]) for i in range(1, len(parts) + 1)) if p in sources)
        edges.discard(module)
        edges -= {m for m in edges if module.startswith(m + ".")}  # a module's own parents are already running
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path of modules, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_package_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle or [])


def layer_of(module: str) -> int:
    """The index in ``LAYERS`` of a module (absolute name), by its longest listed prefix."""
    name = module.removeprefix(ROOT.name).removeprefix(".")
    best, where = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".") or prefix == "") and len(prefix) > best:
                best, where = len(prefix), index
    return where


def upward_arrows(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} ({LAYERS[layer_of(module)][0]}) -> {target} ({LAYERS[layer_of(target)][0]})"
        for module, edges in graph.items()
        for target in edges
        if layer_of(target) > layer_of(module)
    )


def test_no_import_points_up_a_layer():
    assert upward_arrows(import_graph()) == []


def test_every_layer_named_holds_a_module_and_every_module_has_a_layer():
    graph = import_graph()
    layers = {layer_of(m) for m in graph}
    assert layers == set(range(len(LAYERS)))
    modules = {m.removeprefix(ROOT.name).removeprefix(".") for m in graph}
    named = {p for _, prefixes in LAYERS for p in prefixes if p}
    assert not {p for p in named if not any(m == p or m.startswith(p + ".") for m in modules)}  # no stale name


@pytest.mark.parametrize("forbidden", ["pytest_fairness.measures", "pytest_fairness.testing"])
def test_model_access_imports_no_measure_and_no_test_double(forbidden):
    graph = import_graph()
    offenders = {
        module: sorted(m for m in edges if m == forbidden or m.startswith(forbidden + "."))
        for module, edges in graph.items()
        if module.startswith("pytest_fairness.models")
    }
    assert not {m: e for m, e in offenders.items() if e}


def test_the_checks_see_imports_inside_functions_and_in_type_checking_blocks(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from pkg import b\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.c\n")
    (pkg / "c.py").write_text("from . import b\n")
    graph = import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.c"} and graph["pkg.c"] == {"pkg.b"}
    assert find_cycle(graph) in (["pkg.b", "pkg.c", "pkg.b"], ["pkg.c", "pkg.b", "pkg.c"])


def test_an_import_from_a_lower_layer_into_a_higher_one_is_an_arrow_up():
    graph = {"pytest_fairness.util.fmt": {"pytest_fairness.report.terminal"}, "pytest_fairness.report.terminal": set()}
    assert upward_arrows(graph) == ["pytest_fairness.util.fmt (util) -> pytest_fairness.report.terminal (report)"]
    assert layer_of("pytest_fairness.cli.main") == len(LAYERS) - 1 == layer_of("pytest_fairness")


def test_loading_the_plugin_leaves_scipy_stats_for_the_first_statistic():
    """pytest imports the plugin in every run; scipy.stats (half of its import time) waits for first use."""
    import subprocess
    import sys

    code = (
        "import sys, pytest_fairness.plugin; loaded = 'scipy.stats' in sys.modules; "
        "from pytest_fairness.stats.intervals import proportion_interval; "
        "print(loaded, proportion_interval(3, 10, 0.95)[0] > 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "True"]


def test_reading_a_built_in_suite_leaves_release_sizes_and_scipy_stats_for_a_release_run():
    """Every run reads its suites at start-up; a release size is a power calculation (with scipy.stats),
    worked out only when a release run, or anyone, reads it."""
    import subprocess
    import sys

    code = (
        "import sys; from pytest_fairness.config import suite; check = suite.load('gender').checks[0]; "
        "print(repr(('scipy.stats' in sys.modules, check.samples['quick'], 'scipy.stats' in sys.modules, "
        "check.samples['release'] >= check.samples['paper'], 'scipy.stats' in sys.modules, sorted(check.samples))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    at_start, quick, after_quick, release_ok, _, profiles = ast.literal_eval(out.stdout)
    assert (at_start, quick, after_quick) == (False, 20, False)  # scipy.stats not loaded by the quick size
    assert release_ok and profiles == ["paper", "quick", "release"]  # sizing may not need scipy.stats at all
