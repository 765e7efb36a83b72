"""The measure contract: a registered ``Measure``, the context every run gets, and running it.

A ``Measure`` pairs one ``Params`` class (``measures.params``) with the functions that plan, validate and
run it; ``Measure.execute`` adds what the framework knows of every result (provenance, calls, the
provider's notes), so no measure repeats it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Generic, Protocol, TypeVar

from pytest_fairness.measures.context import RunContext
from pytest_fairness.measures.params import Params, ParamsError, message_of
from pytest_fairness.measures.planting import Planted
from pytest_fairness.measures.resampling import averaged
from pytest_fairness.models.interface import ChatModel, ChatRequest, LogprobRequest
from pytest_fairness.models.runner import ProgressFn, Runner, counting
from pytest_fairness.records.measure_result import Measured, MeasureResult, with_provider_notes
from pytest_fairness.stats.gate import Outcome

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
            evidence=measured.evidence,
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
                raise ParamsError(f"{where}{message_of(exc)}") from None
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
