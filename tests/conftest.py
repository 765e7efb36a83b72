import importlib.util

import pytest

pytest_plugins = ["pytester"]

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None


#: What every pytester run (in process or in a subprocess) leaves out: the hypothesis plugin. No inner run
#: uses it, and loading it costs about 1.2 s of CPU a run (pytester restores sys.modules after each
#: in-process run, so it is imported again every time).
INNER_RUN_OPTIONS = "-p no:hypothesispytest"


@pytest.fixture(autouse=True)
def _lean_inner_runs(request: pytest.FixtureRequest) -> None:
    """Inner pytest runs read PYTEST_ADDOPTS; only tests that use pytester get it."""
    if "pytester" in request.fixturenames:
        monkeypatch = request.getfixturevalue("monkeypatch")
        monkeypatch.setenv("PYTEST_ADDOPTS", INNER_RUN_OPTIONS)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "embedded: runs the real embedded SmolLM2 model (needs the 'local' extra)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `embedded` need the real model: fail loudly in CI, skip elsewhere when absent."""
    if HAS_LLAMA:
        return
    import os

    if os.environ.get("CI"):
        raise pytest.UsageError("CI must install the 'local' extra: the embedded-model tests cannot be skipped there")
    skip = pytest.mark.skip(reason="llama-cpp-python not installed (pip install '.[local]')")
    for item in items:
        if "embedded" in item.keywords:
            item.add_marker(skip)
