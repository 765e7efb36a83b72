"""Cores shared by a run's xdist workers: a worker that has run its last test lends its core."""

import os
from types import SimpleNamespace

import pytest

from pytest_fairness.models import cores


@pytest.fixture
def two_cores(monkeypatch):
    """Two cores, and this process's own place in the test run's count given back afterwards."""
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    outer = (cores._folder, cores._worker)
    yield
    cores.join(*outer)


def test_outside_an_xdist_run_there_is_no_share(two_cores):
    cores.join(None, "")
    assert cores.share() is None and cores.running() is None
    cores.leave()  # nothing to leave


def test_a_worker_gets_the_cores_of_the_workers_that_left(two_cores, tmp_path):
    folder = cores.open_run()
    try:
        for worker in ("gw0", "gw1", "gw2"):
            cores.add_worker(folder, worker)
        cores.join(folder, "gw1")
        assert cores.running() == 3 and cores.share() == 1  # never fewer than one thread
        cores.leave()
        assert cores.running() == 2 and cores.share() == 1
        (folder / "gw2").unlink()
        assert cores.running() == 1 and cores.share() == 2
    finally:
        cores.close_run(folder)
    assert not folder.exists() and cores.share() is None


XDIST_TESTS = """
import time

import pytest

from pytest_fairness.models import cores


@pytest.mark.xdist_group("quick")
def test_quick():
    assert cores.running() == 2  # both workers are counted before either starts


@pytest.mark.xdist_group("slow")
def test_slow():
    deadline = time.monotonic() + 30
    while cores.running() != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cores.running() == 1  # the other worker ran its last test and left
"""


def test_under_xdist_the_worker_left_running_sees_the_other_leave(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # where the controller makes the run's folder
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # a run of its own, as from a shell
    pytester.makepyfile(test_two=XDIST_TESTS)
    result = pytester.runpytest("-n", "2", "--dist", "loadgroup", "-p", "no:randomly")
    result.assert_outcomes(passed=2)
    assert not list(tmp_path.glob("fairness-workers-*"))  # removed at the end of the run


def test_a_run_inside_another_runs_worker_lends_no_cores(monkeypatch):
    """A test's pytester run under xdist cannot see the outer run's other workers: its own get no folder."""
    from pytest_fairness import plugin

    def configure(worker: str) -> dict:
        node = SimpleNamespace(config=SimpleNamespace(stash=pytest.Stash()), workerinput={"workerid": worker})
        plugin.pytest_configure_node(node)
        if plugin.WORKERS_KEY in node.config.stash:
            cores.close_run(node.config.stash[plugin.WORKERS_KEY])
        return node.workerinput

    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw7")  # this process is itself a worker of the outer run
    assert not cores.owned() and plugin.WORKERS not in configure("gw0")
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert cores.owned() and plugin.WORKERS in configure("gw0")
