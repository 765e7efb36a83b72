"""The run's reporter: collects check records from pytest's reports, and writes every output once, at the end.

Records travel from xdist workers to the controller on each report (``user_properties``), so the
reporter on the controller (or a serial run) sees them all. At session end it decides the run's baseline
comparisons together (adjusted for multiplicity) and fails the run if one survives, builds one frozen
``RunReport`` and hands it to each ``Output`` in ``report.formats``. It also keeps the tally of which
selected checks finished, errored or never ran, so that no output passes a broken run as clean.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_fairness.config.settings import Settings
from pytest_fairness.config.shard import ShardPlan
from pytest_fairness.planning.plan import Plan
from pytest_fairness.plugin.check_item import CHECK_PREFIX, CheckItem
from pytest_fairness.plugin.fixtures import SESSION_KEY
from pytest_fairness.records.check_record import PROPERTY, RECORD_PROPERTY, CheckRecord
from pytest_fairness.report import junit, progress
from pytest_fairness.report.conclude import conclude, gate_status, shard_status
from pytest_fairness.report.formats import OUTPUTS
from pytest_fairness.report.output import RunReport, Sinks
from pytest_fairness.report.tally import UNFINISHED_PROPERTY, RunTally, UnfinishedCheck, spent_of
from pytest_fairness.util.serial import from_json

#: The report property of a test whose requests wait in a provider batch (``BatchPending.to_dict``).
BATCH_PROPERTY = "fairness_batch_pending"
#: The worker output key of the calls a worker gave up on at its end.
ABANDONED_KEY = "fairness_abandoned"
#: Under --fairness-shard: the run's partition as this process made it (``plugin.ShardSelection``).
SHARD_KEY = pytest.StashKey[ShardPlan]()
#: An xdist worker's output that carries the partition to the controller.
SHARD_OUTPUT = "fairness_shard"


class _Screen:
    """pytest's terminal reporter as the progress display's screen, flushed at once."""

    def __init__(self, reporter: Any) -> None:
        self.reporter = reporter

    def write(self, content: str, **markup: bool) -> None:
        self.reporter.write(content, flush=True, **markup)

    def rewrite(self, line: str, **markup: bool) -> None:
        self.reporter.rewrite(line, **markup)
        self.reporter.flush()


class _SnapshotLines:
    """syrupy's report, whose closing line ("6 snapshots passed.") counts a fairness baseline as passed when its
    instrument matched, though the run's comparison then found it regressed: the line says so instead."""

    _PASSED = re.compile(r"((?:\x1b\[[0-9;]*m)*)(\d+)((?:\x1b\[[0-9;]*m)*) snapshots? passed\.")

    def __init__(self, report: Any, regressed: int) -> None:
        self._report, self._regressed = report, regressed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._report, name)

    @property
    def lines(self) -> Iterator[str]:
        for i, line in enumerate(self._report.lines):
            yield self._corrected(line) if i == 0 else line

    def _corrected(self, line: str) -> str:
        def passed(found: re.Match[str]) -> str:
            held = int(found[2]) - self._regressed
            kept = f"{found[1]}{held}{found[3]} snapshot{'s' if held != 1 else ''} passed. " if held > 0 else ""
            plural = "s" if self._regressed != 1 else ""
            return f"{kept}{self._regressed} fairness baseline{plural} regressed (the fairness baselines above decide)."

        return self._PASSED.sub(passed, line, count=1)


