"""Every generated block the pages mark: ``<!--gen:NAME ARG-->`` ... ``<!--/gen-->``, one entry in ``BLOCKS``.

A block is a function of the mark's argument that returns the Markdown between the marks: a table, a
list, a fenced command example with its output (``examples``), or a Python example with its result.
"""

from __future__ import annotations

import ast
import configparser
import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from docgen import examples, internals, layers, public
from docgen.formats import count, num, pct
from pytest_fairness.measures import MEASURES

ROOT = Path(__file__).resolve().parents[2]
Block = Callable[[str], str]

#: The README's measures table: per registered measure its page, paper, question and scale ({low}, {high}
#: and {null} come from its Params). A new measure needs a row here (the docs test says so).
MEASURE_ROWS: dict[str, tuple[str, str, str, str]] = {
    "implicit_bias": (
        "implicit-bias.md",
        "Bai et al., *Measuring Implicit Bias in Explicitly Unbiased LLMs*",
        "does the model pair stigma groups with stereotyped words (an IAT as a prompt)?",
        "{low}..{high}, {null} = none",
    ),
    "decision_bias": (
        "decision-bias.md",
        "Bai et al., same paper",
        "after profiling two people, does the model give the stereotyped option to the stigma person?",
        "share {low}..{high}, {null} = none",
    ),
    "net_harm": (
        "net-harm.md",
        "Eloundou et al., *First-Person Fairness in Chatbots*",
        "when only the user's name changes, how often do the two answers form a harmful stereotype, net of "
        "the reverse?",
        "{low}..{high}, {null} = none",
    ),
    "quality_disparity": (
        "quality.md",
        "same paper",
        "are answers to one group rated worse (the paper's quality criteria)?",
        "rating difference A − B, {low}..{high}",
    ),
    "bias_axes": (
        "bias-axes.md",
        "same paper (Bias Enumeration Algorithm)",
        "which short, nameable features differ significantly between the groups' answers, and are they harmful?",
        "largest net prevalence of a harmful-rated difference (2·S_q − 1), 0..1",
    ),
    "pcf": (
        "pcf.md",
        "Liu et al., *Prejudice and Caprice* (PCF)",
        'how far from unbiased are its preferences for demographic words after "The nurse said that …", '
        "split into steady prejudice and context-dependent caprice?",
        "{low}..{high} (the paper's scale), {null} = none",
    ),
}


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def measures_table(_: str) -> str:
    missing = set(MEASURES) - set(MEASURE_ROWS)
    if missing:
        raise LookupError(f"no row in docgen.blocks.MEASURE_ROWS for the registered measure(s) {sorted(missing)}")
    rows = []
    for name, (page, paper, question, scale) in MEASURE_ROWS.items():
        p = MEASURES[name].params
        low, high = p.BOUNDS if p.BOUNDS else (math.nan, math.nan)
        filled = scale.format(low=num(low), high=num(high), null=num(p.NULL))
        rows.append((f"[`{name}`](docs/measures/{page})", paper, question, filled))
    return table(("measure", "paper", "question", "scale"), rows)


def tox_command(env: str) -> str:
    """The command a tox environment runs, as tox.ini says it (without ``{posargs}``)."""
    config = configparser.ConfigParser(interpolation=None)
    config.read(ROOT / "tox.ini")
    commands = config[f"testenv:{env}"]["commands"].strip().splitlines()
    return "```bash\n" + "\n".join(c.replace("{posargs}", "").strip() for c in commands) + "\n```"


def suites_table(_: str) -> str:
    from pytest_fairness.config import suite

    rows = []
    for name in suite.builtin_suites():
        measures = Counter(check.measure.name for check in public.checks(name).values())
        by_measure = ", ".join(f"`{m}` {n}" for m, n in measures.items())
        rows.append((f"`{name}`", len(public.checks(name)), by_measure))
    return table(("suite", "checks", "checks by measure"), rows)


def synthetic_kinds(_: str) -> str:
    kinds = [f"- `synthetic:{name}`: {what};" for name, what in internals.synthetic_kinds().items()]
    defaults = ", ".join(f"`{k}` {num(v)}" for k, v in internals.synthetic_options().items())
    return "\n".join(kinds) + f"\n- options and their defaults: {defaults}."


def options_table(_: str) -> str:
    def escape(text: str) -> str:
        return text.replace("|", "\\|")

    rows = [(f"`{o.flag}`", f"`{o.ini}`" if o.ini else "", escape(o.help)) for o in public.options()]
    return table(("option", "ini key", "meaning"), rows)


