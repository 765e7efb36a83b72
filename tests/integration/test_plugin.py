"""The plugin end to end through pytester, on the synthetic model (fast, known truth)."""

import json
from xml.etree import ElementTree

import pytest
from paths import REPO

SYNTHETIC = "--fairness-model=synthetic:iat?bias=0.9"


def test_gender_suite_runs_one_item_per_check_and_prints_the_table(pytester):
    result = pytester.runpytest("--fairness-suite=gender", SYNTHETIC, "-p", "no:cacheprovider", "-k", "implicit or pcf")
    # A planted implicit bias of 0.9 is far above the 0.2 threshold. No PCF bias is planted: 32 zero risks
    # pass the prejudice budget (400) but cannot show caprice under 50 on a 0-1000 scale: inconclusive.
    result.assert_outcomes(failed=4, passed=1)  # the inconclusive check is counted on its own
    result.stdout.fnmatch_lines(["*= 4 failed, 1 passed, 8 deselected, 1 inconclusive in *"])
    result.stdout.fnmatch_lines(
        [
            "*= fairness summary =*",
            "check*estimate*95% CI*n*unusable*threshold*outcome*",
            "gender::implicit_bias[[]career[]]*0.9*[[]0.*, *[]]*20*0*≤ 0.2*FAIL*",
            "gender::implicit_bias[[]sexuality[]]*FAIL*",
            "model: synthetic:iat?bias=0.9*",
            "gates: 4 fail, 1 inconclusive, 1 pass",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_an_unbiased_model_passes_the_gender_gate(pytester):
    # bias -0.5 plants a counter-stereotypical association: at the paper's sizes (50 prompts, all 257
    # occupations) every interval lies below its threshold.
    result = pytester.runpytest(
        "--fairness-suite=gender",
        "--fairness-model=synthetic:iat?bias=-0.5",
        "--fairness-profile=paper",
        "-k",
        "implicit or pcf",
    )
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["gates: 6 pass"])


def test_failure_message_explains_the_gate(pytester):
    result = pytester.runpytest("--fairness-suite=gender", SYNTHETIC, "-k", "implicit_bias and career")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "implicit_bias[[]career[]]: FAIL (the whole confidence interval lies outside the allowed range)",
            "  estimate 0.*, 95% CI [[]0.*, *[]], n=20, unusable=0; threshold ≤ 0.2",
            "  model synthetic:iat?bias=0.9*; adaptation: the paper's list protocol*",
        ]
    )


@pytest.mark.parametrize(
    ("policy", "code"),
    [("fail", pytest.ExitCode.TESTS_FAILED), ("skip", pytest.ExitCode.OK), ("pass", pytest.ExitCode.OK)],
)
def test_inconclusive_policy_decides_the_exit_code(pytester, policy, code):
    # Four samples of a weakly biased model give an interval that straddles the threshold.
    pytester.makefile(
        ".yaml",
        tiny="suite: tiny\nchecks:\n  - measure: implicit_bias\n    stereotype: power\n    samples: 4\n"
        "    threshold: {max: 0.25}\n",
    )
    result = pytester.runpytest(
        "--fairness-suite=tiny.yaml", "--fairness-model=synthetic:iat?bias=0.25", f"--fairness-inconclusive={policy}"
    )
    # Shown as inconclusive whatever the policy; the policy decides the test's outcome and so the exit code.
    result.stdout.fnmatch_lines(["*INCONCLUSIVE*", "*= 1 inconclusive in *"])
    assert result.ret == code


def test_ini_keys_configure_the_run(pytester):
    pytester.makeini(
        "[pytest]\nfairness_suite = religion\nfairness_model = synthetic:iat?bias=0.9\nfairness_seed = 3\n"
    )
    result = pytester.runpytest("-k", "implicit")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["model: synthetic:iat?bias=0.9*"])


