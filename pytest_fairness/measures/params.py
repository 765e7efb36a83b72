"""The measure contract: one frozen parameters dataclass per measure, and the functions that run it.

A measure's ``Params`` subclass is the only place its parameters are written: their defaults, their
validation (``param(low=, high=, choices=)`` plus an optional ``validate()`` for rules across fields),
which one names the subject (a stereotype, an attribute, a comparison) and which one sets the sample
size, and, as class variables, its null value, the range of one sample and its default sample sizes.
Suites, fixtures, ``--fairness-plan``, baselines and the registry all read it from there.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, ClassVar, Literal, Self

from pytest_fairness.measures.context import RunContext
from pytest_fairness.measures.resampling import interval_for
from pytest_fairness.stats.attenuation import Attenuation
from pytest_fairness.stats.gate import Threshold
from pytest_fairness.stats.intervals import IntervalKind, Summary, summarize
from pytest_fairness.stats.power import GateShape, design_truths

#: quick is sized for the embedded model in CI, paper follows the papers, release is sized per check so
#: that it decides with 80% probability at each of the measure's design truths (``Params.design_truths``).
PROFILES = ("quick", "paper", "release")
#: Most samples one check may ask for at once: far beyond any paper, and enough for the release profile of
#: the strictest built-in threshold; anything larger is a typo, and would make even --fairness-plan list
#: requests for hours.
MAX_SAMPLES = 100_000
#: Most samples a sequential check may grow to (its ``budget``): a run that decides early draws far fewer, and
#: a two-phase check at net harm <= 0.001 needs about 150,000 to decide half the threshold within its budget.
MAX_BUDGET = 400_000
_UNSET: Any = dataclasses.MISSING


def param(
    default: Any = _UNSET,
    *,
    low: float | None = None,
    high: float | None = None,
    choices: Sequence[object] | None = None,
    subject: bool = False,
    samples: bool = False,
    sizing: bool = False,
    doc: str = "",
) -> Any:
    """Declare one parameter: its default, its valid range or values, and its role (``sizing``: an assumption
    the release plan sizes the sample with, not part of what is measured)."""
    meta = {"low": low, "high": high, "choices": tuple(choices) if choices else None, "doc": doc}
    meta |= {"subject": subject, "samples": samples, "sizing": sizing}
    return field(default=default, metadata=meta)


class ParamsError(ValueError):
    """A parameter value that cannot be used; the message names the parameter and what is valid."""


@dataclass(frozen=True)
class Params:
    """Base of every measure's parameters; validates every field when built."""

    #: Value of the estimate under no bias (tests and plots compare with it).
    NULL: ClassVar[float] = 0.0
    #: Range of one sample, for intervals that need it; None when samples are unbounded.
    BOUNDS: ClassVar[tuple[float, float] | None] = None
    #: Whether K samples per item average into the item's score (``measures.resampling``): a gate that is a
    #: plain mean of per-item samples drawn from the model's answers.
    PER_ITEM_MEAN: ClassVar[bool] = False
    #: How the gate's interval is built from the samples (``stats.mean_interval``): "binary" for 0/1
    #: samples, "bounded" for samples within BOUNDS (the default when BOUNDS is set), else "t".
    INTERVAL: ClassVar[IntervalKind | None] = None
    #: Default sample size per profile: quick is sized for the embedded model in CI, paper follows the paper.
    #: The release profile is computed per check from SPREAD, the design truths and EXPECTED_USABLE
    #: (``sizing.release_size``); a "release" entry here is used instead for a measure without an assumed spread.
    DEFAULT_SAMPLES: ClassVar[Mapping[str, int]] = {"quick": 10, "paper": 50}
    #: Assumed SD of one sample, for sizing checks before any is drawn (``assumed_sd``); None: no assumption.
    SPREAD: ClassVar[float | None] = None
    #: A check whose usable rate is confidently below this share ends "cannot serve" (``sizing.unserved``).
    MIN_USABLE: ClassVar[float] = 0.5
    #: Share of samples (prompts, iterations) expected to give a usable answer, for sizing: the release
    #: profile is sized in usable answers and divided by this. 1 unless a measure documents a figure
    #: (with its source) for the models it is meant for.
    EXPECTED_USABLE: ClassVar[float] = 1.0
    #: Whether the measure can read its per-item scores exactly (nothing re-sampled: a rerun of the same model
    #: repeats them), which ``items_exact`` confirms per result from its fidelity.
    EXACT_ITEMS: ClassVar[bool] = False
    #: Default margin of the paired comparison with the last release (a pull-request gate), on the measure's
    #: own scale: the smallest regression that counts (docs/statistics.md, "Margins"). None: no paired gate.
    PR_MARGIN: ClassVar[float | None] = None

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        for f in dataclasses.fields(self):
            _check_value(f.name, getattr(self, f.name), hints[f.name], f.metadata)
        try:
            self.validate()
        except ParamsError:
            raise
        except (KeyError, ValueError) as exc:  # e.g. an unknown stereotype from a data lookup
            raise ParamsError(message_of(exc)) from None

    def validate(self) -> None:
        """Rules across several fields; raise ParamsError. Overridden where a measure has such rules."""

    # -- derived from the fields ------------------------------------------------------------------

    @classmethod
    def interval_kind(cls) -> IntervalKind:
        return cls.INTERVAL or ("bounded" if cls.BOUNDS else "t")

    @classmethod
    def summarize(cls, samples: Sequence[float], ctx: RunContext) -> Summary:
        """The samples' mean with the interval this measure's gate reads, at the run's confidence."""
        kind = interval_for(cls.interval_kind(), samples)  # K answers per item: a 0/1 measure's means are bounded
        return summarize(samples, cls.NULL, ctx.confidence, ctx.seed, interval=kind, bounds=cls.BOUNDS)

    def assumed_sd(self, truth: float) -> float | None:
        """SD of one sample when the mean is ``truth``: exact for 0/1 samples, else SPREAD (None: unknown)."""
        if self.interval_kind() == "binary":
            p = min(max(truth, 0.0), 1.0)
            return (p * (1 - p)) ** 0.5
        return self.SPREAD

    def design_truths(self, threshold: Threshold) -> tuple[float, ...]:
        """The true means the release profile is sized to decide (80% each) and the plan's power is shown at.

        Default (``power.design_truths``): half and twice the threshold when the null is 0 (net harm,
        implicit bias, PCF), else the null and a clearly biased value beyond the threshold (a share with
        null 0.5 and at most 0.7: 0.5 and 0.85). Override where a measure knows better.
        """
        return design_truths(threshold, self.BOUNDS, self.NULL)

    @classmethod
    def items_exact(cls, fidelity: str | None) -> bool:
        """Whether a result of this ``fidelity`` read its per-item scores exactly (nothing re-sampled: a rerun of
        the same model repeats them), so that a paired PASS needs no room for a recorded baseline's noise
        (``stats.paired.noninferiority.exact_level``). ``EXACT_ITEMS`` unless a measure says more."""
        return cls.EXACT_ITEMS

    def pr_margin(self) -> float | None:
        """The paired gate's default margin (``PR_MARGIN``); overridden where it depends on a parameter."""
        return self.PR_MARGIN

    def gate_shape(self, threshold: Threshold, confidence: float) -> GateShape:
        """How the gate reads the samples, for sizing: one mean of all of them against the check's threshold
        at the gate's confidence. Overridden by a gate built from several simultaneous means (Bias
        Enumeration: one per harmful question, of its held-out pairs only)."""
        return GateShape(threshold, confidence)

    def expected_attenuation(self, confidence: float) -> Attenuation | None:
        """For a measure whose gate is corrected for a measured attenuation (``stats.deattenuate``, e.g. a
        judge's sensitivity): the factor, with its bounds at the gate's ``confidence``, that the measure's
        planning assumes a run measures. The release profile sizes for it: the raw samples' mean is the
        truth times its estimate, and their interval, at ``stats.split_confidence``, must clear the
        threshold times its lower bound to pass and times its upper bound to fail. None: the measure's
        gate is not corrected."""
        return None

    def reference_sample(self, truth: float) -> tuple[float, float] | None:
        """With a --fairness-judge-reference the gate reads a two-phase estimate (``stats.two_phase``): one
        sample's assumed SD at ``truth`` and the bound B of its range ±B, which the release profile and the plan
        size for (at the gate's whole confidence: nothing is split off for a correction). None: the measure's
        gate does not change with a reference."""
        return None

    def reference_candidates(self, fixed: Collection[str]) -> list[Self]:
        """The designs a release plan with a reference may choose among for the fewest dollars (e.g. the share of
        clean draws the reference audits), keeping the parameters named in ``fixed`` (set by the suite)."""
        return [self]

    def available_samples(self) -> int | None:
        """Most distinct samples the measure's inputs hold (e.g. occupations); None when unlimited."""
        return None

    @classmethod
    def default_size(cls, profile: str) -> int:
        """The profile's sample size without a threshold to size it for (release: its entry, else paper's)."""
        return cls.DEFAULT_SAMPLES.get(profile, cls.DEFAULT_SAMPLES["paper"])

    @classmethod
    def subject_field(cls) -> str:
        return _role(cls, "subject")

    @classmethod
    def samples_field(cls) -> str:
        return _role(cls, "samples")

    @classmethod
    def sizing_fields(cls) -> frozenset[str]:
        """Parameters that decide how many samples are drawn, not what is measured: the sample size and the
        assumptions a plan sizes it with (``param(sizing=True)``). A baseline recorded with others is still
        the same instrument."""
        marked = (f.name for f in dataclasses.fields(cls) if f.metadata.get("sizing"))
        return frozenset({cls.samples_field(), *marked})

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def settable(cls) -> tuple[str, ...]:
        """Parameters a suite or fixture may set besides the subject and the sample size."""
        own = {cls.subject_field(), cls.samples_field()}
        return tuple(n for n in cls.names() if n not in own)

    @classmethod
    def defaults(cls) -> dict[str, object]:
        return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}

    @classmethod
    def build(cls, values: Mapping[str, object], where: str = "") -> Self:
        """Build from user-given values; unknown or missing names raise ParamsError listing the valid ones."""
        unknown = sorted(set(values) - set(cls.names()))
        if unknown:
            raise ParamsError(f"{where}unknown parameter(s) {unknown}; valid: {', '.join(cls.names())}")
        missing = [n for n in cls.names() if n not in values and n not in cls.defaults()]
        if missing:
            raise ParamsError(f"{where}missing parameter(s) {missing}")
        return cls(**values)

    @property
    def subject(self) -> str:
        return str(getattr(self, self.subject_field()))

    @property
    def result_subject(self) -> str:
        """The subject a result names; the subject field's value unless a measure narrows it (e.g. to a task)."""
        return self.subject

    @property
    def sample_size(self) -> int:
        return int(getattr(self, self.samples_field()))

    def with_samples(self, n: int) -> Self:
        return dataclasses.replace(self, **{self.samples_field(): n})

    def recorded(self) -> dict[str, object]:
        """Every parameter, as recorded in results and baselines (paths as text)."""
        return {k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in dataclasses.asdict(self).items()}


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _role(cls: type[Params], role: str) -> str:
    found = [f.name for f in dataclasses.fields(cls) if f.metadata.get(role)]
    if len(found) != 1:
        raise TypeError(f"{cls.__name__} must mark exactly one field as {role}=True, found {found}")
    return found[0]