def release_table(_: str) -> str:
    """One row per distinct (measure, threshold, task or not) among the built-in suites' checks."""
    from pytest_fairness.config import suite

    seen: dict[tuple[object, ...], tuple[object, ...]] = {}
    for name in suite.builtin_suites():
        for check in public.checks(name).values():
            p = check.params
            key = (check.measure.name, check.threshold, getattr(p, "task", None) is not None, getattr(p, "risk", None))
            if key in seen:
                continue
            truths = p.design_truths(check.threshold)
            spreads = [p.assumed_sd(t) for t in truths]
            what = f"`{check.measure.name}`" + (" per task" if key[2] else "") + (f" ({key[3]})" if key[3] else "")
            seen[key] = (
                what,
                _threshold_text(check.threshold),
                num(p.NULL),
                ", ".join(num(t) for t in truths) or "none",
                ", ".join(f"{sd:.3g}" for sd in spreads) if None not in spreads else "none (paper size)",
                pct(p.EXPECTED_USABLE),
                count(check.samples["release"]),
            )
    header = ("measure", "threshold", "null", "design truths", "assumed SD at them", "usable", "release size")
    return table(header, seen.values())


def _threshold_text(threshold: object) -> str:
    low, high = threshold.min, threshold.max  # type: ignore[attr-defined]
    if low is not None and high is not None:
        return f"{num(low)} to {num(high)}"
    return f"≤ {num(high)}" if high is not None else f"≥ {num(low)}"


def params_table(measure: str) -> str:
    rows = []
    for f in dataclasses.fields(public.params(measure)):
        meta = f.metadata
        default = "(required)" if f.default is dataclasses.MISSING else f"`{f.default!r}`"
        low, high = ("" if meta.get(end) is None else num(meta[end]) for end in ("low", "high"))
        valid = ", ".join(f"`{c}`" for c in meta["choices"]) if meta.get("choices") else ""
        valid = valid or (f"{low}..{high}" if low or high else "")
        role = "one check each (a suite lists them)" if meta.get("subject") else ""
        role = "the sample size, set by the profiles and `samples:`" if meta.get("samples") else role
        notes = "; ".join(part for part in (role, meta.get("doc", "")) if part)
        rows.append((f"`{f.name}`", default, valid, notes))
    return table(("parameter", "default", "valid", "notes"), rows)


def screen_pass_table(_: str) -> str:
    """The exact chance that a judge right on each pair with probability q meets the screen's three rates."""
    from scipy import stats

    pairs = internals.screen()["pairs"]
    level = internals.split_confidence(0.95)
    full = {kind: (n, n) for kind, n in pairs.items()}
    rows = []
    for q in (0.6, 0.7, 0.8, 0.85, 0.9, 0.95):
        chance = 1.0
        for kind, n in pairs.items():  # the three rates are independent, and each must pass
            counts = {**full, kind: None}
            chance *= sum(
                stats.binom.pmf(k, n, q)
                for k in range(n + 1)
                if internals.screen_serves(*(counts[x] or (k, n) for x in ("blatant", "subtle", "benign")), level)
            )
        rows.append((num(q), pct(chance)))
    return table(("judge right on each pair with probability", "meets the rates"), rows)


def false_alarm_table(_: str) -> str:
    """Fresh-baseline and given-baseline rates of failing reruns of an unchanged model (simulated)."""
    baselines, reruns, series = 400, 200, 20
    rows = []
    for factor, seed in ((1, 11), (4, 14)):
        rates = internals.false_alarm_rates(baselines, reruns, factor, seed)
        for method in ("holm", "none"):
            rate = rates[method]
            rows.append(
                (
                    "the reruns' size" if factor == 1 else f"{factor} × the reruns' size",
                    "Holm" if method == "holm" else "none",
                    pct(rate.mean()),
                    *(pct(float(np.quantile(rate, q))) for q in (0.5, 0.9, 0.95)),
                    pct(rate.max()),
                    pct(float(np.mean(1 - (1 - rate) ** series))),
                )
            )
    header = (
        "baseline recorded at",
        "correction",
        "reruns failing, fresh baseline each",
        "given the baseline: median",
        f"{pct(0.9)} quantile",
        f"{pct(0.95)} quantile",
        "worst",
        f"P(at least one of {series} reruns fails)",
    )
    note = f"\n\n({count(baselines)} baselines × {count(reruns)} reruns each, seeded; `docs/docgen/blocks.py`.)"
    return table(header, rows) + note


def paired_margins_table(_: str) -> str:
    """The paired gate's default margin per measure and its PASS level, with the clusters identical answers need
    to pass it and the floor below which no valid test passes an unchanged release with 80% power."""
    rows = [
        (
            f"`{name}`" + (f" ({risk})" if risk else ""),
            f"{num(low)} to {num(high)}",
            num(margin),
            num(level),
            count(fewest),
            count(floor),
        )
        for name, risk, (low, high), margin, level, fewest, floor in internals.paired_margins()
    ]
    header = (
        "measure",
        "scale of one sample",
        "margin",
        "PASS level",
        "fewest clusters that pass with identical answers",
        "fewest for any valid test (80% power)",
    )
    return table(header, rows)


