"""A syrupy extension for fairness baselines: readable YAML per check, matched with statistical tolerance.

Like syrupy's own extensions it is a serializer (``render_baseline``), a location
(``<rootdir>/baselines/<model folder>/<suite>.<check>.yaml``) and a comparator; the comparator parses
both documents and asks ``baseline.entry_comparison`` instead of testing string equality, so a rerun that
differs only by sampling noise matches and a real shift fails with the comparison's explanation.
The plugin *defers* the statistical verdict (``defer=True``): each check only records its comparison,
and the run decides on all of them together, adjusted for multiplicity (``baseline.decide_run``).
Under ``--snapshot-update`` every asserted baseline is rewritten, matching or not, so re-recording
with larger samples or another seed really replaces the file.

Two facts of syrupy 7 shape the design. The location is fixed before the data is serialized (from
the test and the snapshot index only), so the model folder and check travel in the snapshot *name*:
``match_baseline`` sets it from the record. And syrupy instantiates extensions without arguments, so
the settings are class attributes: ``FairnessBaselineExtension.configured(tolerance=...)`` returns a
(cached) subclass. Baselines are never reported as unused: which checks run depends on
``--fairness-model`` and ``--fairness-suite``, not on test files, so syrupy cannot tell a stale
baseline from another model's, and must never delete one under ``--snapshot-update``.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest
from syrupy.assertion import AssertionResult, SnapshotAssertion
from syrupy.data import SnapshotCollections
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.location import PyTestLocation

from pytest_fairness.baseline import (
    Comparison,
    Mode,
    baseline_entry,
    check_stem,
    model_folder,
    parse_baseline,
    render_baseline,
)
from pytest_fairness.baseline.entry import Entry
from pytest_fairness.baseline.entry_comparison import compare
from pytest_fairness.baseline.items_file import ITEMS_SUFFIX, RecordedItems, read_recorded, render_items
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.explain import explain


def baseline_name(record: CheckRecord | Entry) -> str:
    """Snapshot name of a check record (or baseline entry): ``<model folder>/<suite>.<check>``."""
    model = record.result.model_id if isinstance(record, CheckRecord) else record.model_id
    return f"{model_folder(model)}/{check_stem(record.suite, record.check)}"


@functools.lru_cache(maxsize=64)
def _compared(new: str, old: str, tolerance: float, alpha: float, mode: Mode) -> Comparison:
    """The comparison of two baseline documents, worked out once: syrupy's matching, its diff and the
    record ask for the same one (ValueError for a document that cannot be read)."""
    (before,), (after,) = parse_baseline(old), parse_baseline(new)
    return compare(before, after, tolerance, alpha=alpha, mode=mode)


def _check_file(root: Path, directory: str, record: CheckRecord, model: str | None, suffix: str) -> Path:
    """A check's file under the baseline folder of ``model`` (--fairness-baseline-model), else its own model's."""
    stem = check_stem(record.suite, record.check)
    return root / directory / model_folder(model or record.result.model_id) / f"{stem}{suffix}"


def write_items(root: Path, directory: str, record: CheckRecord, model: str | None = None) -> Path | None:
    """Write a check's per-item scores beside its baseline YAML (under --snapshot-update); None without items."""
    result = record.result
    if not result.items or result.unserved:
        return None
    path = _check_file(root, directory, record, model, ITEMS_SUFFIX)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_items(*result.per_sample()), encoding="utf-8")
    return path


def entry_path(root: Path, directory: str, model_id: str, suite: str, check: str) -> Path:
    """Where a check's baseline YAML lies for a model (line)."""
    return root / directory / model_folder(model_id) / f"{check_stem(suite, check)}.yaml"


