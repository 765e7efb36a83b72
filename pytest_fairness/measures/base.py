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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, partial
from typing import Any, ClassVar, Generic, Literal, Protocol, Self, TypeVar

from pytest_fairness.gate import Outcome, Threshold
from pytest_fairness.measures.planting import Planted
from pytest_fairness.measures.resampling import averaged, interval_for
from pytest_fairness.models.base import ChatModel, ChatRequest, LogprobRequest
from pytest_fairness.models.runner import CallStats, ProgressFn, Runner, counting
from pytest_fairness.power import GateShape, design_truths
from pytest_fairness.result import Measured, MeasureResult, with_provider_notes
from pytest_fairness.stats import IntervalKind, Summary, summarize

#: quick is sized for the embedded model in CI, paper follows the papers, release is sized per check so
#: that it decides with 80% probability at each of the measure's design truths (``Params.design_truths``).
PROFILES = ("quick", "paper", "release")
#: Most samples (or sequential budget) one check may ask for: far beyond any paper, and enough for
#: the release profile of the strictest built-in threshold; anything larger is a typo, and would make
#: even --fairness-plan list requests for hours.
MAX_SAMPLES = 100_000
_UNSET: Any = dataclasses.MISSING


def param(
    default: Any = _UNSET,
    *,
    low: float | None = None,
    high: float | None = None,
    choices: Sequence[object] | None = None,
    subject: bool = False,
    samples: bool = False,
    doc: str = "",
) -> Any:
    """Declare one parameter: its default, its valid range or values, and its role."""
    meta = {"low": low, "high": high, "choices": tuple(choices) if choices else None, "doc": doc}
    meta |= {"subject": subject, "samples": samples}
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
            raise ParamsError(_message(exc)) from None

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

    def pr_margin(self) -> float | None:
        """The paired gate's default margin (``PR_MARGIN``); overridden where it depends on a parameter."""
        return self.PR_MARGIN

    def gate_shape(self, threshold: Threshold, confidence: float) -> GateShape:
        """How the gate reads the samples, for sizing: one mean of all of them against the check's threshold
        at the gate's confidence. Overridden by a gate built from several simultaneous means (Bias
        Enumeration: one per harmful question, of its held-out pairs only)."""
        return GateShape(threshold, confidence)

    def expected_attenuation(self, confidence: float) -> float | None:
        """For a measure whose gate is corrected for a measured attenuation (``stats.deattenuate``, e.g. a
        judge's sensitivity): the factor's lower bound when it is measured flawless, at the gate's
        ``confidence``. The release profile sizes for it: the raw interval must then clear the threshold
        times this, at ``stats.split_confidence``. None: the measure's gate is not corrected."""
        return None

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


@dataclass(frozen=True)
class RunContext:
    """What the plugin hands every run: the model's runner, the judge's, the seed and the confidence.

    ``calls`` counts every model call made while the framework runs a measure under this context
    (``Measure.execute``): one context per check, so one counter per check. ``reference`` re-rates a
    sample of a judged measure's judgments (--fairness-judge-reference), and ``judge_calibration`` names a
    file of the team's own labelled calibration items (--fairness-judge-calibration); measures without
    them ignore both.
    """

    runner: Runner
    judge: Runner | None = None
    seed: int = 0
    confidence: float = 0.95
    progress: ProgressFn | None = None
    calls: CallStats = field(default_factory=CallStats)
    reference: Runner | None = None
    judge_calibration: str | None = None
    #: K: how many answers of the model each item gets, averaged into its score (``measures.resampling``).
    samples_per_item: int = 1

    def in_roles(self) -> RunContext:
        """This context with the judge's and the reference's calls counted for their roles, also where one of
        them is the runner of the model under test (a judge that is the model, told apart in the accounting)."""

        def cast(runner: Runner | None, role: str) -> Runner | None:
            return runner if runner is None or runner.role == role else runner.for_role(role)

        return replace(self, judge=cast(self.judge, "judge"), reference=cast(self.reference, "reference"))


Request = ChatRequest | LogprobRequest


