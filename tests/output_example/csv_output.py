"""A report format of one's own: ``--fairness-csv=PATH`` writes one row per check, for a spreadsheet.

docs/adding-a-report-format.md walks through it; tests/integration/test_adding_a_report_format.py runs it.
"""

import csv
import io
from pathlib import Path

from pytest_fairness import Option, Output, RunReport, Sinks
from pytest_fairness.report.output import write_file
from pytest_fairness.util.fmt import finite

COLUMNS = ("check", "estimate", "ci_low", "ci_high", "n", "outcome")


class CsvFile(Output):
    """One row per check that finished: its label, estimate, interval, sample size and outcome."""

    options = (Option("csv", "write one CSV row per check (estimate, interval, n, outcome) to this path"),)

    def write(self, report: RunReport, sinks: Sinks) -> None:
        rows = [
            (rec.label, finite(rec.result.estimate), *map(finite, rec.result.ci), rec.result.n, rec.outcome.value)
            for rec in report.records
        ]
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows([COLUMNS, *rows])
        write_file(Path(report.option(self.options[0])), text.getvalue())
