"""The table of report formats: one line per ``Output``, written in this order at the end of every run.

A new built-in format is one module in ``report/`` and one line here (the plugin declares its options);
a team's own is registered from its conftest.py with ``register_output``, which declares them
(docs/adding-a-report-format.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_fairness.config.options import OPTIONS, Option
from pytest_fairness.report.history import HistoryLine
from pytest_fairness.report.html_page import HtmlFile
from pytest_fairness.report.jsonfile import JsonFile
from pytest_fairness.report.junit import JUnitProperties
from pytest_fairness.report.markdown import MarkdownFile
from pytest_fairness.report.output import Output
from pytest_fairness.report.summary import TerminalSummary

BUILT_IN: tuple[Output, ...] = (
    JUnitProperties(),
    JsonFile(),
    MarkdownFile(),
    HtmlFile(),
    HistoryLine(),
    TerminalSummary(),
)
#: The formats a run writes: the built-in ones, then those registered (``register_output``).
OUTPUTS: list[Output] = list(BUILT_IN)


def output_options(outputs: Iterable[Output] = ()) -> list[Option]:
    """The options of ``outputs`` (default: every registered output), in table order."""
    return [option for output in (outputs or OUTPUTS) for option in output.options]


def register_output(output: Output, parser: Any = None) -> Output:
    """Add a report format, and with pytest's ``parser`` (in a conftest's ``pytest_addoption``) its options.

    Its options' names must be new; the run then reads them into ``Settings.outputs`` like the built-in ones.
    A format of the same class registered before (a conftest loaded again, as pytester's runs do) is replaced.
    """
    kind = (type(output).__module__, type(output).__qualname__)
    OUTPUTS[:] = [o for o in OUTPUTS if (type(o).__module__, type(o).__qualname__) != kind]
    taken = {option.name for option in (*OPTIONS, *output_options())}
    clash = sorted(taken & {option.name for option in output.options})
    if clash:
        raise ValueError(f"option(s) {clash} are taken by another report format; give {type(output).__name__} others")
    OUTPUTS.append(output)
    if parser is not None:
        group = parser.getgroup("fairness")
        for option in output.options:
            option.declare(group, parser)
    return output
