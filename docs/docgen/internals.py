"""The few facts the pages need that no public name gives: every read of an internal module is here.

When the code moves (options into their own module, outputs into report/, a constant renamed), this is
the one file to mend: each function says what it reads, and fails loudly when it is no longer there.
Facts with a public source (the suites' YAML, ``pytest --help``, ``MEASURES`` and their ``Params``) are
read in ``figures.py`` instead.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import re
import sys
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class InternalsMoved(LookupError):
    """An internal fact is no longer where this module reads it: re-point the function named."""


def _default(function: Callable[..., Any], name: str) -> Any:
    """The default of a keyword of ``function``."""
    default = inspect.signature(function).parameters[name].default
    if default is inspect.Parameter.empty:
        raise InternalsMoved(f"{function.__qualname__} has no default for {name!r}")
    return default


def _from_source(obj: object, pattern: str) -> str:
    """A literal the code has not named yet, read from its source; name it in the code and read that instead."""
    found = re.search(pattern, inspect.getsource(obj))  # type: ignore[arg-type]
    if found is None:
        raise InternalsMoved(f"{pattern!r} is no longer in {obj!r}")
    return found.group(1)


# -- settings and options ------------------------------------------------------------------------------


def setting_default(name: str) -> Any:
    """A run setting's default (``Settings`` in config/settings.py; baseline ones in ``BaselinePolicy``)."""
    from pytest_fairness.config.baseline_policy import BaselinePolicy
    from pytest_fairness.config.settings import Settings

    if name.startswith("baseline_"):
        return getattr(BaselinePolicy(), name.removeprefix("baseline_"))
    return getattr(Settings(), name)


def progress_seconds() -> float:
    from pytest_fairness.config.options import default

    return float(default("progress"))


def sequential_growth() -> float:
    from pytest_fairness.run.growth import SEQUENTIAL_GROWTH

    return SEQUENTIAL_GROWTH


def sequential_budget_factor() -> int:
    """How many times its profile's size a check may grow to without a ``budget``."""
    from pytest_fairness.config.suite import BUDGET_FACTOR

    return BUDGET_FACTOR


# -- models --------------------------------------------------------------------------------------------


def retry_mean_wait() -> float:
    """Seconds a request waits in all, on average, before its last attempt (full jitter: half of each cap)."""
    from pytest_fairness.models.runner import RetryPolicy

    policy = RetryPolicy()
    caps = [min(policy.cap_seconds, policy.base_seconds * 2**attempt) for attempt in range(policy.max_attempts - 1)]
    return sum(caps) / 2


def http_default(option: str) -> Any:
    """A default of the HTTP provider's ``?option`` (the openai: model's constructor)."""
    from pytest_fairness.models import openai

    if option == "top_logprobs":
        return openai.TOP_LOGPROBS
    return _default(openai.OpenAIModel.__init__, {"concurrency": "max_concurrency"}.get(option, option))


def local_context() -> int:
    from pytest_fairness.models.local import LocalModel

    return _default(LocalModel.__init__, "n_ctx")


def app_default(name: str) -> Any:
    """A default of ``python:`` specs: timeout, samples, sync_concurrency, async_concurrency."""
    from pytest_fairness.models import python, python_app

    names = {"timeout": "DEFAULT_TIMEOUT", "samples": "DEFAULT_SAMPLES"}
    constant = names.get(name, name.upper())
    return getattr(python, constant) if hasattr(python, constant) else getattr(python_app, constant)


def settle_seconds() -> float:
    """How long the end of a run waits for the calls still in flight before it gives up on them."""
    from pytest_fairness.models.deadline import SETTLE_SECONDS

    return SETTLE_SECONDS


def ratelimit_growth() -> float:
    from pytest_fairness.models.ratelimit import GROWTH

    return GROWTH


def batch_fact(name: str) -> Any:
    """``max_lines`` (most lines in one batch), ``pending_exit`` (the status of a run whose batches wait)."""
    from pytest_fairness.models import batch

    return getattr(batch, name.upper())


def evidence_fact(name: str) -> Any:
    """``MODULE.NAME``: a cap of what a measure keeps as evidence (``harm_evidence.FLAG_CAP``), or the evidence
    page's budget (``html_page.BUDGET``, in MB) and the characters kept per token (``evidence.CHARS_PER_TOKEN``)."""
    import importlib

    module, constant = name.split(".")
    homes = {
        "harm_evidence": "pytest_fairness.measures.fpf.harm.harm_evidence",
        "quality_evidence": "pytest_fairness.measures.fpf.quality_evidence",
        "implicit_evidence": "pytest_fairness.measures.bai.implicit_evidence",
        "decision_evidence": "pytest_fairness.measures.bai.decision_evidence",
        "matching": "pytest_fairness.stats.paired.matching",
        "evidence": "pytest_fairness.records.evidence",
        "html_page": "pytest_fairness.report.html_page",
        "reference_audit": "pytest_fairness.measures.fpf.harm.reference_audit",
    }
    value = getattr(importlib.import_module(homes[module]), constant)
    return value / 1e6 if name == "html_page.BUDGET" else value