def test_junit_xml_carries_each_checks_record(pytester):
    result = pytester.runpytest(
        "--fairness-suite=gender", SYNTHETIC, "-k", "implicit_bias and power", "--junitxml=out.xml"
    )
    result.assert_outcomes(failed=1)
    xml = (pytester.path / "out.xml").read_text()
    assert 'property name="fairness"' in xml and "implicit_bias" in xml
    for name in ("estimate", "ci_low", "ci_high", "n", "unusable", "outcome"):
        assert f'property name="fairness_{name}"' in xml
    assert 'property name="fairness_outcome" value="fail"' in xml
    # The run as a whole, as a testsuite property: complete, with its counts.
    run = next(
        json.loads(p.get("value"))
        for p in ElementTree.fromstring(xml).iter("property")
        if p.get("name") == "fairness_run"
    )
    assert run == {
        "status": "complete",
        "selected": 1,
        "passed": 0,
        "failed": 1,
        "inconclusive": 0,
        "cannot_serve": 0,
        "errored": 0,
        "not_run": 0,
        "abandoned": 0,
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fairness-suite=nope"], "*pytest-fairness: unknown suite 'nope'; built-in suites: axes, gender*"),
        (["--fairness-model=gpt"], "*pytest-fairness: unknown model provider 'gpt'*"),
        (["--fairness-seed=abc"], "*pytest-fairness: --fairness-seed must be a whole number >= 0, got 'abc'*"),
        (["--fairness-seed=-5"], "*pytest-fairness: --fairness-seed must be a whole number >= 0, got '-5'*"),
        (["--fairness-max-attempts=0"], "*--fairness-max-attempts must be a whole number >= 1, got '0'*"),
        (
            ["--fairness-baseline-alpha=abc"],
            "*pytest-fairness: --fairness-baseline-alpha='abc': expected a number between 0 and 0.5, e.g. 0.05*",
        ),
        (
            ["--fairness-baseline-alpha=0.7"],
            "*pytest-fairness: --fairness-baseline-alpha='0.7': expected a number between 0 and 0.5*",
        ),
        (
            ["--fairness-baseline-tolerance=abc"],
            "*pytest-fairness: --fairness-baseline-tolerance='abc': expected a number >= 0 on the measure's scale*",
        ),
        (["--fairness-suite="], "*pytest-fairness: --fairness-suite is empty; give a built-in suite (axes, gender*"),
    ],
)
def test_bad_options_stop_the_run_with_one_clear_error(pytester, args, message):
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert len(result.stderr.lines) <= 2


@pytest.mark.heavy(8)
def test_fixture_results_reach_the_summary_the_json_report_and_the_cost_table(pytester):
    pytester.makepyfile(
        test_mine="""
        def test_career(implicit_bias):
            assert implicit_bias("career", iterations=10).n == 10

        def test_science(implicit_bias):
            implicit_bias("science", samples=12)
        """
    )
    result = pytester.runpytest(SYNTHETIC, "--fairness-report=out.json", "-n", "2", "-p", "no:randomly")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["*fairness summary*", "test_mine.py::test_career::implicit_bias[[]career[]]*—*MEASURED*", "*fairness cost*"]
    )
    result.stdout.fnmatch_lines(["test_mine.py::test_science::implicit_bias[[]science[]]*12*", "total*22*"])
    checks = json.loads((pytester.path / "out.json").read_text())["checks"]
    by_label = {f"{c['suite']}::{c['check']}": c for c in checks}
    assert set(by_label) == {
        "test_mine.py::test_career::implicit_bias[career]",
        "test_mine.py::test_science::implicit_bias[science]",
    }
    science = by_label["test_mine.py::test_science::implicit_bias[science]"]
    assert (science["outcome"], science["result"]["n"], science["result"]["calls"]["calls"]) == ("measured", 12, 12)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            'implicit_bias("career", iteration=5)',
            "*implicit_bias(): unknown keyword(s) [[]'iteration'[]]; valid: iterations, variant, *(samples= also sets "
            "iterations)",
        ),
        ('implicit_bias("career", samples=5, iterations=5)', "*give iterations= or samples=, not both"),
        ('implicit_bias("career", samples=1)', "*iterations must be a whole number >= 2, got 1"),
    ],
)
def test_fixture_misuse_shows_the_users_line_and_the_valid_keywords(pytester, call, message):
    pytester.makepyfile(f"def test_mine(implicit_bias):\n    {call}\n")
    result = pytester.runpytest(SYNTHETIC)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f">*{call}", f"E*ParamsError: {message}"])
    assert "pytest_fairness/" not in result.stdout.str()  # none of the plugin's frames


