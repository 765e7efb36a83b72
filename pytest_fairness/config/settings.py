"""A run's settings: every ``--fairness-*`` option and ini key, read once, validated, typed.

The plugin builds one ``Settings`` when pytest is configured (``Settings.from_values``); the session,
the items and every output read its fields, never an option. A bad value is a usage error that names
the option and what it accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_fairness.config import suite
from pytest_fairness.config.baseline_policy import BaselinePolicy
from pytest_fairness.config.options import Option, default, option
from pytest_fairness.config.shard import Shard, ShardError
from pytest_fairness.measures.resampling import MAX_SAMPLES_PER_ITEM
from pytest_fairness.models import pricing
from pytest_fairness.models.cache import CacheMode
from pytest_fairness.models.providers import parse_model_spec
from pytest_fairness.stats.gate import GateFamily

#: A getter of option/ini values by option name (None or "" when neither gives one).
Getter = Callable[[str], Any]
#: A --fairness-judge-reference of this form reads a team's labels (``harm_labels``) instead of a model.
LABELS = "labels:"


class SettingsError(ValueError):
    """An option or ini value that cannot be used."""


def price_of(spec: str) -> pricing.Price:
    """What a spec's calls cost; a team's labels (a judge reference's ``labels:FILE``) cost nothing."""
    if spec.startswith(LABELS):
        return pricing.Price(0.0, 0.0, "a team's labels: no per-token charge", 0.0, 0.0, "a team's labels")
    return pricing.price_for(spec)


@dataclass(frozen=True)
class Settings:
    model: str = default("model")
    judge: str | None = default("judge")
    seed: int = default("seed")
    profile: str = default("profile")
    cache_path: Path = Path(".fairness-cache/responses.sqlite")
    cache_mode: CacheMode = field(default=default("cache_mode"))
    confidence: float = default("confidence")
    inconclusive: str = default("inconclusive")
    max_concurrency: int = default("max_concurrency")
    #: Attempts per model request before a transient failure ends it (--fairness-max-attempts).
    max_attempts: int = default("max_attempts")
    sequential: bool = default("sequential")
    multiplicity: str = default("multiplicity")
    #: Most USD the run may spend at standard rates (--fairness-budget); None: no budget.
    budget: float | None = default("budget")
    #: How checks compare with their committed baselines (the --fairness-baseline-* options).
    baseline: BaselinePolicy = field(default_factory=BaselinePolicy)
    #: --fairness-batch: ask every model whose provider has a batch API through it (models.batch).
    batch: bool = default("batch")
    #: --fairness-batch-wait: minutes the run may wait for batches in all; 0 submits and exits.
    batch_wait: float = default("batch_wait")
    #: --fairness-judge-reference: a model spec (or labels:FILE) that re-rates a sample of a judge's judgments.
    judge_reference: str | None = default("judge_reference")
    #: --fairness-judge-calibration: a file of the team's own labelled calibration pairs, added to the screen.
    judge_calibration: str | None = default("judge_calibration")
    #: The suites named (--fairness-suite, repeated or comma-separated).
    suites: tuple[str, ...] = default("suite")
    #: Whether --fairness-model (or its ini key) named the model, rather than the default.
    model_named: bool = False
    #: --fairness-plan: price the checks, run none.
    plan: bool = default("plan")
    #: Seconds between progress lines of one check in a log (--fairness-progress); None: off.
    progress: float | None = default("progress")
    #: --fairness-baselines: compare every check with its committed baseline (always under --fairness-gate=pr).
    baselines: bool = default("baselines")
    #: --fairness-gate: "release" (thresholds) or "pr" (the committed baselines, paired on their items).
    gate: str = default("gate")
    #: --fairness-replay-check: "pr" (a pull request checks its replay), "always" or "off" (``run.replay_check``).
    replay_check: str = default("replay_check")
    #: --fairness-baseline-ref: the git ref the committed baselines are read from (None: the working tree).
    baseline_ref: str | None = default("baseline_ref")
    #: --fairness-pr-threshold: what a pull request's WITHIN THRESHOLD does to its test ("pass" or "inconclusive").
    pr_threshold: str = default("pr_threshold")
    #: --fairness-samples-per-item: K answers per item for every check that averages them; None: not given.
    samples_per_item: int | None = default("samples_per_item")
    #: --fairness-shard: run only this shard of the selected checks (``shard``); None: the whole run.
    shard: Shard | None = None
    #: The values of the report formats' own options, by option name (``report.output.Output.options``).
    outputs: Mapping[str, Any] = field(default_factory=dict)
    #: The project's root (pytest's rootdir), under which its committed baselines live.
    root: Path = Path(".")

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
            "gate": self.gate,
            **({"replay_check": self.replay_check} if self.gate == "pr" or self.replay_check != "pr" else {}),
            **({"baseline_ref": self.baseline_ref} if self.baseline_ref else {}),
            **({"pr_threshold": self.pr_threshold} if self.gate == "pr" else {}),
            **({"samples_per_item": self.samples_per_item} if self.samples_per_item else {}),
            "budget": self.budget,
            "batch": self.batch,
            "batch_wait": self.batch_wait,
            **{
                k: v
                for k, v in (("judge_reference", self.judge_reference), ("judge_calibration", self.judge_calibration))
                if v
            },
        }

    def decisive(self) -> dict[str, object]:
        """The settings that decide a run's outcomes, as recorded in a shard's fingerprint (cache, batch and budget
        settings may differ between shards: they change what is paid, not what is decided)."""
        public = {k: v for k, v in self.public().items() if k not in ("cache_mode", "budget", "batch", "batch_wait")}
        return {**public, "baselines": self.baselines, "baseline": asdict(self.baseline)}

    @classmethod
    def recorded(cls, public: Mapping[str, Any], decisive: Mapping[str, Any], outputs: Mapping[str, Any]) -> Settings:
        """The settings a report recorded (``public`` and ``decisive``), with ``outputs`` to write: what a merge of
        shards decides and writes under."""
        return cls(
            model=public["model"],
            judge=public["judge"],
            seed=int(public["seed"]),
            profile=public["profile"],
            cache_mode=CacheMode(public["cache_mode"]),
            confidence=float(public["confidence"]),
            inconclusive=public["inconclusive"],
            sequential=bool(public["sequential"]),
            multiplicity=public["multiplicity"],
            budget=public["budget"],
            batch=bool(public["batch"]),
            batch_wait=float(public["batch_wait"]),
            judge_reference=public.get("judge_reference"),
            judge_calibration=public.get("judge_calibration"),
            samples_per_item=public.get("samples_per_item"),
            gate=public.get("gate", default("gate")),
            replay_check=public.get("replay_check", default("replay_check")),
            baseline_ref=public.get("baseline_ref"),
            pr_threshold=public.get("pr_threshold", default("pr_threshold")),
            baselines=bool(decisive["baselines"]),
            baseline=BaselinePolicy(**decisive["baseline"]),
            outputs=dict(outputs),
        )

    def release_design(self) -> suite.ReleaseDesign | None:
        """The prices of the model, its judge and the judge's reference that a release run with a
        --fairness-judge-reference sizes its two-phase checks by (``sizing.reference_plan``, at suite loading),
        and whether it grows sequentially; None at another profile or without a reference (the suites' own
        designs stand)."""
        if self.profile != "release" or not self.judge_reference:
            return None
        judge = self.judge or self.model
        prices = pricing.RolePrices(price_of(self.model), price_of(judge), price_of(self.judge_reference))
        return suite.ReleaseDesign(prices, self.sequential)

    def family(self, size: int) -> GateFamily:
        """The gate family of a run that selected ``size`` checks."""
        return GateFamily(size, self.confidence, self.multiplicity)

    @classmethod
    def from_values(cls, get: Getter, rootdir: Path, outputs: Sequence[Option] = ()) -> Settings:
        """Build from a getter of option/ini values (None = unset), validating each value; ``outputs`` are the
        report formats' own options, kept by name."""
        model = get("model") or default("model")
        pricing.spec_price(parse_model_spec(model))  # a malformed ?price_in= is a usage error, found now
        judge = get("judge") or None
        if judge:
            pricing.spec_price(parse_model_spec(judge))
        reference, calibration = _judge_checks(get)
        return cls(
            model=model,
            judge=judge,
            seed=_number(get, "seed", int, low=0),
            profile=_choice(get, "profile", "is not a profile"),
            cache_path=Path(get("cache") or rootdir / ".fairness-cache" / "responses.sqlite"),
            cache_mode=_cache_mode(get("cache_mode")),
            confidence=_number(get, "confidence", float, low=0.5, high=0.999),
            inconclusive=_choice(get, "inconclusive"),
            max_concurrency=_number(get, "max_concurrency", int, low=1),
            max_attempts=_number(get, "max_attempts", int, low=1),
            sequential=bool(get("sequential")),
            multiplicity=_choice(get, "multiplicity"),
            budget=_number(get, "budget", float, low=0, unit="USD"),
            baseline=_baseline_policy(get),
            batch=bool(get("batch")),
            batch_wait=_number(get, "batch_wait", float, low=0, unit="minutes"),
            judge_reference=reference,
            judge_calibration=calibration,
            suites=_suite_names(get("suite")),
            model_named=bool(get("model")),
            plan=bool(get("plan")),
            progress=_progress(get("progress")),
            baselines=bool(get("baselines")) or _choice(get, "gate") == "pr",
            gate=_choice(get, "gate"),
            replay_check=_choice(get, "replay_check"),
            baseline_ref=get("baseline_ref") or None,
            pr_threshold=_choice(get, "pr_threshold"),
            samples_per_item=_number(get, "samples_per_item", int, low=1, high=MAX_SAMPLES_PER_ITEM),
            shard=_shard(get("shard")),
            outputs={o.name: get(o.name) or o.default for o in outputs},
            root=rootdir,
        )


