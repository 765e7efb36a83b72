"""K samples per item (``samples_per_item``, suite key and option): each item's K answers are re-sampled with
their own seeds, averaged into its score, and kept in its items file; a bad K is one line."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
import yaml
from in_process import INPROCESS, run_line

from pytest_fairness.config import suite
from pytest_fairness.measures.resampling import interval_for

MODEL = "--fairness-model=synthetic:iat?bias=0.2"


def _suite(per_item: str = "") -> str:
    return f"""\
suite: k
checks:
  - id: islam
    measure: implicit_bias
    stereotype: islam
    samples: 30
    threshold: {{max: 0.5}}
{per_item}"""


#: In-process runs: the outer run's xdist variables and syrupy session are undone around each one.
pytestmark = pytest.mark.usefixtures("in_process_syrupy")


def _run(pytester: pytest.Pytester, document: str, *extra: str) -> pytest.RunResult:
    return run_line(pytester, document, MODEL, *extra)


def _check(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "out.json").read_text())["checks"][0]


def _items_file(pytester: pytest.Pytester) -> dict[str, list[float]]:
    found: dict[str, list[float]] = defaultdict(list)
    for line in (pytester.path / "baselines" / "line" / "k.islam.items.tsv").read_text().splitlines():
        if not line.startswith("#"):
            key, _, score = line.split("\t")
            found[key].append(float(score))
    return found


def test_a_suites_samples_per_item_takes_k_answers_per_item_and_its_items_file_records_k(pytester):
    _run(pytester, _suite("    samples_per_item: 2\n"), "--fairness-baselines", "--snapshot-update").assert_outcomes(
        passed=1
    )
    check, items = _check(pytester), _items_file(pytester)
    result = check["result"]
    assert result["n"] == 30 and result["calls"]["calls"] == 60  # 30 items, 2 answers each
    assert result["details"]["samples_per_item"] == 2
    assert len(items) == 30 and {len(scores) for scores in items.values()} == {2}
    assert sum(a != b for a, b in items.values()) >= 25  # re-sampled answers, not the same answer twice
    means = sorted(round(sum(s) / 2, 4) for s in items.values())  # each item's score is its samples' mean
    assert means == sorted(round(x, 4) for x in result["samples"])
    entry = yaml.safe_load((pytester.path / "baselines" / "line" / "k.islam.yaml").read_text())["checks"][0]
    assert entry["items"]["samples_per_item"] == 2 and entry["items"]["samples"] == 60
    # the pull request draws the same items and the same K, answered from the cache; 30 items are too few to show
    # the margin (158 at the PASS level), so its threshold alone decides, and says so
    assert _run(pytester, _suite("    samples_per_item: 2\n"), "--fairness-gate=pr").ret == pytest.ExitCode.OK
    check = _check(pytester)
    assert check["result"]["calls"]["calls"] == 0 and check["outcome"] == "within_threshold"
    assert "too few for the paired interval" in check["result"]["details"]["pr_gate"]["why"]


def test_the_option_sets_k_for_every_check_over_the_suite_key(pytester):
    _run(pytester, _suite("    samples_per_item: 2\n"), "--fairness-samples-per-item=3").assert_outcomes(passed=1)
    result = _check(pytester)["result"]
    assert result["n"] == 30 and result["calls"]["calls"] == 90 and result["details"]["samples_per_item"] == 3
    _run(pytester, _suite()).assert_outcomes(passed=1)  # neither: one answer per item, as before
    result = _check(pytester)["result"]
    assert result["calls"]["calls"] == 0 and "samples_per_item" not in result["details"]  # the K = 1 answers, cached


def test_a_bad_samples_per_item_option_is_one_line_naming_it(pytester):
    result = _run(pytester, _suite(), "--fairness-samples-per-item=0")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--fairness-samples-per-item must be a whole number in [[]1, 16], got '0'*"])
    assert "Traceback" not in result.stderr.str()


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (
            {"measure": "implicit_bias", "stereotype": "islam", "samples_per_item": 0},
            r"must be a whole number in \[1, 16\], got 0",
        ),
        (
            {"measure": "implicit_bias", "stereotype": "islam", "samples_per_item": "2"},
            r"must be a whole number in \[1, 16\]",
        ),
        (
            {"measure": "pcf", "attribute": "gender", "samples_per_item": 2},
            r"samples_per_item: pcf takes one sample per item; K samples per item average for implicit_bias",
        ),
    ],
)
def test_a_bad_samples_per_item_suite_key_is_one_error_naming_the_key(tmp_path, check, message):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"suite": "s", "checks": [{**check, "threshold": {"max": 1}}]}))
    with pytest.raises(suite.SuiteError, match=message):
        suite.load(str(path))


def test_under_the_pr_gate_the_planner_chooses_prompts_and_k_from_the_baselines_items_and_the_plan_shows_it(pytester):
    document = _suite().replace("samples: 30", "samples: 200")
    _run(pytester, document, "--fairness-baselines", "--snapshot-update", "--fairness-samples-per-item=2")
    # the baseline's own answers in the cache: its size and K cost nothing and pair to differences of 0
    _run(pytester, document, "--fairness-gate=pr", "--fairness-plan").stdout.fnmatch_lines(
        ["*k::islam: paired plan: all the baseline's 200 prompts × K = 2, every answer in the response cache (0 calls*"]
    )
    _run(pytester, document, "--fairness-gate=pr").assert_outcomes(passed=1)
    check = _check(pytester)
    assert check["result"]["n"] == 200 and check["result"]["calls"]["calls"] == 0
    assert check["result"]["details"]["samples_per_item"] == 2 and check["baseline"]["paired"]["outcome"] == "pass"
    # answers re-sampled (cache off): the planner sizes prompts × K from the variances measured on the baseline
    fresh = ("--fairness-gate=pr", "--fairness-cache-mode=off")
    _run(pytester, document, *fresh, "--fairness-plan").stdout.fnmatch_lines(
        [
            "*k::islam: paired plan: all the baseline's 200 prompts × K = * samples per item = * calls ($0.00), *% "
            "chance to pass an unchanged release at the PASS level 0.0025*; ρ = 0.*, between-item variance *, "
            "within-item * (measured on 200 items × 2 samples)"
        ]
    )
    _run(pytester, document, *fresh)
    check = _check(pytester)
    plan, result = check["result"]["details"]["paired_plan"], check["result"]
    clusters, k = int(plan.split(" prompts")[0].split()[-1]), int(plan.split("K = ")[1].split()[0])
    assert result["n"] == clusters == 200 and result["details"].get("samples_per_item", 1) == k
    assert result["calls"]["calls"] == clusters * k and check["baseline"]["paired"] is not None
    # an explicit K overrides the planner: one answer per item, every baseline item drawn
    assert _run(pytester, document, "--fairness-gate=pr", "--fairness-samples-per-item=1").ret == pytest.ExitCode.OK
    check = _check(pytester)
    assert "paired_plan" not in check["result"]["details"] and check["result"]["n"] == 200


def test_a_0_1_measures_items_averaged_over_k_answers_are_gated_on_the_bounded_interval(pytester):
    document = """\