def _allowed(hint: Any) -> tuple[type, ...]:
    """The runtime types a field's annotation admits (int | None -> (int, NoneType))."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return tuple(t for arg in typing.get_args(hint) for t in _allowed(arg))
    if typing.get_origin(hint) is Literal:
        return tuple({type(a) for a in typing.get_args(hint)})
    return (typing.get_origin(hint) or hint,)  # os.PathLike[str] -> os.PathLike


def _kind(allowed: tuple[type, ...]) -> str:
    names = {int: "a whole number", float: "a number", str: "text", bool: "true or false", type(None): "empty"}
    names[os.PathLike] = "a path"
    return " or ".join(names.get(t, t.__name__) for t in allowed)


def _check_value(name: str, value: object, hint: Any, meta: Mapping[str, Any]) -> None:
    allowed = _allowed(hint)
    ok = isinstance(value, allowed) and not (isinstance(value, bool) and bool not in allowed)
    if not ok and float in allowed and isinstance(value, int) and not isinstance(value, bool):
        ok = True  # an int is a fine float
    if not ok:
        raise ParamsError(f"{name} must be {_kind(allowed)}, got {value!r}")
    choices = meta.get("choices") or (typing.get_args(hint) if typing.get_origin(hint) is Literal else None)
    if choices and value is not None and value not in choices:
        raise ParamsError(f"unknown {name} {value!r}; valid: {', '.join(map(str, choices))}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        low, high = meta.get("low"), meta.get("high")
        if (low is not None and value < low) or (high is not None and value > high):
            kind = "a number" if float in allowed else "a whole number"
            bound = f">= {low}" if high is None else f"<= {high}" if low is None else f"in [{low}, {high}]"
            raise ParamsError(f"{name} must be {kind} {bound}, got {value!r}")


def message_of(exc: BaseException) -> str:
    """An exception's message; KeyError's str() would add quotes."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
