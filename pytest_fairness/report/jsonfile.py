"""The JSON report (``--fairness-report``): the canonical machine-readable record of a run."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_fairness.baseline import RunDecision
from pytest_fairness.config.options import Option
from pytest_fairness.records.check_record import SCHEMA_VERSION, CheckRecord
from pytest_fairness.report.output import Output, RunReport, Sinks, write_file
from pytest_fairness.report.tally import RunState, outcome_counts, run_totals
from pytest_fairness.stats.gate import OUTCOMES, Outcome


class JsonFile(Output):
    """``--fairness-report=PATH``: the run as one JSON document."""

    options = (Option("report", "write the run's results as JSON to this path"),)

    def write(self, report: RunReport, sinks: Sinks) -> None:
        document = json_report(
            report.records,
            report.settings.public(),
            report.analyses,
            run=report.run,
            baselines=report.decision,
            locations=report.locations,
        )
        page = report.settings.outputs.get("html")
        if page:  # where CI annotations point a reviewer (ci_workflow.evidence_link)
            document["html"] = Path(page).name
        if report.shard is not None:  # what the merge needs to decide the run (python -m pytest_fairness merge)
            document["shard"] = dict(report.shard)
        write_file(Path(report.option(self.options[0])), json.dumps(document, indent=2) + "\n")


def json_report(
    records: Sequence[CheckRecord],
    settings: Mapping[str, Any],
    analyses: Mapping[str, Any] | None = None,
    *,
    run: RunState | None = None,
    baselines: RunDecision | None = None,
    locations: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The run as one JSON document: settings, each check record, cost totals, gate outcomes, analyses.

    ``run`` says whether every selected check finished (and lists, with why, each that did not), so that an
    errored or interrupted run is never read as a clean one; ``totals`` count its unfinished checks' calls too;
    ``baselines`` adds the run's adjusted baseline decisions when checks were compared; ``locations``
    (check label -> suite ``file`` and ``line``) lets CI annotate the line a check is written on.
    """
    from pytest_fairness import __version__

    out: dict[str, Any] = {"pytest_fairness": __version__, "schema": SCHEMA_VERSION, "settings": dict(settings)}
    if run is not None:
        out["run"] = run.to_dict()
    counts = outcome_counts(records)
    out |= {
        "checks": [_with_location(rec, locations or {}) for rec in records],
        "totals": run_totals(records, run),
        "outcomes": {o: counts[Outcome(o)] for o in OUTCOMES},
        "analyses": dict(analyses or {}),
    }
    if baselines is not None:
        out["baselines"] = baselines.to_dict()
    return out


def _with_location(record: CheckRecord, locations: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    out = record.to_dict()
    if record.label in locations:
        out["location"] = dict(locations[record.label])
    return out
