"""A team's app's identity covers its own package (modules and data files) and the repository modules it imports,
so a lean planted anywhere the app reads changes its id, and with it the cache keys of its answers."""

import importlib
import sys
from pathlib import Path

import pytest

from pytest_fairness.models.app_identity import source_files
from pytest_fairness.models.python_app import adapt, version_of

APP = """\
import pathlib
from acme_chat.persona import LEAN
from helpers import tone

DATA = (pathlib.Path(__file__).parent / "persona.yaml").read_text()


def answer(messages):
    return f"{tone()} {LEAN} {DATA}"
"""


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A team's repository: the package acme_chat (chatbot.py, persona.py, persona.yaml), a helper module beside it
    that the app imports, a README and a module the app does not import."""
    package = tmp_path / "acme_chat"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "chatbot.py").write_text(APP)
    (package / "persona.py").write_text("LEAN = 0.0\n")
    (package / "persona.yaml").write_text("tone: friendly\n")
    (tmp_path / "helpers.py").write_text("def tone():\n    return 'hi'\n")
    (tmp_path / "unrelated.py").write_text("X = 1\n")
    (tmp_path / "README.md").write_text("Acme\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.split(".")[0] in ("acme_chat", "helpers")]:
        del sys.modules[name]


def _version(root: Path) -> str:
    for name in [m for m in sys.modules if m.split(".")[0] in ("acme_chat", "helpers")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    answer = importlib.import_module("acme_chat.chatbot").answer
    _, owner = adapt(answer, "python:acme_chat.chatbot:answer")
    return version_of(answer, None, owner)


def test_the_identity_hashes_the_apps_package_and_the_repository_modules_it_imports(repository):
    importlib.invalidate_caches()
    answer = importlib.import_module("acme_chat.chatbot").answer
    names = {p.relative_to(repository).as_posix() for p in source_files(answer)}
    assert names == {
        "acme_chat/__init__.py", "acme_chat/chatbot.py", "acme_chat/persona.py", "acme_chat/persona.yaml", "helpers.py",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("edited", "changes"),
    [
        ("acme_chat/persona.py", True),  # a lean planted in a second module of the package
        ("acme_chat/persona.yaml", True),  # ... in a data file the app reads
        ("helpers.py", True),  # ... in a repository module it imports
        ("README.md", False),  # a pull request that changes only the docs keeps the id: the cache answers
        ("unrelated.py", False),
    ],
)
def test_a_change_anywhere_the_app_reads_changes_its_version_and_nothing_else_does(repository, edited, changes):
    before = _version(repository)
    path = repository / edited
    path.write_text(path.read_text() + "# 0.6\n")
    assert (_version(repository) != before) is changes


def test_the_identity_does_not_depend_on_where_the_repository_is_checked_out(repository, tmp_path_factory):
    import shutil

    before = _version(repository)
    elsewhere = tmp_path_factory.mktemp("runner") / "checkout"
    shutil.copytree(repository, elsewhere)
    sys.path.remove(str(repository))
    sys.path.insert(0, str(elsewhere))
    try:
        assert _version(elsewhere) == before
    finally:
        sys.path.remove(str(elsewhere))
        sys.path.insert(0, str(repository))
