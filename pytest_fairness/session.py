"""Per-process state of a fairness run: settings, the model and its runner, and running one check.

The plugin hooks stay thin: they read options into ``Settings``, hold one ``FairnessSession`` per
pytest process (each xdist worker has its own model and shares the sqlite cache), and ask it to
run checks. Everything here works without pytest, which keeps it easy to test.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_fairness import pricing, sizing
from pytest_fairness.baseline.policy import BaselinePolicy
from pytest_fairness.gate import Outcome, decide
from pytest_fairness.measures import MEASURES, PROFILES, Measure, Params, ParamsError, RunContext
from pytest_fairness.measures.fpf.harm_labels import LabelledPairs
from pytest_fairness.models.base import (
    CannotServe,
    ChatModel,
    ChatRequest,
    LogprobRequest,
    Message,
    PermanentError,
    estimate_tokens,
)
from pytest_fairness.models.batch import BatchPolicy
from pytest_fairness.models.cache import CacheMode, ResponseCache
from pytest_fairness.models.registry import load_model, model_from, parse_model_spec
from pytest_fairness.models.runner import ProgressFn, RetriesExhausted, RetryPolicy, Runner
from pytest_fairness.plan import UNKNOWN, Dollars, JudgeCalls, Plan, PlanRow, PricedAs
from pytest_fairness.record import CheckRecord
from pytest_fairness.result import MeasureResult
from pytest_fairness.sequential import Interval, SequentialPlan, confidence_sequence, run_sequential
from pytest_fairness.stats import deattenuate, split_confidence
from pytest_fairness.suite import MAX_SAMPLES, Check

INCONCLUSIVE_POLICIES = ("fail", "skip", "pass")
#: A --fairness-judge-reference of this form reads a team's labels (``harm_labels``) instead of a model.
LABELS = "labels:"
#: Each sequential round grows a check by its profile's size or by half, whichever is more.
SEQUENTIAL_GROWTH = 1.5
#: How a run's gates share their error rate: each at its own confidence, or Bonferroni across the run.
GATE_MULTIPLICITY = ("none", "bonferroni")
#: The request sent to each model before the first check when the run chats with it (or may: a fixture or
#: ``fairness_session`` whose requests are not known in advance): as small as a chat request gets.
PROBE = ChatRequest((Message("user", "Reply with OK."),), temperature=0.0, max_tokens=1, seed=0)
#: The probe of a run whose checks only score plain-text continuations (PCF): one text completion, no chat
#: template, no candidates to score. A base model served for /v1/completions alone must pass it.
TEXT_PROBE = LogprobRequest((), (), prefix="Reply with OK.")


class SettingsError(ValueError):
    """An option or ini value that cannot be used."""


class RunFault(RuntimeError):
    """The model, judge or cache cannot be used at all; found before the first check, the message names the fix."""


@dataclass(frozen=True)
class Settings:
    model: str = "local"
    judge: str | None = None
    seed: int = 0
    profile: str = "quick"
    cache_path: Path = Path(".fairness-cache/responses.sqlite")
    cache_mode: CacheMode = CacheMode.RW
    confidence: float = 0.95
    inconclusive: str = "fail"
    max_concurrency: int = 8
    #: Attempts per model request before a transient failure ends it (--fairness-max-attempts).
    max_attempts: int = RetryPolicy.max_attempts
    sequential: bool = False
    multiplicity: str = "none"
    #: Most USD the run may spend at standard rates (--fairness-budget); None: no budget.
    budget: float | None = None
    #: How checks compare with their committed baselines (the --fairness-baseline-* options).
    baseline: BaselinePolicy = field(default_factory=BaselinePolicy)
    #: --fairness-batch: ask every model whose provider has a batch API through it (models.batch).
    batch: bool = False
    #: --fairness-batch-wait: minutes the run may wait for batches in all; 0 submits and exits.
    batch_wait: float = 0.0
    #: --fairness-judge-reference: a model spec (or labels:FILE) that re-rates a sample of a judge's judgments.
    judge_reference: str | None = None
    #: --fairness-judge-calibration: a file of the team's own labelled calibration pairs, added to the screen.
    judge_calibration: str | None = None

    def public(self) -> dict[str, object]:
        """Settings as recorded in reports (model specs name no keys: those stay in the environment)."""
        return {
            "model": self.model,
            "judge": self.judge,
            "seed": self.seed,
            "profile": self.profile,
            "cache_mode": self.cache_mode.value,
            "confidence": self.confidence,
            "inconclusive": self.inconclusive,
            "sequential": self.sequential,
            "multiplicity": self.multiplicity,
            "budget": self.budget,
            "batch": self.batch,
            "batch_wait": self.batch_wait,
            **{
                k: v
                for k, v in (("judge_reference", self.judge_reference), ("judge_calibration", self.judge_calibration))
                if v
            },
        }

    @classmethod
    def from_values(cls, get: Callable[[str], Any], rootdir: Path) -> Settings:
        """Build from a getter of option/ini values (None = unset), validating each value."""
        model = get("model") or "local"
        pricing.spec_price(parse_model_spec(model))  # a malformed ?price_in= is a usage error, found now
        judge = get("judge") or None
        if judge:
            pricing.spec_price(parse_model_spec(judge))
        reference = get("judge_reference") or None
        if reference and not reference.startswith(LABELS):
            pricing.spec_price(parse_model_spec(reference))
        if reference and reference.startswith(LABELS) and not Path(reference[len(LABELS) :]).is_file():
            raise SettingsError(f"--fairness-judge-reference={reference}: no such file (JSON lines of labelled pairs)")
        calibration = get("judge_calibration") or None
        if calibration and not Path(calibration).is_file():
            raise SettingsError(f"--fairness-judge-calibration={calibration}: no such file (a YAML of labelled pairs)")
        profile = get("profile") or "quick"
        if profile not in PROFILES:
            raise SettingsError(f"--fairness-profile={profile!r} is not a profile; valid: {', '.join(PROFILES)}")
        mode = get("cache_mode") or "rw"
        try:
            cache_mode = CacheMode(mode)
        except ValueError:
            valid = ", ".join(m.value for m in CacheMode)
            raise SettingsError(f"--fairness-cache-mode={mode!r} is not a cache mode; valid: {valid}") from None
        inconclusive = get("inconclusive") or "fail"
        if inconclusive not in INCONCLUSIVE_POLICIES:
            raise SettingsError(f"--fairness-inconclusive={inconclusive!r}; valid: {', '.join(INCONCLUSIVE_POLICIES)}")
        multiplicity = get("multiplicity") or "none"
        if multiplicity not in GATE_MULTIPLICITY:
            raise SettingsError(f"--fairness-multiplicity={multiplicity!r}; valid: {', '.join(GATE_MULTIPLICITY)}")
        cache_path = Path(get("cache") or rootdir / ".fairness-cache" / "responses.sqlite")
        return cls(
            model=model,
            judge=judge,
            seed=_number(get("seed"), int, 0, "--fairness-seed", low=0),
            profile=profile,
            cache_path=cache_path,
            cache_mode=cache_mode,
            confidence=_number(get("confidence"), float, 0.95, "fairness_confidence", low=0.5, high=0.999),
            inconclusive=inconclusive,
            max_concurrency=_number(get("max_concurrency"), int, 8, "--fairness-max-concurrency", low=1),
            max_attempts=_number(get("max_attempts"), int, RetryPolicy.max_attempts, "--fairness-max-attempts", low=1),
            sequential=bool(get("sequential")),
            multiplicity=multiplicity,
            budget=_number(get("budget"), float, None, "--fairness-budget (USD)", low=0),
            judge_reference=reference,
            judge_calibration=calibration,
            baseline=_baseline_policy(get),
            batch=bool(get("batch")),
            batch_wait=_number(get("batch_wait"), float, 0.0, "--fairness-batch-wait (minutes)", low=0),
        )


def _baseline_policy(get: Callable[[str], Any]) -> BaselinePolicy:
    try:
        return BaselinePolicy.from_values(get)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def _number(
    raw: Any,
    kind: type,
    default: Any,
    name: str,
    low: float | None = None,
    high: float | None = None,
    open_: bool = False,
) -> Any:
    """A number option, checked against its range (``open_``: the bounds themselves are excluded)."""
    if raw in (None, ""):
        return default
    what = "a whole number" if kind is int else "a number"
    if low is not None and high is not None:
        what += f" in ({low}, {high})" if open_ else f" in [{low}, {high}]"
    elif low is not None:
        what += f" {'>' if open_ else '>='} {low}"
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise SettingsError(f"{name} must be {what}, got {raw!r}") from None
    below = low is not None and (value <= low if open_ else value < low)
    above = high is not None and (value >= high if open_ else value > high)
    if below or above or value != value:  # value != value: NaN
        raise SettingsError(f"{name} must be {what}, got {raw!r}")
    return value


@dataclass
class CheckRun:
    """A check's result and the gate's decision on it."""

    check: Check
    result: MeasureResult
    outcome: Outcome

    def to_record(self) -> CheckRecord:
        """The typed record every output reads (it travels from xdist workers as ``to_dict()``)."""
        return CheckRecord(
            suite=self.check.suite,
            check=self.check.id,
            outcome=self.outcome,
            threshold=self.check.threshold,
            result=self.result,
        )


def measured_record(where: str, result: MeasureResult) -> CheckRecord:
    """The record of a result a fixture measured in a user's own test: no threshold, so no verdict."""
    return CheckRecord(
        suite=where,
        check=f"{result.measure}[{result.subject}]",
        outcome=Outcome.MEASURED,
        threshold=None,
        result=result,
    )


