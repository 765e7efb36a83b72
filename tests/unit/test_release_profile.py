"""The release profile decides: at each measure's design truths, in at least 80% of runs.

For every distinct (measure, threshold) of the built-in suites the synthetic double is planted so
that the true mean is each of the measure's design truths (``Params.design_truths``: half and twice
the threshold for a null of zero; for decisions, null 0.5, the unbiased 0.5 and a clearly biased 0.85),
and runs of the release profile's size are gated with the check's own interval (net harm's corrected for
a flawless judge screen's sensitivity bound). Decisions count
unusable answers at the measure's expected rate and are enumerated exactly. A release-size net-harm run has about 23,000
prompts, so runs are simulated from the double's own per-sample distribution, which each test first
checks against a real run of the double; PCF's samples are fixed properties of the double (one per
occupation, all 257 used), so its check is one real run per truth. Seeds are fixed: the figures are
deterministic, and a test fails only if the release sizes stop being enough.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from exact_binary import exact_binary_rate_with_unusable
from scipy import optimize

from pytest_fairness.config import suite
from pytest_fairness.measures import MEASURES, RunContext
from pytest_fairness.measures.bai.iat_stimuli import get_stereotype
from pytest_fairness.measures.bai.implicit_core import implicit_bias
from pytest_fairness.measures.bai.planted_answers import expected_iat_score
from pytest_fairness.measures.fpf.planted_chatbot import HARM_NET
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner
from pytest_fairness.stats.attenuation import deattenuate, split_confidence
from pytest_fairness.stats.gate import Outcome, Threshold, decide
from pytest_fairness.stats.intervals import bounded_mean_intervals

#: Every built-in suite: a new one is simulated at its release size without a line here.
SUITES = tuple(suite.builtin_suites())
RUNS = 400
#: Net harm's overall check has ~39,000 prompts per release run, and its betting interval costs seconds per
#: 100 runs: its runs are capped at 200, which measure its decided share (0.975 and 1.0) to about +-0.02.
MAX_SIMULATED_PROMPTS = 8_000_000


def _release_checks(measure: str) -> dict[tuple[object, ...], suite.Check]:
    """One check per distinct (threshold, risk, release size) of a measure across the built-in suites."""
    found: dict[tuple[object, ...], suite.Check] = {}
    for name in SUITES:
        for check in suite.load(name).checks:
            if check.measure.name == measure:
                key = (check.threshold, getattr(check.params, "risk", None), check.samples["release"])
                found.setdefault(key, check)
    assert found, f"no built-in check of {measure}"
    return found


def _decided_share(lows: np.ndarray, highs: np.ndarray, threshold: Threshold) -> float:
    return float(
        np.mean([decide((lo, hi), threshold) is not Outcome.INCONCLUSIVE for lo, hi in zip(lows, highs, strict=True)])
    )


def _cases(measure: str) -> list[object]:
    return [
        pytest.param(check, truth, id=f"{check.suite}::{check.id} at {truth:g}")
        for check in _release_checks(measure).values()
        for truth in check.params.design_truths(check.threshold)
    ]


@pytest.mark.heavy(13)
@pytest.mark.parametrize(("check", "truth"), _cases("net_harm"))
def test_release_net_harm_decides_at_its_design_truths(check: suite.Check, truth: float) -> None:
    # The double twists each answer to a woman with probability B = the truth; a prompt's two women's answers are
    # each in two of its four pairs, so a prompt scores HARM_NET / 2 per twisted answer: its judge is the one the
    # plan assumes (a mean rating of a harmful pair of DESIGN_RATING = HARM_NET). The gate is corrected for that
    # rating as a screen measures it (every harmful calibration pair rated HARM_NET), the raw interval at the
    # split confidence.
    assert check.params.DESIGN_RATING == HARM_NET
    n = check.samples["release"]
    runs = min(RUNS, MAX_SIMULATED_PROMPTS // n)  # the overall check's tens of thousands of prompts: 200 runs
    samples = HARM_NET / 2 * np.random.default_rng(0).binomial(2, truth, size=(runs, n))
    planned = check.params.expected_attenuation(0.95)
    lows, highs = bounded_mean_intervals(samples, -1.0, 1.0, split_confidence(0.95))
    gated = [deattenuate((lo, hi), planned, (-1.0, 1.0)) for lo, hi in zip(lows, highs, strict=True)]
    assert _decided_share(*np.array(gated).T, check.threshold) >= 0.8


@pytest.mark.heavy(3)
def test_the_simulated_net_harm_is_the_doubles() -> None:
    twist = 0.05
    result = MEASURES["net_harm"].run_with(
        Runner(load_model(f"synthetic:harm?bias={twist}")), comparison="gender", prompts=2000, seed=7
    )
    values, counts = np.unique(np.round(result.samples, 6), return_counts=True)
    assert set(values) <= {0.0, HARM_NET / 2, HARM_NET}
    expected = 2000 * np.array([(1 - twist) ** 2, 2 * twist * (1 - twist), twist**2])[: len(values)]
    assert np.all(np.abs(counts - expected) < 4 * np.sqrt(expected) + 2)


def _iat_bias_for(truth: float, per_side: int) -> float:
    return float(optimize.brentq(lambda b: expected_iat_score(per_side, b) - truth, -0.999, 0.999))


def _iat_scores(bias: float, per_side: int, size: tuple[int, int], seed: int) -> np.ndarray:
    """The double's list answers: each attribute word goes to its consistent group with p = (1 + B) / 2."""
    rng = np.random.default_rng(seed)
    p = (1 + bias) / 2
    a, d = rng.binomial(per_side, p, size), rng.binomial(per_side, p, size)
    score = np.vectorize(lambda a, d: implicit_bias(int(a), per_side - int(d), per_side - int(a), int(d)) or 0.0)
    return score(a, d)


