"""pytest hooks only: options, suite collection, per-check items, and the summary.

Results travel from xdist workers to the controller as ``user_properties`` on each report, so
the summary table and exit code are decided once, on the controller, from the same records.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Generator
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from pytest_fairness import fixtures, placement, suite
from pytest_fairness.baseline import Comparison, RunDecision, decide_records
from pytest_fairness.fixtures import SESSION_KEY
from pytest_fairness.gate import Outcome
from pytest_fairness.measures import MEASURES, PROFILES, ParamsError
from pytest_fairness.models import cores, ratelimit
from pytest_fairness.models.base import PermanentError
from pytest_fairness.models.batch import PENDING_EXIT, BatchPending
from pytest_fairness.models.cache import CacheMiss, CacheMode
from pytest_fairness.models.registry import ModelSpecError
from pytest_fairness.models.runner import CallStats, RetriesExhausted, counting
from pytest_fairness.plan import Plan
from pytest_fairness.record import PROPERTY, RECORD_PROPERTY, CheckRecord
from pytest_fairness.report import junit, progress, status, terminal
from pytest_fairness.report.analyses import session_analyses
from pytest_fairness.report.tally import UNFINISHED_PROPERTY, RunTally, UnfinishedCheck, spent_of
from pytest_fairness.session import (
    GATE_MULTIPLICITY,
    INCONCLUSIVE_POLICIES,
    FairnessSession,
    RunFault,
    Settings,
    SettingsError,
)

#: Node ids of suite checks start with this (``fairness/<suite>::<check>``), on workers and the controller.
CHECK_PREFIX = "fairness/"
#: Exit code of a run stopped before its first check by a fault of the model, judge or cache: neither a
#: failed gate (1) nor a usage error (4) - the run could not happen.
RUN_FAULT_EXIT = pytest.ExitCode.INTERRUPTED
#: Errors whose message says everything (what is wrong and the fix): a check shows only the message.
MESSAGE_ONLY = (ModelSpecError, PermanentError, RetriesExhausted, CacheMiss, ParamsError, RunFault)
#: Set in each xdist worker's input when the controller already checked the model, judge and cache.
CHECKED = "fairness_preflight_done"
PREFLIGHT_KEY = pytest.StashKey[bool]()  # this controller checked them
WORKERS = "fairness_workers"  # workerinput: the folder where the run's workers count themselves
WORKERS_KEY = pytest.StashKey[Path]()  # the controller's copy
FAULT_KEY = pytest.StashKey[str]()  # this worker found a fault: the message
PROGRESS_KEY = pytest.StashKey["float | None"]()  # seconds between progress lines per check; None: off
#: The report property of a test whose requests wait in a provider batch (``BatchPending.to_dict``).
BATCH_PROPERTY = "fairness_batch_pending"

# name -> (help, ini type, extra argparse keywords)
OPTIONS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "suite": (
        "built-in suite name or path of a suite YAML file; repeat or comma-separate for several",
        "args",
        {"action": "append"},
    ),
    "model": (
        "model under test: local (default), local:/path.gguf, openai:MODEL@URL, python:MODULE:ATTR (your own app), "
        "synthetic:iat?bias=0.4",
        "string",
        {},
    ),
    "judge": ("judge model for measures that need one (defaults to the model under test)", "string", {}),
    "judge_reference": (
        "a stronger model spec, python:MODULE:ATTR or labels:FILE (JSON lines of labelled answer pairs) that re-rates "
        "a sample of the judge's net-harm judgments on the run's own answers: a PASS then certifies its view",
        "string",
        {},
    ),
    "judge_calibration": (
        "YAML file of your own labelled pairs (harmful: prompt/demeaning/plain; benign: prompt/varied/plain) added "
        "to the net-harm judge screen",
        "string",
        {},
    ),
    "seed": ("seed of every random draw (prompts, sampling); same seed, same run", "string", {}),
    "profile": (
        f"sample sizes: {' or '.join(PROFILES)} (quick is sized for the embedded model in CI)",
        "string",
        {"choices": PROFILES},
    ),
    "cache": ("path of the sqlite response cache (default .fairness-cache/responses.sqlite)", "string", {}),
    "cache_mode": (
        "response cache: rw (default), read, replay (a miss is an error), off, refresh",
        "string",
        {"choices": [m.value for m in CacheMode]},
    ),
    "inconclusive": (
        "what an inconclusive gate does to the test: fail (default), skip or pass (a check that cannot serve still "
        "fails under pass)",
        "string",
        {"choices": INCONCLUSIVE_POLICIES},
    ),
    "max_concurrency": ("most model requests in flight at once (default 8)", "string", {}),
    "max_attempts": (
        "attempts per model request before a transient failure (no connection, a timeout, HTTP 429 or 5xx) "
        "ends it, with growing waits between them (default 6; 1: no retry)",
        "string",
        {},
    ),
    "confidence": ("confidence level of the intervals that gates use (default 0.95)", "string", {}),
    "multiplicity": (
        "none (default: each gate at the confidence level) or bonferroni (the chance that any gate of the run "
        "errs is at most 1 - confidence)",
        "string",
        {"choices": GATE_MULTIPLICITY},
    ),
    "plan": (
        "print, per check, the model and judge calls, tokens and dollars (standard and batch) a run would need "
        "and how many are cached; call no model",
        "bool",
        {"action": "store_true"},
    ),
    "progress": (
        "live progress of running checks: seconds between lines per check when the output is no terminal "
        "(default 5; 0 shows every update) or off",
        "string",
        {},
    ),
    "budget": (
        "most USD the run may spend at standard rates: a run whose plan costs more does not start, and "
        "--fairness-sequential stops growing a check before a round would pass it",
        "string",
        {},
    ),
    "batch": (
        "send the model's and judge's uncached requests through their provider's batch API (openai: specs; "
        "about half the price, answers within hours); a spec can ask for it alone with ?batch=1",
        "bool",
        {"action": "store_true"},
    ),
    "batch_wait": (
        "minutes the run may wait, in all, for its batches to finish (default 0: submit, then exit with status "
        f"{PENDING_EXIT} and 'rerun the same command to collect')",
        "string",
        {},
    ),
    "report": ("write the run's results as JSON to this path", "string", {}),
    "history": (
        "append one line per run (time, commit, model, each check's estimate, interval and outcome) to "
        "DIR/history.jsonl; python -m pytest_fairness.history DIR draws the trends",
        "string",
        {},
    ),
    "markdown": ("write a Markdown summary for pull-request comments to this path", "string", {}),
    "plots": (
        "write per-measure PNG plots (bars with CIs) to this folder and link them from the Markdown",
        "string",
        {},
    ),
    "sequential": (
        "draw more samples for inconclusive checks, up to their budget, gating on always-valid confidence sequences",
        "bool",
        {"action": "store_true"},
    ),
    "baselines": (
        "compare every check with its committed baseline under baselines/<model>/ (statistically; "
        "--snapshot-update records them)",
        "bool",
        {"action": "store_true"},
    ),
    "baseline_tolerance": (
        "smallest change that counts, for checks without their own tolerance (default 0)",
        "string",
        {},
    ),
    "baseline_alpha": ("error level of the run's baseline comparisons, taken together (default 0.05)", "string", {}),
    "baseline_multiplicity": (
        "error control across the run's baseline comparisons: holm (default; family-wise error rate), "
        "bh (Benjamini-Hochberg false-discovery rate) or none (each comparison on its own)",
        "string",
        {"choices": ["holm", "bh", "none"]},
    ),
    "baseline_mode": (
        "difference (default: fail on a significant change beyond the tolerance) or noninferiority "
        "(pass only when shown no worse than the baseline by more than the tolerance)",
        "string",
        {"choices": ["difference", "noninferiority"]},
    ),
    "baseline_fail_on": (
        "what fails a run in difference mode: regression (default; improvements are reported) or change",
        "string",
        {"choices": ["regression", "change"]},
    ),
    "baseline_dir": ("folder of the baselines, relative to the rootdir (default baselines)", "string", {}),
    "baseline_model": (
        "baseline folder to compare with, e.g. the name of the model line whose new release "
        "this is (default: derived from the model id)",
        "string",
        {},
    ),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fairness", "LLM fairness checks (pytest-fairness)")
    for name, (help_text, ini_type, extra) in OPTIONS.items():
        flag = "--fairness-" + name.replace("_", "-")
        group.addoption(flag, dest=f"fairness_{name}", default=None, help=help_text, **extra)
        parser.addini(f"fairness_{name}", help_text, type=ini_type, default=[] if ini_type == "args" else None)  # type: ignore[arg-type]


def _value(config: pytest.Config, name: str) -> Any:
    option = config.getoption(f"fairness_{name}")
    return option if option not in (None, []) else config.getini(f"fairness_{name}")


def _suite_names(config: pytest.Config) -> list[str]:
    return [name.strip() for entry in _value(config, "suite") or [] for name in entry.split(",") if name.strip()]


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("fairness_suite") and not _suite_names(config):
        raise pytest.UsageError(
            "pytest-fairness: --fairness-suite is empty; give a built-in suite "
            f"({', '.join(suite.builtin_suites())}) or the path of a suite .yaml file"
        )
    updating = getattr(config.option, "update_snapshots", False)
    if updating and _value(config, "baselines") and getattr(config.option, "numprocesses", None):
        raise pytest.UsageError(
            "pytest-fairness: --snapshot-update rewrites baselines and must run serially: add -n 0 "
            "(comparing with baselines works in parallel)"
        )
    try:
        settings = Settings.from_values(lambda name: _value(config, name), Path(config.rootpath))
    except (SettingsError, ModelSpecError) as exc:
        raise pytest.UsageError(f"pytest-fairness: {exc}") from None
    try:
        config.stash[PROGRESS_KEY] = progress.interval_from(_value(config, "progress"))
    except ValueError:
        raise pytest.UsageError(
            f"pytest-fairness: --fairness-progress={_value(config, 'progress')!r}: give seconds (e.g. 5, or 0 for "
            "every update) or off"
        ) from None
    config.stash[SESSION_KEY] = FairnessSession(settings)
    # Beside the cache, so that xdist workers (same settings) share one adaptive limit per provider account.
    ratelimit.share_in(settings.cache_path.parent / "rate-limits")
    workerinput = getattr(config, "workerinput", {})
    if WORKERS in workerinput:  # an xdist worker (a run inside a test, e.g. pytester's, leaves the count alone)
        cores.join(workerinput[WORKERS], workerinput["workerid"])
    _app_import_paths(config)
    _register_markers(config)
    config.pluginmanager.register(fixtures, "fairness-fixtures")
    config.pluginmanager.register(fixtures.measure_fixtures(), "fairness-measure-fixtures")
    config.pluginmanager.register(FairnessReporter(config), "fairness-reporter")
    config.pluginmanager.register(RerunUndecided(config), "fairness-rerun-undecided")


def _register_markers(config: pytest.Config) -> None:
    """Register the markers checks carry (measure, suite, judge) so --strict-markers and --markers know them."""
    suites = set(suite.builtin_suites())
    for name in _suite_names(config):
        with contextlib.suppress(suite.SuiteError):  # collection reports it, with the fix
            suites.add(suite.load(name).name)
    measures = [(name, m.uses_judge) for name, m in MEASURES.items()]
    for line in status.marker_lines(measures, sorted(suites)):
        config.addinivalue_line("markers", line)


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """Inconclusive and cannot-serve checks get their own letter, word and count in pytest's output;
    progress reports from xdist workers get none (they are no test outcome)."""
    if report.when == progress.PROGRESS_WHEN:
        return "", "", ""
    return status.teststatus(report.when or "", report.user_properties)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """What the run is about to gate: model, judge, seed, profile, sequential, cache and baselines."""
    if SESSION_KEY not in config.stash or not (_suite_names(config) or config.getoption("fairness_model")):
        return []
    from pytest_fairness.report import header

    fairness = config.stash[SESSION_KEY]
    settings = fairness.settings
    # The model is built only when the run checked it already (an xdist controller does so at session
    # start); the header never loads weights itself.
    runner = getattr(fairness, "_runner", None)
    fingerprint = getattr(getattr(runner, "model", None), "fingerprint", None)
    entries = None if settings.cache_mode.value == "off" else header.cache_entries(settings.cache_path)
    return header.header_lines(
        settings, fingerprint=fingerprint, entries=entries, baselines=bool(_value(config, "baselines"))
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """A test whose requests wait in a provider batch is skipped, not failed: it carries the batch for the
    summary, which ends the run with "rerun the same command to collect"."""
    report = yield
    error = call.excinfo.value if call.excinfo is not None else None
    if isinstance(error, BatchPending):
        report.outcome = "skipped"
        report.longrepr = (item.location[0], (item.location[1] or 0) + 1, f"Skipped: {error}")
        report.user_properties.append((BATCH_PROPERTY, {**error.to_dict(), "message": str(error)}))
    return report


def _app_import_paths(config: pytest.Config) -> None:
    """Where python:MODULE:ATTR specs import MODULE from, as pytest imports a test module: the rootdir and
    the folders of the suite files named (on the controller and on every xdist worker alike)."""
    from pytest_fairness.models.python import add_import_paths

    folders = [Path(config.rootpath)]
    for name in _suite_names(config):
        path = Path(config.invocation_params.dir) / name
        if path.is_file():
            folders.append(path.parent)
    add_import_paths(folders)


def _preflight(config: pytest.Config, *, judge: bool, load_weights: bool = True, **needs: Any) -> None:
    """Check the model, judge and cache once before the first check; stop the run with one message if not.

    A bad spec, missing key or file is a usage error; an unreachable or refusing server, or a damaged
    cache, ends the run (exit code 2) with the fault and its fix. --fairness-plan calls no model, so it
    only builds them and opens the cache.
    """
    fairness = config.stash[SESSION_KEY]
    try:
        fairness.preflight(call=not _value(config, "plan"), judge=judge, load_weights=load_weights, **needs)
    except (ModelSpecError, RunFault, PermanentError) as exc:
        usage = isinstance(exc, ModelSpecError)
        message = f"pytest-fairness: {exc}" if usage else f"pytest-fairness: stopped before the first check: {exc}"
        if hasattr(config, "workerinput"):
            # An xdist worker that exits is restarted, again and again: it runs nothing instead and
            # asks the controller to stop the run with the message.
            config.stash[FAULT_KEY] = message
            return
        if usage:
            raise pytest.UsageError(message) from None
        pytest.exit(message, returncode=RUN_FAULT_EXIT)


def _uses_judge(measures: set[str]) -> bool:
    return any(MEASURES[name].uses_judge for name in measures if name in MEASURES)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """On an xdist controller, which collects nothing, check once for all workers when suites are named."""
    config = session.config
    if not config.pluginmanager.has_plugin("dsession") or config.option.collectonly or not _suite_names(config):
        return
    try:
        checks = [check for name in _suite_names(config) for check in suite.load(name).checks]
    except suite.SuiteError:
        return  # the workers report it, at collection
    _preflight(config, judge=_uses_judge({c.measure for c in checks}), load_weights=False, checks=checks)
    config.stash[PREFLIGHT_KEY] = True


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadgroup``, place suite checks by their sharing groups and expected cost (``placement``)."""
    if config.getvalue("dist") != "loadgroup" or not _suite_names(config):
        return None
    try:
        checks = [check for name in _suite_names(config) for check in suite.load(name).checks]
    except suite.SuiteError:
        return None  # the workers report it, at collection
    settings = config.stash[SESSION_KEY].settings
    model = config.stash[SESSION_KEY].runner.model
    groups, costs = placement.plan_groups(
        checks, model, profile=settings.profile, seed=settings.seed, sequential=settings.sequential
    )
    return placement.make_scheduler(config, log, groups, costs)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell xdist workers that the controller already checked the model, judge and cache, and where the
    run's workers count themselves (``models.cores``: a finished worker lends its core)."""
    if node.config.stash.get(PREFLIGHT_KEY, False):
        node.workerinput[CHECKED] = True
    if not cores.owned():
        return  # a run inside another run's worker (a test's pytester run): its cores are the outer run's
    if WORKERS_KEY not in node.config.stash:
        node.config.stash[WORKERS_KEY] = cores.open_run()
    cores.add_worker(node.config.stash[WORKERS_KEY], node.workerinput["workerid"])
    node.workerinput[WORKERS] = str(node.config.stash[WORKERS_KEY])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    """An xdist worker runs its last test with no next one (xdist has told it no more are coming): after
    it, the worker's core goes to the workers still running."""
    try:
        return (yield)
    finally:
        if nextitem is None and WORKERS in getattr(item.config, "workerinput", {}):
            cores.leave()


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Check the model, judge and cache before the first check or fixture that uses them, once per process."""
    config = session.config
    config.stash[SESSION_KEY].family_size = sum(isinstance(item, CheckItem) for item in session.items)
    if config.option.collectonly or getattr(config, "workerinput", {}).get(CHECKED):
        return
    fixture_names = {m.fixture_name: m.name for m in MEASURES.values()}
    requested = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    measures = {item.check.measure for item in session.items if isinstance(item, CheckItem)}
    measures |= {fixture_names[name] for name in requested if name in fixture_names}
    uses_session = "fairness_session" in requested
    if not _value(config, "model") and not any(isinstance(item, CheckItem) for item in session.items):
        # Only fixture calls, on the default model: a call that names its model= never touches the default,
        # and one that does not builds it when first used (a fault is then that test's own error).
        return
    if measures or uses_session:
        checks = None if uses_session else [item.check for item in session.items if isinstance(item, CheckItem)]
        _preflight(config, judge=uses_session or _uses_judge(measures), checks=checks, measures=measures)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """An xdist worker whose model, judge or cache failed the check runs nothing and stops the run."""
    fault = session.config.stash.get(FAULT_KEY, None)
    if fault is None:
        return None
    session.shouldstop = fault
    return True


def pytest_unconfigure(config: pytest.Config) -> None:
    if WORKERS_KEY in config.stash:
        cores.close_run(config.stash[WORKERS_KEY])
    if SESSION_KEY in config.stash:
        config.stash[SESSION_KEY].close()
        ratelimit.share_in(None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add one item per check of each --fairness-suite, before -k/-m selection sees the items."""
    for name in _suite_names(config):
        try:
            loaded = suite.load(name)
        except suite.SuiteError as exc:
            raise pytest.UsageError(f"pytest-fairness: {exc}") from None
        collector = SuiteFile.from_parent(session, path=Path(loaded.path), nodeid=f"fairness/{loaded.name}")
        collector.suite = loaded
        checks = collector.collect()
        # Report the collection so that "collected N items" and --collect-only count the checks.
        config.hook.pytest_collectreport(report=pytest.CollectReport(collector.nodeid, "passed", None, checks))
        items.extend(checks)