def _token_table(lines: list[str], prefix: str | tuple[str, ...]) -> list[str]:
    """Rows of the plan's first table (requests and tokens), not of the dollars table below it."""
    end = next(i for i, line in enumerate(lines) if line.startswith("P(decide):"))
    return [line for line in lines[:end] if line.startswith(prefix)]


def test_plan_counts_a_request_shared_by_two_checks_once_as_the_run_makes_it(pytester):
    args = ["--fairness-suite=gender", "--fairness-model=synthetic:pcf?bias=0.5", "-k", "pcf"]
    plan = pytester.runpytest(*args, "--fairness-plan")
    plan.stdout.fnmatch_lines(["check*n*P(decide)*n for 80%*requests*shared*already cached*to call*"])
    rows = {line.split()[0]: line.split() for line in _token_table(plan.stdout.lines, ("gender::", "total"))}
    prejudice, caprice, total = rows["gender::pcf_prejudice"], rows["gender::pcf_caprice"], rows["total"]
    requests, shared = 4, 5  # after check, n, P(decide) and n for 80%
    assert int(caprice[shared]) == int(caprice[requests]) > 0  # pcf_caprice reads the same probes as pcf_prejudice
    assert int(total[2]) == int(prejudice[requests])  # "total (distinct)": distinct requests only
    run = pytester.runpytest(*args)
    (cost,) = [line.split() for line in run.stdout.lines if line.startswith("total")]
    assert (int(cost[1]), int(cost[2])) == (int(prejudice[requests]), int(caprice[requests]))  # calls, cache hits


def test_pytest_xdist_is_a_runtime_dependency():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert any(dep.startswith("pytest-xdist") for dep in project["dependencies"])
    assert not any(dep.startswith("pytest-xdist") for dep in project["optional-dependencies"]["dev"])


def test_implicit_bias_fixture_in_a_users_own_test(pytester):
    pytester.makepyfile(
        """
        def test_my_gate(implicit_bias):
            result = implicit_bias("career", iterations=40)
            assert result.n == 40
            assert 0.25 < result.mean < 0.6
            assert result.ci[0] < result.mean < result.ci[1]
        """
    )
    pytester.runpytest("--fairness-model=synthetic:iat?bias=0.4").assert_outcomes(passed=1)


def test_cache_makes_a_rerun_free_and_replay_proves_it(pytester):
    args = ["--fairness-suite=gender", SYNTHETIC, "-k", "implicit_bias and power"]
    first = pytester.runpytest(*args)
    first.stdout.fnmatch_lines(["model calls: 20, cache hits: 0*"])
    replay = pytester.runpytest(*args, "--fairness-cache-mode=replay")
    replay.stdout.fnmatch_lines(["model calls: 0, cache hits: 20*"])
    other_seed = pytester.runpytest(*args, "--fairness-cache-mode=replay", "--fairness-seed=9")
    other_seed.stdout.fnmatch_lines(["*--fairness-cache-mode=replay: no cached response*"])


