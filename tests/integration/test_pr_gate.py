"""The pull-request gate (--fairness-gate=pr): each check against its committed baseline on the baseline's own
items, the threshold beside it; cannot-serve then and now reported, could-then-cannot-now a regression."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace

import pytest
from in_process import INPROCESS, PR_SUITE, pr_suite, run_line
from paths import REPO

from pytest_fairness.baseline.entry import Entry
from pytest_fairness.baseline.entry_comparison import compare
from pytest_fairness.baseline.pr_gate import pr_sizes, pr_verdict, same_items
from pytest_fairness.report import status
from pytest_fairness.stats.gate import Outcome
from pytest_fairness.stats.paired.noninferiority import PairedComparison

#: In-process runs: the outer run's xdist variables and syrupy session are undone around each one.
pytestmark = pytest.mark.usefixtures("in_process_syrupy")


def run(pytester: pytest.Pytester, model: str, *extra: str) -> pytest.RunResult:
    return run_line(pytester, PR_SUITE, f"--fairness-model=synthetic:iat?{model}", *extra)


def record(pytester: pytest.Pytester, model: str) -> None:
    """A release's baselines, recorded whatever its gates say (a model that cannot serve fails them)."""
    run(pytester, model, "--fairness-baselines", "--snapshot-update")
    assert len(list((pytester.path / "baselines" / "line").glob("*.yaml"))) == 3


def checks(pytester: pytest.Pytester) -> dict[str, dict]:
    return {c["check"]: c for c in json.loads((pytester.path / "out.json").read_text())["checks"]}


def _evidence(outcome: str, p_beyond: float = 1.0) -> PairedComparison:
    return PairedComparison(Outcome(outcome), 0.1, 1, (-0.05, 0.05), (-0.1, 0.1), 0.001, p_beyond, 0.0025, 200, 200,
                            0.5, 200, 300, "betting interval", pass_alpha=0.0025)  # fmt: skip


def _comparison(evidence: PairedComparison | None):
    entry = Entry(suite="s", check="c", estimate=0.1, ci=(0.0, 0.2), n=100, sd=0.3)
    base = compare(entry, entry, 0.0)
    return base if evidence is None else base.__class__(**{**base.__dict__, "paired": evidence})


EVIDENCE = {
    "no baseline": None,
    "unpaired": _comparison(None),
    "pass": _comparison(_evidence("pass")),
    "fail, shown at the run's level": _comparison(_evidence("fail", 1e-4)),
    "fail, not at the run's level": _comparison(_evidence("fail", 1e-3)),
    "undecided": _comparison(_evidence("inconclusive")),
}


@pytest.mark.parametrize("evidence", EVIDENCE)
@pytest.mark.parametrize("threshold", [Outcome.PASS, Outcome.FAIL, Outcome.INCONCLUSIVE])
def test_a_pull_request_pass_or_fail_is_only_ever_what_the_comparison_showed(evidence, threshold):
    """PASS only when shown within the margin, FAIL only when shown worse at the level split over the run's
    checks; whatever the threshold decided is named for it, and says the margin was not shown."""
    comparison = EVIDENCE[evidence]
    verdict = pr_verdict(threshold, comparison, False, 6)
    shown = None if comparison is None or comparison.paired is None else comparison.paired
    if verdict.outcome is Outcome.PASS:
        assert shown is not None and shown.outcome is Outcome.PASS and verdict.basis == "margin"
        assert verdict.claim == "within 0.1 of the baseline on all 200 of the baseline's items"
    elif verdict.outcome is Outcome.FAIL:
        assert shown is not None and shown.outcome is Outcome.FAIL and shown.p_beyond * 6 <= shown.fail_alpha
        assert verdict.basis == "margin"
    else:
        assert shown is None or shown.outcome is not Outcome.PASS
        assert (
            verdict.outcome
            is {
                Outcome.PASS: Outcome.WITHIN_THRESHOLD,
                Outcome.FAIL: Outcome.BEYOND_THRESHOLD,
                Outcome.INCONCLUSIVE: Outcome.INCONCLUSIVE,
            }[threshold]
        )
        assert verdict.basis == ("none" if threshold is Outcome.INCONCLUSIVE else "threshold")
        assert verdict.basis == "none" or verdict.why.endswith("(the margin not shown)")
    if evidence in ("pass", "fail, shown at the run's level"):  # the comparison decides, whatever the threshold
        assert verdict.outcome is Outcome(shown.outcome)