def litellm_batch_providers() -> tuple[str, ...]:
    from pytest_fairness.models.litellm import BATCH_PROVIDERS

    return BATCH_PROVIDERS


def chars_per_token() -> float:
    """What the token estimate of hosted models assumes, measured on the estimator itself."""
    from pytest_fairness.models.interface import ChatRequest, Message, estimate_tokens

    def tokens(chars: int) -> int:
        return estimate_tokens(ChatRequest((Message("user", "x" * chars),), temperature=0.0, max_tokens=1))

    return 4000 / (tokens(4000) - tokens(0))


# -- statistics ----------------------------------------------------------------------------------------


def paired() -> dict[str, Any]:
    """The paired gate's levels at the default baseline alpha: the share of baselines its promise leaves out, the
    level of both verdicts (PASS of a measure read exactly: its own), and the release job's answers per item."""
    from pytest_fairness.stats.paired.noninferiority import BASELINE_SHARE, baseline_level, exact_level

    alpha = setting_default("baseline_alpha")
    return {
        "baseline_share": BASELINE_SHARE,
        "alpha": alpha,
        "level": baseline_level(alpha),
        "exact_level": exact_level(alpha),
    }


def replay_check() -> dict[str, float]:
    """The replay check's rule (a change touching ``share`` of the cached answers caught with ``power``), the
    answers it asks again, and how close a log-prob must stay."""
    from pytest_fairness.run.replay_check import LOGPROB_TOLERANCE
    from pytest_fairness.stats.spot_check import DETECT_POWER, DETECT_SHARE, sample_size

    return {"share": DETECT_SHARE, "power": DETECT_POWER, "n": sample_size(), "tolerance": LOGPROB_TOLERANCE}


def release_k0() -> int:
    """The answers per item the workflow's release job records its baselines with (``FAIRNESS_BASELINE_K``)."""
    import re

    workflow = (ROOT / "docs" / "ci" / "fairness.yml").read_text(encoding="utf-8")
    found = re.search(r'^  FAIRNESS_BASELINE_K: "(\d+)"$', workflow, re.M)
    assert found, "docs/ci/fairness.yml sets FAIRNESS_BASELINE_K in its env"
    return int(found.group(1))


def paired_margins() -> list[tuple[str, str, tuple[float, float], float, float, int, int]]:
    """Per measure (and PCF risk) with a paired gate: its scale, default margin, PASS level at the default baseline
    alpha (a measure read exactly has its own), the fewest clusters of identical answers that pass it there, and
    the fewest with which any valid test passes an unchanged release 80% of the time at that level."""
    from pytest_fairness.measures import MEASURES
    from pytest_fairness.stats.paired.allocation import fewest_for_any_valid_test, fewest_for_identical
    from pytest_fairness.stats.paired.noninferiority import PairedGate

    alpha = setting_default("baseline_alpha")
    rows = []
    for name, measure in MEASURES.items():
        params = measure.params
        margins = getattr(params, "PR_MARGINS", None) or {"": params.PR_MARGIN}
        for risk, margin in margins.items():
            if margin is not None and params.BOUNDS is not None:
                width = params.BOUNDS[1] - params.BOUNDS[0]
                level = PairedGate(margin, 1, alpha, exact=params.EXACT_ITEMS).passing_level
                floors = fewest_for_identical(width, margin, level), fewest_for_any_valid_test(width, margin, level)
                rows.append((name, risk, params.BOUNDS, margin, level, *floors))
    return rows


#: Sample sizes of the items-file table beyond the profiles: a release-size run of each measure.
RELEASE_SAMPLES = 3000


def items_sizes() -> list[tuple[str, list[tuple[int, int]]]]:
    """Per measure that keeps items: (samples, bytes of its items file) at the quick and paper profiles and at a
    release size, rendered by the file's own writer from seeded scores on the measure's scale (decisions 0/1)."""
    import numpy as np

    from pytest_fairness.baseline.items_file import render_items
    from pytest_fairness.measures import MEASURES
    from pytest_fairness.records.measure_result import drawn_items

    rng = np.random.default_rng(0)
    rows = []
    for name in ("implicit_bias", "decision_bias", "pcf", "quality_disparity"):
        params = MEASURES[name].params
        sizes = [params.DEFAULT_SAMPLES["quick"], params.DEFAULT_SAMPLES["paper"], RELEASE_SAMPLES]
        low, high = params.BOUNDS
        cells = []
        for n in sizes:
            scores = rng.integers(0, 2, n) if params.INTERVAL == "binary" else rng.uniform(low, high, n)
            text = render_items(drawn_items(0, range(n)), [float(x) for x in scores])
            cells.append((n, len(text.encode())))
        rows.append((name, cells))
    return rows


