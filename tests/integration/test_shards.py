"""A run split into shards (--fairness-shard=I/N) and merged (python -m pytest_fairness merge) decides as the same
run unsharded: the same JSON report field by field (but timing and the shard section), Markdown and exit status;
and shards that are not one whole run are refused in one line."""

import json
from pathlib import Path

import pytest
from report_fields import untimed, untimed_markdown

from pytest_fairness.cli.main import main
from pytest_fairness.stats import multiplicity

SUITES = ["--fairness-suite=gender,religion", "--fairness-model=synthetic:iat?bias=0.3", "--fairness-profile=quick"]
INPROCESS = ["-p", "no:randomly", "-p", "no:cacheprovider"]
#: Unsharded runs by their arguments, made once per process: each test compares its shards with it.
WHOLE: dict[tuple[str, ...], tuple[dict, str, int]] = {}


#: In-process runs: the outer run's xdist variables and syrupy session are undone around each one.
pytestmark = pytest.mark.usefixtures("in_process_syrupy")


def run(pytester, name: str, *args: str):
    """One pytest process of the run (in this one), with its own cache, JSON report and Markdown."""
    files = [f"--fairness-cache={name}.sqlite", f"--fairness-report={name}.json", f"--fairness-markdown={name}.md"]
    return pytester.runpytest(*INPROCESS, *args, *files)


def outputs(folder: Path, name: str) -> tuple[dict, str]:
    return json.loads((folder / f"{name}.json").read_text()), (folder / f"{name}.md").read_text()


def whole(pytester, *args: str) -> tuple[dict, str, int]:
    """The unsharded run's JSON, Markdown and exit status."""
    if args not in WHOLE:
        result = run(pytester, "whole", *args)
        WHOLE[args] = (*outputs(pytester.path, "whole"), result.ret)
    return WHOLE[args]


def sharded(pytester, count: int, *args: str) -> list:
    return [run(pytester, f"shard{i}", *args, f"--fairness-shard={i}/{count}") for i in range(1, count + 1)]


def merge(folder: Path, names: list[str], *extra: str) -> int:
    paths = [str(folder / f"{name}.json") for name in names]
    return main(
        ["merge", *paths, "--report", str(folder / "merged.json"), "--markdown", str(folder / "merged.md"), *extra]
    )


def assert_merged_equals_whole(pytester, count: int, *args: str) -> None:
    report, markdown, status = whole(pytester, *args)
    shards = sharded(pytester, count, *args)
    assert [s.ret for s in shards] == [pytest.ExitCode.OK] * count  # a shard's status says only that it ran
    parts = [json.loads((pytester.path / f"shard{i}.json").read_text())["shard"]["checks"] for i in range(1, count + 1)]
    assert sorted(label for part in parts for label in part) == sorted(
        f"{c['suite']}::{c['check']}" for c in report["checks"]
    )
    assert all(parts), "every shard got checks"
    assert merge(pytester.path, [f"shard{i}" for i in range(1, count + 1)]) == status
    merged_report, merged_markdown = outputs(pytester.path, "merged")
    assert untimed(merged_report) == untimed(report)
    assert untimed_markdown(merged_markdown) == untimed_markdown(markdown)


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_a_run_merged_from_its_shards_equals_the_run_unsharded(pytester, count):
    assert_merged_equals_whole(pytester, count, *SUITES)


def test_a_k_subset_merged_from_three_shards_equals_it_unsharded(pytester):
    assert_merged_equals_whole(pytester, 3, *SUITES, "-k", "implicit or pcf")


def test_collect_only_shows_each_shard_its_own_checks(pytester):
    def collected(*extra: str) -> list[str]:
        out = pytester.runpytest(*INPROCESS, *SUITES, "--collect-only", "-q", *extra).stdout.lines
        return [line for line in out if line.startswith("fairness/")]

    every = collected()
    parts = [collected(f"--fairness-shard={i}/3") for i in (1, 2, 3)]
    assert sorted(node for part in parts for node in part) == sorted(every) and all(parts)
    # net harm and the axes read the same answers: they stay in one shard
    answers = [i for i, part in enumerate(parts) for node in part if "net_harm" in node or "bias_axes" in node]
    assert len(set(answers)) == 1