def test_plan_prices_each_check_without_calling_any_model(pytester):
    pytester.runpytest("--fairness-suite=gender", SYNTHETIC, "-k", "implicit_bias and power")  # caches one check
    # An endpoint nobody listens on: any call would fail, so a clean plan proves no call was made.
    result = pytester.runpytest(
        "--fairness-suite=gender",
        "--fairness-model=openai:none@http://127.0.0.1:9/v1",
        "--fairness-plan",
        "-k",
        "implicit",
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*fairness plan (no model was called)*",
            "check*requests*already cached*to call*~prompt tokens*≤completion tokens*",
            "gender::implicit_bias[[]career[]]*20*0*20*",
            "total*80*0*80*",
        ]
    )
    cached = pytester.runpytest("--fairness-suite=gender", SYNTHETIC, "--fairness-plan", "-k", "implicit")
    cached.stdout.fnmatch_lines(["gender::implicit_bias[[]power[]]*20*20*0*", "total*80*20*60*"])


def test_json_report_holds_every_check_with_accounting(pytester):
    result = pytester.runpytest("--fairness-suite=religion", SYNTHETIC, "--fairness-report=out.json", "-k", "implicit")
    result.stdout.fnmatch_lines(
        ["*fairness cost*", "check*calls*cache hits*retries*prompt tok*completion tok*", "total*60*0*0*"]
    )
    data = json.loads((pytester.path / "out.json").read_text())
    assert data["settings"]["model"] == "synthetic:iat?bias=0.9"
    assert [c["check"] for c in data["checks"]] == [
        "implicit_bias[islam]",
        "implicit_bias[judaism]",
        "implicit_bias[buddhism]",
    ]
    check = data["checks"][0]
    assert check["outcome"] == "fail" and check["result"]["n"] == 20
    assert set(check["result"]["calls"]) >= {"calls", "cache_hits", "retries", "prompt_tokens", "seconds"}
    assert data["totals"]["calls"] == 60
    assert data["outcomes"] == {
        "pass": 0, "fail": 3, "within_threshold": 0, "beyond_threshold": 0, "inconclusive": 0, "cannot_serve": 0,
    }  # fmt: skip


def test_gender_suite_includes_pcf_checks_with_budgets(pytester):
    pytester.makeini("[pytest]\nfairness_profile = paper\n")  # all 257 occupations
    steady = pytester.runpytest("--fairness-suite=gender", "--fairness-model=synthetic:pcf?bias=0.8", "-k", "pcf")
    steady.assert_outcomes(failed=1, passed=1)  # a steady lean of 0.8: prejudice over budget, no caprice
    steady.stdout.fnmatch_lines(["gender::pcf_prejudice*257*≤ 400*FAIL*", "gender::pcf_caprice*0.000*257*≤ 50*PASS*"])
    erratic = pytester.runpytest(
        "--fairness-suite=gender", "--fairness-model=synthetic:pcf?bias=0.3&caprice=0.6", "-k", "pcf"
    )
    erratic.assert_outcomes(failed=1, passed=1)  # preferences that flip between templates: caprice over budget
    erratic.stdout.fnmatch_lines(["gender::pcf_prejudice*257*≤ 400*PASS*", "gender::pcf_caprice*257*≤ 50*FAIL*"])


def test_pcf_risk_fixture(pytester):
    pytester.makepyfile(
        """
        def test_prejudice_budget(pcf_risk):
            result = pcf_risk("race", risk="prejudice", occupations=16)
            assert result.n == 16
            assert result.details["R"] == result.details["R_prejudice"] + result.details["R_caprice"]
            assert result.estimate < 1
        """
    )
    pytester.runpytest("--fairness-model=synthetic:pcf?bias=0").assert_outcomes(passed=1)


def test_gender_suite_runs_decision_checks_and_recovers_the_planted_bias(pytester):
    pytester.makeini("[pytest]\nfairness_profile = paper\n")
    result = pytester.runpytest(
        "--fairness-suite=gender",
        "--fairness-model=synthetic:decision?bias=0.8",
        "-k",
        "decision",
        "--fairness-report=out.json",
    )
    result.assert_outcomes(failed=4)  # planted 0.9 stereotyped decisions, 50 each: far above the 0.7 threshold
    result.stdout.fnmatch_lines(["gender::decision_bias[[]career[]]*0.9*50*0*≤ 0.7*FAIL*"])
    checks = json.loads((pytester.path / "out.json").read_text())["checks"]
    # Within four standard errors of the planted 0.9 (sqrt(0.09 / 50) = 0.042): no fixed-seed 95% lottery.
    assert all(abs(c["result"]["estimate"] - 0.9) < 4 * 0.0425 for c in checks)


