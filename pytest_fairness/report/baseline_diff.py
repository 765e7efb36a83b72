"""The baseline-diff table: a re-recorded release's baselines against the committed ones, one row per check.

What a pull request that changes baselines/ carries in its body (the rebaseline job's) and in its comment (any
other): per check the committed estimate, interval and n and the new ones, the change and whether it is beyond
noise on the paired items, the threshold and the new baseline's verdict against it, the model version it was
recorded from. A release whose new baselines fail a gate says so in the first line. One row model (``DiffRow``)
for the Markdown and the plain-text table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_fairness.baseline.entry import Entry
from pytest_fairness.baseline.folder_diff import CheckChange
from pytest_fairness.report.status import STYLES
from pytest_fairness.stats.gate import Outcome
from pytest_fairness.util.fmt import interval, num, text_table

COLUMNS = ("check", "before", "after", "change", "beyond noise?", "threshold", "after vs threshold", "model version")


def _side(entry: Entry | None) -> str:
    if entry is None:
        return "none"
    if entry.could_not_serve:
        return f"cannot serve (n={entry.n})"
    lo, hi = entry.ci
    ci = interval((float("nan") if lo is None else lo, float("nan") if hi is None else hi))
    return f"{num(entry.estimate)} {ci} n={entry.n}"


def _noise(change: CheckChange) -> str:
    """Whether the change is beyond noise: on the paired items (their interval of the mean difference excludes 0),
    else the unpaired test, with why it is not paired."""
    c = change.comparison
    if c is None:
        return "new check" if change.before is None else "removed"
    if c.old is None or c.new is None:
        return "n/a (a side has no estimate)"
    if c.paired is not None:
        lo, hi = c.paired.interval
        level = f"{100 * (1 - 2 * c.alpha):g}%"
        beyond = "yes" if lo > 0 or hi < 0 else "no"
        return f"{beyond}: paired on {c.paired.clusters:,} items, {level} CI {interval((lo, hi), '+.3g')}"
    if c.inputs_changed:
        return "n/a: another instrument (" + "; ".join(c.inputs_changed)[:80] + ")"
    significant = c.p is not None and c.p < c.alpha
    why = f" ({c.unpaired})" if c.unpaired else ""
    return f"{'yes' if significant else 'no'}: unpaired, p = {num(c.p, '.2g')}{why}"


@dataclass(frozen=True)
class DiffRow:
    """One check's row: its cells as text, and the new baseline's verdict for a renderer to style."""

    check: str
    before: str
    after: str
    change: str
    noise: str
    threshold: str
    verdict: Outcome | None
    version: str
    note: str

    def cells(self, styled: bool) -> tuple[str, ...]:
        word = "" if self.verdict is None else STYLES[self.verdict].word
        if styled and self.verdict in (Outcome.FAIL, Outcome.CANNOT_SERVE):
            word = f"**{word.upper()}**"
        verdict = word + (f" ({self.note})" if self.note else "")
        check = f"`{self.check}`" if styled else self.check
        version = f"`{self.version}`" if styled and self.version else self.version
        return (check, self.before, self.after, self.change, self.noise, self.threshold, verdict, version)


def rows(changes: Sequence[CheckChange]) -> list[DiffRow]:
    out = []
    for change in changes:
        entry = change.after or change.before
        assert entry is not None
        moved = "n/a"
        if change.comparison is not None and change.comparison.difference is not None:
            moved = num(change.comparison.difference, "+.3g")
        limits = {k: v for k, v in entry.threshold.as_dict().items() if v is not None}
        threshold = ", ".join(f"{'≤' if k == 'max' else '≥'} {num(v, 'g')}" for k, v in limits.items()) or "none"
        version = "" if change.after is None else change.after.model_version or change.after.model_id
        sides = (_side(change.before), _side(change.after))
        noted = (_noise(change), threshold, change.verdict_after, version, change.too_small)
        out.append(DiffRow(change.key, *sides, moved, *noted))
    return out


def failing(changes: Sequence[CheckChange]) -> list[CheckChange]:
    """The checks whose new baseline fails its threshold: a release that fails these gates."""
    return [c for c in changes if c.verdict_after is Outcome.FAIL]


def headline(changes: Sequence[CheckChange]) -> str:
    """The first line: whether the new release fails a gate, and how many checks changed."""
    shown = [c for c in changes if c.after is not None]
    fails = failing(changes)
    moved = sum(c.changed for c in changes)
    if fails:
        names = ", ".join(c.key for c in fails)
        return (
            f"**This release fails {len(fails)} of {len(shown)} gates** ({names}): merged, these baselines make every "
            f"later pull request compare with a release that fails them. {moved} of {len(changes)} checks changed."
        )
    return f"The release meets every decided gate. {moved} of {len(changes)} checks changed."


def diff_markdown(changes: Sequence[CheckChange], old: str, new: str, *, line: str = "", accepted: str = "") -> str:
    """The table in Markdown, for a pull request's body or comment: of the model ``line``'s folder, from ``old`` to
    ``new``; ``accepted`` says who accepted a failing release, if anyone did."""
    table = rows(changes)
    of = f" of `{line}`" if line else ""
    lines = [f"## Fairness baselines{of}: `{old}` → `{new}`", "", headline(changes)]
    if accepted and failing(changes):
        lines += ["", f"Accepted as the new baselines: {accepted}."]
    lines += [
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
        *("| " + " | ".join(c.replace("|", "\\|") for c in row.cells(True)) + " |" for row in table),
        "",
        "Before and after: estimate, 95% interval and n as each baseline recorded them. Beyond noise: whether the "
        "interval of the mean difference on the items both files keep excludes 0 (the pull-request gate's paired "
        "comparison), else the unpaired test. The per-item scores (`*.items.tsv`) are marked generated: this table "
        "and the YAML files are what to review.",
    ]
    return "\n".join(lines) + "\n"


def diff_text(changes: Sequence[CheckChange], old: str, new: str, *, line: str = "") -> list[str]:
    """The same table in plain text, for a terminal."""
    first = headline(changes).replace("**", "")
    of = f" of {line}" if line else ""
    return [f"baselines{of} {old} -> {new}", first, "", *text_table([r.cells(False) for r in rows(changes)], COLUMNS)]