suite: k
checks:
  - id: islam
    measure: decision_bias
    stereotype: career
    samples: 20
    samples_per_item: 3
    threshold: {abs_max: 0.9}
"""
    pytester.makefile(".yaml", k=document)
    result = pytester.runpytest(
        *INPROCESS, "--fairness-suite=k.yaml", "--fairness-model=synthetic", "--fairness-report=out.json"
    )
    result.assert_outcomes(passed=1)
    check = _check(pytester)["result"]
    assert check["details"]["samples_per_item"] == 3 and check["calls"]["calls"] == 60
    assert any(0 < s < 1 for s in check["samples"])  # an item's share of its 3 answers, not one 0/1 answer
    assert interval_for("binary", check["samples"]) == "bounded" and interval_for("binary", [0, 1, 1]) == "binary"


def test_the_plan_counts_and_prices_the_judge_on_each_of_k_answers(pytester):
    """The judge rates every answer, so K answers an item cost K times the judge calls and dollars of one."""
    pytester.makefile(
        ".yaml", q="suite: q\nchecks:\n  - id: quality\n    measure: quality_disparity\n    comparison: gender\n"
        "    samples: 20\n    threshold: {max: 1}\n",
    )  # fmt: skip
    judge = "--fairness-judge=openai:judge@http://127.0.0.1:9/v1?price_in=1000&price_out=1000"
    totals = {}
    for k in (1, 3):
        result = pytester.runpytest_inprocess(
            "-p", "no:cacheprovider", "--fairness-suite=q.yaml", "--fairness-model=synthetic", judge,
            f"--fairness-samples-per-item={k}", "--fairness-plan",
        )  # fmt: skip
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
        (total,) = [line.split()[2:] for line in result.stdout.lines if line.startswith("total $")]
        totals[k] = float(total[2].replace(",", "")), float(total[3].replace(",", ""))
        if k == 3:
            result.stdout.fnmatch_lines(["*judge calls of q::quality: *× K = 3 answers an item*"])
    assert totals[3][0] == 3 * totals[1][0] > 0  # judge calls
    assert totals[3][1] == pytest.approx(3 * totals[1][1], rel=0.01) and totals[1][1] > 0  # judge dollars


def test_the_paired_plan_counts_every_request_of_a_sample_and_prices_the_judge_as_the_plan_table_does(pytester):
    """A quality sample is a pair's two answers, each rated by the judge: the paired planner's calls and dollars
    are the plan table's for the same size, not one call per item at the model's price alone."""
    document = (
        "suite: q\nchecks:\n  - id: quality\n    measure: quality_disparity\n    comparison: gender\n"
        "    samples: 150\n    threshold: {max: 1}\n"
    )
    assert (
        run_line(pytester, document, "--fairness-model=synthetic", "--fairness-baselines", "--snapshot-update").ret == 0
    )
    judge = "--fairness-judge=synthetic?price_in=1000&price_out=1000"
    args = ("--fairness-model=synthetic", judge, "--fairness-gate=pr", "--fairness-cache-mode=off", "--fairness-plan")
    result = run_line(pytester, document, *args)
    (row,) = [line.split() for line in result.stdout.lines if line.startswith("q::quality ") and "." not in line]
    (priced,) = [line.split() for line in result.stdout.lines if line.startswith("q::quality ") and "." in line]
    (paired,) = [line for line in result.stdout.lines if "q::quality: paired plan:" in line]
    calls = int(paired.split(" calls (")[0].split()[-1].replace(",", ""))
    usd = float(paired.split(" calls ($")[1].split(")")[0].replace(",", ""))
    assert calls == int(row[4]) == 2 * int(row[1])  # both answers of each planned pair
    assert usd == pytest.approx(float(priced[-2].replace(",", "")), rel=0.01) and usd > 0  # model and judge