HOLM_SUITE = """\
suite: holm
checks:
  - id: pcf_prejudice
    measure: pcf
    attribute: gender
    risk: prejudice
    threshold: {max: 1000}
  - measure: implicit_bias
    stereotypes: [islam, judaism, buddhism]
    threshold: {max: 1}
  - measure: decision_bias
    stereotypes: [islam, judaism]
    threshold: {max: 1}
"""
#: Baselines recorded at seed 0 without bias; the new run at seed 2 (fresh noise) plants a PCF regression.
HOLM = ["--fairness-suite=holm.yaml", "--fairness-baselines", "--fairness-baseline-model=line", "--fairness-seed=2"]


def owner(folder: Path) -> int:
    """The shard that ran the PCF check."""
    for i in (1, 2, 3):
        if "holm::pcf_prejudice" in json.loads((folder / f"shard{i}.json").read_text())["shard"]["checks"]:
            return i
    raise AssertionError("no shard ran the PCF check")


def test_holm_across_shards_adjusts_one_regression_among_six_checks_as_one_run(pytester):
    pytester.makefile(".yaml", holm=HOLM_SUITE)
    recorded = pytester.runpytest(*INPROCESS, *HOLM[:-1], "--fairness-model=synthetic:pcf?bias=0", "--snapshot-update")
    assert len(list((pytester.path / "baselines" / "line").glob("*.yaml"))) == 6, recorded.stdout.str()
    args = [*HOLM, "--fairness-model=synthetic:pcf?bias=0.8"]  # a planted regression in the PCF check only
    report, markdown, status = whole(pytester, *args)
    shards = sharded(pytester, 3, *args)
    assert [s.ret for s in shards] == [pytest.ExitCode.OK] * 3
    assert merge(pytester.path, ["shard1", "shard2", "shard3"]) == status == pytest.ExitCode.TESTS_FAILED
    merged, merged_markdown = outputs(pytester.path, "merged")
    assert merged["baselines"] == report["baselines"]
    decided = merged["baselines"]["checks"]
    assert [c["status"] for c in decided.values()].count("regressed") == 1
    assert decided["holm::pcf_prejudice"]["status"] == "regressed"
    raw = [c["p"] for c in decided.values()]
    adjusted = [c["p_adjusted"] for c in decided.values()]
    assert len(raw) == 6 and adjusted == multiplicity.holm(raw)  # one family of six, across the shards
    per_shard = {}  # what each shard alone would have adjusted: not the run's decision
    for i in (1, 2, 3):
        mine = json.loads((pytester.path / f"shard{i}.json").read_text())["shard"]["checks"]
        per_shard |= dict(zip(mine, multiplicity.holm([decided[c]["p"] for c in mine]), strict=True))
        assert ("holm::pcf_prejudice" in mine) == (i == owner(pytester.path)), "the regression sits on one shard"
    assert [per_shard[c] for c in decided] != adjusted
    assert untimed(merged) == untimed(report) and untimed_markdown(merged_markdown) == untimed_markdown(markdown)


TINY = """\
suite: tiny
checks:
  - measure: implicit_bias
    stereotypes: [islam, judaism, buddhism]
    threshold: {max: 0.01}
"""
TINY_ARGS = ["--fairness-suite=tiny.yaml", "--fairness-model=synthetic:iat?bias=0.1"]


@pytest.fixture
def two_shards(pytester):
    """Both shards of a small run, written as shard1.json and shard2.json."""
    pytester.makefile(".yaml", tiny=TINY)
    assert [s.ret for s in sharded(pytester, 2, *TINY_ARGS)] == [0, 0]
    return pytester


def refused(capsys, folder: Path, names: list[str], *words: str) -> None:
    """The merge exits 2 with one line naming the problem, and writes nothing."""
    capsys.readouterr()
    assert merge(folder, names) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("pytest-fairness merge: "), err
    assert all(word in err for word in words), err
    assert not (folder / "merged.json").exists() and not (folder / "merged.md").exists()


