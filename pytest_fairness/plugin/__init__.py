"""pytest hooks only: declare the options, read them into ``Settings``, collect suites, wire the run.

The options are declared in ``config.options`` (and each report format's with it, ``report.formats``), the
items of suite checks are in ``check_item``, and the reporter that writes every output is in
``reporter``. Results travel from xdist workers to the controller as ``user_properties`` on each
report, so the summary and exit code are decided once, on the controller, from the same records.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_fairness.config import suite
from pytest_fairness.config.options import OPTIONS
from pytest_fairness.config.settings import Settings, SettingsError
from pytest_fairness.measures import MEASURES
from pytest_fairness.models import cores, ratelimit
from pytest_fairness.models.batch import BatchPending
from pytest_fairness.models.interface import PermanentError
from pytest_fairness.models.spec import ModelSpecError
from pytest_fairness.plugin import fixtures, html_extras
from pytest_fairness.plugin.check_item import CheckItem, RerunUndecided, check_nodeid, collect_suite
from pytest_fairness.plugin.fixtures import SESSION_KEY
from pytest_fairness.plugin.reporter import BATCH_PROPERTY, SHARD_KEY, FairnessReporter
from pytest_fairness.plugin.shard_selection import ShardSelection
from pytest_fairness.report import header, progress, status
from pytest_fairness.report.formats import BUILT_IN, output_options
from pytest_fairness.run import placement
from pytest_fairness.run.preflight import RunFault
from pytest_fairness.run.replay_check import read_replay_verdict, replay_verdict_file, write_replay_verdict
from pytest_fairness.run.session import FairnessSession

#: Exit code of a run stopped before its first check by a fault of the model, judge or cache: neither a
#: failed gate (1) nor a usage error (4) - the run could not happen.
RUN_FAULT_EXIT = pytest.ExitCode.INTERRUPTED
#: Set in each xdist worker's input when the controller checks the model, judge and cache (before it schedules).
CHECKED = "fairness_preflight_done"
PREFLIGHT_KEY = pytest.StashKey[bool]()  # this controller checks them, once its workers have collected
#: An xdist worker's input: the file where the controller says whether the model's cached answers may be replayed.
REPLAY_FILE = "fairness_replay_file"
REPLAY_KEY = pytest.StashKey[Path]()  # the controller's copy
WORKERS = "fairness_workers"  # workerinput: the folder where the run's workers count themselves
WORKERS_KEY = pytest.StashKey[Path]()  # the controller's copy
FAULT_KEY = pytest.StashKey[str]()  # this worker found a fault: the message
CHECKED_KEY = pytest.StashKey[bool]()  # the xdist controller has checked (on its first worker's collection)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fairness", "LLM fairness checks (pytest-fairness)")
    for option in (*OPTIONS, *output_options(BUILT_IN)):  # a conftest's own format declares its own
        option.declare(group, parser)


def _settings(config: pytest.Config) -> Settings:
    """Every option and ini key, read once: the command line wins over the ini file."""

    def get(name: str) -> Any:
        given = config.getoption(f"fairness_{name}")
        return given if given not in (None, []) else config.getini(f"fairness_{name}")

    try:
        return Settings.from_values(get, Path(config.rootpath), output_options())
    except (SettingsError, ModelSpecError) as exc:
        raise pytest.UsageError(f"pytest-fairness: {exc}") from None


def pytest_configure(config: pytest.Config) -> None:
    settings = _settings(config)
    updating = getattr(config.option, "update_snapshots", False)
    if updating and settings.baselines and getattr(config.option, "numprocesses", None):
        raise pytest.UsageError(
            "pytest-fairness: --snapshot-update rewrites baselines and must run serially: add -n 0 "
            "(comparing with baselines works in parallel)"
        )
    if settings.baseline_ref is not None:
        settings = _baselines_from_ref(config, settings, updating)
    config.stash[SESSION_KEY] = FairnessSession(settings)
    # Beside the cache, so that xdist workers (same settings) share one adaptive limit per provider account.
    ratelimit.share_in(settings.cache_path.parent / "rate-limits")
    workerinput = getattr(config, "workerinput", {})
    if WORKERS in workerinput:  # an xdist worker (a run inside a test, e.g. pytester's, leaves the count alone)
        cores.join(workerinput[WORKERS], workerinput["workerid"])
    _app_import_paths(config, settings)
    _register_markers(config, settings)
    config.pluginmanager.register(fixtures, "fairness-fixtures")
    config.pluginmanager.register(fixtures.measure_fixtures(), "fairness-measure-fixtures")
    config.pluginmanager.register(FairnessReporter(config), "fairness-reporter")
    config.pluginmanager.register(RerunUndecided(config), "fairness-rerun-undecided")
    if html_extras.wanted(config):  # pytest-html writes a report: the fairness summary and plots join it
        config.pluginmanager.register(html_extras.HtmlExtras(config), html_extras.PLUGIN)
    if settings.shard is not None:
        config.pluginmanager.register(ShardSelection(), "fairness-shard")


def _baselines_from_ref(config: pytest.Config, settings: Settings, updating: bool) -> Settings:
    """The settings with the baselines folder read from --fairness-baseline-ref (the target branch's), not the
    working tree's: a pull request that edits baselines/ is gated against what it would replace."""
    from pytest_fairness.baseline.git_ref import RefError, baselines_at

    if updating:
        raise pytest.UsageError(
            "pytest-fairness: --snapshot-update writes the working tree's baselines and cannot write a git ref: drop "
            f"--fairness-baseline-ref={settings.baseline_ref} to record them"
        )
    policy = settings.baseline
    try:
        folder = baselines_at(Path(config.rootpath), settings.baseline_ref or "", policy.directory)
    except RefError as exc:
        raise pytest.UsageError(f"pytest-fairness: {exc}") from None
    return replace(settings, baseline=replace(policy, directory=str(folder)))


def _register_markers(config: pytest.Config, settings: Settings) -> None:
    """Register the markers checks carry (measure, suite, judge) so --strict-markers and --markers know them."""
    suites = set(suite.builtin_suites())
    for name in settings.suites:
        with contextlib.suppress(suite.SuiteError):  # collection reports it, with the fix
            suites.add(suite.load(name).name)
    measures = [(name, m.uses_judge) for name, m in MEASURES.items()]
    for line in status.marker_lines(measures, sorted(suites)):
        config.addinivalue_line("markers", line)


def _app_import_paths(config: pytest.Config, settings: Settings) -> None:
    """Where python:MODULE:ATTR specs import MODULE from, as pytest imports a test module: the rootdir and
    the folders of the suite files named (on the controller and on every xdist worker alike)."""
    from pytest_fairness.models.python import add_import_paths

    folders = [Path(config.rootpath)]
    for name in settings.suites:
        path = Path(config.invocation_params.dir) / name
        if path.is_file():
            folders.append(path.parent)
    add_import_paths(folders)


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """Inconclusive and cannot-serve checks get their own letter, word and count in pytest's output;
    progress reports from xdist workers get none (they are no test outcome)."""
    if report.when == progress.PROGRESS_WHEN:
        return "", "", ""
    return status.teststatus(report.when or "", getattr(report, "user_properties", ()))


def pytest_report_header(config: pytest.Config) -> list[str]:
    """What the run is about to gate: model, judge, seed, profile, sequential, cache and baselines."""
    fairness = config.stash.get(SESSION_KEY, None)
    if fairness is None or not (fairness.settings.suites or fairness.settings.model_named):
        return []
    settings = fairness.settings
    # The model is built only when the run checked it already (an xdist controller does so at session
    # start); the header never loads weights itself.
    fingerprint = getattr(fairness.built_model, "fingerprint", None)
    entries = None if settings.cache_mode.value == "off" else header.cache_entries(settings.cache_path)
    drawn, folder = _drawn(fairness)
    return header.header_lines(settings, fingerprint=fingerprint, entries=entries, drawn=drawn, line_folder=folder)


def _drawn(fairness: FairnessSession) -> tuple[dict[str, tuple[str, int | None]] | None, str]:
    """Per check of the suites named, under the pull-request gate, its measure and its committed baseline's size
    (None: no baseline, or one its model could not serve), and the model line's folder: what the header says the
    run draws."""
    if fairness.settings.gate != "pr":
        return None, ""
    from pytest_fairness.baseline.entry import model_folder
    from pytest_fairness.baseline.pr_draw import baseline_line, committed_entry
    from pytest_fairness.baseline.pr_gate import same_items

    out: dict[str, tuple[str, int | None]] = {}
    for check in _named_checks(fairness.settings) or ():
        entry = committed_entry(fairness, check)
        size = None if entry is None or entry.could_not_serve else same_items(entry, check.measure.samples)[1]
        out[check.label] = (check.measure.name, size)
    directory = fairness.settings.baseline.directory
    shown = Path(directory).name if fairness.settings.baseline_ref else directory  # a ref's folder is a copy
    return out, f"{shown}/{model_folder(baseline_line(fairness))}"


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


def _preflight(config: pytest.Config, *, judge: bool, load_weights: bool = True, **needs: Any) -> None:
    """Check the model, judge and cache once before the first check; stop the run with one message if not.

    A bad spec, missing key or file is a usage error; an unreachable or refusing server, or a damaged
    cache, ends the run (exit code 2) with the fault and its fix. --fairness-plan calls no model, so it
    only builds them and opens the cache.
    """
    fairness = config.stash[SESSION_KEY]
    try:
        fairness.preflight(call=not fairness.settings.plan, judge=judge, load_weights=load_weights, **needs)
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
        reporter = config.pluginmanager.get_plugin("fairness-reporter")
        if reporter is not None:  # the reports say the run could not start, and why
            reporter.tally.not_started = str(exc)
        pytest.exit(message, returncode=RUN_FAULT_EXIT)


def _uses_judge(measures: set[str]) -> bool:
    return any(MEASURES[name].uses_judge for name in measures if name in MEASURES)


def _named_checks(settings: Settings) -> list[suite.Check] | None:
    """The checks of the suites named, or None when there are none or one cannot be read (the workers
    report that at collection)."""
    try:
        design = settings.release_design()
        return [check for name in settings.suites for check in suite.load(name, design).checks] or None
    except suite.SuiteError:
        return None


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """On an xdist controller, which collects nothing, say that it checks once for all workers when suites are
    named: it does so when the first worker has collected (``pytest_xdist_node_collection_finished``), on the
    checks selected (-k, -m, --lf, a shard), before any is scheduled."""
    config = session.config
    if not config.pluginmanager.has_plugin("dsession") or config.option.collectonly:
        return
    settings = config.stash[SESSION_KEY].settings
    if _named_checks(settings) is None:
        return
    config.stash[PREFLIGHT_KEY] = True
    config.stash[REPLAY_KEY] = replay_verdict_file(settings.cache_path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """On the xdist controller, once, when the first worker has collected: check the model, judge and cache for
    the checks it selected (every worker selects the same), and the model's replay, before any check is scheduled;
    a fault stops the run with its reports written."""
    config = node.config
    if not config.stash.get(PREFLIGHT_KEY, False) or config.stash.get(CHECKED_KEY, False):
        return
    config.stash[CHECKED_KEY] = True
    selected = set(ids)
    checks = [c for c in _named_checks(config.stash[SESSION_KEY].settings) or () if check_nodeid(c) in selected]
    if not checks:
        return
    _preflight(config, judge=_uses_judge({c.measure.name for c in checks}), load_weights=False, checks=checks)
    fairness = config.stash[SESSION_KEY]
    write_replay_verdict(config.stash[REPLAY_KEY], fairness.runner.fresh_since)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadgroup``, place suite checks by their sharing groups and expected cost (``placement``)."""
    fairness = config.stash[SESSION_KEY]
    checks = _named_checks(fairness.settings) if config.getvalue("dist") == "loadgroup" else None
    if checks is None:
        return None
    settings = fairness.settings
    groups, costs = placement.plan_groups(
        checks, fairness.runner.model, profile=settings.profile, seed=settings.seed, sequential=settings.sequential
    )
    return placement.make_scheduler(config, log, groups, costs)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell xdist workers that the controller already checked the model, judge and cache, and where the
    run's workers count themselves (``models.cores``: a finished worker lends its core)."""
    if node.config.stash.get(PREFLIGHT_KEY, False):
        node.workerinput[CHECKED] = True
        node.workerinput[REPLAY_FILE] = str(node.config.stash[REPLAY_KEY])
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
    workerinput = getattr(item.config, "workerinput", {})
    if REPLAY_FILE in workerinput and not item.config.stash.get(REPLAY_KEY, None):
        item.config.stash[REPLAY_KEY] = Path(workerinput[REPLAY_FILE])  # read once, before this worker's first test
        since = read_replay_verdict(item.config.stash[REPLAY_KEY])
        if since is not None:
            item.config.stash[SESSION_KEY].refuse_replay(since)
    try:
        return (yield)
    finally:
        if nextitem is None and WORKERS in workerinput:
            cores.leave()


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Fix the gate family, then check the model, judge and cache before the first check or fixture that
    uses them, once per process."""
    config = session.config
    fairness = config.stash[SESSION_KEY]
    checks = [item.check for item in session.items if isinstance(item, CheckItem)]
    sharded = config.stash.get(SHARD_KEY, None)
    fairness.collected(len(checks) if sharded is None else len(sharded.order))  # a shard's gates are its run's
    if config.option.collectonly or getattr(config, "workerinput", {}).get(CHECKED):
        return
    fixture_names = {m.fixture_name: m.name for m in MEASURES.values()}
    requested = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    measures = {check.measure.name for check in checks} | {fixture_names[n] for n in requested if n in fixture_names}
    uses_session = "fairness_session" in requested
    if not fairness.settings.model_named and not checks:
        # Only fixture calls, on the default model: a call that names its model= never touches the default,
        # and one that does not builds it when first used (a fault is then that test's own error).
        return
    if measures or uses_session:
        _preflight(
            config,
            judge=uses_session or _uses_judge(measures),
            checks=None if uses_session else checks,
            measures=measures,
        )


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
    if REPLAY_KEY in config.stash and not hasattr(config, "workerinput"):
        config.stash[REPLAY_KEY].unlink(missing_ok=True)
    if SESSION_KEY in config.stash:
        config.stash[SESSION_KEY].close()
        ratelimit.share_in(None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add one item per check of each --fairness-suite, before -k/-m selection sees the items."""
    settings = config.stash[SESSION_KEY].settings
    for name in settings.suites:
        try:
            loaded = suite.load(name, settings.release_design())
        except suite.SuiteError as exc:
            raise pytest.UsageError(f"pytest-fairness: {exc}") from None
        items.extend(collect_suite(session, loaded))
