"""JSON reports of small synthetic releases, as ``--fairness-report`` writes them: what the release-comparison
tests compare."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.measure_result import MeasureResult
from pytest_fairness.report.jsonfile import json_report
from pytest_fairness.stats.gate import Threshold, decide
from pytest_fairness.stats.intervals import summarize

V1, V2 = "openai:acme-7b-v1", "openai:acme-7b-v2"
AT_MOST_02 = Threshold(max=0.2)


def record(check, mean, seed, *, model=V1, threshold=AT_MOST_02, sd=0.3, n=40) -> CheckRecord:
    """An implicit-bias check of the gender suite whose ``n`` scores scatter around ``mean``."""
    values = np.clip(np.random.default_rng(seed).normal(mean, sd, n), -1, 1)
    result = MeasureResult("implicit_bias", check, summarize(values), 0, [], "faithful", model, {"stimuli": "a1"}, {})
    return CheckRecord("gender", check, decide(result.ci, threshold), threshold, result)


def write_report(path: Path, records: list[CheckRecord]) -> Path:
    path.write_text(json.dumps(json_report(records, {"model": records[0].result.model_id})))
    return path