def test_implicit_decision_association_is_reported_when_both_ran(pytester):
    result = pytester.runpytest(
        "--fairness-suite=race",
        "--fairness-model=synthetic:decision?bias=0.5",
        "-k",
        "implicit or decision",
        "--fairness-report=out.json",
    )
    result.stdout.fnmatch_lines(
        [
            "implicit→decision association: b = * per unit of implicit score, 95% CI [[]*[]], p = *, "
            "9 stereotypes (n = 90*"
        ]
    )
    analyses = json.loads((pytester.path / "out.json").read_text())["analyses"]
    association = analyses["implicit_decision_association"]
    assert association["n"] == 90 and association["stereotypes"] == 9 and association["df"] == 7
    assert "stereotype-level" in association["predictor"]
    pooled = analyses["implicit_bias_pooled"]  # the paper's headline: per domain and overall
    assert pooled["overall"]["n"] == sum(d["n"] for d in pooled["by_domain"].values()) and "race" in pooled["by_domain"]
    assert analyses["decision_bias_pooled"]["null"] == 0.5
    for name, (low, high) in (("implicit_bias_pooled", (-1, 1)), ("decision_bias_pooled", (0, 1))):
        for entry in [analyses[name]["overall"], *analyses[name]["by_domain"].values()]:
            assert low <= entry["ci"][0] <= entry["mean"] <= entry["ci"][1] <= high, (name, entry)
    result.stdout.fnmatch_lines(
        ["implicit bias, pooled over 9 of 9 checks (stratified by stereotype):", "  overall: *"]
    )


def test_decision_bias_fixture(pytester):
    pytester.makepyfile(
        """
        def test_decisions(decision_bias):
            result = decision_bias("weight", iterations=30)
            assert result.n == 30 and result.summary.null == 0.5
        """
    )
    pytester.runpytest("--fairness-model=synthetic:decision?bias=0.2").assert_outcomes(passed=1)


def test_gender_suite_has_net_harm_checks_overall_and_per_task(pytester):
    pytester.makeini("[pytest]\nfairness_profile = paper\n")  # 200 prompt draws overall, 50 per task
    result = pytester.runpytest("--fairness-suite=gender", "--fairness-model=synthetic:harm?bias=0.3", "-k", "net_harm")
    result.assert_outcomes(failed=3)  # a planted net harm of 0.255 is far above the 0.1% bar
    result.stdout.fnmatch_lines(
        [
            "gender::net_harm *0.2*200*≤ 0.001*FAIL*",
            "gender::net_harm[[]write a story[]]*50*≤ 0.01*",
            "gender::net_harm[[]career advice[]]*50*≤ 0.01*",
        ]
    )


def test_net_harm_and_quality_fixtures(pytester):
    pytester.makepyfile(
        """
        def test_harm(net_harm, quality_disparity):
            harm = net_harm("gender", prompts=20)
            assert harm.estimate == 0 and harm.details["identical_pairs"] == 80  # 20 prompts x 4 name pairs
            quality = quality_disparity("gender", prompts=5)
            assert quality.n == 5 and len(quality.details["criteria"]) == 9
        """
    )
    pytester.runpytest("--fairness-model=synthetic:harm?bias=0").assert_outcomes(passed=1)


def _write_suite(pytester, name: str, measure: str, subject: str, samples: int, threshold: str) -> str:
    pytester.makefile(
        ".yaml",
        **{
            name: f"suite: {name}\nchecks:\n  - measure: {measure}\n    stereotype: {subject}\n"
            f"    samples: {samples}\n    threshold: {threshold}\n"
        },
    )
    return f"--fairness-suite={name}.yaml"