@pytest.mark.parametrize(("check", "truth"), _cases("implicit_bias"))
def test_release_implicit_bias_decides_at_its_design_truths(check: suite.Check, truth: float) -> None:
    per_side = len(get_stereotype(check.params.subject).stigma_attrs)
    samples = _iat_scores(_iat_bias_for(truth, per_side), per_side, (RUNS, check.samples["release"]), seed=1)
    assert abs(samples.mean() - truth) < 0.01
    lows, highs = bounded_mean_intervals(samples, -1.0, 1.0, 0.95)
    assert _decided_share(lows, highs, check.threshold) >= 0.8


def test_the_simulated_implicit_scores_are_the_doubles() -> None:
    per_side = len(get_stereotype("career").stigma_attrs)
    bias = _iat_bias_for(0.1, per_side)
    result = MEASURES["implicit_bias"].run_with(
        Runner(load_model(f"synthetic:iat?bias={bias}")), stereotype="career", iterations=400, seed=3
    )
    simulated = _iat_scores(bias, per_side, (1, 20000), seed=2)[0]
    assert result.n == 400
    assert abs(np.mean(result.samples) - 0.1) < 3 * np.std(simulated) / math.sqrt(400)
    assert abs(np.std(result.samples) - np.std(simulated)) < 0.05


@pytest.mark.parametrize(("check", "truth"), _cases("decision_bias"))
def test_release_decision_bias_decides_at_its_design_truths(check: suite.Check, truth: float) -> None:
    # Each prompt gives a usable decision with the expected rate, and a usable decision is a coin with
    # P(stereotyped) = (1 + B) / 2, independent across prompts (checked below): exact, every count weighed.
    prompts, usable = check.samples["release"], check.params.EXPECTED_USABLE
    assert usable < 1 and truth in (0.5, 0.85)
    assert exact_binary_rate_with_unusable(prompts, usable, truth, check.threshold) >= 0.8


def test_the_simulated_decisions_are_the_doubles() -> None:
    bias, unusable = 2 * 0.85 - 1, 0.21
    runner = Runner(load_model(f"synthetic:decision?bias={bias}&unusable={unusable}"))
    results = [MEASURES["decision_bias"].run_with(runner, stereotype="career", iterations=50, seed=s) for s in range(8)]
    usable = sum(r.n for r in results)
    assert abs(usable / 400 - (1 - unusable)) < 3 * math.sqrt(unusable * (1 - unusable) / 400)
    share = sum(r.estimate * r.n for r in results) / usable
    assert abs(share - 0.85) < 3 * math.sqrt(0.85 * 0.15 / usable)


def _pcf_truth_model(check: suite.Check, truth: float) -> str:
    if check.params.risk == "prejudice":
        return f"synthetic:pcf?bias={truth / 1000}"
    per_unit = (
        MEASURES["pcf"]
        .run_with(  # caprice grows in proportion to the planted weight
            Runner(load_model("synthetic:pcf?bias=0&caprice=0.1")), attribute="gender", occupations=257, risk="caprice"
        )
        .estimate
        / 0.1
    )
    return f"synthetic:pcf?bias=0&caprice={truth / per_unit}"


@pytest.mark.heavy(4)
@pytest.mark.parametrize(("check", "truth"), _cases("pcf"))
def test_release_pcf_decides_at_its_design_truths(check: suite.Check, truth: float) -> None:
    runner = Runner(load_model(_pcf_truth_model(check, truth)))
    params = check.params.with_samples(check.samples["release"])
    result = MEASURES["pcf"].execute(params, RunContext(runner, None, 0, 0.95))
    assert result.estimate == pytest.approx(truth, rel=0.02)
    assert decide(result.ci, check.threshold) is not Outcome.INCONCLUSIVE
