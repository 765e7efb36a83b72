"""Per-process state of a fairness run: settings, the model and its runner, and running one check.

The plugin hooks stay thin: they read options into ``Settings``, hold one ``FairnessSession`` per
pytest process (each xdist worker has its own model and shares the sqlite cache), and ask it to
run checks. Everything here works without pytest, which keeps it easy to test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_fairness.gate import Outcome, decide
from pytest_fairness.measures import MEASURES, PROFILES, Measure, Params, RunContext
from pytest_fairness.models.base import ChatRequest, LogprobRequest
from pytest_fairness.models.cache import CacheMode, ResponseCache
from pytest_fairness.models.registry import load_model, parse_model_spec
from pytest_fairness.models.runner import CallStats, ProgressFn, Runner
from pytest_fairness.record import CheckRecord
from pytest_fairness.result import MeasureResult
from pytest_fairness.sequential import SequentialPlan, confidence_sequence
from pytest_fairness.suite import Check

INCONCLUSIVE_POLICIES = ("fail", "skip", "pass")


class SettingsError(ValueError):
    """An option or ini value that cannot be used."""


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
    sequential: bool = False

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
        }

    @classmethod
    def from_values(cls, get: Callable[[str], Any], rootdir: Path) -> Settings:
        """Build from a getter of option/ini values (None = unset), validating each value."""
        model = get("model") or "local"
        parse_model_spec(model)
        judge = get("judge") or None
        if judge:
            parse_model_spec(judge)
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
        cache_path = Path(get("cache") or rootdir / ".fairness-cache" / "responses.sqlite")
        return cls(
            model=model,
            judge=judge,
            seed=_number(get("seed"), int, 0, "--fairness-seed"),
            profile=profile,
            cache_path=cache_path,
            cache_mode=cache_mode,
            confidence=_number(get("confidence"), float, 0.95, "fairness_confidence", low=0.5, high=0.999),
            inconclusive=inconclusive,
            max_concurrency=_number(get("max_concurrency"), int, 8, "--fairness-max-concurrency", low=1),
            sequential=bool(get("sequential")),
        )


def _number(raw: Any, kind: type, default: Any, name: str, low: float | None = None, high: float | None = None) -> Any:
    if raw in (None, ""):
        return default
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise SettingsError(f"{name} must be a {kind.__name__}, got {raw!r}") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise SettingsError(f"{name}={value} is out of range [{low}, {high}]")
    return value


@dataclass
class CheckRun:
    """A check's result and the gate's decision on it."""

    check: Check
    result: MeasureResult
    outcome: Outcome

    def record(self) -> CheckRecord:
        """The typed record every output reads (it travels from xdist workers as ``to_dict()``)."""
        return CheckRecord(
            suite=self.check.suite,
            check=self.check.id,
            outcome=self.outcome.value,
            threshold=self.check.threshold.as_dict(),
            threshold_text=self.check.threshold.describe(),
            result=self.result,
        )


def estimate_tokens(request: ChatRequest | LogprobRequest) -> int:
    """Rough prompt size: about four characters a token, as tokenizers of English average."""
    text = "".join(m.content for m in request.messages)
    if isinstance(request, LogprobRequest):
        text += request.prefix + "".join(request.candidates)
    return len(text) // 4 + 4 * len(request.messages)


class FairnessSession:
    """Owns the model, cache and runner of one pytest process; created lazily on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._runner: Runner | None = None
        self._judge: Runner | None = None
        self._cache: ResponseCache | None = None

    def _runner_for(self, spec: str) -> Runner:
        if self.settings.cache_mode is not CacheMode.OFF and self._cache is None:
            self._cache = ResponseCache(self.settings.cache_path, read_only=not self.settings.cache_mode.writes)
        return Runner(load_model(spec), self._cache, self.settings.cache_mode, self.settings.max_concurrency)

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

    def run_params(self, measure: Measure, params: Params, progress: ProgressFn | None = None) -> MeasureResult:
        """Run a measure with this session's model, judge, seed and confidence."""
        judge = self.judge if measure.uses_judge else None
        ctx = RunContext(self.runner, judge, self.settings.seed, self.settings.confidence, progress)
        return measure.run(params, ctx)

    def run_measure(
        self, name: str, subject: str, /, progress: ProgressFn | None = None, **values: Any
    ) -> MeasureResult:
        """Run a registered measure on one subject; unset parameters take their defaults, and the
        sample size the profile's."""
        measure = MEASURES[name]
        values.setdefault(measure.samples, measure.default_samples[self.settings.profile])
        params = measure.params.build({measure.subject: subject, **values}, where=f"{name}: ")
        return self.run_params(measure, params, progress)

    def plan_check(self, check: Check) -> dict[str, object]:
        """What running a check would cost, without calling the model: requests, cached, rough tokens."""
        measure = MEASURES[check.measure]
        runner = self.runner
        requests = measure.requests(check.params_for(self.settings.profile), runner.model, self.settings.seed)
        cached = sum(runner.cached(r) for r in requests)
        return {
            "suite": check.suite,
            "check": check.id,
            "requests": len(requests),
            "cached": cached,
            "prompt_tokens": sum(estimate_tokens(r) for r in requests),
            "completion_tokens": sum(r.max_tokens or 0 for r in requests if isinstance(r, ChatRequest)),
        }

    def run_check(self, check: Check, progress: ProgressFn | None = None) -> CheckRun:
        measure = MEASURES[check.measure]
        size = check.sample_size(self.settings.profile)
        result = self.run_params(measure, check.params.with_samples(size), progress)
        if not self.settings.sequential or measure.bounds is None:
            return CheckRun(check, result, decide(result.ci, check.threshold))
        return self._sequential(check, result, size, measure.bounds, progress)

    def _sequential(
        self, check: Check, result: MeasureResult, size: int, bounds: tuple[float, float], progress: ProgressFn | None
    ) -> CheckRun:
        """Draw more samples while the gate is inconclusive and the budget allows; gate on an always-valid
        confidence sequence, whose error rate holds however often it is looked at."""
        budget = (check.budget or {}).get(self.settings.profile, 4 * size)
        plan = SequentialPlan(initial=size, step=size, budget=max(budget, size))
        alpha = 1 - self.settings.confidence
        rounds = [size]
        calls = CallStats()
        calls.add(result.calls)
        interval = confidence_sequence(result.samples, *bounds, alpha)
        while (grown := plan.next_size(rounds[-1], interval, check.threshold)) is not None:
            result = self.run_params(MEASURES[check.measure], check.params.with_samples(grown), progress)
            rounds.append(grown)
            calls.calls += result.calls.calls  # earlier rounds' samples come back from the cache
            calls.retries += result.calls.retries
            calls.seconds += result.calls.seconds
            interval = confidence_sequence(result.samples, *bounds, alpha)
        calls.cache_hits = result.calls.cache_hits - (calls.calls - result.calls.calls)
        calls.prompt_tokens, calls.completion_tokens = result.calls.prompt_tokens, result.calls.completion_tokens
        result.summary = replace(result.summary, ci_t=interval)
        result.calls = calls
        result.details = {
            **result.details,
            "sequential": {"rounds": rounds, "budget": plan.budget, "interval": "always-valid confidence sequence"},
        }
        return CheckRun(check, result, decide(interval, check.threshold))

    def close(self) -> None:
        for runner in (self._judge, self._runner):
            if runner is not None:
                runner.close()
                runner.model.close()
        if self._cache is not None:
            self._cache.close()
