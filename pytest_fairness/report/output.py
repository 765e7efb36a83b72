"""The contract of a report format: an ``Output`` writes the run from one frozen ``RunReport``.

Each format is one ``Output`` in its own module (the terminal summary, JSON, Markdown with plots, JUnit
properties, the history line), declaring its own options; ``report.formats`` lists them, and the
reporter builds the ``RunReport`` once, at the end of the run, and hands it to each. Adding a format is
one new module and one line in that table (docs/adding-a-report-format.md).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from pytest_fairness.baseline import RunDecision
from pytest_fairness.config.options import Option
from pytest_fairness.config.settings import Settings
from pytest_fairness.planning.plan import Plan
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.replay import ReplayCheck
from pytest_fairness.report.tally import RunState
from pytest_fairness.stats.gate import GateFamily


@dataclass(frozen=True)
class RunReport:
    """Everything an output reads about a finished (or stopped, or planned) run.

    ``records`` are the checks that finished, in the order they did; ``run`` says whether every selected
    check did; ``family`` the gates that shared the run's error rate; ``decision`` the run's baseline
    comparisons decided together (None: none compared); ``analyses`` across checks by name; ``locations``
    each check's suite ``file`` and ``line`` by label; ``plan`` what --fairness-plan priced; ``pending`` the
    provider batches tests left waiting (their ``message`` and ``batches``); ``updating``: --snapshot-update
    recorded baselines instead of comparing them; ``shard``: a shard's part of a sharded run (``ShardPlan.section``),
    None for a whole run; ``replay``: whether the model's cached answers were asked again before they were replayed.
    """

    records: tuple[CheckRecord, ...]
    run: RunState
    settings: Settings
    family: GateFamily
    decision: RunDecision | None = None
    analyses: Mapping[str, Any] = field(default_factory=dict)
    locations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    plan: Plan | None = None
    pending: tuple[Mapping[str, Any], ...] = ()
    rootdir: Path = Path()
    updating: bool = False
    shard: Mapping[str, Any] | None = None
    #: The replay check of the model under test (``run.replay_check``); None when the run made none.
    replay: ReplayCheck | None = None

    def option(self, option: Option) -> Any:
        """The value an output's own option was given (its default when not)."""
        return self.settings.outputs.get(option.name, option.default)


class Terminal(Protocol):
    """What the terminal summary writes through: pytest's terminal reporter."""

    def write_sep(self, sep: str, title: str | None = None, **markup: bool) -> None: ...

    def write_line(self, line: str, **markup: bool) -> None: ...


class JUnitXml(Protocol):
    """What run-level JUnit properties are added through: pytest's JUnit XML writer."""

    def add_global_property(self, name: str, value: object) -> None: ...


@dataclass(frozen=True)
class Sinks:
    """Where outputs write other than their own files: pytest's terminal (in its terminal summary) and its
    JUnit XML writer (when --junitxml is given); None where the run has none."""

    terminal: Terminal | None = None
    junit: JUnitXml | None = None


class Output(abc.ABC):
    """One report format, written from the ``RunReport``."""

    #: Its options, declared here with it (the plugin adds them to pytest's and reads them into
    #: ``Settings.outputs``); the first one asks for the output. None: it is always written.
    options: ClassVar[tuple[Option, ...]] = ()
    #: When it writes: at session end (files, JUnit properties: before pytest writes its XML) or in
    #: pytest's terminal summary.
    when: ClassVar[Literal["sessionfinish", "terminal_summary"]] = "sessionfinish"

    def wanted(self, report: RunReport) -> bool:
        """Whether the run asked for it: its first option was given (always, for an output without options)."""
        return not self.options or bool(report.option(self.options[0]))

    @abc.abstractmethod
    def write(self, report: RunReport, sinks: Sinks) -> None:
        """Write the run: to the file or folder its option names, or to ``sinks``."""


def write_file(path: Path, text: str) -> None:
    """Write a report, creating its folder (CI points every output into one artefact folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