def pr_verdicts_table(_: str) -> str:
    """Every word of the pull-request gate: what decides it, what it certifies, and what it does to the test."""
    from pytest_fairness.baseline.pr_gate import PR_VERDICTS
    from pytest_fairness.report.status import STYLES, test_outcome

    def test(outcome: object) -> str:
        default, other = test_outcome(outcome, "fail"), test_outcome(outcome, "fail", "inconclusive")
        if default != other:
            return f"{default}; under `--fairness-pr-threshold=inconclusive` as inconclusive ({other} by default)"
        if test_outcome(outcome, "skip") != default:
            return f"as `--fairness-inconclusive` says ({default} by default)"
        return default

    rows = [
        (f"{STYLES[v.outcome].word.upper()} (`{v.outcome.value}`)", v.decided_by, v.certifies, test(v.outcome))
        for v in PR_VERDICTS
    ]
    return table(("verdict (JSON)", "decided by", "certifies", "the test (exit status)"), rows)


def items_size_table(_: str) -> str:
    """The size of a check's items file at the quick and paper profiles and at a release size."""
    rows = [
        (f"`{name}`", *(f"{count(n)} samples: {count(size)} bytes" for n, size in cells))
        for name, cells in internals.items_sizes()
    ]
    return table(("measure", "quick", "paper", "release size"), rows)


def layout(_: str) -> str:
    """Every module of the package by layer, bottom first, with the first paragraph of its docstring."""
    package = ROOT / "pytest_fairness"
    rows = []
    for name, prefixes in layers.read_layers():
        for prefix in prefixes:
            folder = package / prefix
            paths = sorted(folder.rglob("*.py")) if folder.is_dir() else [package / f"{prefix or '__init__'}.py"]
            for path in paths:
                docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
                module = str(path.relative_to(package))
                rows.append((name, f"`{module}`", docstring.split("\n\n")[0].replace("\n", " ")))
    return table(("layer", "module", "what it holds"), rows)


def batch_poll_loop(_: str) -> str:
    status = internals.batch_fact("pending_exit")
    return (
        "```bash\n"
        "while true; do pytest --fairness-suite=gender --fairness-batch --fairness-batch-wait=50; status=$?\n"
        f"  [ $status -ne {status} ] && break; sleep 600; done; exit $status\n"
        "```"
    )


#: Python examples: the code shown and run, and the expression whose value is shown after it.
SNIPPETS: dict[str, tuple[str, str]] = {
    "implicit-score": (
        "from pytest_fairness import score_response\n\n"
        'r = score_response("wonderful - white\\nterrible - black", "racism")\n',
        "r.score, r.n_pairs, r.counts",
    ),
    "pair-harm": ("from pytest_fairness import pair_harm\n\n", "pair_harm((0.7, 0.1, 0.2), (0.2, 0.6, 0.2))"),
    "pcf-risks": (
        "from pytest_fairness import risks\n\n"
        "# preferences[occupation, template, group]: two occupations, two templates, two groups\n"
        "preferences = [[[0.7, 0.3], [0.6, 0.4]], [[0.8, 0.2], [0.3, 0.7]]]\n"
        "r = risks(preferences)\n",
        "r.R, r.prejudice, r.caprice",
    ),
}


def _short(value: object) -> str:
    """A value as the example shows it: floats to three significant digits."""
    if isinstance(value, float | np.floating):
        return f"{float(value):.3g}"
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        named = ", ".join(f"{k}={_short(v)}" for k, v in zip(value._fields, value, strict=True))
        return f"{type(value).__name__}({named})"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ", ".join(f"{f.name}={_short(getattr(value, f.name))}" for f in dataclasses.fields(value))
        return f"{type(value).__name__}({fields})"
    if isinstance(value, tuple):
        return "(" + ", ".join(_short(v) for v in value) + ")"
    return repr(value)


def python(name: str) -> str:
    code, expression = SNIPPETS[name]
    scope: dict[str, object] = {}
    exec(code, scope)
    value = eval(expression, scope)
    return f"```python\n{code}{expression}  # -> {_short(value)}\n```"


BLOCKS: dict[str, Block] = {
    "measures-table": measures_table,
    "tox-command": tox_command,
    "suites-table": suites_table,
    "synthetic-kinds": synthetic_kinds,
    "options-table": options_table,
    "release-table": release_table,
    "params-table": params_table,
    "screen-pass-table": screen_pass_table,
    "false-alarm-table": false_alarm_table,
    "paired-margins-table": paired_margins_table,
    "pr-verdicts-table": pr_verdicts_table,
    "items-size-table": items_size_table,
    "layout": layout,
    "batch-poll-loop": batch_poll_loop,
    "python": python,
    "example": examples.render,
}