def _judge_checks(get: Getter) -> tuple[str | None, str | None]:
    """The judge's reference (a model spec, or ``labels:FILE``) and the team's calibration file, checked."""
    reference = get("judge_reference") or None
    if reference and not reference.startswith(LABELS):
        pricing.spec_price(parse_model_spec(reference))
    if reference and reference.startswith(LABELS) and not Path(reference[len(LABELS) :]).is_file():
        raise SettingsError(f"--fairness-judge-reference={reference}: no such file (JSON lines of labelled pairs)")
    calibration = get("judge_calibration") or None
    if calibration and not Path(calibration).is_file():
        raise SettingsError(f"--fairness-judge-calibration={calibration}: no such file (a YAML of labelled pairs)")
    return reference, calibration


def _choice(get: Getter, name: str, problem: str = "") -> Any:
    """One of the option's declared choices (an ini value, which argparse does not check)."""
    value, valid = get(name) or default(name), option(name).choices or ()
    if value not in valid:
        flag = f"--fairness-{name.replace('_', '-')}={value!r}" + (f" {problem}" if problem else "")
        raise SettingsError(f"{flag}; valid: {', '.join(valid)}")
    return value


def _cache_mode(raw: Any) -> CacheMode:
    mode = raw or default("cache_mode")
    try:
        return CacheMode(mode)
    except ValueError:
        valid = ", ".join(m.value for m in CacheMode)
        raise SettingsError(f"--fairness-cache-mode={mode!r} is not a cache mode; valid: {valid}") from None


