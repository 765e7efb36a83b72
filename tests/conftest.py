import importlib.util
import os

import pytest

# pytester's in-process runs remove the modules first imported inside them, and a C extension cannot be
# loaded twice in one process ("cannot load module more than once per process", numpy.fft): scipy.stats,
# which the plugin imports only at its first statistic, is loaded here, before any inner run.
import scipy.stats  # noqa: F401

pytest_plugins = ["pytester"]

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None
if HAS_LLAMA:  # likewise for in-process runs of the embedded model: loaded once, not again in every inner run
    import llama_cpp  # noqa: F401


#: What every pytester run (in process or in a subprocess) leaves out: the hypothesis plugin. No inner run
#: uses it, and loading it costs about 1.2 s of CPU a run (pytester restores sys.modules after each
#: in-process run, so it is imported again every time).
INNER_RUN_OPTIONS = "-p no:hypothesispytest"


@pytest.fixture
def in_process_syrupy(monkeypatch: pytest.MonkeyPatch):
    """In-process runs inherit an outer xdist worker's variables (syrupy then stays silent) and replace
    syrupy's module-level session; undo both. Test modules of in-process baseline runs use it."""
    import syrupy

    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    saved = syrupy._syrupy
    yield
    syrupy._syrupy = saved


@pytest.fixture(scope="session")
def chromium():
    """Debian's headless chromium on a DevTools pipe (``browser.Browser``), one per test process. Without it the
    test skips, except under CI, where it fails: a green CI has run the page's tests in a real browser."""
    from browser import MISSING, Browser, find_chromium

    if find_chromium() is None:
        if os.environ.get("CI"):
            pytest.fail(f"{MISSING}: CI must install it (.ci/run)")
        pytest.skip(MISSING)
    with Browser() as browser:
        yield browser


@pytest.fixture(autouse=True)
def _lean_inner_runs(request: pytest.FixtureRequest) -> None:
    """Inner pytest runs read PYTEST_ADDOPTS; only tests that use pytester get it."""
    if "pytester" in request.fixturenames:
        monkeypatch = request.getfixturevalue("monkeypatch")
        monkeypatch.setenv("PYTEST_ADDOPTS", INNER_RUN_OPTIONS)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "embedded: runs the real embedded SmolLM2 model (needs the 'local' extra)")
    # litellm's batch types and its batch cost tracking trip pydantic's notices: not ours to fix.
    config.addinivalue_line("filterwarnings", "ignore:Items? .* (is|are) using the `ReadOnly` qualifier:UserWarning")
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:litellm.cost_calculator")
    config.addinivalue_line(
        "markers",
        "heavy(seconds): takes about this long; under xdist such tests start first, spread over the workers; "
        "the fast loop (-m 'not heavy') leaves them out",
    )


@pytest.hookimpl(trylast=True)  # after pytest-randomly's shuffle
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `embedded` need the real model: fail loudly in CI, skip elsewhere when absent. Under
    xdist, tests marked `heavy` are placed to start first and be spread over the workers."""
    _heavy_first(items)
    if HAS_LLAMA:
        return
    import os

    if os.environ.get("CI"):
        raise pytest.UsageError("CI must install the 'local' extra: the embedded-model tests cannot be skipped there")
    skip = pytest.mark.skip(reason="llama-cpp-python not installed (pip install '.[local]')")
    for item in items:
        if "embedded" in item.keywords:
            item.add_marker(skip)


def _heavy_first(items: list[pytest.Item]) -> None:
    """Place the `heavy` tests where xdist's load scheduling starts them first, balanced over the workers.

    xdist (``LoadScheduling``) first sends each worker a run of consecutive tests, a quarter of its share;
    the rest it hands out as workers free up. A long test left to that tail can finish long after the other
    worker is done (a 187 s test once ended the run alone). So each heavy test goes, longest first, to the
    worker with the least heavy time so far, at the front of that worker's first run; the other tests keep
    their (random) order. Only where the tests run changes, never what they check; serial runs are untouched.
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    heavy = [item for item in items if item.get_closest_marker("heavy")]
    if workers < 2 or not heavy:
        return
    chunk = max(len(items) // workers // 4, 2)  # xdist's first run per worker
    if chunk * workers > len(items):  # xdist then deals the tests out one by one
        return
    load = [0.0] * workers
    queues: list[list[pytest.Item]] = [[] for _ in range(workers)]
    for item in sorted(heavy, key=lambda item: -float(item.get_closest_marker("heavy").args[0])):
        w = load.index(min(load))
        queues[w].append(item)
        load[w] += float(item.get_closest_marker("heavy").args[0])
    light = iter([item for item in items if not item.get_closest_marker("heavy")])
    placed: list[pytest.Item] = []
    for w in range(workers):
        run = queues[w][:chunk]
        placed += run + [next(light) for _ in range(chunk - len(run))]
        light = iter([*queues[w][chunk:], *light])  # a worker's heavy tests beyond its first run come next
    items[:] = placed + list(light)
