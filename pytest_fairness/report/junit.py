"""JUnit XML: flat per-check properties and run-level testsuite properties, for CI dashboards.

Per check, pytest's public route is the item's ``user_properties``, which its junitxml plugin writes as
``<property>`` elements. For the run there is none outside a test: the ``record_testsuite_property``
fixture is the public API, and a plugin at session end cannot request a fixture. So the run's properties
go through pytest's own ``xml_key`` stash entry, the one place here that touches ``_pytest``; without it
(another pytest, or no ``--junitxml``) they are left out and nothing else changes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from pytest_fairness.baseline import RunDecision
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.report.output import JUnitXml, Output, RunReport, Sinks
from pytest_fairness.report.status import test_outcome
from pytest_fairness.report.tally import RunState, run_totals
from pytest_fairness.report.terminal import explain


class JUnitProperties(Output):
    """With ``--junitxml``: the run's state, spend and baseline decision as testsuite properties."""

    def write(self, report: RunReport, sinks: Sinks) -> None:
        if sinks.junit is not None:
            add_run_properties(sinks.junit, report.run, report.decision, report.records)


def check_properties(record: CheckRecord) -> list[tuple[str, object]]:
    """The check's numbers and verdict as flat properties, readable without parsing JSON."""
    res = record.result
    return [
        ("fairness_estimate", res.estimate),
        ("fairness_ci_low", res.ci[0]),
        ("fairness_ci_high", res.ci[1]),
        ("fairness_n", res.n),
        ("fairness_unusable", res.n_unusable),
        ("fairness_threshold", record.threshold_text),
        ("fairness_outcome", record.outcome.value),
        ("fairness_spend_usd", round(res.calls.usd, 6)),
        ("fairness_unpriced_calls", res.calls.unpriced),
    ]


def log_xml(config: pytest.Config) -> JUnitXml | None:
    """pytest's JUnit XML writer of this run, or None (no --junitxml, or a pytest without the stash key)."""
    try:
        from _pytest.junitxml import xml_key  # private: see the module docstring
    except ImportError:  # pragma: no cover - a pytest without the stash key
        return None
    return config.stash.get(xml_key, None)


def add_run_properties(
    xml: JUnitXml, run: RunState, baselines: RunDecision | None, records: Sequence[CheckRecord] = ()
) -> None:
    """The run's state, spend and baseline decision as testsuite properties of pytest's JUnit XML."""
    xml.add_global_property("fairness_run", json.dumps(run.to_dict(), sort_keys=True))
    totals = run_totals(records, run)
    xml.add_global_property("fairness_spend_usd", str(round(totals["usd"], 6)))
    xml.add_global_property("fairness_unpriced_calls", str(int(totals["unpriced"])))
    xml.add_global_property("fairness_rate_limited", str(int(totals["rate_limited"])))
    if baselines is not None:
        xml.add_global_property("fairness_baselines", json.dumps(baselines.to_dict(), sort_keys=True))


class JUnitDocument:
    """A JUnit XML file written without pytest (a merged sharded run): a test case per check with its properties,
    failed or skipped as its test was under --fairness-inconclusive (and --fairness-pr-threshold), and the run's
    properties."""

    def __init__(self) -> None:
        self.properties: list[tuple[str, str]] = []

    def add_global_property(self, name: str, value: object) -> None:
        self.properties.append((name, str(value)))

    def render(self, records: Sequence[CheckRecord], inconclusive: str, pr_threshold: str = "pass") -> str:
        from xml.etree import ElementTree as Tree

        verdicts = [test_outcome(rec.outcome, inconclusive, pr_threshold) for rec in records]
        suite = Tree.Element(
            "testsuite",
            name="pytest",
            tests=str(len(records)),
            failures=str(verdicts.count("failed")),
            skipped=str(verdicts.count("skipped")),
            errors="0",
        )
        properties = Tree.SubElement(suite, "properties")
        for name, value in self.properties:
            Tree.SubElement(properties, "property", name=name, value=value)
        for rec, verdict in zip(records, verdicts, strict=True):
            case = Tree.SubElement(suite, "testcase", classname=f"fairness.{rec.suite}", name=rec.check)
            own = Tree.SubElement(case, "properties")
            for name, value in check_properties(rec):
                Tree.SubElement(own, "property", name=name, value=str(value))
            if verdict != "passed":
                Tree.SubElement(case, "failure" if verdict == "failed" else "skipped", message=explain(rec))
        root = Tree.Element("testsuites")
        root.append(suite)
        return Tree.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
