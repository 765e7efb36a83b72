"""Optional plots for the Markdown: one PNG per measure in the style of the papers' figures (a bar per
check from the no-bias value to the estimate, its confidence interval, and the check's threshold marked).

matplotlib is optional (``pytest-fairness[plots]``); without it the section says how to add it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.report.status import STYLES
from pytest_fairness.util.fmt import shared_ci_label

PLOTS_HINT = "pip install 'pytest-fairness[plots]'"


def plot_section(records: Sequence[CheckRecord], plots_dir: Path, image_base: str | None) -> list[str]:
    """Write one PNG per measure into ``plots_dir``; the Markdown lines that show them."""
    figure_class = figure()
    if figure_class is None:
        return [f"Plots skipped: matplotlib is not installed (`{PLOTS_HINT}` adds it)."]
    plots_dir.mkdir(parents=True, exist_ok=True)
    by_measure: dict[str, list[CheckRecord]] = {}
    for rec in records:
        by_measure.setdefault(rec.measure, []).append(rec)
    lines = ["**Plots**", ""]
    for measure, group in sorted(by_measure.items()):
        name = f"{measure}.png"
        plot_measure(group, plots_dir / name, figure_class)
        where = f"{image_base.rstrip('/')}/{name}" if image_base else (plots_dir / name).as_posix()
        lines.append(f"![{measure}: estimates with confidence intervals]({where})")
    return lines


def figure() -> Any:
    """matplotlib's Figure, or None without matplotlib; pyplot is avoided so no global backend is set."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure


def plot_measure(records: Sequence[CheckRecord], path: Path, figure_class: Any = None) -> None:
    """Horizontal bars from the no-bias value to each check's estimate, with CI whiskers and thresholds."""
    figure_class = figure_class or figure()
    plotted = [r for r in records if all(math.isfinite(v) for v in (r.result.estimate, *r.result.ci))]
    many_suites = len({r.suite for r in records}) > 1
    null = records[0].result.summary.null
    null = 0.0 if math.isnan(null) else null
    fig = figure_class(figsize=(8, 1.4 + 0.45 * max(len(plotted), 1)))
    ax = fig.subplots()
    ys = list(range(len(plotted)))[::-1]
    for y, rec in zip(ys, plotted, strict=True):
        est, (lo, hi) = rec.result.estimate, rec.result.ci
        ax.barh(y, est - null, left=null, height=0.6, color=STYLES[rec.outcome].plot)
        ax.errorbar(est, y, xerr=[[est - lo], [hi - est]], fmt="none", ecolor="black", capsize=3, linewidth=1)
        bounds = () if rec.threshold is None else (rec.threshold.min, rec.threshold.max)
        for bound in bounds:
            if bound is not None:
                ax.plot([bound, bound], [y - 0.4, y + 0.4], color="#C44E52", linewidth=2.5, label="threshold")
    ax.axvline(null, color="black", linestyle="--", linewidth=1, label=f"no bias ({null:g})")
    ax.set_yticks(ys, [r.label if many_suites else r.check for r in plotted])
    ax.set_xlabel(f"estimate with {shared_ci_label([r.confidence for r in records])}")
    ax.set_title(records[0].measure)
    from matplotlib.patches import Patch

    handles, labels = ax.get_legend_handles_labels()
    legend = dict(zip(labels, handles, strict=True))
    for outcome in dict.fromkeys(r.outcome for r in plotted):
        legend[outcome.value] = Patch(color=STYLES[outcome].plot)
    ax.legend(legend.values(), legend.keys(), fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.use_sticky_edges = False  # keep a margin around the no-bias line when every bar starts there
    ax.margins(x=0.05)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
