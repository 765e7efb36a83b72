"""The pytest items of suite checks: a suite file collects one ``CheckItem`` per check, which runs and gates it.

A check's result leaves its item as the whole ``CheckRecord`` in the report's ``user_properties`` (how
it reaches the xdist controller) and as flat JUnit properties; its baseline is compared here, and the
run's comparisons are decided together at the end (``plugin.reporter``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_fairness.baseline import baseline_entry
from pytest_fairness.baseline.items_file import RecordedItems, run_items
from pytest_fairness.baseline.pairing import PairingInputs, paired
from pytest_fairness.baseline.pr_draw import committed_entry, shape_for
from pytest_fairness.baseline.pr_gate import PrVerdict, pr_sizes, pr_verdict
from pytest_fairness.config import suite
from pytest_fairness.measures import ParamsError
from pytest_fairness.models.cache import CacheMiss
from pytest_fairness.models.interface import PermanentError
from pytest_fairness.models.runner import CallStats, RetriesExhausted, counting
from pytest_fairness.models.spec import ModelSpecError
from pytest_fairness.planning.plan import RunShape
from pytest_fairness.plugin.fixtures import SESSION_KEY
from pytest_fairness.records.check_record import RECORD_PROPERTY, CheckRecord
from pytest_fairness.report import junit, progress, status, terminal
from pytest_fairness.report.tally import UNFINISHED_PROPERTY, UnfinishedCheck, spent_of
from pytest_fairness.run.growth import SEQUENTIAL_GROWTH
from pytest_fairness.run.preflight import RunFault
from pytest_fairness.stats.gate import Outcome

if TYPE_CHECKING:
    from pytest_fairness.baseline.entry import Entry
    from pytest_fairness.baseline.snapshot import BaselineMismatch
    from pytest_fairness.records.comparison import Comparison
    from pytest_fairness.run.session import CheckRun

#: Node ids of suite checks start with this (``fairness/<suite>::<check>``), on workers and the controller.
CHECK_PREFIX = "fairness/"
#: Errors whose message says everything (what is wrong and the fix): a check shows only the message.
MESSAGE_ONLY = (ModelSpecError, PermanentError, RetriesExhausted, CacheMiss, ParamsError, RunFault)


class SuiteFile(pytest.File):
    """A suite YAML file; its checks become CheckItems."""

    suite: suite.Suite

    def collect(self) -> list[CheckItem]:
        items = []
        for check in self.suite.checks:
            item = CheckItem.from_parent(self, name=check.id, check=check)
            # Checks that send the same requests share one xdist worker under --dist loadgroup, so the
            # second reads the first's answers from the cache instead of computing them alongside it.
            item.add_marker(pytest.mark.xdist_group(name=check.measure.share_group(check.params)))
            for marker in status.marker_names(check.measure.name, check.suite, check.measure.uses_judge):
                item.add_marker(marker)
            items.append(item)
        return items


def collect_suite(session: pytest.Session, loaded: suite.Suite) -> list[CheckItem]:
    """The items of one suite, collected under ``fairness/<suite>`` and reported as pytest's own collection,
    so that "collected N items" and --collect-only count the checks."""
    collector = SuiteFile.from_parent(session, path=Path(loaded.path), nodeid=f"{CHECK_PREFIX}{loaded.name}")
    collector.suite = loaded
    checks = collector.collect()
    collected: list[pytest.Item | pytest.Collector] = [*checks]
    session.config.hook.pytest_collectreport(report=pytest.CollectReport(collector.nodeid, "passed", None, collected))
    return checks


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
        """Run the check, compare it with its baseline, and end the test by the run's gate.

        A release run (``--fairness-gate=release``) is gated on its threshold; its baseline comparison, when
        baselines are on, may fail it too (syrupy's mismatch). A pull-request run draws its committed
        baseline's items (``baseline.pr_draw``), grows through them under ``--fairness-sequential``, and is
        gated on its paired comparison with the baseline (``baseline.pr_gate.pr_verdict``). Either way the
        record is published whole before the test's outcome is raised, so every output reads it.
        """
        session = self.config.stash[SESSION_KEY]
        pr = session.settings.gate == "pr"
        entry = committed_entry(session, self.check) if pr else None
        with counting(CallStats()) as spent:
            try:
                shape = RunShape() if entry is None else shape_for(session, self.check, entry)
                if pr and session.settings.sequential and entry is not None and shape.size is not None:
                    run = self._grown(entry, shape.seed, shape.size)
                else:
                    run = session.run_check(
                        self.check, self._progress(), seed=shape.seed, size=shape.size,
                        samples_per_item=shape.samples_per_item,
                    )  # fmt: skip
            except (Exception, KeyboardInterrupt) as exc:
                self._stopped(exc, spent)
                raise
        if shape.paired:
            details = {**run.result.details, "paired_plan": shape.paired}
            run = replace(run, result=replace(run.result, details=details))
        record, verdict, mismatch = run.to_record(), None, None
        try:
            if session.settings.baselines:
                record, mismatch = self._match_baseline(record)
        finally:
            if pr:
                unserved = entry is not None and entry.could_not_serve
                verdict = pr_verdict(run.outcome, record.baseline, unserved, session.family.size)
                record = _with_verdict(record, verdict, run.outcome)
            self._publish(record)
        if mismatch is not None:
            raise mismatch
        outcome = record.outcome
        if outcome in status.OWN_CATEGORY:
            # The gate, not a baseline mismatch, decides this test: pytest shows it in its own category.
            self.user_properties.append((status.STATUS_PROPERTY, outcome.value))
        if verdict is not None and not verdict.blocking:
            return  # could not serve at its baseline either: reported, never blocking a pull request
        decided = status.test_outcome(outcome, session.settings.inconclusive, session.settings.pr_threshold)
        if decided == "failed":
            raise CheckFailed(record)
        if decided == "skipped":
            pytest.skip(terminal.explain(record))

    def _grown(self, entry: Entry, seed: int | None, size: int) -> CheckRun:
        """A pull-request check under --fairness-sequential: from its profile's size through its baseline's next
        items until the paired comparison decides (a confidence sequence: valid at every look) or they run out;
        prefix-stable draws and the cache (or the runner's memory of this run's answers) make each look pay only
        for its new items. A look whose earlier items score otherwise than the look before saw them is not nested
        in it: the run stops there, and its comparison stays unpaired and says why (``RESAMPLED``)."""
        from pytest_fairness.baseline.entry_comparison import compare
        from pytest_fairness.baseline.snapshot import recorded_items

        session = self.config.stash[SESSION_KEY]
        policy, progress = session.settings.baseline, self._progress()
        tolerance = self.check.tolerance if self.check.tolerance is not None else policy.tolerance
        start, recorded, seen = self.check.sample_size(session.settings.profile), None, {}
        for look, n in enumerate(pr_sizes(start, size, SEQUENTIAL_GROWTH), 1):
            run = session.run_check(self.check, progress, seed=seed, size=n, grows=False)
            record = run.to_record()
            scores = {item.key: item.scores for item in self._pairing_inputs(record).items}
            changed = [key for key, before in seen.items() if scores.get(key) != before]
            if changed:
                why = _resampled(look, n, len(changed), len(seen), changed[0])
                return replace(run, result=replace(run.result, details={**run.result.details, RESAMPLED: why}))
            seen = scores
            if n == size or run.outcome is Outcome.CANNOT_SERVE:
                return run
            own = compare(entry, baseline_entry(record), tolerance, alpha=policy.alpha, mode=policy.mode)
            if recorded is None:  # the baseline's items, read once for every look
                recorded = recorded_items(session.settings.root, policy.directory, record, policy.model)
            looked = paired(own, recorded, self._pairing_inputs(record, recorded))
            if looked.paired is not None and looked.paired.outcome is not Outcome.INCONCLUSIVE:
                return run
        raise AssertionError("pr_sizes ends at the baseline's size")

    def _progress(self) -> progress.Emitter | None:
        """Live progress: straight to the display here, or to the controller as intermediate reports."""
        settings = self.config.stash[SESSION_KEY].settings
        if settings.progress is None:
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

        n = self.check.sample_size(settings.profile)
        worker = workerinput.get("workerid", "") if workerinput else ""
        gap = min(progress.REDRAW_SECONDS, settings.progress)
        return progress.Emitter(self.nodeid, self.check.label, n, send, worker=worker, min_gap=gap)

    def _stopped(self, exc: BaseException, spent: CallStats) -> None:
        """Why the check stopped without a result, and what it spent: for the controller on the report, or, for a
        Ctrl-C (which ends the run before any report), straight to this process's reporter."""
        reason = str(exc) if isinstance(exc, MESSAGE_ONLY) else f"{type(exc).__name__}: {exc}"
        state = "interrupted" if isinstance(exc, KeyboardInterrupt) else "errored"
        stopped = UnfinishedCheck(self.check.label, state, (reason.strip().splitlines() or [""])[0], spent_of(spent))
        reporter = self.config.pluginmanager.get_plugin("fairness-reporter")
        if state == "interrupted" and reporter is not None:
            reporter.tally.stops[self.nodeid] = stopped
        self.user_properties.append((UNFINISHED_PROPERTY, json.dumps(stopped.to_dict(), sort_keys=True)))

    def _publish(self, record: CheckRecord) -> None:
        """The record for the controller, and flat properties for JUnit XML readers (CI dashboards)."""
        self.user_properties.append((RECORD_PROPERTY, record.to_dict()))
        self.user_properties += junit.check_properties(record)

    def _match_baseline(self, record: CheckRecord) -> tuple[CheckRecord, BaselineMismatch | None]:
        """Compare with the committed baseline: the record with its comparison (paired on the items the run
        shares with the baseline, or unpaired with why), and the mismatch that fails the check (raised once the
        record is published).

        The statistical verdict is not made here: the controller adjusts every comparison of the run
        together at the end (``baseline.decide_records``) and fails the run if one survives. A missing
        or unreadable baseline, or a changed instrument, fails the check at once. Under
        ``--snapshot-update`` the baseline and its items file are rewritten from this record and nothing is
        compared.
        """
        from pytest_fairness.baseline.snapshot import (
            BaselineMismatch,
            match_baseline,
            recorded_items,
            snapshot_for_item,
            write_items,
        )

        settings = self.config.stash[SESSION_KEY].settings
        policy, root = settings.baseline, settings.root
        tolerance = self.check.tolerance if self.check.tolerance is not None else policy.tolerance
        updating = bool(getattr(self.config.option, "update_snapshots", False))
        if updating:
            write_items(root, policy.directory, record, policy.model)
        try:
            comparison = match_baseline(
                snapshot_for_item(self),
                record,
                tolerance,
                alpha=policy.alpha,
                directory=policy.directory,
                mode=policy.mode,
                defer=True,
                model=policy.model,
            )
        except BaselineMismatch as exc:
            recorded = recorded_items(root, policy.directory, record, policy.model)
            return replace(record, baseline=self._paired(exc.comparison, record, recorded)), exc
        if updating:
            return record, None
        recorded = recorded_items(root, policy.directory, record, policy.model)
        return replace(record, baseline=self._paired(comparison, record, recorded)), None

    def _paired(self, comparison: Comparison | None, record: CheckRecord, recorded: RecordedItems) -> Comparison | None:
        """The comparison decided on the items shared with the baseline, or the unpaired one with why."""
        return None if comparison is None else paired(comparison, recorded, self._pairing_inputs(record, recorded))

    def _pairing_inputs(self, record: CheckRecord, recorded: RecordedItems | None = None) -> PairingInputs:
        """This check's own items (rounded as a baseline keeps them), its score range and default margin, whether
        both sides read their items exactly (``recorded``: the baseline's), the seeded order a fixed-size run
        decides in (the baseline's seed, which a paired run shares, the check and the model), and whether its
        sequential looks re-scored their items."""
        result, settings = record.result, self.config.stash[SESSION_KEY].settings
        exact = recorded is not None and all(
            self.check.params.items_exact(fidelity) for fidelity in (result.fidelity, recorded.fidelity)
        )
        resampled = result.details.get(RESAMPLED, "")
        return PairingInputs(
            items=run_items(*result.per_sample()) if result.items else [],
            scale=self.check.measure.bounds,
            default_margin=self.check.params.pr_margin(),
            sequential=result.sequential is not None or (settings.gate == "pr" and settings.sequential),
            exact=exact,
            order_key=f"{result.params.get('seed')}:{record.label}:{result.model_id}",
            resampled=resampled if isinstance(resampled, str) else "",
        )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:  # type: ignore[override]
        from pytest_fairness.baseline.snapshot import BaselineMismatch

        if isinstance(excinfo.value, BaselineMismatch):
            return str(excinfo.value)
        if isinstance(excinfo.value, CheckFailed):
            return terminal.explain(excinfo.value.record)
        if isinstance(excinfo.value, MESSAGE_ONLY):
            return f"{self.check.id}: {excinfo.value}"
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # The check's line in its suite file: the report's location, which CI annotations point at.
        return self.path, self.check.line - 1 if self.check.line else None, self.check.label


def _with_verdict(record: CheckRecord, verdict: PrVerdict, threshold: Outcome) -> CheckRecord:
    """The record under the pull-request gate: its outcome, with the threshold's own verdict, what decided it
    (``basis``: the margin or the threshold) and what a PASS or FAIL shows (``claim``) kept in the result's
    details (``pr_gate``) for every report."""
    gate = {"outcome": verdict.outcome.value, "threshold": threshold.value, "why": verdict.why, "basis": verdict.basis}
    if verdict.claim:
        gate["claim"] = verdict.claim
    result = replace(record.result, details={**record.result.details, "pr_gate": gate})
    return replace(record, outcome=verdict.outcome, result=result)


#: The result's detail that says why a sequential pull request's looks cannot be paired.
RESAMPLED = "resampled_looks"


def _resampled(look: int, size: int, changed: int, earlier: int, example: str) -> str:
    """Why a sequential run stopped at a look that re-scored items the look before had scored."""
    return (
        f"look {look} ({size} items) scored {changed} of the {earlier} items look {look - 1} had scored otherwise "
        f"(e.g. {example}): the model did not give the same answers again, so the looks are not nested and the "
        "confidence sequence cannot decide on them; keep the run's answers (--fairness-cache-mode=rw) or use a "
        "model that reproduces an answer from its seed"
    )


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
