"""The release-vs-release CLI: every check listed, exit 1 on a regression, clear errors on bad inputs."""

import json
from dataclasses import replace

import pytest
from release_reports import V1, V2, record, write_report

from pytest_fairness.baseline import baseline_entry, check_stem, model_folder, render_baseline
from pytest_fairness.cli.main import main as cli
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.report.jsonfile import json_report
from pytest_fairness.report.tally import RunState
from pytest_fairness.util.serial import from_json


def main(argv: list[str]) -> int:
    return cli(["compare", *argv])


FOLDER = object()


@pytest.fixture
def v1(tmp_path):
    return write_report(tmp_path / "v1.json", [record("career", 0.1, 1), record("science", 0.0, 2)])


def test_a_rerun_of_the_same_model_exits_0_and_lists_every_check(v1, tmp_path, capsys):
    rerun = write_report(tmp_path / "rerun.json", [record("career", 0.1, 11), record("science", 0.0, 12)])
    assert main([str(v1), str(rerun)]) == 0
    out = capsys.readouterr().out
    assert "check" in out and "difference" in out and "status" in out
    assert out.count("unchanged") >= 2
    assert "2 unchanged" in out


def test_a_regression_exits_1_and_is_explained(v1, tmp_path, capsys):
    v2 = write_report(tmp_path / "v2.json", [record("career", 0.45, 3, model=V2), record("science", 0.0, 4, model=V2)])
    assert main([str(v1), str(v2), "--tolerance", "0.05"]) == 1
    out = capsys.readouterr().out
    assert f"old: {v1} ({V1})" in out and f"new: {v2} ({V2})" in out
    row = next(line for line in out.splitlines() if line.startswith("gender::career "))
    assert row.rstrip().endswith("REGRESSED")
    assert "gender::career REGRESSED: " in out and "it rose towards the maximum (≤ 0.2)" in out
    assert "1 regressed, 1 unchanged" in out and "family-wise error rate controlled at 0.05 (Holm)" in out


def test_a_large_enough_tolerance_for_a_check_absorbs_its_change(v1, tmp_path, capsys):
    v2 = write_report(tmp_path / "v2.json", [record("career", 0.45, 3, model=V2), record("science", 0.0, 4, model=V2)])
    assert main([str(v1), str(v2), "--tolerance", "0.05", "--tolerance", "gender::car*=0.5"]) == 0
    assert "2 unchanged" in capsys.readouterr().out


def test_a_check_missing_from_the_new_run_exits_1_and_a_new_one_is_only_reported(v1, tmp_path, capsys):
    v2 = write_report(tmp_path / "v2.json", [record("career", 0.1, 5, model=V2), record("power", 0.1, 6, model=V2)])
    assert main([str(v1), str(v2)]) == 1
    out = capsys.readouterr().out
    assert next(line for line in out.splitlines() if line.startswith("gender::power ")).rstrip().endswith("new")
    assert next(line for line in out.splitlines() if line.startswith("gender::science ")).rstrip().endswith("MISSING")
    assert "gender::science MISSING" in out and "the run fails: 1 missing" in out
    grown = write_report(
        tmp_path / "v3.json", [*(record(c, 0.1, i, model=V2) for i, c in enumerate(("career", "science", "power")))]
    )
    assert main([str(v1), str(grown)]) == 0  # a check that only the new run has fails nothing


@pytest.mark.parametrize(
    ("run", "records"),
    [
        (
            {
                "status": "errored",
                "selected": 2,
                "passed": 0,
                "failed": 0,
                "inconclusive": 0,
                "errored": 2,
                "not_run": 0,
            },
            0,
        ),
        (
            {
                "status": "interrupted",
                "selected": 2,
                "passed": 2,
                "failed": 0,
                "inconclusive": 0,
                "errored": 0,
                "not_run": 0,
            },
            2,
        ),
    ],
)
def test_a_new_run_that_errored_or_was_interrupted_exits_1_whatever_its_checks_say(v1, tmp_path, capsys, run, records):
    checks = [record("career", 0.1, 11, model=V2), record("science", 0.0, 12, model=V2)][:records]
    doc = json_report(checks, {"model": V2}, run=from_json(RunState, run))
    (tmp_path / "v2.json").write_text(json.dumps(doc))
    markdown = tmp_path / "c.md"
    assert main([str(v1), str(tmp_path / "v2.json"), "--markdown", str(markdown)]) == 1
    out = capsys.readouterr().out
    assert f"new run {run['status']}: of 2 selected checks, {run['errored']} errored" in out
    assert f"the run fails: the new run is {run['status']}, not complete" in out
    assert f"**New run {run['status']}**" in markdown.read_text()


