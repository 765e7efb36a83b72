"""Baselines: what a committed snapshot keeps of a check's result, and how a new run is compared to it.

- ``entry``: names on disk, the typed ``Entry`` a baseline keeps of a check record, and its YAML;
- ``welch``: the statistics of one comparison (Welch's test, non-inferiority on the harmful side);
- ``entry_comparison``: comparing entries (``compare``, ``compare_entries``, ``inputs_changed``);
- ``decide``: a run's comparisons decided together; ``policy``: the options that steer it.

The ``Comparison`` a check record carries, its statuses and alarms (``pytest_fairness.records.comparison``) and its
words (``pytest_fairness.records.explain``) sit below the record, so they are re-exported here for convenience.
Pure: no pytest, no files (``baseline/snapshot.py`` is the syrupy adapter over this).
"""

from pytest_fairness.baseline.entry import (
    Entry,
    baseline_entry,
    check_stem,
    model_folder,
    parse_baseline,
    render_baseline,
)
from pytest_fairness.baseline.run_verdicts import FAILING, FAILING_ON_CHANGE, RunDecision, decide_records, decide_run
from pytest_fairness.baseline.welch import noninferiority, welch
from pytest_fairness.config.baseline_policy import FAIL_ON, BaselinePolicy, FailOn
from pytest_fairness.records.comparison import (
    ALARMS,
    HOLDS,
    MODES,
    STATUSES,
    Adjustment,
    Comparison,
    Interval,
    Mode,
    Side,
    Status,
)
from pytest_fairness.records.explain import explain

__all__ = [
    "ALARMS",
    "FAILING",
    "FAILING_ON_CHANGE",
    "FAIL_ON",
    "HOLDS",
    "MODES",
    "STATUSES",
    "Adjustment",
    "BaselinePolicy",
    "Comparison",
    "Entry",
    "FailOn",
    "Interval",
    "Mode",
    "RunDecision",
    "Side",
    "Status",
    "baseline_entry",
    "check_stem",
    "decide_records",
    "decide_run",
    "explain",
    "model_folder",
    "noninferiority",
    "parse_baseline",
    "render_baseline",
    "welch",
]