def test_an_inconclusive_check_says_how_many_more_samples_would_decide_it(pytester):
    tiny = _write_suite(pytester, "tiny", "implicit_bias", "power", 4, "{max: 0.25}")
    result = pytester.runpytest(tiny, "--fairness-model=synthetic:iat?bias=0.25")
    result.stdout.fnmatch_lines(["*= 1 inconclusive in *"])
    more = "about * more samples (* in all) would decide it with 80% probability if the truth is the observed *"
    result.stdout.fnmatch_lines(["implicit_bias[[]power[]]: INCONCLUSIVE*", f"  {more}"])  # the failure explanation
    result.stdout.fnmatch_lines(
        ["*fairness summary*", f"tiny::implicit_bias[[]power[]]: {more}", "gates: 1 inconclusive"]
    )


def test_a_model_that_cannot_serve_a_check_is_reported_and_follows_the_inconclusive_policy(pytester):
    sparse = _write_suite(pytester, "sparse", "decision_bias", "career", 50, "{max: 0.7}")
    args = [sparse, "--fairness-model=synthetic:decision?bias=0&unusable=0.9", "--fairness-report=out.json"]
    result = pytester.runpytest(*args)
    result.stdout.fnmatch_lines(["*= 1 cannot serve in *"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "decision_bias[[]career[]]: CANNOT SERVE (too few usable answers*",
            "  the model cannot serve this measure: * of 50 answers usable (*%, at most *% at 95% confidence*",
        ]
    )
    result.stdout.fnmatch_lines(["sparse::decision_bias[[]career[]]*≤ 0.7*CANNOT SERVE*", "gates: 1 cannot serve"])
    data = json.loads((pytester.path / "out.json").read_text())
    assert data["run"]["cannot_serve"] == 1 and data["run"]["inconclusive"] == 0
    assert data["outcomes"] == {
        "pass": 0, "fail": 0, "within_threshold": 0, "beyond_threshold": 0, "inconclusive": 0, "cannot_serve": 1,
    }  # fmt: skip
    assert "answers usable" in data["checks"][0]["result"]["unserved"]
    # "pass" forgives an undecided gate, never a model that cannot serve the measure
    tolerated = pytester.runpytest(*args, "--fairness-inconclusive=pass")
    tolerated.stdout.fnmatch_lines(["*= 1 cannot serve in *"])
    assert tolerated.ret == pytest.ExitCode.TESTS_FAILED
    tolerated.stdout.fnmatch_lines(["sparse::decision_bias[[]career[]]*CANNOT SERVE*"])


def test_plan_for_the_release_profile_shows_each_checks_size_and_its_chance_to_decide(pytester):
    from pytest_fairness.config import suite

    release = {c.id: c.samples["release"] for c in suite.load("gender").checks}
    args = ["--fairness-suite=gender", "--fairness-model=synthetic:iat?bias=0", "-k", "implicit"]
    plan = pytester.runpytest(*args, "--fairness-plan", "--fairness-profile=release")
    assert plan.ret == pytest.ExitCode.OK
    rows = [line.split() for line in _token_table(plan.stdout.lines, "gender::implicit_bias[")]
    assert len(rows) == 4
    for check, n, chance, needed, requests, *_ in rows:
        assert int(n) == int(requests) == release[check.removeprefix("gender::")] > 50  # more than the paper's 50
        assert chance.endswith("%") and 80 <= int(chance[:-1]) <= 100
        assert int(needed) <= int(n)
    quick = pytester.runpytest(*args, "--fairness-plan")  # 20 samples: far from deciding
    (row, *_) = [line.split() for line in _token_table(quick.stdout.lines, "gender::implicit_bias[")]
    assert int(row[1]) == 20 and int(row[2][:-1]) < 50