def entry(check, estimate, *, sd=0.3, n=50, model=V1):
    """A baseline entry with chosen summary numbers, so a comparison's p is known in advance."""
    rec = record(check, 0.0, 1, model=model)
    return replace(baseline_entry(rec), estimate=estimate, sd=sd, n=n, ci=(estimate - 0.1, estimate + 0.1))


def write_folder(path, entries):
    path.mkdir(parents=True)
    for e in entries:
        (path / f"{check_stem(e.suite, e.check)}.yaml").write_text(render_baseline([e]))
    return path


@pytest.mark.parametrize(
    ("method", "code", "status"), [("holm", 0, "unchanged"), ("bh", 0, "unchanged"), ("none", 1, "REGRESSED")]
)
def test_one_change_at_p_0_01_among_20_checks_is_noise_for_holm_and_bh_but_not_per_check(
    tmp_path, capsys, method, code, status
):
    # sd 0.3, n 50 on both sides: se 0.06, so +0.157 has Welch p of about 0.01; x20 checks is 0.2 > 0.05.
    names = [f"c{i:02d}" for i in range(20)]
    old = write_folder(tmp_path / "old", [entry(c, 0.0) for c in names])
    new = write_folder(tmp_path / "new", [entry(c, 0.157 if c == "c00" else 0.0, model=V2) for c in names])
    assert main([str(old), str(new), "--multiplicity", method]) == code
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("gender::c00 "))
    assert row.rstrip().endswith(status)
    rate = {"holm": "family-wise error rate controlled at 0.05 (Holm)", "bh": "false-discovery rate controlled at 0.05"}
    assert rate.get(method, "no multiplicity correction") in out


def test_noninferiority_passes_a_release_within_the_margin_and_fails_one_not_shown_within_it(tmp_path, capsys):
    old = write_folder(tmp_path / "old", [entry("career", 0.10, n=200, sd=0.2), entry("science", 0.10, n=200, sd=0.2)])
    new = write_folder(
        tmp_path / "new",
        [entry("career", 0.11, n=200, sd=0.2, model=V2), entry("science", 0.16, n=200, sd=0.2, model=V2)],
    )
    assert main([str(old), str(new), "--mode", "noninferiority", "--tolerance", "0.05"]) == 1
    out = capsys.readouterr().out
    assert (
        next(line for line in out.splitlines() if line.startswith("gender::career ")).rstrip().endswith("non-inferior")
    )
    assert (
        next(line for line in out.splitlines() if line.startswith("gender::science "))
        .rstrip()
        .endswith("NOT NON-INFERIOR")
    )
    assert "90% [" in out  # the (1 - 2 alpha) interval that must lie within the margin
    assert "non-inferiority tests: 2 compared" in out


def test_a_baseline_folder_compares_against_a_report_and_markdown_is_written(v1, tmp_path, capsys):
    folder = tmp_path / "baselines" / model_folder(V1)
    folder.mkdir(parents=True)
    for raw in json.loads(v1.read_text())["checks"]:
        rec = CheckRecord.from_dict(raw)
        (folder / f"{check_stem(rec.suite, rec.check)}.yaml").write_text(render_baseline([baseline_entry(rec)]))
    markdown = tmp_path / "comparison.md"
    assert main([str(tmp_path / "baselines"), str(v1), "--markdown", str(markdown)]) == 0
    assert "2 unchanged" in capsys.readouterr().out
    assert "| `gender::career` |" in markdown.read_text()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("absent.json", None, "absent.json: no such file or folder"),
        ("other.json", '{"tests": []}', "not a pytest-fairness report"),
        ("broken.json", "{", "not valid JSON"),
        ("notes.txt", "x", "expected a .json report, a .yaml baseline or a baseline folder"),
        ("empty", FOLDER, "no baseline files"),
        (
            "gender.career.yaml",
            "model_id: m\nchecks:\n- {check: career, suite: gender, estimate: high, ci: [0, 1], n: 3}\n",
            "gender.career.yaml: baseline block gender::career cannot be read: estimate: could not convert string to "
            "float: 'high'; re-record it with --snapshot-update\n",
        ),
    ],
)
def test_unreadable_inputs_exit_2_with_a_clear_error(v1, tmp_path, capsys, name, content, message):
    path = tmp_path / name
    if content is FOLDER:
        path.mkdir()
    elif content is not None:
        path.write_text(content)
    assert main([str(v1), str(path)]) == 2
    assert message in capsys.readouterr().err


def test_a_folder_of_several_models_asks_for_one(v1, tmp_path, capsys):
    for model in (V1, V2):
        folder = tmp_path / "baselines" / model_folder(model)
        folder.mkdir(parents=True)
        entry = baseline_entry(record("career", 0.1, 1, model=model))
        (folder / "gender.career.yaml").write_text(render_baseline([entry]))
    assert main([str(tmp_path / "baselines"), str(v1)]) == 2
    assert "holds the baselines of several models" in capsys.readouterr().err
