"""Baselines: what a committed snapshot keeps of a check's result, and how a new run is compared to it.

- ``entry``: names on disk, the entry a baseline keeps of a check record, and its YAML;
- ``welch``: the statistics of one comparison (Welch's test, non-inferiority, the harmful side);
- ``comparison``: the ``Comparison`` a check record carries, its statuses and alarms;
- ``explain``: a comparison in words, rendered from its fields;
- ``compare``: comparing entries (``compare``, ``compare_entries``, ``inputs_changed``); import it from
  ``pytest_fairness.baseline.compare``: it reads the measure registry, and this package must stay
  importable by the check record, which the measures import;
- ``decide``: a run's comparisons decided together; ``policy``: the options that steer it.

Pure: no pytest, no files (``snapshot.py`` is the syrupy adapter over this).
"""

from pytest_fairness.baseline.comparison import (
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
from pytest_fairness.baseline.decide import FAILING, FAILING_ON_CHANGE, RunDecision, decide_records, decide_run
from pytest_fairness.baseline.entry import (
    baseline_entry,
    check_stem,
    entry_key,
    model_folder,
    parse_baseline,
    render_baseline,
)
from pytest_fairness.baseline.policy import FAIL_ON, BaselinePolicy, FailOn
from pytest_fairness.baseline.welch import harm_direction, harmful_side, noninferiority, welch

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
    "entry_key",
    "harm_direction",
    "harmful_side",
    "model_folder",
    "noninferiority",
    "parse_baseline",
    "render_baseline",
    "welch",
]
