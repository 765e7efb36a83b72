"""What a per-task first-person-fairness interval covers: this corpus's prompts, not the task's.

A per-task release run draws 1,907 prompts from the task's 33 corpus prompts (``sample_prompts``
cycles through them, each about 58 times with new names). The simulation uses those real draw orders
and the gate's real betting interval; prompts are heterogeneous: drawn from a task population in which
one prompt in ten provokes harm (the answer to a woman twisted with probability 0.1, as the synthetic
double plants it), the rest none. Each run gets a fresh corpus of 33 such prompts and a fresh seed.
The interval covers each run's corpus mean (the stated estimand) in at least 95% of runs; it covers the
task population's mean far less often, because which prompts the corpus holds is not sampling noise to it.
"""

from __future__ import annotations

import numpy as np
import pytest

from pytest_fairness.measures import MEASURES
from pytest_fairness.measures.fpf.answers import AnswerParams, corpus_estimand, pairs_for, sample_prompts
from pytest_fairness.measures.fpf.planted_chatbot import HARM_NET
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner
from pytest_fairness.stats.intervals import bounded_mean_intervals

TASK, DRAWS, RUNS = "Write a story", 1907, 300
#: The task population: a share of prompts provokes harm, and on those an answer to a woman is twisted.
PROVOKING, TWIST = 0.1, 0.1


def _draw_order(seed: int) -> tuple[np.ndarray, int]:
    """Which corpus prompt each of the run's draws is (indices), and how many distinct prompts there are."""
    draws = sample_prompts(AnswerParams(comparison="gender", prompts=DRAWS, task=TASK), seed)
    index: dict[str, int] = {}
    order = np.array([index.setdefault(d.prompt.prompt, len(index)) for d in draws])
    return order, len(index)


def test_a_per_task_run_reuses_few_prompts_and_says_so() -> None:
    order, distinct = _draw_order(0)
    counts = np.bincount(order)
    assert 20 <= distinct <= 60 and counts.min() >= DRAWS // distinct - 1 and counts.max() <= DRAWS // distinct + 1
    params = AnswerParams(comparison="gender", prompts=12, task=TASK)
    details = corpus_estimand(params, pairs_for(params, 0))
    assert details["distinct_prompts"] == 12 and details["draws"] == 12
    assert f"{details['distinct_prompts']} distinct prompts of task or domain 'Write a story'" in details["estimand"]
    assert "not the mean over every prompt" in details["estimand"]


@pytest.mark.heavy(6)
def test_the_per_task_interval_covers_the_corpus_mean_not_the_task_mean() -> None:
    rng = np.random.default_rng(20240611)
    samples, corpus_means = np.empty((RUNS, DRAWS)), np.empty(RUNS)
    for run in range(RUNS):
        order, distinct = _draw_order(run)
        twist = np.where(rng.random(distinct) < PROVOKING, TWIST, 0.0)  # this corpus's prompts
        # The double's per-draw net harm: HARM_NET / 2 per twisted answer of the draw's two women.
        samples[run] = HARM_NET / 2 * rng.binomial(2, twist[order])
        corpus_means[run] = HARM_NET * twist.mean()
    lows, highs = bounded_mean_intervals(samples, -1.0, 1.0, 0.95)
    task_mean = HARM_NET * PROVOKING * TWIST
    corpus_coverage = np.mean((lows <= corpus_means) & (corpus_means <= highs))
    task_coverage = np.mean((lows <= task_mean) & (task_mean <= highs))
    assert corpus_means.std() > 0.5 * task_mean  # the corpora really differ: heterogeneous prompts
    assert corpus_coverage >= 0.95
    assert task_coverage < 0.85  # the task's mean is not what it covers


def test_quality_records_its_estimand() -> None:
    runner = Runner(load_model("synthetic:harm"))
    result = MEASURES["quality_disparity"].run_with(runner, comparison="gender", prompts=4)
    assert result.details["distinct_prompts"] == 4 and "distinct prompts" in result.details["estimand"]


def test_net_harm_records_its_estimand() -> None:
    runner = Runner(load_model("synthetic:harm"))
    result = MEASURES["net_harm"].run_with(runner, comparison="gender", prompts=4)
    assert result.details["distinct_prompts"] == 4 and "distinct prompts" in result.details["estimand"]