def test_what_the_threshold_decided_on_a_pull_request_follows_its_policy():
    assert pr_verdict(Outcome.INCONCLUSIVE, _comparison(None), False, 6).why == (
        "not paired (unchanged), and the threshold does not decide either"
    )
    assert status.test_outcome(Outcome.WITHIN_THRESHOLD, "fail") == "passed"  # the default: a pass, with a warning
    assert status.test_outcome(Outcome.WITHIN_THRESHOLD, "fail", "inconclusive") == "failed"
    assert status.test_outcome(Outcome.WITHIN_THRESHOLD, "skip", "inconclusive") == "skipped"
    assert status.test_outcome(Outcome.WITHIN_THRESHOLD, "pass", "inconclusive") == "passed"
    assert {status.test_outcome(Outcome.BEYOND_THRESHOLD, policy, pr) for policy in ("fail", "skip", "pass")
            for pr in ("pass", "inconclusive")} == {"failed"}  # fmt: skip
    still = pr_verdict(Outcome.CANNOT_SERVE, None, True, 6)
    assert still.outcome is Outcome.CANNOT_SERVE and not still.blocking
    assert pr_verdict(Outcome.CANNOT_SERVE, None, False, 6).blocking


def test_a_sequential_pull_request_looks_from_its_profiles_size_to_its_baselines():
    assert pr_sizes(40, 400, 1.5) == [40, 60, 90, 135, 202, 303, 400]
    assert pr_sizes(500, 400, 1.5) == [400] and pr_sizes(1, 3, 1.5) == [1, 2, 3]


def test_a_pull_request_takes_the_seed_and_size_of_its_baseline():
    entry = Entry(suite="s", check="c", estimate=0.1, ci=(0.0, 0.2), n=120)
    assert same_items(replace(entry, params={"seed": 3, "iterations": 120}), "iterations") == (3, 120)
    assert same_items(None, "iterations") == (None, None)
    assert same_items(replace(entry, params={"seed": "x"}), "iterations") == (None, None)


def test_an_unchanged_model_passes_from_the_cache_at_its_baselines_items_and_a_planted_regression_fails(pytester):
    record(pytester, "bias=0.1")
    same = run(pytester, "bias=0.1", "--fairness-gate=pr", "--fairness-seed=7")  # the baseline's seed wins
    assert same.ret == pytest.ExitCode.OK, same.stdout.str()[-3000:]
    found = checks(pytester)
    for check in found.values():
        assert check["outcome"] == "pass" and check["result"]["calls"]["calls"] == 0
        assert check["result"]["params"]["seed"] == 0 and check["result"]["n"] == 200
        gate = check["result"]["details"]["pr_gate"]
        assert gate["why"] == "shown within 0.1 of the baseline on all 200 of the baseline's items"
        assert gate["basis"] == "margin" and check["baseline"]["status"] == "within margin"

    planted = run(pytester, "bias=0.9", "--fairness-gate=pr")
    assert planted.ret == pytest.ExitCode.TESTS_FAILED
    assert {c["outcome"] for c in checks(pytester).values()} == {"fail"}
    planted.stdout.fnmatch_lines(
        [
            "*pull-request gate: shown worse than the baseline by more than 0.1 on all 200 of the baseline's items "
            "(the threshold alone: FAIL)",
            "*pr::islam REGRESSED: * paired on 200 items*",
        ]
    )


def test_a_check_that_could_not_serve_then_and_still_cannot_is_reported_but_one_that_could_is_a_regression(pytester):
    record(pytester, "bias=0.1&unusable=1")
    still = run(pytester, "bias=0.1&unusable=1", "--fairness-gate=pr")
    assert still.ret == pytest.ExitCode.OK
    assert {c["outcome"] for c in checks(pytester).values()} == {"cannot_serve"}
    still.stdout.fnmatch_lines(["*3 cannot serve*"])

    # a baseline written before baselines said why (no "unserved" key): its missing estimate says it
    for path in (pytester.path / "baselines" / "line").glob("*.yaml"):
        text = path.read_text()
        assert "\n  unserved: " in text and "estimate: null" in text
        path.write_text(re.sub(r"\n  unserved: .*?(?=\n  [a-z_]+:|\n- check|\Z)", "", text, flags=re.S))
        assert "unserved" not in path.read_text()
    older = run(pytester, "bias=0.1&unusable=1", "--fairness-gate=pr")
    assert older.ret == pytest.ExitCode.OK, older.stdout.str()[-2000:]
    assert {c["result"]["details"]["pr_gate"]["why"] for c in checks(pytester).values()} == {
        "it could not serve at the baseline either: nothing changed"
    }

    record(pytester, "bias=0.1")
    lost = run(pytester, "bias=0.1&unusable=1", "--fairness-gate=pr")
    assert lost.ret == pytest.ExitCode.TESTS_FAILED
    assert {c["result"]["details"]["pr_gate"]["why"] for c in checks(pytester).values()} == {
        "it served at the baseline and cannot now: a regression"
    }


