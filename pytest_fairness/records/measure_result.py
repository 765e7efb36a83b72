"""The result every measure returns: an estimate with its interval, sample size and provenance."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from pytest_fairness.models.runner import CallStats
from pytest_fairness.records.evidence import Evidence, evidence_json, read_evidence
from pytest_fairness.stats.attenuation import Attenuation
from pytest_fairness.stats.intervals import Interval, Summary
from pytest_fairness.util.serial import OMIT_EMPTY, to_json, written_as

FAITHFUL = "faithful"


def adaptation(what_differs: str) -> str:
    """Fidelity label for a measure that departs from its paper."""
    return f"adaptation: {what_differs}"


def with_provider_notes(fidelity: str, calls: CallStats) -> str:
    """Append the approximations a provider made (e.g. log-probs estimated by sampling)."""
    if not calls.notes:
        return fidelity
    return f"{fidelity}; provider approximations: {'; '.join(calls.notes)}"


def drawn_items(seed: int, draws: Iterable[object]) -> list[tuple[str, str]]:
    """Item keys of independent draws (each its own cluster): ``<seed>:<draw>``. The seed is part of the key,
    since the same draw index under another seed is another prompt: such runs share no item, never a wrong one."""
    return [(f"{seed}:{draw}", f"{seed}:{draw}") for draw in draws]


@dataclass(frozen=True)
class SequentialInfo:
    """How sequential sampling grew a check: the sizes looked at, its budget, the interval gated on and,
    when it stopped before deciding or spending the budget, why."""

    rounds: list[int]
    budget: int
    interval: str = "always-valid confidence sequence"
    stopped: str = field(default="", metadata=OMIT_EMPTY)

    @property
    def final_size(self) -> int:
        return self.rounds[-1]

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


@dataclass(frozen=True)
class MoreSamples:
    """What would likely decide an inconclusive check (``sizing.more_samples``): ``needed`` samples in all
    (``more`` than it has) at the observed mean and SD, or None with ``why`` no size is likely to."""

    needed: int | None
    why: str = ""
    more: int | None = None
    observed_mean: float | None = None
    observed_sd: float | None = None
    usable_rate: float | None = None
    #: Set when --fairness-budget stopped sequential growth: what stopped it.
    budget: str = ""

    @property
    def decides(self) -> bool:
        """Whether some affordable size is likely to decide it."""
        return self.needed is not None and not self.why

    def to_dict(self) -> dict[str, object]:
        """The report's ``to_decide``: only the fields that apply."""
        out: dict[str, object] = {}
        if self.observed_mean is not None:
            out |= {"observed_mean": self.observed_mean, "observed_sd": self.observed_sd}
            out["usable_rate"] = self.usable_rate
        out["needed"] = self.needed
        if self.more is not None:
            out["more"] = self.more
        return out | ({"why": self.why} if self.why else {}) | ({"budget": self.budget} if self.budget else {})


@dataclass(frozen=True)
class Measured:
    """What a measure's run measured; ``Measure.execute`` adds the provenance (name, subject, model and
    judge ids, seed, parameters, calls) and the interval, so no measure writes them by hand.

    Give ``samples`` and the framework summarises them with the measure's gate interval
    (``Params.summarize``); give ``summary`` as well when the estimate is no plain mean of them (a
    weighted mean, a largest lean, a corrected interval). ``inputs`` are what the run resolved its
    parameters to (e.g. the route it took), recorded beside them. ``judged`` is False when the run did
    not consult its judge (its id is then recorded as None).
    """

    samples: list[float] = field(default_factory=list)
    summary: Summary | None = None
    n_unusable: int = 0
    unusable_examples: list[str] = field(default_factory=list)
    fidelity: str = FAITHFUL
    versions: dict[str, str] = field(default_factory=dict)
    details: dict[str, object] = field(default_factory=dict)
    inputs: dict[str, object] = field(default_factory=dict)
    judged: bool = True
    unserved: str | None = None
    attenuation: Attenuation | None = None
    #: Why no sample size is likely to decide the check (e.g. a search that missed planted differences):
    #: the hint of an inconclusive result, and what stops sequential growth early.
    no_size_decides: str = ""
    #: What sequential growth keeps fixed from this round (``Measure.sequential`` gets it back), if anything.
    first_round: object | None = None
    #: Per sample, in order: its stable item key and its cluster (the prompt or draw it came from), so that a
    #: later run can be paired with this one item by item (``baseline.items_file``). Empty: the measure names none.
    items: list[tuple[str, str]] = field(default_factory=list)
    #: Per item (aligned with ``items``), its K sample scores when the run took K ≥ 2 per item
    #: (``measures.resampling``; ``samples`` then hold their means); empty: one sample per item.
    item_samples: tuple[tuple[float, ...], ...] = ()
    #: The answers behind the number, as the measure kept them while it ran (bounded; ``records.evidence``).
    evidence: Evidence | None = None


