"""Per-process state of a fairness run: the model, judge and cache, and running one check.

The plugin holds one ``FairnessSession`` per pytest process (each xdist worker has its own model and
shares the sqlite cache) and asks it to run checks. The settings it runs under are read elsewhere
(``settings``), a run is priced by ``planning.plan``, checked before it starts by ``preflight`` and grown
under --fairness-sequential by ``growth``. Everything here works without pytest, which keeps it easy to test.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from pytest_fairness.baseline.pr_draw import pr_shape
from pytest_fairness.config.settings import LABELS, Settings, price_of
from pytest_fairness.config.suite import Check
from pytest_fairness.measures import Measure, Params, RunContext, sizing
from pytest_fairness.measures.fpf.harm.team_labels import LabelledPairs
from pytest_fairness.models import pricing
from pytest_fairness.models.batch import BatchPolicy
from pytest_fairness.models.cache import CacheMode, ResponseCache
from pytest_fairness.models.interface import ChatModel
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import CallStats, ProgressFn, RetryPolicy, Runner
from pytest_fairness.planning.plan import Planner, Who, spent
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.measure_result import MeasureResult
from pytest_fairness.records.replay import ReplayCheck
from pytest_fairness.run import preflight, replay_check
from pytest_fairness.run.growth import CheckRounds, grow, sample_budget
from pytest_fairness.run.preflight import RunFault
from pytest_fairness.run.replay_check import check_replay
from pytest_fairness.stats.gate import GateFamily, Outcome, decide


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


class FairnessSession:
    """Owns the model, cache and runner of one pytest process; created lazily on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        #: The gates that share the run's error rate; one until collection fixes it (``collected``).
        self.family: GateFamily = settings.family(1)
        self._family_fixed = False
        self._runner: Runner | None = None
        self._judge: Runner | None = None
        self._reference: Runner | None = None
        self._cache: ResponseCache | None = None
        self._others: dict[str, Runner] = {}  # models a fixture call named (model=, judge=), by model id
        # One batch policy for all runners: their waits for batches share --fairness-batch-wait.
        self._batch = BatchPolicy(wait_seconds=60 * settings.batch_wait, everywhere=settings.batch)
        #: What the run asked before its first check, past the cache: the probes and the replay check's asks.
        self.preflight_calls = CallStats()
        #: The replay check of the model under test (``run.replay_check``), when this process made it.
        self.replay: ReplayCheck | None = None

    def collected(self, checks: int) -> GateFamily:
        """Fix the gate family once collection knows how many checks the run selected (every xdist worker
        sees them all); it does not change after."""
        if self._family_fixed and checks != self.family.size:
            raise RuntimeError(f"the gate family is fixed at {self.family.size} checks; collection found {checks}")
        self.family, self._family_fixed = self.settings.family(checks), True
        return self.family

    def _runner_for(self, spec: str) -> Runner:
        return self._runner_with(load_model(spec), pricing.price_for(spec))

    def _runner_with(self, model: ChatModel, price: pricing.Price | None) -> Runner:
        cache, mode = self._cache_or_none(), self.settings.cache_mode
        retry = RetryPolicy(max_attempts=self.settings.max_attempts)
        runner = Runner(model, cache, mode, self.settings.max_concurrency, retry, price=price, batch=self._batch)
        if self.settings.sequential and not (mode.reads and mode.writes):
            # A growing check re-asks its earlier items at every look: where the cache does not keep this run's
            # answers (off, read-only, refreshing), the runner does, so the looks are nested whatever the model.
            runner.remember()
        return runner

    def runner_of(self, model: str | object) -> Runner:
        """A runner for a model a fixture call names: a spec, or an app object or function (one runner per
        model id, sharing the run's cache); the run's own model and judge when the spec is theirs."""
        if model == self.settings.model:
            return self.runner
        if model == self.settings.judge:
            return self.judge
        from pytest_fairness.models.build import model_from  # the python provider, only for a call that names an app

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

    def _runners(self) -> list[Runner]:
        return [r for r in (self._runner, self._judge, self._reference, *self._others.values()) if r is not None]

    def spent(self) -> tuple[float, int]:
        """USD this process's calls have cost so far (batched calls at batch rates), and how many had no price."""
        return spent(self._runners())

    @property
    def runner(self) -> Runner:
        """The model under test."""
        if self._runner is None:
            self._runner = self._runner_for(self.settings.model)
        return self._runner

    @property
    def built_model(self) -> ChatModel | None:
        """The model under test when this process built it already, else None (asking never builds it)."""
        return None if self._runner is None else self._runner.model

    @property
    def judge(self) -> Runner:
        """The judge for measures that need one: --fairness-judge, or else the model under test."""
        if self.settings.judge is None or self.settings.judge == self.settings.model:
            return self.runner
        if self._judge is None:
            self._judge = self._runner_for(self.settings.judge)
        return self._judge

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
    def planner(self) -> Planner:
        """Prices this run's checks (--fairness-plan, --fairness-budget); builds the model, for its tokenizer."""
        settings = self.settings
        reference = {} if settings.judge_reference is None else {"reference": settings.judge_reference}
        specs: dict[Who, str] = {"model": settings.model, "judge": self.judge_spec, **reference}
        prices = {who: price_of(spec) for who, spec in specs.items()}
        roles: dict[Who, Runner | None] = {"model": self.runner, "judge": self.judge, "reference": self.reference}
        batched = frozenset(who for who, runner in roles.items() if runner is not None and runner.at_once() is None)
        shape_of = partial(pr_shape, self) if settings.gate == "pr" else None  # a pull request: its baselines' items
        return Planner(self.runner, specs, prices, settings.seed, settings.profile, self.family.gate_confidence,
                       settings.budget, batched, settings.samples_per_item, shape_of, settings.sequential)  # fmt: skip

    def context(
        self,
        measure: Measure[Any],
        progress: ProgressFn | None = None,
        *,
        model: object = None,
        judge: object = None,
        seed: int | None = None,
        samples_per_item: int = 1,
    ) -> RunContext:
        """This session's model, judge (when the measure uses one), seed and the gates' confidence; a fixture
        call's ``model=`` / ``judge=`` (spec or app) replace them (its judge defaults to the run's, else its
        model)."""
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
        seed = self.settings.seed if seed is None else seed
        confidence = self.family.gate_confidence
        return RunContext(runner, judged, seed, confidence, progress, samples_per_item=samples_per_item, **extra)

    def run_params(
        self,
        measure: Measure[Any],
        params: Params,
        progress: ProgressFn | None = None,
        *,
        model: object = None,
        judge: object = None,
        seed: int | None = None,
        samples_per_item: int = 1,
    ) -> MeasureResult:
        """Run a measure with this session's model, judge, seed and confidence (or a fixture call's own, or a
        check's ``seed``: its baseline's), ``samples_per_item`` answers per item."""
        context = self.context(
            measure, progress, model=model, judge=judge, seed=seed, samples_per_item=samples_per_item
        )
        return measure.execute(params, context)

    def preflight(
        self,
        *,
        call: bool = True,
        judge: bool = True,
        load_weights: bool = True,
        checks: Sequence[Check] | None = None,
        measures: Collection[str] = (),
    ) -> None:
        """Find run-level faults once, before the first check: build the model, the judge and its reference (a
        bad spec, key or file raises ModelSpecError), open the cache (CacheError) and, with ``call``, check the
        budget and send each model one tiny request past the cache (``preflight.probe``): a closed port, a
        refused key or an unknown model stops the run at once (RunFault). ``checks``: the selected checks (None:
        unknown); ``measures``: every measure the run uses; ``load_weights=False``: no local model (a controller)."""
        named: dict[Runner, str] = {self.runner: ""}
        if judge:  # builds them (a bad spec or labels file is a usage error now); a labels file is not called
            for runner, role in ((self.judge, "the judge"), (self.reference, "the judge's reference")):
                if runner is not None and runner not in named and runner.model.provider != "labels":
                    named[runner] = role
        if not call:
            return
        if self.settings.cache_mode is CacheMode.REPLAY:  # it promises no model call: a miss is its own error
            if checks is not None and replay_check.wanted(self.settings):
                self.replay = check_replay(self.runner, self.planner, checks, self.settings, self.preflight_calls)
            return
        if checks is not None and (over := self.planner.over_budget(checks)):
            raise RunFault(over)
        runners, roles = list(named), list(named.values())[1:]
        preflight.probe(
            runners, checks, measures, self.settings.seed, load_weights=load_weights, roles=roles,
            stats=self.preflight_calls,
        )  # fmt: skip
        if checks is not None and replay_check.wanted(self.settings):
            start = time.time()  # the asks are stored from now: a refused replay still reads them
            self.replay = check_replay(self.runner, self.planner, checks, self.settings, self.preflight_calls)
            if not self.replay.replays:
                self.refuse_replay(start)

    def refuse_replay(self, since: float) -> None:
        """Read none of the model's answers stored before ``since`` (its replay check failed, here or on the xdist
        controller): the run asks them anew, a judge's and a reference's stay cached by their content."""
        self.runner.fresh_since = since

    def run_check(
        self,
        check: Check,
        progress: ProgressFn | None = None,
        *,
        seed: int | None = None,
        size: int | None = None,
        grows: bool = True,
        samples_per_item: int | None = None,
    ) -> CheckRun:
        """Run a check at its profile's size (or ``size``; with ``seed``, e.g. its baseline's: the same items),
        growing it under --fairness-sequential (unless ``grows`` is False: a pull request grows on its own
        comparison), and gate it: "cannot serve" when too few answers are usable, and an inconclusive result
        says what would decide it; K answers per item as ``Check.per_item`` says."""
        measure, size = check.measure, size or check.sample_size(self.settings.profile)
        params = check.params.with_samples(size)
        k = check.per_item(self.settings.samples_per_item, samples_per_item)
        result = self.run_params(measure, params, progress, seed=seed, samples_per_item=k)
        unserved = sizing.unserved(params, result, self.settings.confidence)
        if unserved:
            return CheckRun(check, replace(result, unserved=unserved), Outcome.CANNOT_SERVE)
        if grows and self.settings.sequential and (measure.bounds is not None or measure.sequential is not None):
            run = CheckRun(check, *grow(self.rounds_of(check, result, size, progress, seed=seed)))
        else:
            run = CheckRun(check, result, decide(result.ci, check.threshold))
        if run.outcome is not Outcome.INCONCLUSIVE:
            return run
        final = size if run.result.sequential is None else run.result.sequential.final_size
        gate = self.family.gate_confidence
        hint = sizing.more_samples(check.params.with_samples(final), run.result, check.threshold, gate)
        stopped = run.result.sequential.stopped if run.result.sequential else ""
        if stopped.startswith("--fairness-budget"):
            hint = replace(hint, budget=stopped)
        return replace(run, result=replace(run.result, to_decide=hint))

    def rounds_of(
        self, check: Check, first: MeasureResult, size: int, progress: ProgressFn | None, seed: int | None = None
    ) -> CheckRounds:
        """The check's rounds under --fairness-sequential, from this session's model, judge and budget."""
        budget, k = self.settings.budget is not None, check.per_item(self.settings.samples_per_item)
        return CheckRounds(
            check,
            self.context(check.measure, progress, seed=seed, samples_per_item=k),
            first,
            size,
            serve_confidence=self.settings.confidence,
            budget=sample_budget(check, self.settings.profile, size),
            planner=self.planner if budget else None,
            runners=self._runners() if budget else (),
        )

    def settle(self) -> int:
        """At the end of a run: wait a short grace for the calls still in flight to every model, then give up on
        the rest; how many were given up on (a model two runners share is settled by the first)."""
        return sum(runner.settle() for runner in reversed(self._runners()))

    def close(self) -> None:
        for runner in reversed(self._runners()):
            runner.close()
            runner.model.close()
        if self._cache is not None:
            self._cache.close()