def test_shards_of_another_seed_are_refused(two_shards, capsys):
    run(two_shards, "other", *TINY_ARGS, "--fairness-shard=2/2", "--fairness-seed=7")
    refused(capsys, two_shards.path, ["shard1", "other"], "another run", "seed 7 vs 0")


def test_shards_of_a_changed_suite_are_refused(two_shards, capsys):
    two_shards.makefile(".yaml", tiny=TINY.replace("0.01", "0.02"))
    run(two_shards, "other", *TINY_ARGS, "--fairness-shard=2/2")
    refused(capsys, two_shards.path, ["shard1", "other"], "another run", "suite files differ")


def test_shards_of_another_plugin_version_are_refused(two_shards, capsys):
    path = two_shards.path / "shard2.json"
    document = json.loads(path.read_text())
    document["shard"]["fingerprint"]["plugin"] = "0.0.1"
    path.write_text(json.dumps(document))
    refused(capsys, two_shards.path, ["shard1", "shard2"], "pytest-fairness version differ")


def test_a_shard_given_twice_or_missing_is_refused(two_shards, capsys):
    refused(capsys, two_shards.path, ["shard1", "shard1"], "shard 1/2 is given twice")
    refused(capsys, two_shards.path, ["shard1"], "shard(s) 2 of 2 missing")


def test_a_partition_that_does_not_cover_the_run_is_refused(two_shards, capsys):
    path = two_shards.path / "shard2.json"
    document = json.loads(path.read_text())
    dropped = document["shard"]["checks"].pop()
    document["checks"] = [c for c in document["checks"] if f"{c['suite']}::{c['check']}" != dropped]
    path.write_text(json.dumps(document))
    refused(capsys, two_shards.path, ["shard1", "shard2"], "do not cover the run", dropped)


def test_a_truncated_shard_report_is_refused(two_shards, capsys):
    path = two_shards.path / "shard2.json"
    path.write_text(path.read_text()[:500])
    refused(capsys, two_shards.path, ["shard1", "shard2"], "shard2.json", "cut short")


def test_an_interrupted_shard_is_refused(two_shards, capsys):
    # -x stops a shard at its first failed gate (every gate fails at this threshold): its other checks never ran
    sizes = [len(json.loads((two_shards.path / f"shard{i}.json").read_text())["shard"]["checks"]) for i in (1, 2)]
    index = 1 + sizes.index(max(sizes))
    stopped = run(two_shards, f"shard{index}", *TINY_ARGS, f"--fairness-shard={index}/2", "-x")
    assert stopped.ret != 0 and json.loads((two_shards.path / f"shard{index}.json").read_text())["run"]["not_run"] > 0
    refused(capsys, two_shards.path, ["shard1", "shard2"], "did not finish", "rerun that shard")


def test_a_shard_re_recording_baselines_writes_its_own_checks_only_and_keeps_the_others(pytester):
    """A sharded release re-records each shard's checks in its own job; the rebaseline job joins the files each
    shard wrote. So a shard under --snapshot-update must write exactly its own checks' files and never rewrite or
    delete another shard's."""
    pytester.makefile(".yaml", holm=HOLM_SUITE)
    record = [*INPROCESS, *HOLM[:-1], "--fairness-model=synthetic:pcf?bias=0", "--snapshot-update"]
    pytester.runpytest(*record, "--fairness-seed=0")
    folder = pytester.path / "baselines" / "line"
    before = {p.name: p.read_text() for p in folder.iterdir()}
    assert len([n for n in before if n.endswith(".yaml")]) == 6
    shard = pytester.runpytest(*record, "--fairness-seed=5", "--fairness-shard=1/3", "--fairness-report=shard1.json")
    assert shard.ret == pytest.ExitCode.OK, shard.stdout.str()
    labels = json.loads((pytester.path / "shard1.json").read_text())["shard"]["checks"]
    mine = {label.split("::")[1] for label in labels}
    after = {p.name: p.read_text() for p in folder.iterdir()}
    assert set(after) == set(before)  # nothing deleted, nothing another shard owns added
    changed = {name for name in after if after[name] != before[name]}
    assert mine and {name.split(".")[1] for name in changed} == mine  # its own checks re-recorded (new seed), only
