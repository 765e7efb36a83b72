"""Release gating end to end: baselines with statistical tolerance, xdist, sequential sampling, reports."""

import json

import pytest

BASE = [
    "--fairness-suite=religion",
    "-k",
    "implicit",
    "--fairness-baselines",
    "--fairness-baseline-model=line",
    "--fairness-inconclusive=pass",
    "-p",
    "no:cacheprovider",
]


def record(pytester, bias: float, seed: int = 0, *extra: str):
    return pytester.runpytest_subprocess(
        *BASE, f"--fairness-model=synthetic:iat?bias={bias}", f"--fairness-seed={seed}", *extra
    )


def test_a_planted_regression_fails_against_the_committed_baseline_with_a_readable_diff(pytester):
    record(pytester, 0.1, 0, "--snapshot-update").assert_outcomes(passed=3)
    files = sorted(p.name for p in (pytester.path / "baselines" / "line").iterdir())
    assert files == [f"religion.implicit_bias[{s}].yaml" for s in ("buddhism", "islam", "judaism")]
    result = record(pytester, 0.9, 1)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        ["religion::implicit_bias[[]*[]] REGRESSED: 0.1* -> 0.* Welch p = *", "-  estimate: 0.1*", "+  estimate: 0.*"]
    )


def test_an_unchanged_model_passes_over_reruns_at_the_configured_error_rate(pytester):
    # Each trial records a baseline with one seed and compares a rerun with another: alpha bounds the
    # false-alarm rate of that pair. (Reruns against one fixed baseline share its noise, so their alarms
    # are correlated: record baselines with large samples, and give noisy checks a tolerance.)
    alarms, compared = 0, 0
    for trial in range(10):
        folder = f"--fairness-baseline-dir=b{trial}"
        record(pytester, 0.1, 2 * trial, "--snapshot-update", folder)
        record(pytester, 0.1, 2 * trial + 1, folder, "--fairness-report=out.json")
        statuses = [c["baseline"]["status"] for c in json.loads((pytester.path / "out.json").read_text())["checks"]]
        compared += len(statuses)
        alarms += sum(status != "unchanged" for status in statuses)
    assert compared == 30
    assert alarms <= 4  # 30 comparisons at alpha 0.05: 1.5 expected, more than 4 has probability 0.016


def test_updating_baselines_in_parallel_is_refused(pytester):
    result = record(pytester, 0.1, 0, "--snapshot-update", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--snapshot-update rewrites baselines and must run serially: add -n 0*"])


def test_parallel_and_serial_runs_write_the_same_report(pytester):
    args = [
        "--fairness-suite=gender,religion",
        "--fairness-model=synthetic:iat?bias=0.3",
        "-k",
        "implicit or decision",
        "--fairness-cache-mode=off",
    ]
    pytester.runpytest(*args, "--fairness-report=serial.json")
    pytester.runpytest_subprocess(*args, "-n", "2", "--fairness-report=parallel.json")

    def results(name: str) -> dict:
        data = json.loads((pytester.path / name).read_text())
        return {
            c["check"]: {k: v for k, v in c["result"].items() if k != "calls"} | {"outcome": c["outcome"]}
            for c in data["checks"]
        }

    assert results("serial.json") == results("parallel.json")
    assert len(results("serial.json")) == 14


def test_sequential_sampling_stops_early_when_the_truth_is_far_from_the_threshold(pytester):
    args = [
        "--fairness-suite=gender",
        "--fairness-model=synthetic:iat?bias=0.9",
        "-k",
        "implicit",
        "--fairness-cache-mode=off",
        "--fairness-report=out.json",
    ]
    pytester.makeini("[pytest]\nfairness_profile = quick\n")
    fixed = pytester.runpytest(*args, "--fairness-profile=paper")  # fixed n = 50 per check
    sequential = pytester.runpytest(*args, "--fairness-sequential")  # 20 first, up to 80
    calls = [json.loads((pytester.path / "out.json").read_text())["totals"]["calls"]]
    pytester.runpytest(*args, "--fairness-profile=paper")
    calls.append(json.loads((pytester.path / "out.json").read_text())["totals"]["calls"])
    fixed.assert_outcomes(failed=4)
    sequential.assert_outcomes(failed=4)
    sequential_calls, fixed_calls = calls
    assert sequential_calls <= 0.5 * fixed_calls, calls


def test_sequential_sampling_keeps_drawing_while_inconclusive(pytester):
    pytester.makefile(
        ".yaml",
        s="suite: s\nchecks:\n  - measure: implicit_bias\n    stereotype: power\n"
        "    samples: 10\n    budget: 40\n    threshold: {max: 0.3}\n",
    )
    pytester.runpytest(
        "--fairness-suite=s.yaml",
        "--fairness-model=synthetic:iat?bias=0.3",
        "--fairness-sequential",
        "--fairness-report=out.json",
    )
    (check,) = json.loads((pytester.path / "out.json").read_text())["checks"]
    assert check["result"]["details"]["sequential"]["rounds"] == [10, 20, 30, 40]
    assert check["result"]["n"] == 40 and check["outcome"] == "inconclusive"


def test_markdown_report_with_plots(pytester):
    pytester.runpytest(
        "--fairness-suite=religion",
        "--fairness-model=synthetic:iat?bias=0.3",
        "-k",
        "implicit",
        "--fairness-markdown=report.md",
        "--fairness-plots=plots",
    )
    text = (pytester.path / "report.md").read_text()
    assert "religion::implicit_bias[islam]" in text and "![" in text
    assert any(p.suffix == ".png" for p in (pytester.path / "plots").iterdir())