def _suite_names(raw: Sequence[str] | None) -> tuple[str, ...]:
    """The suites named, split at commas; a flag given with nothing in it is an error, naming the suites."""
    names = tuple(name.strip() for entry in raw or () for name in entry.split(",") if name.strip())
    if raw and not names:
        raise SettingsError(
            f"--fairness-suite is empty; give a built-in suite ({', '.join(suite.builtin_suites())}) or the path "
            "of a suite .yaml file"
        )
    return names


def _shard(raw: Any) -> Shard | None:
    if raw in (None, ""):
        return None
    try:
        return Shard.parse(raw)
    except ShardError as exc:
        raise SettingsError(str(exc)) from None


def _progress(raw: Any) -> float | None:
    """Seconds between progress lines of one check in a log, or None for ``off``."""
    if raw in (None, ""):
        return default("progress")
    if str(raw).lower() in ("off", "no", "false", "none"):
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:  # negative or NaN
        raise SettingsError(f"--fairness-progress={raw!r}: give seconds (e.g. 5, or 0 for every update) or off")
    return value


def _baseline_policy(get: Getter) -> BaselinePolicy:
    try:
        return BaselinePolicy.from_values(get)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def _number(
    get: Getter, name: str, kind: type, low: float | None = None, high: float | None = None, unit: str = ""
) -> Any:
    """A number option, checked against its range; its declared default when not given."""
    raw = get(name)
    if raw in (None, ""):
        return default(name)
    what = "a whole number" if kind is int else "a number"
    if low is not None and high is not None:
        what += f" in [{low}, {high}]"
    elif low is not None:
        what += f" >= {low}"
    label = option(name).flag + (f" ({unit})" if unit else "")
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise SettingsError(f"{label} must be {what}, got {raw!r}") from None
    if (low is not None and value < low) or (high is not None and value > high) or value != value:  # NaN
        raise SettingsError(f"{label} must be {what}, got {raw!r}")
    return value
