import importlib.util

import pytest

pytest_plugins = ["pytester"]

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None


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