def _chats(request: ChatRequest | LogprobRequest) -> bool:
    """Whether a request goes through the model's chat interface (a chat template, /v1/chat/completions)."""
    return isinstance(request, ChatRequest) or bool(request.messages)


def _fewest(params: Params) -> Params:
    """The same check at its smallest valid sample size: its requests are of the same kinds, and cheap to list."""
    field = next(f for f in dataclasses.fields(params) if f.name == params.samples_field())
    try:
        return params.with_samples(int(field.metadata.get("low") or 1))
    except ParamsError:
        return params


def probes_for(
    checks: Sequence[Check] | None, measures: Collection[str], model: ChatModel, seed: int
) -> list[ChatRequest | LogprobRequest]:
    """The probes a run needs: a chat probe when any selected check chats with the model, a text probe when
    any scores plain text, and the chat probe when the run's needs are unknown (``checks`` None, or a measure
    in ``measures`` that no check runs: a fixture call). Each measure's ``requests`` is listed once, at the
    smallest sample size of its first check, since a measure's request kinds do not depend on its size."""
    if checks is None:
        return [PROBE]
    chat, text = False, False
    first = {c.measure: c for c in reversed(checks)}
    for name, check in first.items():
        sent = MEASURES[name].requests(_fewest(check.params), model, seed)
        chat = chat or any(_chats(r) for r in sent)
        text = text or any(not _chats(r) for r in sent)
    chat = chat or any(m not in first for m in measures)
    return [p for p, needed in ((PROBE, chat), (TEXT_PROBE, text)) if needed] or [PROBE]


