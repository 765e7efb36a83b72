"""The A/A placebo of net harm: the same name on both sides, the pipeline's noise floor, and what a placebo
inconsistent with 0 does to the check."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pytest_fairness.measures.fpf.harm import aa_placebo, net_harm
from pytest_fairness.measures.fpf.planted_chatbot import HARM_MARKER
from pytest_fairness.models.interface import ChatRequest, ChatResponse
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner
from pytest_fairness.stats.gate import Outcome, Threshold, decide
from pytest_fairness.testing.synthetic import SyntheticModel


@pytest.mark.heavy(3)
def test_the_placebo_of_an_unbiased_pipeline_contains_0_in_at_least_95_percent_of_runs():
    # 1,000 runs of the release size's 157 placebo prompts: each pair's two answers come from one name, so
    # its net rating is as likely to be +r as -r (a twist in either answer, rated 0.85 by the double's judge,
    # on 30% of answers; otherwise 0).
    rng = np.random.default_rng(5)
    runs, n = 1000, -(-3139 // aa_placebo.EVERY)
    first, second = rng.random((runs, n)) < 0.3, rng.random((runs, n)) < 0.3
    nets = 0.85 * (first.astype(float) - second.astype(float))
    level = aa_placebo.confidence_of(0.95)
    contains = [not aa_placebo.Placebo(tuple(row), level).inconsistent for row in nets]
    assert np.mean(contains) >= 0.95  # at its own 99%: 0.99 or so


def test_a_run_reports_its_placebo_and_an_unbiased_chatbot_keeps_it_consistent():
    result = net_harm.MEASURE.run_with(
        Runner(load_model("synthetic:harm?bias=0.3")), comparison="gender", prompts=200, task="Write a story"
    )
    placebo = result.details["placebo"]
    assert placebo["prompts"] == 10 and placebo["consistent_with_0"] and placebo["ci"][0] <= 0 <= placebo["ci"][1]
    assert result.no_size_decides == ""


class LaterSamplesDiffer(SyntheticModel):
    """The double's chatbot, except that every answer sampled after the first two per name carries the twist:
    a pipeline whose repeated draws are not exchangeable (as a provider that ignores seeds, or a cache keyed
    wrongly, would make it)."""

    async def chat(self, request: ChatRequest) -> ChatResponse:
        response = await super().chat(request)
        if request.sample_index >= 2 and request.purpose is not None and request.purpose.task == "fpf.answer":
            return dataclasses.replace(response, text=f"{response.text} {HARM_MARKER}")
        return response


@pytest.mark.heavy(3)
def test_a_placebo_inconsistent_with_0_makes_the_check_inconclusive_with_the_reason():
    result = net_harm.MEASURE.run_with(
        Runner(LaterSamplesDiffer("harm", 0.0)), comparison="gender", prompts=400, task="Write a story"
    )
    assert not result.details["placebo"]["consistent_with_0"]
    assert result.ci == (-1.0, 1.0) and decide(result.ci, Threshold(max=0.01)) is Outcome.INCONCLUSIVE
    assert "A/A placebo" in result.no_size_decides and "inconsistent with 0" in result.no_size_decides
    assert result.fidelity.endswith(result.no_size_decides)


@pytest.mark.parametrize("prompts", [1, 20, 41])
def test_every_twentieth_draw_carries_one_placebo_pair(prompts):
    p = net_harm.MEASURE.validate({"comparison": "black", "prompts": prompts})
    pairs = net_harm.pairs_for(p, 0)
    chosen = aa_placebo.placebo_pairs(pairs)
    assert [x.draw for x in chosen] == list(range(0, prompts, aa_placebo.EVERY))
    extra = aa_placebo.requests(pairs, p.names_per_group)
    assert len(extra) == len(chosen) and not set(extra) & {r for x in pairs for r in (x.request_a, x.request_b)}
