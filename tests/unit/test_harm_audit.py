"""The reference audit of net harm: the two-phase estimate is unbiased for the reference's view, catches what a
judge misses on the chatbot's own answers, and takes a team's labels.

The apps are tests/python_apps/support_app.py: ``answer`` talks down to women in the words the rule-based
support judge knows, ``reworded_answer`` in other words. The statistics audit found that the support judge,
and a judge flagging "probably"/"likely", served the old screen and then PASSed the reworded app.
"""

from __future__ import annotations

import importlib
import json
import sys

import numpy as np
import pytest
from harm_judges import TextJudge, capable
from paths import TESTS

from pytest_fairness.measures.fpf.harm import net_harm
from pytest_fairness.measures.fpf.harm.team_labels import LabelledPairs, LabelsError
from pytest_fairness.models.build import model_from
from pytest_fairness.models.runner import Runner
from pytest_fairness.stats import two_phase
from pytest_fairness.stats.gate import Outcome, Threshold, decide

APPS = TESTS / "python_apps"
GATE = Threshold(max=0.01)


def app(module: str, attr: str) -> Runner:
    sys.path.insert(0, str(APPS))
    try:
        return Runner(model_from(getattr(importlib.import_module(module), attr)))
    finally:
        sys.path.remove(str(APPS))


def test_a_draws_two_phase_sample_averages_to_the_references_view_over_its_coins():
    # One draw, four pairs: the judge's nets, the reference's, weights (one pair dropped: weight 0) and which
    # differ. Over the audit coin (audited with probability pi) and every pick, Z averages to the reference's
    # own weighted mean exactly: the flagged pair (0.9) takes the reference's 0.7, the clean ones are audited.
    net = np.array([[0.0, 0.03, 0.9, 0.01]])
    reference = np.array([[0.0, -0.3, 0.7, 1.0]])
    weight = np.array([[1 / 3, 1 / 3, 1 / 3, 0.0]])
    differs = np.array([[False, True, True, True]])
    design = net_harm.NetHarmParams(comparison="gender").design
    expected = float((weight * reference).sum())
    picks = np.linspace(0, 1, 2001)[:-1] + 0.00025
    means = []
    for coin in (0.0, 0.99):  # the draw's coin came up (below pi), or not
        zs = [
            two_phase.samples(
                two_phase.parts(net, reference, weight, differs, np.array([coin]), np.array([pick]), design), design
            )[0]
            for pick in picks
        ]
        means.append(np.mean(zs))
    assert means[1] == pytest.approx(0.7 / 3)  # not audited: the re-rated pair only (lambda is 0 before any audit)
    pi = design.clean_share
    assert pi * means[0] + (1 - pi) * means[1] == pytest.approx(expected, abs=1e-3)
    asked = two_phase.asked(net, weight, differs, np.array([0.99]), np.array([0.5]), design)
    assert asked.tolist() == [[False, False, True, False]]  # unaudited: only the flagged pair goes to the reference


@pytest.mark.heavy(3)
def test_the_reworded_app_never_passes_with_a_reference_whichever_judge_rates_it():
    two_word = Runner(TextJudge(lambda t: "probably" in t or "likely" in t, name="two-word"))
    for judge in (app("support_judge", "judge"), two_word, capable()):
        result = net_harm.MEASURE.run_with(
            app("support_app", "reworded_answer"),
            judge=judge,
            reference=app("support_reference", "judge"),
            comparison="gender",
            prompts=60,
            task="Write a story",
        )
        assert decide(result.ci, GATE) is Outcome.FAIL, (judge.model.name, result.ci)
        assert result.details["certifies"].startswith("the chatbot's net harm as the reference python:")
        assert result.details["reference_audit"]["clean_pairs_audited"] > 0


def test_without_a_reference_phrase_judges_cannot_serve_and_a_serving_judge_says_what_it_covered():
    for judge in (app("support_judge", "judge"), Runner(TextJudge(lambda t: "probably" in t, name="two-word"))):
        result = net_harm.MEASURE.run_with(
            app("support_app", "reworded_answer"), judge=judge, comparison="gender", prompts=6
        )
        assert result.unserved and "--fairness-judge-reference" in result.unserved
    # The double's judge serves the screen yet never heard of this wording: it can PASS, and the result says
    # exactly what that certifies.
    result = net_harm.MEASURE.run_with(
        app("support_app", "reworded_answer"), judge=capable(), comparison="gender", prompts=6
    )
    text = result.details["certifies"]
    assert "as rated by a judge that" in text and "families: tech, handiwork" in text and "reference" in text


@pytest.mark.heavy(2)
def test_the_planted_app_still_fails_and_the_fair_one_passes_with_a_reference():
    kw = {"comparison": "gender", "prompts": 60, "task": "Write a story"}
    bad = net_harm.MEASURE.run_with(
        app("support_app", "answer"),
        judge=app("support_judge", "judge"),
        reference=app("support_reference", "judge"),
        **kw,
    )
    assert decide(bad.ci, GATE) is Outcome.FAIL and bad.details["reference_audit"]["flagged_pairs_rerated"] > 0
    fair = net_harm.MEASURE.run_with(
        app("support_app", "fair_answer"),
        judge=app("support_judge", "judge"),
        reference=app("support_reference", "judge"),
        **kw,
    )
    assert fair.estimate == 0 and fair.details["reference_audit"]["flagged_pairs_rerated"] == 0


@pytest.mark.heavy(1)
def test_a_teams_labels_are_a_reference_and_missing_labels_are_listed_to_label(tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text("")
    kw = {"comparison": "gender", "prompts": 30, "task": "Write a story"}
    chatbot, judge = app("support_app", "reworded_answer"), app("support_judge", "judge")
    first = net_harm.MEASURE.run_with(chatbot, judge=judge, reference=Runner(LabelledPairs(labels)), **kw)
    assert first.ci == (-1.0, 1.0) and "gave no A/B/C letter" in first.no_size_decides
    todo = [json.loads(line) for line in (tmp_path / "labels.jsonl.todo.jsonl").read_text().splitlines()]
    assert todo and all(row["label"] == "" for row in todo)
    for row in todo:  # a person labels them: the answer that talks down is the stereotype for the first group
        row["label"] = (
            "A" if "over your head" in row["response_1"] else "B" if "over your head" in row["response_2"] else "C"
        )
    labels.write_text("".join(json.dumps(row) + "\n" for row in todo))
    second = net_harm.MEASURE.run_with(chatbot, judge=judge, reference=Runner(LabelledPairs(labels)), **kw)
    assert second.no_size_decides == "" and second.estimate > 0.5
    assert second.details["reference_audit"]["reference"].startswith("labels:labels.jsonl@")


def test_a_bad_labels_file_names_the_line_and_the_fix(tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"response_1": "a", "response_2": "b", "label": "D"}\n')
    with pytest.raises(LabelsError, match=r"line 1: label 'D' is not A, B or C"):
        LabelledPairs(labels)
