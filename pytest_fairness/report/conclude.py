"""The run-level decision: one plain function of the run's records and settings.

Some things are decided for the run, not for a check: the baseline comparisons adjusted together
(Holm or Benjamini-Hochberg across every compared check), the analyses across checks, the gate family,
and the exit status that follows. The reporter calls ``conclude`` at the end of a pytest run, and
``shard_merge`` calls it on the records of every shard of a sharded run: one function, so the two cannot
drift apart, and a merged run decides exactly as the same run unsharded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pytest_fairness.baseline import decide_records
from pytest_fairness.config.settings import Settings
from pytest_fairness.models.batch import PENDING_EXIT
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.report.analyses import session_analyses
from pytest_fairness.report.output import RunReport
from pytest_fairness.report.tally import RunState


def conclude(
    records: Sequence[CheckRecord],
    settings: Settings,
    run: RunState,
    *,
    decide: bool = True,
    family_size: int | None = None,
    **context: Any,
) -> RunReport:
    """The run as every output reads it, with its run-level decisions made.

    ``decide=False`` leaves the baseline comparisons as each check made them (a shard: the merge decides
    them across all shards); ``family_size`` is the number of checks that share the gates' error rate
    (default: the run's selected checks; a shard's is its whole run's). ``context`` is the rest of the
    ``RunReport`` (locations, plan, pending batches, rootdir, updating, shard).
    """
    decision, records = decide_records(records, settings.baseline) if decide else (None, tuple(records))
    return RunReport(
        records=records,
        run=run,
        settings=settings,
        family=settings.family(run.selected if family_size is None else family_size),
        decision=decision,
        analyses=session_analyses(records),
        **context,
    )


def gate_status(tests: int, report: RunReport) -> int:
    """The run's exit status: pytest's own from its tests (``tests``), failed when a baseline comparison survives
    the run's error control, and ``PENDING_EXIT`` when requests wait in provider batches (unfinished, not failed)."""
    status = tests
    if report.decision is not None and report.decision.failing and status == pytest.ExitCode.OK:
        status = pytest.ExitCode.TESTS_FAILED
    if report.pending and status in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        status = PENDING_EXIT
    return int(status)


def shard_status(tests: int, report: RunReport) -> int:
    """A shard's exit status says only whether it ran: 0 when every one of its checks finished (their outcomes are
    decided by the merge), else the run's own status (failed, when that alone would not say so)."""
    done = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)
    if report.run.complete and tests in done:
        return int(pytest.ExitCode.OK)
    status = gate_status(tests, report)
    return status if status != pytest.ExitCode.OK else int(pytest.ExitCode.TESTS_FAILED)