def recorded_entry(root: Path, directory: str, model_id: str, suite: str, check: str) -> Entry | None:
    """A check's committed baseline entry, or None when there is none or it cannot be read (the comparison
    after the run says which)."""
    path = entry_path(root, directory, model_id, suite, check)
    try:
        (entry,) = parse_baseline(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return entry


def recorded_items(root: Path, directory: str, record: CheckRecord, model: str | None = None) -> RecordedItems:
    """A check's recorded items, checked against the reference its baseline YAML keeps (``read_recorded``)."""
    path = _check_file(root, directory, record, model, ".yaml")
    try:
        (entry,) = parse_baseline(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return RecordedItems(problem=f"its baseline {path.name} cannot be read")
    return items_beside(path, entry)


def items_beside(path: Path, entry: Entry | None) -> RecordedItems:
    """The items of a baseline ``entry`` read from the file its reference names beside its YAML at ``path``."""
    reference = None if entry is None else entry.items
    if entry is None or reference is None:
        return read_recorded(None, None)
    items = path.parent / Path(reference.file).name  # a name beside the YAML, never a path
    text = items.read_text(encoding="utf-8") if items.is_file() else None
    return replace(read_recorded(reference, text), fidelity=entry.fidelity)


class FairnessBaselineExtension(SingleFileSnapshotExtension):
    """One YAML baseline per check and model; matches unless a change is significant and beyond tolerance."""

    file_extension = "yaml"
    _write_mode = WriteMode.TEXT
    tolerance: float = 0.0
    alpha: float = 0.05
    directory: str = "baselines"
    mode: Mode = "difference"
    #: Rewrite every asserted baseline whose text differs (--snapshot-update), not only mismatching ones.
    rewrite: bool = False
    #: Match on everything but the statistical verdict, which the run decides across all its checks.
    defer: bool = False

    @classmethod
    def configured(
        cls,
        tolerance: float = 0.0,
        alpha: float = 0.05,
        directory: str = "baselines",
        *,
        mode: Mode = "difference",
        rewrite: bool = False,
        defer: bool = False,
    ) -> type[FairnessBaselineExtension]:
        """A subclass with these settings (syrupy creates extensions without arguments); one per setting."""
        return _configured(cls, float(tolerance), float(alpha), directory, mode, rewrite, defer)

    def serialize(self, data: Any, **_: Any) -> str:
        """A check record (or an entry already made from one) as its baseline document."""
        return render_baseline([baseline_entry(data) if isinstance(data, CheckRecord) else data])

    @classmethod
    def get_location(cls, *, test_location: PyTestLocation, index: Any) -> str:
        if not isinstance(index, str) or "/" not in index:
            raise ValueError(
                "a fairness baseline is named by model and check: use match_baseline(snapshot, record) "
                "or snapshot(name=baseline_name(record))"
            )
        config = getattr(test_location.item, "config", None)
        root = Path(config.rootpath) if config is not None else Path.cwd()
        return str(root / cls.directory / f"{index}.{cls.file_extension}")

    @classmethod
    def matches_test_location(cls, *, test_location: PyTestLocation, snapshot_location: str) -> bool:
        return True  # baselines live by model and check, not beside the test file

    def discover_snapshots(self, **_: Any) -> SnapshotCollections:
        """Nothing: syrupy must never count another model's or suite's baseline as unused, nor delete it."""
        return SnapshotCollections()

    def comparison(self, serialized_data: Any, snapshot_data: Any) -> Comparison:
        """The statistical comparison of a new document with the recorded one."""
        return _compared(str(serialized_data), str(snapshot_data), self.tolerance, self.alpha, self.mode)

    def matches(self, *, serialized_data: Any, snapshot_data: Any) -> bool:
        if self.rewrite:
            return str(serialized_data) == str(snapshot_data)  # anything else is written anew
        try:
            comparison = self.comparison(serialized_data, snapshot_data)
        except ValueError:
            return False  # an unreadable baseline never matches, so --snapshot-update can rewrite it
        return not comparison.inputs_changed if self.defer else comparison.matches

    def diff_lines(self, serialized_data: Any, snapshot_data: Any) -> Iterator[str]:
        """The explanation first, then syrupy's line diff of the two documents."""
        if snapshot_data:
            try:
                yield explain(self.comparison(serialized_data, snapshot_data))
            except ValueError as exc:
                yield f"the recorded baseline cannot be read: {exc}"
        yield from super().diff_lines(serialized_data, snapshot_data)


@functools.cache
def _configured(
    base: type[FairnessBaselineExtension],
    tolerance: float,
    alpha: float,
    directory: str,
    mode: Mode,
    rewrite: bool,
    defer: bool,
) -> type[FairnessBaselineExtension]:
    name = f"{base.__name__}[tolerance={tolerance:g},alpha={alpha:g},mode={mode}]"
    settings = {"tolerance": tolerance, "alpha": alpha, "directory": directory, "mode": mode}
    return type(name, (base,), {**settings, "rewrite": rewrite, "defer": defer})


class BaselineMismatch(AssertionError):
    """A check whose result no longer matches its committed baseline."""

    def __init__(self, message: str, comparison: Comparison | None) -> None:
        super().__init__(message)
        self.comparison = comparison


def match_baseline(
    snapshot: SnapshotAssertion,
    record: CheckRecord,
    tolerance: float = 0.0,
    *,
    alpha: float = 0.05,
    directory: str = "baselines",
    mode: Mode = "difference",
    defer: bool = False,
    model: str | None = None,
) -> Comparison | None:
    """Assert that a check record matches its baseline; return the comparison (None if just created).

    Under ``--snapshot-update`` the baseline is (re)written from this record, whether or not it still
    matches. The failure message is the comparison's explanation followed by a unified diff of the two
    documents. ``directory`` is relative to the rootdir (or absolute). With ``defer`` a statistical
    verdict does not fail here (the caller decides across a run, e.g. with ``baseline.decide_run``);
    a missing or unreadable baseline, or a changed instrument, still does. ``model`` names the model line
    whose baseline this is (--fairness-baseline-model): its file, and the model the entry records; the
    comparison's new side still names the model this run measured.
    """
    __tracebackhide__ = True
    extension = FairnessBaselineExtension.configured(
        tolerance, alpha, directory, mode=mode, rewrite=bool(snapshot.update_snapshots), defer=defer
    )
    assertion = snapshot.use_extension(extension)
    entry = replace(baseline_entry(record), model_id=model) if model else baseline_entry(record)
    matched = assertion(name=baseline_name(entry)) == entry
    result = assertion.executions[assertion.num_executions - 1]
    if result.exception is not None:
        raise result.exception
    comparison, problem = _recorded_comparison(cast(FairnessBaselineExtension, assertion.extension), result)
    if comparison is not None and comparison.after is not None:
        comparison = replace(comparison, after=replace(comparison.after, model=record.result.model_id))
    if matched:
        return comparison
    if comparison is None:
        raise BaselineMismatch(problem, None)
    raise BaselineMismatch(_explained_diff(comparison, result), comparison)


def _recorded_comparison(
    extension: FairnessBaselineExtension, result: AssertionResult
) -> tuple[Comparison | None, str]:
    """The comparison with the recorded baseline, or why there is none."""
    where = result.snapshot_location
    if result.recalled_data is None:
        return None, f"no baseline at {where}; record it with --snapshot-update"
    try:
        return extension.comparison(result.asserted_data, result.recalled_data), ""
    except ValueError as exc:
        return None, f"the baseline at {where} cannot be read ({exc}); rewrite it with --snapshot-update"


def _explained_diff(comparison: Comparison, result: AssertionResult) -> str:
    """The explanation, then a unified diff of the documents as a pull request would show it."""
    diff = difflib.unified_diff(
        str(result.recalled_data).splitlines(),
        str(result.asserted_data).splitlines(),
        f"baseline {result.snapshot_location}",
        "this run",
        n=0,
        lineterm="",
    )
    return "\n".join([explain(comparison), *diff])


class _ItemView:
    """What syrupy's location reads from a test function, provided for any item (e.g. a suite check)."""

    def __init__(self, item: pytest.Item) -> None:
        self._item = item
        self.obj = type("CheckObject", (), {"__module__": type(item).__module__})
        self.obj.__name__ = item.name

    def __getattr__(self, name: str) -> Any:
        return getattr(self._item, name)


def snapshot_for_item(item: pytest.Item) -> SnapshotAssertion:
    """A syrupy snapshot assertion for any pytest item; the ``snapshot`` fixture only serves functions."""
    config: Any = item.config
    return SnapshotAssertion(
        session=config._syrupy,
        extension_class=FairnessBaselineExtension,
        test_location=PyTestLocation(_ItemView(item)),  # type: ignore[arg-type]
        update_snapshots=bool(config.option.update_snapshots),
        update_new_snapshots_only=bool(getattr(config.option, "update_new_snapshots_only", False)),
    )