def test_under_sequential_a_pull_request_grows_through_its_baselines_next_items_until_it_decides(pytester):
    pytester.makefile(".yaml", grow=PR_SUITE.replace("samples: 200", "samples: {quick: 40, release: 400}"))
    base = ["--fairness-suite=grow.yaml", "--fairness-baseline-model=line"]
    common = [*INPROCESS, *base, "--fairness-report=out.json"]
    pytester.runpytest(*common, "--fairness-model=synthetic:iat?bias=0.1", "--fairness-profile=release",
                       "--fairness-baselines", "--snapshot-update")  # fmt: skip
    same = pytester.runpytest(*common, "--fairness-model=synthetic:iat?bias=0.1", "--fairness-gate=pr",
                              "--fairness-sequential")  # fmt: skip
    assert same.ret == pytest.ExitCode.OK, same.stdout.str()[-2000:]
    for check in checks(pytester).values():
        paired = check["baseline"]["paired"]
        assert check["outcome"] == "pass" and paired["method"] == "confidence sequence"
        assert 40 < check["result"]["n"] < 400 and paired["undrawn"] == 400 - check["result"]["n"]
    worse = pytester.runpytest(*common, "--fairness-model=synthetic:iat?bias=0.9", "--fairness-gate=pr",
                               "--fairness-sequential")  # fmt: skip
    assert worse.ret == pytest.ExitCode.TESTS_FAILED
    for check in checks(pytester).values():
        assert check["outcome"] == "fail" and check["result"]["n"] < 400