def _tokens(model: ChatModel, request: ChatRequest | LogprobRequest) -> int:
    """A request's prompt tokens: counted by the model's own tokenizer when it has one, else estimated."""
    counted = model.count_tokens(request)
    return estimate_tokens(request) if counted is None else counted


def _dollars(price: pricing.Price, prompt_tokens: float, completion_tokens: float) -> Dollars:
    """USD at standard and batch rates (None where the rate is unknown)."""
    standard = price.cost(prompt_tokens, completion_tokens)
    return Dollars(standard, price.cost(prompt_tokens, completion_tokens, batch=True))


def _probe(runner: Runner, probes: Sequence[ChatRequest | LogprobRequest] = (PROBE,)) -> None:
    """One uncached request of each kind through a throwaway runner (same model and retry policy); RunFault
    when one fails."""
    model = runner.model
    probe = Runner(model, None, CacheMode.OFF, 1, runner.retry)
    try:
        for request in probes:
            with contextlib.suppress(CannotServe):  # no run fault: the checks needing it end "cannot serve"
                probe.run([request])  # type: ignore[list-item]
    except RetriesExhausted as exc:
        raise RunFault(
            f"{exc.__cause__ or exc} (after {_attempts(runner.retry.max_attempts)}): check that the server is running "
            "and the model spec's URL is right, or run from the cache alone with --fairness-cache-mode=replay"
        ) from None
    except PermanentError as exc:
        raise RunFault(str(exc)) from None
    finally:
        probe.close()  # also drops the model's client bound to the probe's event loop