class FairnessReporter:
    """Collects check records from reports (local or relayed by xdist); decides and writes them once."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.records: list[CheckRecord] = []
        self.plan: Plan | None = None
        self.tally = RunTally()
        self.report: RunReport | None = None
        self._display: progress.Display | None = None
        self.locations: dict[str, dict[str, Any]] = {}  # check label -> suite file and line
        self.pending: list[dict[str, Any]] = []  # batches that tests left waiting (BatchPending.to_dict)
        self.shard_exit: int | None = None  # a shard's exit status: whether it ran

    @property
    def settings(self) -> Settings:
        return self.config.stash[SESSION_KEY].settings

    @property
    def display(self) -> progress.Display | None:
        """The live progress display, on the controller (or a serial run) with a terminal reporter."""
        if self._display is None and not hasattr(self.config, "workerinput"):
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            interval = self.settings.progress
            if reporter is None or interval is None:
                return None
            self._display = progress.Display(_Screen(reporter), tty=reporter.isatty(), interval=interval)
        return self._display

    def show(self, tick: progress.Tick) -> None:
        """A serial run's progress, written from inside the running check past pytest's output capture."""
        display, capture = self.display, self.config.pluginmanager.get_plugin("capturemanager")
        if display is None:
            return
        if capture is None:
            display.update(tick)
            return
        with capture.global_and_fixture_disabled():
            display.update(tick)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Take the records off the reports before other plugins (JUnit XML) see them; on the controller only."""
        if hasattr(self.config, "workerinput"):
            return  # the record travels on to the controller with the report
        display, properties = self.display, list[tuple[str, Any]](report.user_properties)
        if report.when == progress.PROGRESS_WHEN:
            if display is not None:
                for key, value in properties:
                    if key == progress.PROGRESS_PROPERTY:
                        display.update(from_json(progress.Tick, value))
            return
        if display is not None:
            display.before_output()
            if report.when != "setup":
                display.finished(report.nodeid)
        kept, recorded = [], False
        for key, value in properties:
            if key == BATCH_PROPERTY:
                self._pending(value)
            if key != RECORD_PROPERTY:
                kept.append((key, value))
                continue
            record = CheckRecord.from_dict(value)
            if report.when == "call":
                self.records.append(record)
                recorded = True
                if report.location[1] is not None:  # where the check is written: for CI annotations
                    self.locations[record.label] = {"file": report.location[0], "line": report.location[1] + 1}
            kept.append((PROPERTY, json.dumps(record.compact(), sort_keys=True)))
        report.user_properties = kept
        self._count(report, recorded)

    def _pending(self, batch: dict[str, Any]) -> None:
        """Note a test's waiting batch; the run is then stopped short of complete, saying how to finish it."""
        self.pending.append(batch)
        requests = sum(b["requests"] for entry in self.pending for b in entry["batches"])
        ids = {b["id"] for entry in self.pending for b in entry["batches"]}
        self.tally.stopped = (
            f"{requests} requests wait in {len(ids)} provider batch(es); rerun the same command to collect"
        )

    def _count(self, report: pytest.TestReport, recorded: bool) -> None:
        """Finished: it produced a record (or was skipped before running). Errored: it failed without one (why:
        what the check said when it stopped, or the first line of the failure)."""
        if not report.nodeid.startswith(CHECK_PREFIX):
            return
        if recorded or (report.when == "setup" and report.skipped):
            self.tally.finished.add(report.nodeid)
        elif report.failed and report.when in ("setup", "call"):
            self.tally.errored.add(report.nodeid)
            said = [json.loads(v) for k, v in report.user_properties if k == UNFINISHED_PROPERTY]
            label = self.tally.selection.get(report.nodeid, report.nodeid.removeprefix(CHECK_PREFIX))
            first = report.longreprtext.strip().splitlines()[:1]
            stop = from_json(UnfinishedCheck, said[-1]) if said else UnfinishedCheck(label, "errored", "".join(first))
            self.tally.stops[report.nodeid] = stop

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.tally.selected = sum(item.nodeid.startswith(CHECK_PREFIX) for item in session.items)
        self.tally.selection = {item.nodeid: item.check.label for item in session.items if isinstance(item, CheckItem)}
        self.tally.collected = bool(self.config.option.collectonly)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under xdist the controller does not collect; every worker reports the same selection."""
        self.tally.selected = max(self.tally.selected, sum(i.startswith(CHECK_PREFIX) for i in ids))
        if not self.tally.selection:
            self.tally.selection = {i: i.removeprefix(CHECK_PREFIX) for i in ids if i.startswith(CHECK_PREFIX)}

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Ctrl-C interrupts the run; ``pytest.exit`` with an error code stops it on an error."""
        if type(excinfo.value).__name__ == "Interrupted" and str(excinfo.value).startswith("stopping after"):
            return  # xdist's way of stopping at -x / --maxfail: the failures say what happened, as in a serial run
        exit_code = getattr(excinfo.value, "returncode", pytest.ExitCode.INTERRUPTED)
        if isinstance(excinfo.value, pytest.exit.Exception) and exit_code != pytest.ExitCode.INTERRUPTED:
            self.tally.stopped = str(excinfo.value.msg)
        else:
            self.tally.interrupted = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        """With --fairness-plan, price every check instead of running anything."""
        if not self.settings.plan:
            return None
        fairness = self.config.stash[SESSION_KEY]
        checks = [item.check for item in session.items if isinstance(item, CheckItem)]
        self.plan = fairness.planner.plan(checks)  # a pull request's checks at their baselines' items (prshape)
        self.tally.planned = True
        return True

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """Under xdist a shard's partition is made by the workers, which collect: take it from their output; and a
        worker's calls given up on at its end (``pytest_sessionfinish`` on the worker) count for the run."""
        output = getattr(node, "workeroutput", {})
        self.tally.abandoned += int(output.get(ABANDONED_KEY, 0))
        section = output.get(SHARD_OUTPUT)
        if section is not None:
            self.config.stash[SHARD_KEY] = ShardPlan.from_section(section)

    @pytest.hookimpl(tryfirst=True)  # before JUnit XML writes its file, so the run's properties reach it
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        abandoned = self.config.stash[SESSION_KEY].settle()  # no call left in flight unseen, in any process
        sharded = self.config.stash.get(SHARD_KEY, None)
        if hasattr(self.config, "workerinput"):
            self.config.workeroutput[ABANDONED_KEY] = abandoned  # type: ignore[attr-defined]
            if sharded is not None:
                self.config.workeroutput[SHARD_OUTPUT] = sharded.section(0)  # type: ignore[attr-defined]
            return  # the controller decides and writes, once, from every worker's records
        self.tally.abandoned += abandoned
        tests = int(session.exitstatus)
        if sharded is None:
            self.report = self._report()
            session.exitstatus = gate_status(tests, self.report)
        else:  # the merge decides the run: the shard's status says only whether it ran
            self.report = self._report(decide=False, family_size=len(sharded.order), shard=sharded.section(tests))
            self.shard_exit = shard_status(tests, self.report)  # set last (``plugin.ShardSelection``)
        self._write("sessionfinish", Sinks(junit=junit.log_xml(self.config)))

    @pytest.hookimpl(tryfirst=True)  # before syrupy's summary, whose closing line it corrects
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self._display is not None:
            self._display.before_output()
        if self.report is None:  # an xdist worker, which decides nothing
            self.report = self._report(decide=False)
        self._write("terminal_summary", Sinks(terminal=terminalreporter))
        failing = self.report.decision.failing if self.report.decision is not None else ()
        regressed = sum(not c.inputs_changed for c in failing)  # syrupy counted the others as failed already
        syrupy = getattr(self.config, "_syrupy", None)
        if regressed and getattr(syrupy, "report", None) is not None:
            syrupy.report = _SnapshotLines(syrupy.report, regressed)

    def _report(self, *, decide: bool = True, **extra: Any) -> RunReport:
        """The run as every output reads it, frozen, with the run-level decisions made (``conclude``)."""
        fairness = self.config.stash[SESSION_KEY]
        self.tally.preflight = spent_of(fairness.preflight_calls)
        return conclude(
            self.records,
            self.settings,
            self.tally.state(self.records),
            decide=decide,
            locations=dict(self.locations),
            plan=self.plan,
            pending=tuple(self.pending),
            rootdir=Path(self.config.rootpath),
            updating=bool(getattr(self.config.option, "update_snapshots", False)),
            replay=fairness.replay,
            **extra,
        )

    def _write(self, when: str, sinks: Sinks) -> None:
        report = self.report
        assert report is not None
        for output in OUTPUTS:
            if output.when == when and output.wanted(report):
                output.write(report, sinks)