def max_bet() -> float:
    from pytest_fairness.stats.intervals import MAX_BET

    return MAX_BET


def target_power() -> float:
    from pytest_fairness.stats.power import TARGET_POWER

    return TARGET_POWER


def bounded_interval(zeros: int, bounds: tuple[float, float], confidence: float) -> tuple[float, float]:
    """The gate's interval for a sample of ``zeros`` scores that are all 0."""
    from pytest_fairness.stats.intervals import bounded_mean_interval

    return bounded_mean_interval([0.0] * zeros, *bounds, confidence)


def split_confidence(confidence: float) -> float:
    from pytest_fairness.stats.attenuation import split_confidence

    return split_confidence(confidence)


def release_size_uncorrected(params: Any, threshold: Any) -> int:
    """The release size of a check whose gate were not corrected for an attenuation (net harm's judge)."""
    from pytest_fairness.measures import sizing

    class Uncorrected(type(params)):  # type: ignore[misc]
        def expected_attenuation(self, confidence: float) -> None:
            return None

    fields = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
    return sizing.release_size(Uncorrected(**fields), threshold)


@cache
def _false_alarm_script() -> ModuleType:
    """tests/unit/test_baseline_false_alarms.py, whose ``simulate`` is the measured comparison of the plugin."""
    path = ROOT / "tests" / "unit" / "test_baseline_false_alarms.py"
    spec = importlib.util.spec_from_file_location("baseline_false_alarms", path)
    if spec is None or spec.loader is None:
        raise InternalsMoved(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def false_alarm_rates(baselines: int, reruns: int, factor: int, seed: int) -> dict[str, Any]:
    """Per correction (holm, none): for each of ``baselines`` fresh baselines, the share of its reruns that fail."""
    trials = _false_alarm_script().simulate(baselines, reruns, factor, seed=seed)
    return {method: fails.mean(axis=1) for method, fails in trials.fails.items()}


# -- measures' data and constants ----------------------------------------------------------------------


def screen() -> dict[str, Any]:
    """The net-harm judge screen: its bar and confidence, the pairs a run draws by kind, the pool's size and
    families, its early looks, its lean margin, and the reference audit's and the A/A placebo's constants."""
    from pytest_fairness.measures.fpf.harm import aa_placebo, calibration_pool, judge_screen, net_harm, reference_audit
    from pytest_fairness.measures.params import MAX_BUDGET

    pool = calibration_pool.pool()
    families = calibration_pool.families(pool)
    return {
        "min_rate": judge_screen.SCREEN_MIN_RATE,
        "confidence": judge_screen.SCREEN_CONFIDENCE,
        "pairs": dict(Counter(pair.kind for pair in net_harm.screen_pairs(0))),
        "pool": len(pool),
        "families": {kind: len(names) for kind, names in families.items()},
        "interim_looks": judge_screen.INTERIM_LOOKS,
        "interim_error": judge_screen.INTERIM_ERROR,
        "lean_margin": judge_screen.LEAN_MARGIN,
        "clean_share": reference_audit.CLEAN_SHARE,
        "triage": reference_audit.TRIAGE,
        "bound": net_harm.NetHarmParams(comparison="gender").design.bound,
        "reference_spread": net_harm.REFERENCE_SPREAD,
        "clean_shares": net_harm.NetHarmParams.CLEAN_SHARES,
        "paper_names": net_harm.PAPER_NAMES,
        "max_budget": MAX_BUDGET,
        "flag_allowance": net_harm.FLAG_ALLOWANCE,
        "placebo_every": aa_placebo.EVERY,
        "placebo_confidence": aa_placebo.confidence_of(0.95),
    }


def screen_serves(blatant: tuple[int, int], subtle: tuple[int, int], benign: tuple[int, int], level: float) -> bool:
    """Whether the screen lets a judge serve with these (right, of) pair counts, by the measure's own rule."""
    from pytest_fairness.measures.fpf.harm.judge_screen import JudgeScreen, Rate

    return JudgeScreen(Rate(*blatant, level), Rate(*subtle, level), Rate(*benign, level)).serves


def fpf_prompts() -> list[Any]:
    """The packaged first-person-fairness prompts (each with ``task`` and ``domain``)."""
    from pytest_fairness.measures.fpf.corpus import packaged_prompts

    return list(packaged_prompts())


def fpf_names() -> int:
    """How many user names the first-person-fairness measures draw from."""
    from pytest_fairness.measures.fpf.corpus import load_names

    names = load_names()
    return sum(len(group) for table in (names.gender, names.race_gender) for group in table.values())


def pcf_attributes(attribute: str) -> dict[str, int]:
    """Words per group of a PCF attribute."""
    from pytest_fairness.measures.pcf.inputs import load_attributes

    groups = load_attributes(attribute)
    return {label: len(words) for label, words in zip(groups.labels, groups.words, strict=True)}


def pcf_fact(name: str) -> Any:
    """``scale`` (the paper's factor on risks), ``occupations`` (how many the packaged list holds)."""
    from pytest_fairness.measures.pcf import inputs, prejudice_caprice

    return prejudice_caprice.SCALE if name == "scale" else len(inputs.load_occupations().terms)


def axes_fact(name: str) -> Any:
    """canaries, mild, and any constant of the axes modules or of ``AxesParams`` by its lower-case name
    (max_feature_words, match_probes, candidates, confirm_probes, confirm_level, rating_margin, views_per_pair,
    probe_batches, probe_question_tokens, spread, design_questions)."""
    from pytest_fairness.measures.fpf.axes import (
        bias_axes,
        bias_axes_core,
        canary_recall,
        judge_questions,
        net_prevalence,
        question_search,
    )

    if name == "release_calls":  # the judge calls the plan prices for the gender suite's release size
        from pytest_fairness.config import suite

        check = next(c for c in suite.load("gender").checks if c.measure.name == "bias_axes")
        return f"{bias_axes.judge_estimate(check.params_for('release'), 0).requests:,}"
    if name == "canaries":
        return len(canary_recall.canaries())
    if name == "mild":
        return sum(c.strength == "mild" for c in canary_recall.canaries())
    holders = (bias_axes_core, canary_recall, net_prevalence, question_search, bias_axes, bias_axes.AxesParams)
    for holder in (*holders, judge_questions):
        if hasattr(holder, name.upper()):
            return getattr(holder, name.upper())
    raise InternalsMoved(f"no {name.upper()} in the axes modules")


def axes_tiers() -> list[tuple[float, int]]:
    """(prevalence, canaries planted at it) per tier, most prevalent first; the last is the weakest."""
    from pytest_fairness.measures.fpf.axes import canary_recall

    return [(t.share, t.planted) for t in canary_recall.Recall((True,) * len(canary_recall.canaries())).tiers()]


def axes_guess_confirms() -> float:
    """The chance that one candidate guessing each confirming probe like a fair coin confirms a canary."""
    from pytest_fairness.measures.fpf.axes import canary_recall
    from pytest_fairness.measures.fpf.axes.selection import PairLabel
    from pytest_fairness.stats.lazy_scipy import sps

    n, towards, away = canary_recall.CONFIRM_PROBES, PairLabel(1.0, 0.0, 0.0), PairLabel(0.0, 1.0, 0.0)
    confirmed = [
        canary_recall.confirmed(canary_recall.confirms([towards] * k + [away] * (n - k), "A")[2]) for k in range(n + 1)
    ]
    return float(sum(sps.binom.pmf(k, n, 0.5) for k in range(n + 1) if confirmed[k]))


def quality_criteria() -> tuple[tuple[str, ...], tuple[int, int]]:
    from pytest_fairness.measures.fpf.quality_core import QUALITY_CRITERIA, RATING_RANGE

    return QUALITY_CRITERIA, RATING_RANGE


def decision_fact(name: str) -> int:
    """min_decisions, min_association_stereotypes (a literal in the association's code)."""
    from pytest_fairness.measures.bai import decision

    if name == "min_decisions":
        return decision.MIN_DECISIONS
    return int(_from_source(decision.implicit_decision_association, r"len\(rates\) < (\d+)"))


def axes_recall_low(confidence: float) -> float:
    """The recall of the weakest tier that a search finding every canary shows at ``confidence`` (one-sided)."""
    from pytest_fairness.measures.fpf.axes import canary_recall

    return canary_recall.Recall((True,) * len(canary_recall.canaries())).lower(confidence)


def axes_miss_bound() -> float:
    """The most a real difference as findable as the weakest tier's canaries can be missed while every
    canary is found."""
    from pytest_fairness.measures.fpf.axes import canary_recall

    return canary_recall.wrong_pass_bound(axes_tiers()[-1][1])


def synthetic_kinds() -> dict[str, str]:
    """The synthetic doubles' kinds and what each plants."""
    from pytest_fairness.testing.synthetic import planted_kinds

    return {name: kind.description for name, kind in planted_kinds().items()}


def synthetic_options() -> dict[str, float]:
    from pytest_fairness.testing.synthetic import OPTIONS

    return dict(OPTIONS)