def _attempts(n: int) -> str:
    return "1 attempt" if n == 1 else f"{n} attempts"


class FairnessSession:
    """Owns the model, cache and runner of one pytest process; created lazily on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._runner: Runner | None = None
        self._judge: Runner | None = None
        self._reference: Runner | None = None
        self._cache: ResponseCache | None = None
        self._others: dict[str, Runner] = {}  # models a fixture call named (model=, judge=), by model id
        # One batch policy for all runners: their waits for batches share --fairness-batch-wait.
        self._batch = BatchPolicy(wait_seconds=60 * settings.batch_wait, everywhere=settings.batch)

    def _runner_for(self, spec: str) -> Runner:
        return self._runner_with(load_model(spec), pricing.price_for(spec))

    def _runner_with(self, model: ChatModel, price: pricing.Price | None) -> Runner:
        cache, mode = self._cache_or_none(), self.settings.cache_mode
        retry = RetryPolicy(max_attempts=self.settings.max_attempts)
        return Runner(model, cache, mode, self.settings.max_concurrency, retry, price=price, batch=self._batch)

    def runner_of(self, model: str | object) -> Runner:
        """A runner for a model a fixture call names: a spec, or an app object or function (one runner per
        model id, sharing the run's cache); the run's own model and judge when the spec is theirs."""
        if model == self.settings.model:
            return self.runner
        if model == self.settings.judge:
            return self.judge
        built = load_model(model) if isinstance(model, str) else model_from(model)
        if built.model_id not in self._others:
            price = pricing.price_for(model) if isinstance(model, str) else None
            self._others[built.model_id] = self._runner_with(built, price)
        return self._others[built.model_id]

    def _cache_or_none(self) -> ResponseCache | None:
        if self.settings.cache_mode is not CacheMode.OFF and self._cache is None:
            self._cache = ResponseCache(self.settings.cache_path, read_only=not self.settings.cache_mode.writes)
        return self._cache

    @property
    def judge_spec(self) -> str:
        """The judge's model spec: --fairness-judge, or else the model under test."""
        return self.settings.judge or self.settings.model

    def prices(self) -> dict[str, pricing.Price]:
        """What the model's, the judge's and a reference's calls cost (no model is built for this)."""
        out = {"model": pricing.price_for(self.settings.model), "judge": pricing.price_for(self.judge_spec)}
        reference = self.settings.judge_reference
        if reference is not None:
            labels = pricing.Price(0.0, 0.0, "a team's labels: no per-token charge", 0.0, 0.0, "a team's labels")
            out["reference"] = labels if reference.startswith(LABELS) else pricing.price_for(reference)
        return out

    def spent(self) -> tuple[float, int]:
        """USD this process's calls have cost so far (batched calls at batch rates), and how many had no price."""
        runners = {
            id(r): r for r in (self._runner, self._judge, self._reference, *self._others.values()) if r is not None
        }.values()
        return sum(r.stats.usd for r in runners), sum(r.stats.unpriced for r in runners)

    @property
    def reference(self) -> Runner | None:
        """The judge's reference (--fairness-judge-reference): a model, or a team's labels (``labels:FILE``)."""
        spec = self.settings.judge_reference
        if spec is None:
            return None
        if self._reference is None:
            if spec.startswith(LABELS):
                self._reference = self._runner_with(LabelledPairs(spec[len(LABELS) :]), None)
            else:
                self._reference = self._runner_for(spec)
        return self._reference

    @property
    def runner(self) -> Runner:
        """The model under test."""
        if self._runner is None:
            self._runner = self._runner_for(self.settings.model)
        return self._runner

    @property
    def judge(self) -> Runner:
        """The judge for measures that need one: --fairness-judge, or else the model under test."""
        if self.settings.judge is None or self.settings.judge == self.settings.model:
            return self.runner
        if self._judge is None:
            self._judge = self._runner_for(self.settings.judge)
        return self._judge

    def context(
        self, measure: Measure, progress: ProgressFn | None = None, *, model: object = None, judge: object = None
    ) -> RunContext:
        """This session's model, judge (when the measure uses one), seed and confidence; a fixture call's
        ``model=`` / ``judge=`` (spec or app) replace them (its judge defaults to the run's, else its model)."""
        runner = self.runner if model is None else self.runner_of(model)
        judged = None
        if measure.uses_judge:
            if judge is not None:
                judged = self.runner_of(judge)
            elif model is not None and self.settings.judge is None:
                judged = runner
            else:
                judged = self.judge
        extra = {}
        if measure.uses_judge:
            extra = {"reference": self.reference, "judge_calibration": self.settings.judge_calibration}
        return RunContext(runner, judged, self.settings.seed, self.gate_confidence, progress, **extra)

    def run_params(
        self,
        measure: Measure,
        params: Params,
        progress: ProgressFn | None = None,
        *,
        model: object = None,
        judge: object = None,
    ) -> MeasureResult:
        """Run a measure with this session's model, judge, seed and confidence (or a fixture call's own)."""
        return measure.execute(params, self.context(measure, progress, model=model, judge=judge))

    def measure_params(self, name: str, subject: str, values: Mapping[str, Any]) -> Params:
        """A fixture call's parameters: its keywords, ``samples=`` for the measure's sample size (whatever
        the measure calls it), and the profile's sample size when none is given; ParamsError otherwise."""
        measure = MEASURES[name]
        values = dict(values)
        if "samples" in values and measure.samples != "samples":
            if measure.samples in values:
                raise ParamsError(f"{measure.fixture_name}(): give {measure.samples}= or samples=, not both")
            values[measure.samples] = values.pop("samples")
        keywords = (measure.samples, *measure.params.settable())
        unknown = sorted(set(values) - set(keywords))
        if unknown:
            alias = "" if measure.samples == "samples" else f" (samples= also sets {measure.samples})"
            raise ParamsError(
                f"{measure.fixture_name}(): unknown keyword(s) {unknown}; valid: {', '.join(keywords)}{alias}"
            )
        size = values.setdefault(measure.samples, measure.params.default_size(self.settings.profile))
        if isinstance(size, int) and size > MAX_SAMPLES:
            raise ParamsError(f"{measure.fixture_name}(): {measure.samples}={size} is above the limit of {MAX_SAMPLES}")
        return measure.validate({measure.subject: subject, **values}, where=f"{measure.fixture_name}(): ")

    def run_measure(
        self, name: str, subject: str, /, progress: ProgressFn | None = None, **values: Any
    ) -> MeasureResult:
        """Run a registered measure on one subject; unset parameters take their defaults, and the
        sample size the profile's."""
        params = self.measure_params(name, subject, values)
        return self.run_params(MEASURES[name], params, progress)

    def plan(self, checks: Sequence[Check]) -> Plan:
        """What running the checks would cost, without calling the model: per check its requests, how many
        an earlier check already sends (counted there, since the cache answers the repeat), how many are
        cached, tokens of the rest, the judge calls the measure's structure implies, and dollars for the
        model and the judge at standard and batch rates. Each distinct request is counted once across the plan."""
        seen: set[str] = set()
        prices = self.prices()
        rows = []
        for check in checks:
            params = check.params_for(self.settings.profile)
            power = sizing.power_at(params, params.sample_size, check.threshold, self.gate_confidence)
            rows.append(dataclasses.replace(self._cost(check, params, seen, prices), power=power))
        specs = {"model": self.settings.model, "judge": self.judge_spec, "reference": self.settings.judge_reference}
        priced = {who: PricedAs(specs[who], price.describe(), price.known) for who, price in prices.items()}
        return Plan(rows, priced)  # type: ignore[arg-type]

    def _cost(self, check: Check, params: Params, seen: set[str], prices: Mapping[str, pricing.Price]) -> PlanRow:
        """One check's requests and dollars (requests whose keys are in ``seen`` cost nothing more; it is
        updated). Prompt tokens come from the model's tokenizer where it has one, else ~4 characters a token;
        completion tokens are each request's cap, so their dollars are an upper bound."""
        runner, measure = self.runner, MEASURES[check.measure]
        requests = measure.requests(params, runner.model, self.settings.seed)
        distinct = {runner.key(r): r for r in requests}
        new = [r for key, r in distinct.items() if key not in seen]
        seen.update(distinct)
        cached = [runner.cached(r) for r in new]
        counted = [_tokens(runner.model, r) for r in new]
        completion = [(r.max_tokens or 0) if isinstance(r, ChatRequest) else 1 for r in new]
        call_in = sum(t for t, hit in zip(counted, cached, strict=True) if not hit)
        call_out = sum(t for t, hit in zip(completion, cached, strict=True) if not hit)
        judge, judge_usd = None, None
        if measure.uses_judge:
            judged = measure.judge_estimate(params, self.settings.seed) if measure.judge_estimate else None
            if judged is None:
                judge, judge_usd = JudgeCalls(None, "not estimated for this measure"), UNKNOWN
            else:
                judge = JudgeCalls(judged.requests, judged.how)
                judge_usd = _dollars(prices["judge"], judged.prompt_tokens, judged.completion_tokens)
        reference, reference_usd = None, None
        if "reference" in prices and measure.reference_estimate is not None:
            audited = measure.reference_estimate(params, self.settings.seed)
            reference = JudgeCalls(audited.requests, audited.how)
            reference_usd = _dollars(prices["reference"], audited.prompt_tokens, audited.completion_tokens)
        return PlanRow(
            suite=check.suite,
            check=check.id,
            requests=len(distinct),
            shared=len(distinct) - len(new),
            cached=sum(cached),
            prompt_tokens=sum(counted),
            completion_tokens=sum(r.max_tokens or 0 for r in new if isinstance(r, ChatRequest)),
            tokens_counted=runner.model.counts_tokens,
            model_usd=_dollars(prices["model"], call_in, call_out),
            judge=judge,
            judge_usd=judge_usd,
            reference=reference,
            reference_usd=reference_usd,
        )

    def plan_check(self, check: Check) -> PlanRow:
        """What running one check would cost (see ``plan``)."""
        return self.plan([check]).rows[0]

    def preflight(
        self,
        *,
        call: bool = True,
        judge: bool = True,
        load_weights: bool = True,
        checks: Sequence[Check] | None = None,
        measures: Collection[str] = (),
    ) -> None:
        """Find run-level faults once, before the first check: build the model and the judge (a bad spec, a
        missing key or file raises ModelSpecError), open the cache (CacheError) and, with ``call``, send each
        model one tiny request past the cache, so a closed port, a rejected key or an unknown model stop the
        run at once (RunFault) instead of failing every check. ``load_weights=False`` skips that request for
        local models (an xdist controller runs no check and need not hold their weights).

        The model's probe is of the kinds the selected ``checks`` send (``probes_for``): a PCF-only run asks
        a base model behind a completions-only server for a text completion, never a chat it would refuse.
        ``measures`` names every measure the run uses, fixtures included. The judge is always asked to chat."""
        runners = [self.runner]
        if judge and self.judge is not self.runner:
            runners.append(self.judge)
        if not call or self.settings.cache_mode is CacheMode.REPLAY:
            return  # replay promises no model call: a miss is its own clear error (CacheMiss)
        if checks is not None and (over := self.over_budget(checks)):
            raise RunFault(over)
        for runner in runners:
            if load_weights or runner.model.provider != "local":
                needs = probes_for(checks, measures, runner.model, self.settings.seed)
                _probe(runner, needs if runner is self.runner else [PROBE])

    def over_budget(self, checks: Sequence[Check]) -> str:
        """Why the checks' plan cannot run within --fairness-budget ("" when it can, or there is no budget):
        the plan's dollars, and which checks, in run order, would fit."""
        budget = self.settings.budget
        if budget is None:
            return ""
        plan = self.plan(checks)
        total = plan.usd()
        if total is None:
            unknown = "; ".join(f"{who} {p.describe()}" for who, p in self.prices().items() if not p.known)
            return f"--fairness-budget=${budget:g} cannot be kept without prices: {unknown}"
        if total <= budget:
            return ""
        fits, left, running = [], [], 0.0
        for row in plan.rows:  # in run order, skipping a check that would pass the budget
            cost = row.usd() or 0.0
            if running + cost > budget:
                left.append(row.label)
            else:
                running += cost
                fits.append(row.label)
        parts = [f"model ${plan.usd('model'):,.2f}"]
        if plan.judged:
            parts.append(f"judge ${plan.usd('judge'):,.2f}")
        batch = plan.usd(rate="batch")
        if batch is not None:
            parts.append(f"${batch:,.2f} at batch rates")
        if fits:
            fit = f"Within the budget fit {len(fits)} of {len(plan.rows)} checks (${running:,.2f}, in run order): "
            fit += f"all but {', '.join(left)}" if len(left) < len(fits) else ", ".join(fits)
        else:
            cheapest = min(row.usd() or 0.0 for row in plan.rows)
            fit = f"No check fits within the budget (the cheapest costs ${cheapest:,.2f})"
        lines = [
            f"the plan costs ${total:,.2f} at standard rates ({', '.join(parts)}), "
            f"above --fairness-budget=${budget:,.2f}.",
            *(f"  {row.label}: ${row.usd():,.2f}" for row in plan.rows),
            f"{fit}. Select fewer checks (-k), a smaller --fairness-profile, or raise the budget; --fairness-plan "
            "prices every check.",
        ]
        return "\n".join(lines)

    def _next_round_over_budget(self, check: Check, size: int, grown: int) -> str:
        """Why growing ``check`` from ``size`` to ``grown`` samples would break --fairness-budget ("" if not):
        the new round's uncached model requests and its added judge calls, priced, on top of what this
        process has spent."""
        budget = self.settings.budget
        if budget is None:
            return ""
        measure, prices = MEASURES[check.measure], self.prices()
        bigger, smaller = check.params.with_samples(grown), check.params.with_samples(size)
        cost = self._cost(check, bigger, set(), prices).model_usd.standard
        if measure.uses_judge and measure.judge_estimate is not None:
            more = measure.judge_estimate(bigger, self.settings.seed)
            had = measure.judge_estimate(smaller, self.settings.seed)
            judged = prices["judge"].cost(
                max(0, more.prompt_tokens - had.prompt_tokens), max(0, more.completion_tokens - had.completion_tokens)
            )
            cost = None if cost is None or judged is None else cost + judged
        spent, _ = self.spent()
        if cost is None:
            return f"--fairness-budget: the price of growing to {grown} samples is unknown"
        if spent + cost <= budget:
            return ""
        return (
            f"--fairness-budget: growing to {grown} samples would cost about ${cost:,.2f} more, and "
            f"${spent:,.2f} of the ${budget:,.2f} budget is spent"
        )

    #: Checks selected in this run; set by the plugin after collection (every xdist worker sees them all).
    family_size: int = 1

    @property
    def gate_confidence(self) -> float:
        """Each gate's confidence: the configured one, or under Bonferroni 1 - (1 - confidence) / checks,
        so that the chance any gate of the run errs is at most 1 - confidence."""
        if self.settings.multiplicity == "bonferroni" and self.family_size > 1:
            return 1 - (1 - self.settings.confidence) / self.family_size
        return self.settings.confidence

    def run_check(self, check: Check, progress: ProgressFn | None = None) -> CheckRun:
        """Run a check at its profile's size (growing it under --fairness-sequential) and gate it: "cannot
        serve" when too few answers are usable, and an inconclusive result says what would decide it."""
        measure = MEASURES[check.measure]
        size = check.sample_size(self.settings.profile)
        params = check.params.with_samples(size)
        result = self.run_params(measure, params, progress)
        unserved = sizing.unserved(params, result, self.settings.confidence)
        if unserved:
            return CheckRun(check, replace(result, unserved=unserved), Outcome.CANNOT_SERVE)
        if self.settings.sequential and (measure.bounds is not None or measure.sequential is not None):
            run = self._sequential(check, result, size, progress)
        else:
            run = CheckRun(check, result, decide(result.ci, check.threshold))
        if run.outcome is Outcome.INCONCLUSIVE:
            final = size if run.result.sequential is None else run.result.sequential.final_size
            hint = sizing.more_samples(
                check.params.with_samples(final), run.result, check.threshold, self.gate_confidence
            )
            stopped = run.result.sequential.stopped if run.result.sequential else ""
            if stopped.startswith("--fairness-budget"):
                hint = replace(hint, budget=stopped)
            run = replace(run, result=replace(run.result, to_decide=hint))
        return run

    def _always_valid(
        self, check: Check, size: int, first: MeasureResult, progress: ProgressFn | None, *, grown: bool = True
    ) -> tuple[MeasureResult, Interval]:
        """The result at ``size`` (``first`` itself unless ``grown``) and its always-valid interval: the
        measure's own (``Measure.sequential``, told the first round's result; the first round's own calls
        come back from the cache), or else a confidence sequence of its bounded samples (corrected for the
        result's attenuation, if any)."""
        measure = MEASURES[check.measure]
        params = check.params.with_samples(size)
        if measure.sequential is not None:
            result = measure.grow(params, self.context(measure, progress), first)
            return result, result.ci
        assert measure.bounds is not None
        result = self.run_params(measure, params, progress) if grown else first
        # An attenuated result spent half its error on the attenuation factor: the sequence gets the other half.
        confidence = self.gate_confidence if result.attenuation is None else split_confidence(self.gate_confidence)
        interval = confidence_sequence(result.samples, *measure.bounds, 1 - confidence)
        return result, deattenuate(interval, result.attenuation, measure.bounds)

    def _sequential(self, check: Check, first: MeasureResult, size: int, progress: ProgressFn | None) -> CheckRun:
        """Grow the check from its first round within its budget (``sequential.run_sequential``), each look an
        always-valid interval of this session's model (``_always_valid``)."""
        budget = (check.budget or {}).get(self.settings.profile, 4 * size)
        plan = SequentialPlan(initial=size, step=size, budget=max(budget, size), growth=SEQUENTIAL_GROWTH)
        result, outcome = run_sequential(
            plan,
            check.threshold,
            first,
            look=lambda n: self._always_valid(check, n, first, progress, grown=n != size),
            futile=lambda n, seen: self._futile(check, n, seen, plan.budget),
            unserved=lambda n, seen: sizing.unserved(check.params.with_samples(n), seen, self.settings.confidence),
            over_budget=lambda n, grown: self._next_round_over_budget(check, n, grown),
            begin_round=getattr(progress, "begin_round", None),  # live progress names the round (report/)
        )
        return CheckRun(check, result, outcome)

    def _futile(self, check: Check, size: int, result: MeasureResult, budget: int) -> str:
        """Why growing is unlikely to decide within the budget (empty when it may). See ``sizing.futility``;
        stopping for futility claims nothing, so the always-valid guarantee is untouched."""
        if MEASURES[check.measure].sequential is not None:  # its own rule (its estimate is no mean of samples)
            return result.no_size_decides  # it may know that no size decides it
        return sizing.futility(check.params.with_samples(size), result, check.threshold, self.gate_confidence, budget)

    def settle(self) -> int:
        """At the end of a run: wait a short grace for the calls still in flight to every model, then give up on
        the rest; how many were given up on (a model two runners share is settled by the first)."""
        runners = (*self._others.values(), self._reference, self._judge, self._runner)
        return sum(runner.settle() for runner in runners if runner is not None)

    def close(self) -> None:
        for runner in (*self._others.values(), self._reference, self._judge, self._runner):
            if runner is not None:
                runner.close()
                runner.model.close()
        if self._cache is not None:
            self._cache.close()