@dataclass(frozen=True)
class MeasureResult:
    """One measure on one subject (a stereotype, a task...) for one model.

    ``estimate`` and ``ci`` are on the measure's natural scale; ``n`` counts usable samples and
    ``n_unusable`` the ones that were refused or could not be read, with a few ``unusable_examples``.
    ``unserved`` says why the model (or its judge) cannot serve this measure at all, e.g. "a usable
    decision for 0 of 10 prompts": such a check ends "cannot serve", not inconclusive.
    ``attenuation`` is set when the instrument (e.g. a judge) sees only a measured share of the effect:
    the estimate and interval are already corrected for it, and the gate corrects any interval it
    recomputes from ``samples`` (which stay raw) with ``stats.deattenuate``.
    """

    measure: str
    subject: str
    summary: Summary
    n_unusable: int
    unusable_examples: list[str]
    fidelity: str
    model_id: str
    versions: dict[str, str]
    params: dict[str, object]
    details: dict[str, object] = field(default_factory=dict)
    calls: CallStats = field(default_factory=CallStats)
    samples: list[float] = field(default_factory=list)
    unserved: str | None = None
    attenuation: Attenuation | None = None
    #: Framework state, typed; written into ``details`` only at the JSON edge (``to_dict``).
    no_size_decides: str = ""
    sequential: SequentialInfo | None = None
    to_decide: MoreSamples | None = None
    #: Per sample: its item key and cluster (``Measured.items``); empty when the measure names none.
    items: list[tuple[str, str]] = field(default_factory=list)
    #: Per item, its K ≥ 2 sample scores (``Measured.item_samples``); empty: one sample per item.
    item_samples: tuple[tuple[float, ...], ...] = ()
    #: What sequential growth keeps fixed from this round; not part of the record.
    first_round: object | None = field(default=None, repr=False, compare=False)
    #: The answers behind the number (``Measured.evidence``); the JSON form carries its kind.
    evidence: Evidence | None = field(
        default=None, repr=False, metadata=written_as(evidence_json, read_evidence, omit_empty=True)
    )

    @property
    def estimate(self) -> float:
        return self.summary.mean

    @property
    def mean(self) -> float:
        return self.summary.mean

    @property
    def ci(self) -> Interval:
        return self.summary.ci_t

    @property
    def n(self) -> int:
        return self.summary.n

    @property
    def p(self) -> float:
        return self.summary.p

    @property
    def samples_per_item(self) -> int:
        """K: the most samples an item got (1 unless the run re-sampled its items)."""
        return max((len(s) for s in self.item_samples), default=1)

    def per_sample(self) -> tuple[list[tuple[str, str]], list[float]]:
        """Item keys and scores one per sample (an item K times), as the items file keeps them."""
        if not self.item_samples:
            return self.items, self.samples
        keys = [item for item, scores in zip(self.items, self.item_samples, strict=True) for _ in scores]
        return keys, [s for scores in self.item_samples for s in scores]

    def to_dict(self) -> dict[str, object]:
        """JSON-ready record; NaN becomes None so the output is strict JSON. The framework's typed state goes
        under ``details`` (``no_size_decides``, ``sequential``, ``to_decide``), where reports have read it."""
        raw = asdict(dataclasses.replace(self, evidence=None))
        for name in ("no_size_decides", "sequential", "to_decide", "first_round", "item_samples", "evidence"):
            del raw[name]
        raw["details"] = {**self.details, **self.framework_details()}
        raw["estimate"] = self.estimate
        raw["ci"] = list(self.ci)
        raw["n"] = self.n
        if self.evidence is not None:
            raw["evidence"] = evidence_json(self.evidence)
        return strict_json(raw)

    def framework_details(self) -> dict[str, object]:
        """The typed framework state as the report's ``details`` keys."""
        out: dict[str, object] = {"no_size_decides": self.no_size_decides} if self.no_size_decides else {}
        if self.item_samples:
            out["samples_per_item"] = self.samples_per_item
        if self.sequential is not None:
            out["sequential"] = self.sequential.to_dict()
        if self.to_decide is not None:
            out["to_decide"] = self.to_decide.to_dict()
        return out


def strict_json(value: object) -> object:
    """NaN and infinities become None, tuples lists: strict JSON that any reader accepts."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    return value
