"""What a team's app's identity covers: the files of its own code, so an edit anywhere in it changes the id.

A ``python:MODULE:ATTR`` app's answers are cached under its id, so the id must change whenever what the app
runs may change. Hashing only the file that defines ATTR missed a lean planted in a second module it imports,
or in a data file it reads: a pull request then replayed the old answers. The identity hashes instead

* the app's own package: every file under the folder of MODULE's top-level package (its modules and the data
  files in it: prompts, personas, templates), bytecode caches and hidden files left out;
* for a module that is not in a package, the module itself;
* and, followed through their ``import`` statements, the modules and packages beside that root (the repository's
  other code the app imports), but nothing of an installed distribution (site-packages): those change with
  their own versions.

A data file beside a top-level module, outside any package, is not covered: put the app in a package, or
declare a ``?version=``. What no identity covers (a redeployed endpoint, a changed environment) is what the
pull request's replay check asks the model again for (``run.replay_check``).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

#: Folders never hashed: bytecode, version control and tool caches, and the run's own response cache.
SKIPPED_DIRS = frozenset(
    {"__pycache__", ".git", ".hg", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".fairness-cache"}
)
SKIPPED_SUFFIXES = (".pyc", ".pyo")


def defining_module(obj: object) -> object | None:
    """The module that defines ``obj`` (a function, a class, a partial's function, or an instance's class)."""
    target = obj.func if isinstance(obj, functools.partial) else obj
    if not (inspect.isfunction(target) or inspect.isclass(target) or inspect.ismethod(target)):
        target = type(target)
    return inspect.getmodule(target)


def _installed(path: Path) -> bool:
    """Whether a path lies in an installed distribution's folder (site-packages, the standard library)."""
    roots = {sysconfig.get_path(name) for name in ("purelib", "platlib", "stdlib", "platstdlib")}
    text = str(path)
    return any(root and text.startswith(str(Path(root).resolve())) for root in roots) or "site-packages" in path.parts


def _package_files(folder: Path) -> list[Path]:
    """Every file of a package folder, recursively, without caches, bytecode and hidden files."""
    files = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).parts
        if any(part in SKIPPED_DIRS or part.startswith(".") for part in relative) or not path.is_file():
            continue
        if path.suffix not in SKIPPED_SUFFIXES:
            files.append(path)
    return files


def _imported_names(path: Path) -> set[str]:
    """The top-level names a module imports absolutely (``import a.b``, ``from a import b``); none if unparsable."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError):
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _root_of(module: object) -> tuple[Path, list[Path]] | None:
    """The folder imports are resolved from, and the files of the app's own code: its top-level package's
    folder, or its module file."""
    name = getattr(module, "__name__", "")
    top = sys.modules.get(name.split(".")[0], module)
    top_file = getattr(top, "__file__", None)
    top_path = list(getattr(top, "__path__", []) or [])
    if top is not module or top_path:  # a package: every file in its folder
        folder = Path(top_path[0]).resolve() if top_path else Path(str(top_file)).resolve().parent
        return folder.parent, _package_files(folder)
    own = getattr(module, "__file__", None)
    if not own:
        return None
    path = Path(own).resolve()
    return path.parent, [path]


def source_files(obj: object) -> list[Path]:
    """The files an app's identity hashes (see the module's docstring), sorted; empty when ``obj`` has no
    source file (a builtin, a class made at run time)."""
    module = defining_module(obj)
    found = _root_of(module) if module is not None else None
    if found is None:
        return []
    root, files = found
    if _installed(root):  # an installed package: its own files, never the site-packages beside it
        return sorted(set(files))
    seen, todo = set(files), [f for f in files if f.suffix == ".py"]
    while todo:
        for name in _imported_names(todo.pop()):
            package, single = root / name, root / f"{name}.py"
            more = _package_files(package) if package.is_dir() and any(package.glob("*.py")) else []
            more += [single] if single.is_file() else []
            for path in more:
                if path not in seen:
                    seen.add(path)
                    if path.suffix == ".py":
                        todo.append(path)
    return sorted(seen)


def digest(paths: Iterable[Path], root: Path | None = None) -> str | None:
    """One hash of the files' names (relative to their common folder) and bytes; None for no file."""
    listed = sorted(paths)
    if not listed:
        return None
    base = root or Path(*_common_parts(listed))
    hashed = hashlib.sha256()
    for path in listed:
        try:
            content = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            content = "unreadable"
        hashed.update(f"{_relative(path, base)}\0{content}\n".encode())
    return hashed.hexdigest()


def _common_parts(paths: list[Path]) -> tuple[str, ...]:
    parts = [p.parent.parts for p in paths]
    common: list[str] = []
    for group in zip(*parts, strict=False):
        if len(set(group)) != 1:
            break
        common.append(group[0])
    return tuple(common) or ("/",)


def _relative(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.as_posix()


def source_digest(obj: object) -> str | None:
    """The hash of an app's own code and data files (``source_files``), or None when it has none."""
    return digest(source_files(obj))