def test_the_committed_embedded_baselines_make_a_pull_request_that_still_cannot_serve_report_it_without_blocking(
    pytester,
):
    """The embedded model's decision-bias baselines, recorded at release size as the release job records them,
    say the model cannot serve the measure: a pull request whose model still cannot is reported, exit 0."""
    embedded = next((REPO / "baselines").glob("local_SmolLM2-*"))
    line = pytester.path / "baselines" / "line"
    line.mkdir(parents=True)
    for path in embedded.glob("gender.decision_bias*.yaml"):
        shutil.copy(path, line / path.name)
    assert len(list(line.glob("*.yaml"))) == 4
    result = pytester.runpytest(
        *INPROCESS, "--fairness-suite=gender", "-k", "decision_bias", "--fairness-model=synthetic?unusable=0.9",
        "--fairness-gate=pr", "--fairness-baseline-model=line", "--fairness-report=out.json",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK
    gates = [c["result"]["details"]["pr_gate"] for c in checks(pytester).values()]
    assert len(gates) == 4 and {g["outcome"] for g in gates} == {"cannot_serve"}
    assert all(g["why"] == "it could not serve at the baseline either: nothing changed" for g in gates)


def test_the_plan_and_the_budget_of_a_pull_request_price_its_baselines_items_not_its_profiles_size(pytester):
    """A pull request draws its baseline's items (200 here, though the suite now says 20): --fairness-plan and
    the budget check price those, so a budget that the profile's size would keep stops the run before it starts."""
    record(pytester, "bias=0.1")
    smaller = PR_SUITE.replace("samples: 200", "samples: 20")
    priced = "--fairness-model=synthetic:iat?bias=0.1&price_in=1000000&price_out=1000000"
    planned = run_line(pytester, smaller, priced, "--fairness-gate=pr", "--fairness-plan", "--fairness-cache-mode=off")
    assert planned.ret == pytest.ExitCode.OK, planned.stdout.str()[-3000:]
    release = run_line(pytester, smaller, priced, "--fairness-plan", "--fairness-cache-mode=off")
    pr, profile = _plan_rows(planned), _plan_rows(release)
    assert {row[0] for row in profile.values()} == {20}
    assert all(pr[c][0] > 20 and pr[c][1] > profile[c][1] for c in pr), planned.stdout.str()
    budget = f"--fairness-budget={_plan_total(release) * 1.5:.0f}"  # the profile's size fits, the baseline's not
    assert run_line(pytester, smaller, priced, "--fairness-cache-mode=off", budget).ret == pytest.ExitCode.OK
    stopped = run_line(pytester, smaller, priced, "--fairness-gate=pr", "--fairness-cache-mode=off", budget)
    assert stopped.ret == pytest.ExitCode.INTERRUPTED
    stopped.stdout.fnmatch_lines(["*stopped before the first check: the plan costs $*above --fairness-budget*"])


def _plan_rows(result: pytest.RunResult) -> dict[str, tuple[int, int]]:
    """Per check of the plan's first table: its n and its requests."""
    rows = [line.split() for line in result.stdout.lines if line.startswith("pr::") and "." not in line]
    return {row[0]: (int(row[1].replace(",", "")), int(row[4].replace(",", ""))) for row in rows}


def _plan_total(result: pytest.RunResult) -> float:
    (total,) = [line.split()[2] for line in result.stdout.lines if line.startswith("total $")]
    return float(total.replace(",", ""))


def test_every_committed_embedded_baseline_lets_an_unchanged_model_pass_from_its_cache_or_says_it_cannot_serve():
    """The embedded model's gender baselines, recorded as the release job records them: each check either keeps
    enough items that identical answers (an unchanged model answered from the release's cache) pass its margin,
    or says the model could not serve it (a pull request whose model still cannot is reported, not blocking).
    Shown end to end: the workflow's PR command on these files with the release's cache, exit 0, 0 calls."""
    from pytest_fairness.baseline.entry import parse_baseline
    from pytest_fairness.baseline.snapshot import items_beside
    from pytest_fairness.config import suite
    from pytest_fairness.stats.paired.matching import pair_items
    from pytest_fairness.stats.paired.noninferiority import PairedGate, compare_paired

    folder = next((REPO / "baselines").glob("local_SmolLM2-*"))
    checks = {c.id: c for c in suite.load("gender").checks}
    paired, unserved = [], []
    for path in sorted(folder.glob("gender.*.yaml")):
        (entry,) = parse_baseline(path.read_text(encoding="utf-8"))
        if entry.could_not_serve:
            unserved.append(entry.check)
            continue
        check, recorded = checks[entry.check], items_beside(path, entry)
        assert not recorded.problem, (entry.check, recorded.problem)
        exact = check.params.items_exact(entry.fidelity)  # PCF's log-probabilities: PASS at min(alpha, γ)
        assert exact == (check.measure.name == "pcf")
        gate = PairedGate(check.params.pr_margin(), 0, exact=exact)
        same = compare_paired(pair_items(recorded.items, recorded.items), check.measure.bounds, gate)
        assert same.outcome is Outcome.PASS, (entry.check, same)
        paired.append(entry.check)
    assert len(paired) == 6 and len(unserved) == 8 and len(paired) + len(unserved) == len(checks)


SIX = pr_suite(stereotypes=("islam", "judaism", "buddhism", "career", "science", "power"))


def test_twice_the_margin_in_a_six_check_run_never_reads_pass_and_every_output_names_what_the_threshold_decided(
    pytester,
):
    """A regression of about twice the margin (the synthetic model's bias 0.1 → 0.3: +0.2 on every check): the
    paired comparison shows some checks worse than the margin and leaves the others undecided; those are WITHIN
    THRESHOLD (≤ 0.5 still holds), never PASS, in the terminal, JSON, Markdown, JUnit and annotations."""
    from pytest_fairness.report.ci_workflow import workflow_commands

    run_line(pytester, SIX, "--fairness-model=synthetic:iat?bias=0.1", "--fairness-baselines", "--snapshot-update")
    worse = run_line(pytester, SIX, "--fairness-model=synthetic:iat?bias=0.3", "--fairness-gate=pr",
                     "--fairness-markdown=out.md", "--junitxml=out.xml")  # fmt: skip
    report = json.loads((pytester.path / "out.json").read_text())
    outcomes = {c["check"]: c["outcome"] for c in report["checks"]}
    assert set(outcomes.values()) == {"fail", "within_threshold"}, outcomes
    assert worse.ret == pytest.ExitCode.TESTS_FAILED  # the FAILs fail it
    within = [c for c in report["checks"] if c["outcome"] == "within_threshold"]
    for check in within:
        gate = check["result"]["details"]["pr_gate"]
        assert (
            gate["basis"] == "threshold" and gate["threshold"] == "pass" and check["baseline"]["status"] == "undecided"
        )
        assert gate["why"].endswith("the threshold alone decides, within it (the margin not shown)")
    assert report["outcomes"]["within_threshold"] == len(within) and report["outcomes"]["pass"] == 0
    worse.stdout.fnmatch_lines([f"*{len(outcomes) - len(within)} failed*{len(within)} within threshold*"])
    markdown = (pytester.path / "out.md").read_text()
    assert f"{len(within)} within threshold (margin not shown)" in markdown.splitlines()[4]
    assert any(f"`pr::{within[0]['check']}`" in line and "within threshold (margin not shown)" in line
               for line in markdown.splitlines())  # fmt: skip
    assert '<property name="fairness_outcome" value="within_threshold"' in (pytester.path / "out.xml").read_text()
    notes = [c for c in workflow_commands(report) if "::WITHIN THRESHOLD: " in c]
    assert len(notes) == len(within) and all(c.startswith("::warning ") for c in notes)

    # a regression at the margin leaves every check undecided: WITHIN THRESHOLD passes with its warning by default,
    # or counts as inconclusive under the option (then --fairness-inconclusive decides)
    margin = ["--fairness-model=synthetic:iat?bias=0.2", "--fairness-gate=pr"]
    default = run_line(pytester, SIX, *margin)
    assert default.ret == pytest.ExitCode.OK, default.stdout.str()[-3000:]
    assert {c["outcome"] for c in json.loads((pytester.path / "out.json").read_text())["checks"]} == {
        "within_threshold"
    }
    default.stdout.fnmatch_lines(["*= within-threshold checks =*", "*= 6 within threshold in *"])
    strict = run_line(pytester, SIX, *margin, "--fairness-pr-threshold=inconclusive")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    skipped = run_line(pytester, SIX, *margin, "--fairness-pr-threshold=inconclusive", "--fairness-inconclusive=skip")
    assert skipped.ret == pytest.ExitCode.OK


def _restless(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A model that does not reproduce its answers (``tests/python_apps/restless.py``), its baseline of 400 items
    recorded, and the arguments of a sequential pull request against it with the cache off."""
    shutil.copy(REPO / "tests" / "python_apps" / "restless.py", pytester.path / "restless.py")
    monkeypatch.syspath_prepend(str(pytester.path))
    pytester.makefile(".yaml", grow=PR_SUITE.replace("samples: 200", "samples: {quick: 40, release: 400}"))
    base = [*INPROCESS, "--fairness-suite=grow.yaml", "--fairness-baseline-model=line", "--fairness-report=out.json",
            "--fairness-model=python:restless:Restless"]  # fmt: skip
    pytester.runpytest(*base, "--fairness-profile=release", "--fairness-baselines", "--snapshot-update")
    return [*base, "--fairness-gate=pr", "--fairness-sequential", "--fairness-cache-mode=off", "-k", "islam"]


def test_a_sequential_pull_request_keeps_its_answers_so_its_looks_nest_whatever_the_cache_does(pytester, monkeypatch):
    """With the cache off, a model that does not reproduce its answers would give each look new ones, and the
    confidence sequence would decide on looks that are not nested; the runner keeps this run's answers instead."""
    run = pytester.runpytest(*_restless(pytester, monkeypatch))
    assert run.ret == pytest.ExitCode.OK, run.stdout.str()[-3000:]
    (check,) = checks(pytester).values()
    assert "resampled_looks" not in check["result"]["details"] and check["baseline"]["paired"] is not None
    assert check["baseline"]["paired"]["method"] == "confidence sequence"
    assert check["outcome"] in ("pass", "within_threshold")  # an unchanged model: never a FAIL
    calls = check["result"]["calls"]  # the last look's: its new items called, the earlier ones kept
    assert calls["calls"] + calls["cache_hits"] == check["result"]["n"] and calls["calls"] < check["result"]["n"]


def test_looks_that_re_score_their_items_stop_the_sequence_and_say_why(pytester, monkeypatch):
    """Were the runner not to keep its answers (here: told to forget), the second look re-scores the first
    look's items: the run stops there, its comparison stays unpaired and says why, and no PASS comes of it."""
    from pytest_fairness.models.runner import Runner

    monkeypatch.setattr(Runner, "remember", lambda self: None)
    run = pytester.runpytest(*_restless(pytester, monkeypatch))
    (check,) = checks(pytester).values()
    why = check["result"]["details"]["resampled_looks"]
    assert why.startswith("look 2 (60 items) scored ") and "keep the run's answers" in why, why
    assert check["result"]["n"] == 60 and check["baseline"]["paired"] is None
    assert check["baseline"]["unpaired"] == why
    assert check["outcome"] in ("within_threshold", "beyond_threshold", "inconclusive")
    assert run.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