@dataclass(frozen=True)
class JudgeEstimate:
    """The judge calls a check would make, estimated before any answer exists (they depend on the answers):
    how many, their tokens, and ``how`` they were estimated, in words for the plan."""

    requests: int
    prompt_tokens: int
    completion_tokens: int
    how: str


def tokens_of(text: str) -> int:
    """Rough tokens of a text (``estimate_tokens``' rule: about four characters a token)."""
    return len(text) // 4


class Checked(Protocol):
    """What a measure's own report lines and analyses read of a gated check; the check record (which sits
    above the measures) is one."""

    @property
    def check(self) -> str: ...

    @property
    def label(self) -> str: ...

    @property
    def measure(self) -> str: ...

    @property
    def outcome(self) -> Outcome: ...

    @property
    def confidence(self) -> float: ...

    @property
    def result(self) -> MeasureResult: ...


@dataclass(frozen=True)
class Analysis:
    """An analysis across a run's check records (e.g. implicit→decision association): ``compute``
    returns a JSON-ready result or None when the run does not support it; ``lines`` renders it."""

    compute: Callable[[Sequence[Checked]], dict[str, Any] | None]
    lines: Callable[[dict[str, Any]], list[str]]


P = TypeVar("P", bound=Params)


@dataclass(frozen=True)
class Measure(Generic[P]):
    """A registered measure: its parameters and the functions that plan, validate and run it.

    ``requests`` lists the model requests a run would send (for --fairness-plan, no model call);
    ``check_inputs`` reads the files a parameter names, so a bad suite fails at collection;
    ``summary_lines`` (of one check record) and ``analyses`` (across a run's records) let a measure
    add its own lines to the terminal summary and JSON report, so the reports name no measure.
    ``planted`` is the family's part of the synthetic test double (``measures.planting``);
    ``sequential`` lets a measure without ``BOUNDS`` grow under --fairness-sequential.
    ``run`` returns what it measured (``Measured``); ``execute`` makes that the ``MeasureResult``.
    ``judge_estimate(params, seed)`` prices a judged measure before a run: the judge calls its structure
    implies (the one place each measure states it; the actual calls depend on the answers).
    """

    name: str
    params: type[P]
    run: Callable[[P, RunContext], Measured]
    requests: Callable[[P, ChatModel, int], Sequence[Request]]
    uses_judge: bool = False
    check_inputs: Callable[[P], None] | None = None
    doc: str = ""
    #: Name of the fixture users call in their own tests (default: the measure's name).
    fixture: str = ""
    summary_lines: Callable[[Checked], list[str]] | None = None
    analyses: Mapping[str, Analysis] = field(default_factory=dict)
    planted: Planted = field(default_factory=Planted)
    #: Measures whose checks on one subject send the same requests name the same ``shares`` (e.g. net harm
    #: and the axes share the chatbot's answers); default: the measure's own name.
    shares: str = ""

    def share_group(self, params: Params) -> str:
        """Which checks send requests in common: the same group for the same ``shares`` and subject."""
        return f"{self.shares or self.name}:{params.subject}"

    #: Sequential sampling for a measure whose gate is not a mean of bounded samples (no ``BOUNDS``):
    #: ``sequential(params, ctx, first_round)`` reruns at ``params``' larger sample size, keeping what the
    #: first round fixed (its ``Measured.first_round``, e.g. the questions it tests; None when it fixed
    #: nothing), and returns what it measured with an interval that holds at every size looked at. Called
    #: for the first round's size too, so every look is always-valid.
    sequential: Callable[[P, RunContext, Any], Measured] | None = None
    judge_estimate: Callable[[P, int], JudgeEstimate] | None = None
    #: The calls a --fairness-judge-reference would make on a check (priced in the plan when one is given).
    reference_estimate: Callable[[P, int], JudgeEstimate] | None = None

    def execute(self, params: P, ctx: RunContext) -> MeasureResult:
        """Run the measure, counting its calls in ``ctx.calls`` (by role), and add the provenance to what it
        measured."""
        ctx = ctx.in_roles()
        with counting(ctx.calls):
            measured = self.run(params, ctx)
            if params.PER_ITEM_MEAN and ctx.samples_per_item > 1:
                again = partial(self._resample, params, ctx)
                measured = averaged(measured, again, ctx.samples_per_item)
        return self.result(params, ctx, measured)

    def _resample(self, params: P, ctx: RunContext, k: int) -> Measured:
        return self.run(params, replace(ctx, runner=ctx.runner.resampled(k)))

    def grow(self, params: P, ctx: RunContext, first: MeasureResult) -> MeasureResult:
        """Sequential growth of a measure with its own always-valid rule (``sequential``), at ``params``' size."""
        assert self.sequential is not None, f"{self.name} has no sequential rule of its own"
        if first.unserved is not None:  # nothing to grow: the first round already showed it cannot serve
            return first
        ctx = ctx.in_roles()
        with counting(ctx.calls):
            measured = self.sequential(params, ctx, first.first_round)
        return self.result(params, ctx, measured)

    def result(self, params: P, ctx: RunContext, measured: Measured) -> MeasureResult:
        """The result of what a run measured: the registered name, the subject, the model and judge ids,
        the seed and parameters, the calls counted under ``ctx``, and the gate's interval of the samples."""
        recorded = {**params.recorded(), **measured.inputs, "seed": ctx.seed}
        if self.uses_judge:
            recorded["judge"] = (ctx.judge or ctx.runner).model.model_id if measured.judged else None
        return MeasureResult(
            measure=self.name,
            subject=params.result_subject,
            summary=params.summarize(measured.samples, ctx) if measured.summary is None else measured.summary,
            n_unusable=measured.n_unusable,
            unusable_examples=list(measured.unusable_examples),
            fidelity=with_provider_notes(measured.fidelity, ctx.calls),
            model_id=ctx.runner.model.model_id,
            versions=dict(measured.versions),
            params=recorded,
            details=dict(measured.details),
            calls=dataclasses.replace(ctx.calls),
            samples=list(measured.samples),
            unserved=measured.unserved,
            attenuation=measured.attenuation,
            no_size_decides=measured.no_size_decides,
            first_round=measured.first_round,
            items=list(measured.items),
            item_samples=measured.item_samples,
        )

    @property
    def fixture_name(self) -> str:
        return self.fixture or self.name

    @property
    def subject(self) -> str:
        return self.params.subject_field()

    @property
    def samples(self) -> str:
        return self.params.samples_field()

    @property
    def default_samples(self) -> Mapping[str, int]:
        return self.params.DEFAULT_SAMPLES

    @property
    def bounds(self) -> tuple[float, float] | None:
        return self.params.BOUNDS

    @property
    def null(self) -> float:
        return self.params.NULL

    def validate(self, values: Mapping[str, object], where: str = "") -> P:
        """Build the parameters from user-given values and read the files they name; raise ParamsError."""
        params = self.params.build(values, where)
        if self.check_inputs is not None:
            try:
                self.check_inputs(params)
            except (KeyError, ValueError) as exc:
                raise ParamsError(f"{where}{_message(exc)}") from None
        return params

    def run_with(
        self,
        runner: Runner,
        /,
        *,
        judge: Runner | None = None,
        seed: int = 0,
        confidence: float = 0.95,
        progress: ProgressFn | None = None,
        reference: Runner | None = None,
        judge_calibration: str | None = None,
        **values: object,
    ) -> MeasureResult:
        """Run outside pytest with keyword parameters, as a suite would set them."""
        params = self.params.build(values, f"{self.name}: ")
        ctx = RunContext(
            runner, judge, seed, confidence, progress, reference=reference, judge_calibration=judge_calibration
        )
        return self.execute(params, ctx)

    def plan_with(self, model: ChatModel, /, *, seed: int = 0, **values: object) -> Sequence[Request]:
        """The requests a run would send, without sending them."""
        return self.requests(self.params.build(values, f"{self.name}: "), model, seed)


def _message(exc: BaseException) -> str:
    """An exception's message; KeyError's str() would add quotes."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