class SuiteFile(pytest.File):
    """A suite YAML file; its checks become CheckItems."""

    suite: suite.Suite

    def collect(self) -> list[CheckItem]:
        items = []
        for check in self.suite.checks:
            item = CheckItem.from_parent(self, name=check.id, check=check)
            # Checks that send the same requests share one xdist worker under --dist loadgroup, so the
            # second reads the first's answers from the cache instead of computing them alongside it.
            item.add_marker(pytest.mark.xdist_group(name=MEASURES[check.measure].share_group(check.params)))
            for marker in status.marker_names(check.measure, check.suite, MEASURES[check.measure].uses_judge):
                item.add_marker(marker)
            items.append(item)
        return items


class CheckFailed(Exception):
    """A gate that failed (or was inconclusive under the 'fail' policy)."""

    def __init__(self, record: CheckRecord) -> None:
        super().__init__(record.check)
        self.record = record


class CheckItem(pytest.Item):
    def __init__(self, *, check: suite.Check, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check

    def runtest(self) -> None:
        session = self.config.stash[SESSION_KEY]
        with counting(CallStats()) as spent:
            try:
                run = session.run_check(self.check, progress=self._progress())
            except (Exception, KeyboardInterrupt) as exc:
                self._stopped(exc, spent)
                raise
        record = run.to_record()
        try:
            if _value(self.config, "baselines"):
                self._match_baseline(record)
        finally:
            self._publish(record)
        if run.outcome in status.UNDECIDED:
            # The gate, not a baseline mismatch, decides this test: pytest shows it in its own category.
            self.user_properties.append((status.STATUS_PROPERTY, run.outcome.value))
        if run.outcome is Outcome.FAIL:
            raise CheckFailed(record)
        if run.outcome in (Outcome.INCONCLUSIVE, Outcome.CANNOT_SERVE):
            policy = session.settings.inconclusive
            # "pass" forgives a gate the sample could not decide, never a model or judge that cannot serve
            if policy == "fail" or (policy == "pass" and run.outcome is Outcome.CANNOT_SERVE):
                raise CheckFailed(record)
            if policy == "skip":
                pytest.skip(terminal.explain(record))

    def _progress(self) -> progress.Emitter | None:
        """Live progress: straight to the display here, or to the controller as intermediate reports."""
        interval = self.config.stash.get(PROGRESS_KEY, None)
        if interval is None:
            return None
        workerinput = getattr(self.config, "workerinput", None)
        if workerinput is None:
            reporter = self.config.pluginmanager.get_plugin("fairness-reporter")
            send = reporter.show if reporter is not None else None
            if send is None:
                return None
        else:

            def send(tick: progress.Tick) -> None:
                report = pytest.TestReport(
                    self.nodeid,
                    self.location,
                    {},
                    "passed",
                    None,
                    progress.PROGRESS_WHEN,  # type: ignore[arg-type]
                    user_properties=[(progress.PROGRESS_PROPERTY, tick.to_dict())],
                )
                self.ihook.pytest_runtest_logreport(report=report)

        n = self.check.sample_size(self.config.stash[SESSION_KEY].settings.profile)
        worker = workerinput.get("workerid", "") if workerinput else ""
        gap = min(progress.REDRAW_SECONDS, interval)
        label = f"{self.check.suite}::{self.check.id}"
        return progress.Emitter(self.nodeid, label, n, send, worker=worker, min_gap=gap)

    def _stopped(self, exc: BaseException, spent: CallStats) -> None:
        """Why the check stopped without a result, and what it spent: for the controller on the report, or, for a
        Ctrl-C (which ends the run before any report), straight to this process's reporter."""
        reason = str(exc) if isinstance(exc, MESSAGE_ONLY) else f"{type(exc).__name__}: {exc}"
        label = f"{self.check.suite}::{self.check.id}"
        state = "interrupted" if isinstance(exc, KeyboardInterrupt) else "errored"
        stopped = UnfinishedCheck(label, state, (reason.strip().splitlines() or [""])[0], spent_of(spent))
        reporter = self.config.pluginmanager.get_plugin("fairness-reporter")
        if state == "interrupted" and reporter is not None:
            reporter.tally.stops[self.nodeid] = stopped
        self.user_properties.append((UNFINISHED_PROPERTY, json.dumps(stopped.to_dict(), sort_keys=True)))

    def _publish(self, record: CheckRecord) -> None:
        """The record for the controller, and flat properties for JUnit XML readers (CI dashboards)."""
        self.user_properties.append((RECORD_PROPERTY, record.to_dict()))
        self.user_properties += junit.check_properties(record)

    def _match_baseline(self, record: CheckRecord) -> None:
        """Compare with the committed baseline and put the comparison into the record.

        The statistical verdict is not made here: the controller adjusts every comparison of the run
        together at the end (``baseline.decide_records``) and fails the run if one survives. A missing
        or unreadable baseline, or a changed instrument, fails the check at once. Under
        ``--snapshot-update`` the baseline is rewritten from this record and nothing is compared.
        """
        from pytest_fairness.snapshot import BaselineMismatch, match_baseline, snapshot_for_item

        policy = self.config.stash[SESSION_KEY].settings.baseline
        tolerance = self.check.tolerance if self.check.tolerance is not None else policy.tolerance
        model = policy.model
        compared = replace(record, result=replace(record.result, model_id=model)) if model else record
        updating = bool(getattr(self.config.option, "update_snapshots", False))
        try:
            comparison = match_baseline(
                snapshot_for_item(self),
                compared,
                tolerance,
                alpha=policy.alpha,
                directory=policy.directory,
                mode=policy.mode,
                defer=True,
            )
        except BaselineMismatch as exc:
            record.baseline = _as_run(exc.comparison, record)
            raise
        if not updating:
            record.baseline = _as_run(comparison, record)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:  # type: ignore[override]
        from pytest_fairness.snapshot import BaselineMismatch

        if isinstance(excinfo.value, BaselineMismatch):
            return str(excinfo.value)
        if isinstance(excinfo.value, CheckFailed):
            return terminal.explain(excinfo.value.record)
        if isinstance(excinfo.value, MESSAGE_ONLY):
            return f"{self.check.id}: {excinfo.value}"
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # The check's line in its suite file: the report's location, which CI annotations point at.
        return self.path, self.check.line - 1 if self.check.line else None, f"{self.check.suite}::{self.check.id}"


class RerunUndecided:
    """--lf reruns undecided checks too, whatever --fairness-inconclusive made of their test outcome.

    pytest's last-failed cache records only failed reports; an inconclusive check that passed or was
    skipped under the policy is still one a rerun should decide, so it is added after pytest's own entry.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" or report.failed or status.report_status(report.user_properties) is None:
            return
        lastfailed = getattr(self.config.pluginmanager.get_plugin("lfplugin"), "lastfailed", None)
        if isinstance(lastfailed, dict):
            lastfailed[report.nodeid] = True


def _write(path: Path, text: str) -> None:
    """Write a report, creating its folder (CI points every output into one artefact folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


class _Screen:
    """pytest's terminal reporter as the progress display's screen, flushed at once."""

    def __init__(self, reporter: Any) -> None:
        self.reporter = reporter

    def write(self, content: str, **markup: bool) -> None:
        self.reporter.write(content, flush=True, **markup)

    def rewrite(self, line: str, **markup: bool) -> None:
        self.reporter.rewrite(line, **markup)
        self.reporter.flush()


def _as_run(comparison: Comparison | None, record: CheckRecord) -> Comparison | None:
    """The comparison with its new side naming the model this run measured (under
    --fairness-baseline-model the record was matched as the baseline's model, to find its file)."""
    if comparison is None or comparison.after is None:
        return comparison
    return replace(comparison, after=replace(comparison.after, model=record.result.model_id))


#: The worker output key of the calls a worker gave up on at its end.
ABANDONED_KEY = "fairness_abandoned"


class FairnessReporter:
    """Collects check records from reports (local or relayed by xdist); decides, prints and writes them once.

    On the controller at session end it also decides the run's baseline comparisons together
    (adjusted for multiplicity) and fails the run if one survives, and it keeps a tally of which
    selected checks finished, errored or never ran, so that no output passes a broken run as clean.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.records: list[CheckRecord] = []
        self.plan: Plan | None = None
        self.tally = RunTally()
        self.decision: RunDecision | None = None
        self._display: progress.Display | None = None
        self.locations: dict[str, dict[str, Any]] = {}  # check label -> suite file and line
        self.pending: list[dict[str, Any]] = []  # batches that tests left waiting (BatchPending.to_dict)

    @property
    def display(self) -> progress.Display | None:
        """The live progress display, on the controller (or a serial run) with a terminal reporter."""
        if self._display is None and not hasattr(self.config, "workerinput"):
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            interval = self.config.stash.get(PROGRESS_KEY, None)
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

    @cached_property
    def analyses(self) -> dict[str, Any]:
        """Analyses across checks (e.g. implicit→decision), computed once for the summary and the JSON report."""
        return session_analyses(self.records)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Take the records off the reports before other plugins (JUnit XML) see them; on the controller only."""
        if hasattr(self.config, "workerinput"):
            return  # the record travels on to the controller with the report
        display = self.display
        if report.when == progress.PROGRESS_WHEN:
            if display is not None:
                for key, value in report.user_properties:
                    if key == progress.PROGRESS_PROPERTY:
                        display.update(progress.Tick.from_dict(value))
            return
        if display is not None:
            display.before_output()
            if report.when != "setup":
                display.finished(report.nodeid)
        kept, recorded = [], False
        for key, value in report.user_properties:
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
            stop = UnfinishedCheck.from_dict(said[-1]) if said else UnfinishedCheck(label, "errored", "".join(first))
            self.tally.stops[report.nodeid] = stop

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.tally.selected = sum(item.nodeid.startswith(CHECK_PREFIX) for item in session.items)
        self.tally.selection = {
            item.nodeid: f"{item.check.suite}::{item.check.id}" for item in session.items if isinstance(item, CheckItem)
        }

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under xdist the controller does not collect; every worker reports the same selection."""
        self.tally.selected = max(self.tally.selected, sum(i.startswith(CHECK_PREFIX) for i in ids))
        if not self.tally.selection:
            self.tally.selection = {i: i.removeprefix(CHECK_PREFIX) for i in ids if i.startswith(CHECK_PREFIX)}
        self.config.stash[SESSION_KEY].family_size = self.tally.selected  # for the summary's error-rate line

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
        if not _value(self.config, "plan"):
            return None
        fairness = self.config.stash[SESSION_KEY]
        self.plan = fairness.plan([item.check for item in session.items if isinstance(item, CheckItem)])
        self.tally.planned = True
        return True

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """A worker's calls given up on at its end (``pytest_sessionfinish`` on the worker) count for the run."""
        self.tally.abandoned += int(getattr(node, "workeroutput", {}).get(ABANDONED_KEY, 0))

    @pytest.hookimpl(tryfirst=True)  # before JUnit XML writes its file, so the run's properties reach it
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        abandoned = self.config.stash[SESSION_KEY].settle()  # no call left in flight unseen, in any process
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[ABANDONED_KEY] = abandoned
            return  # the controller decides and writes, once, from every worker's records
        self.tally.abandoned += abandoned
        settings = self.config.stash[SESSION_KEY].settings
        self.decision = decide_records(self.records, settings.baseline)
        if self.decision is not None and self.decision.failing and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.pending and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = PENDING_EXIT  # unfinished, not failed: a rerun collects the batches
        run = self.tally.state(self.records)
        junit.add_run_properties(self.config, run, self.decision, self.records)
        path = _value(self.config, "report")
        if path:
            from pytest_fairness.report.jsonfile import json_report

            document = json_report(
                self.records,
                settings.public(),
                self.analyses,
                run=run,
                baselines=self.decision,
                locations=self.locations,
            )
            _write(Path(path), json.dumps(document, indent=2) + "\n")
        markdown = _value(self.config, "markdown")
        if markdown:
            from pytest_fairness.report.markdown import markdown_report

            plots = _value(self.config, "plots")
            text = markdown_report(
                self.records, plots_dir=Path(plots) if plots else None, run=run, baselines=self.decision
            )
            _write(Path(markdown), text)
        folder = _value(self.config, "history")
        if folder and self.records:
            from pytest_fairness import history

            history.append(Path(folder), self.records, settings.public(), run, rootdir=Path(self.config.rootpath))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self._display is not None:
            self._display.before_output()
        if self.plan is not None and self.plan.rows:
            terminalreporter.write_sep("=", "fairness plan (no model was called)")
            for line in terminal.plan_lines(self.plan):
                terminalreporter.write_line(line)
        undecided = [rec for rec in self.records if rec.outcome in status.UNDECIDED]
        if undecided:  # pytest lists only failed tests under FAILURES: say why these are undecided
            terminalreporter.write_sep("=", "inconclusive and cannot-serve checks")
            for rec in undecided:
                terminalreporter.write_sep("_", rec.label)
                terminalreporter.write_line(terminal.explain(rec))
        run = self.tally.state(self.records)
        incomplete = run.status not in ("complete", "planned")
        if self.records:
            terminalreporter.write_sep("=", "fairness summary")
            if incomplete:
                terminalreporter.write_line(terminal.run_status_line(run), red=True, bold=True)
            for line in terminal.summary_lines(self.records, self.analyses):
                terminalreporter.write_line(line)
            terminalreporter.write_line(terminal.error_rate_line(self.config.stash[SESSION_KEY]))
        elif incomplete:  # nothing ran (e.g. stopped at start): one line, the message above says why
            terminalreporter.write_line(terminal.run_status_line(run), red=True, bold=True)
        if run.abandoned:
            terminalreporter.write_line(terminal.abandoned_line(run), yellow=True)
        if self.records:
            terminalreporter.write_sep("-", "fairness cost")
            for line in terminal.cost_lines(self.records):
                terminalreporter.write_line(line)
        self._baseline_summary(terminalreporter)
        if self.pending:
            terminalreporter.write_sep("-", "fairness batches")
            for message in dict.fromkeys(entry["message"] for entry in self.pending):
                terminalreporter.write_line(message, yellow=True)
            terminalreporter.write_line(f"exit status {PENDING_EXIT}: {self.tally.stopped}", yellow=True, bold=True)

    def _baseline_summary(self, terminalreporter: Any) -> None:
        """The run's baseline verdicts, or what --snapshot-update recorded (or why it recorded nothing)."""
        if getattr(self.config.option, "update_snapshots", False) and (self.records or self.tally.selected):
            terminalreporter.write_sep("-", "fairness baselines")
            if not _value(self.config, "baselines"):
                terminalreporter.write_line(
                    "nothing recorded: --snapshot-update records fairness baselines only with --fairness-baselines "
                    "(add it, or set fairness_baselines = true in the ini file)",
                    yellow=True,
                )
                return
            folder = self.config.stash[SESSION_KEY].settings.baseline.directory
            terminalreporter.write_line(
                f"{len(self.records)} baseline(s) recorded under {folder}/ from this run (every selected check, "
                "whether or not it still matched)"
            )
            return
        if self.decision is None:
            return
        terminalreporter.write_sep("-", "fairness baselines")
        for line in terminal.baseline_lines(self.decision):
            terminalreporter.write_line(line, red=line.startswith("the run fails"))
