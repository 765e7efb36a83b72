"""Per-item baselines and the paired comparison a run makes with them: the companion file, the verdict on
the shared items, and every way a baseline's items can be unusable (one clear line, the unpaired comparison)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from in_process import PR_SUITE, run_line

from pytest_fairness.baseline.entry import Entry
from pytest_fairness.baseline.entry_comparison import compare
from pytest_fairness.baseline.items_file import (
    ItemsReference,
    digest,
    items_reference,
    parse_items,
    read_recorded,
    render_items,
    run_items,
)
from pytest_fairness.baseline.pairing import PairingInputs, paired
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.explain import explain
from pytest_fairness.stats.gate import Threshold
from pytest_fairness.stats.paired.matching import ItemScores, PairingError

#: In-process runs: the outer run's xdist variables and syrupy session are undone around each one.
pytestmark = pytest.mark.usefixtures("in_process_syrupy")


def run(pytester: pytest.Pytester, bias: float, *extra: str) -> pytest.RunResult:
    return run_line(pytester, PR_SUITE, "--fairness-baselines", f"--fairness-model=synthetic:iat?bias={bias}", *extra)


def comparisons(pytester: pytest.Pytester) -> dict[str, dict]:
    report = json.loads((pytester.path / "out.json").read_text())
    return {c["check"]: c["baseline"] for c in report["checks"]}


def folder(pytester: pytest.Pytester) -> Path:
    return pytester.path / "baselines" / "line"


# -- the companion file ---------------------------------------------------------------------------------


def test_an_items_file_is_deterministic_compact_and_groups_repeated_samples_of_an_item():
    keys = [("0:0", "0:0"), ("0:1", "p1"), ("0:1", "p1"), ("0:2", "0:2")]
    text = render_items(keys, [0.123456789, 1.0, 0.0, -0.5])
    assert text == render_items(keys, [0.123456789, 1.0, 0.0, -0.5])
    assert text.splitlines()[1:] == ["0:0\t\t0.123457", "0:1\tp1\t1", "0:1\tp1\t0", "0:2\t\t-0.5"]
    assert parse_items(text) == [
        ItemScores("0:0", "0:0", (0.123457,)),
        ItemScores("0:1", "p1", (1.0, 0.0)),
        ItemScores("0:2", "0:2", (-0.5,)),
    ]
    assert items_reference("s.c", text, 4) == ItemsReference("s.c.items.tsv", 4, digest(text))
    with pytest.raises(PairingError, match="line 2 of the items file is not key<TAB>cluster<TAB>score"):
        parse_items(text.replace("\t\t0.123457", " 0.123457"))
    with pytest.raises(ValueError, match="3 item keys for 2 scores"):
        render_items(keys[:3], [0.1, 0.2])


def test_a_recorded_items_file_is_used_only_when_present_and_unedited():
    text = render_items([("0:0", "0:0")], [0.5])
    reference = items_reference("s.c", text, 1)
    assert read_recorded(reference, text).items == (ItemScores("0:0", "0:0", (0.5,)),)
    assert "keeps no per-item scores" in read_recorded(None, None).problem
    assert (
        read_recorded(reference, None).problem
        == "its items file s.c.items.tsv is missing (it is committed beside the YAML)"
    )
    edited = read_recorded(reference, text.replace("0.5", "0.4")).problem
    assert edited == "its items file s.c.items.tsv does not match the hash in the YAML (edited or replaced)"


def _entry(estimate: float, n: int, seed: int = 0) -> Entry:
    return Entry(
        suite="s", check="c", measure="implicit_bias", subject="x", estimate=estimate,
        ci=(estimate - 0.1, estimate + 0.1), n=n, sd=0.3, threshold=Threshold(max=0.5),
        fidelity="f", versions={"v": "1"}, params={"seed": seed, "iterations": n}, model_id="m",
    )  # fmt: skip


def _items(n: int, shift: float, seed: int = 0, cluster: str = "") -> list[ItemScores]:
    rows = [(f"{seed}:{i}", cluster or f"{seed}:{i}") for i in range(n)]
    return run_items(rows, [((i * 37) % 11) / 11 - 0.5 + shift for i in range(n)])


def test_items_that_do_not_match_are_named_and_the_comparison_stays_unpaired():
    base = compare(_entry(0.0, 100), _entry(0.0, 100), 0.0)
    recorded = read_recorded(*_recorded(_items(100, 0.0)))
    inputs = PairingInputs(_items(100, 0.0, cluster="p"), (-1.0, 1.0), 0.1)
    mismatched = paired(base, recorded, inputs)
    assert mismatched.paired is None and mismatched.status == base.status
    assert (
        mismatched.unpaired
        == "its items do not match this run's: item '0:0' is in cluster '0:0' in the baseline but 'p' in the run"
    )
    assert "unpaired comparison (Welch)" in explain(mismatched)
    other_seed = paired(base, recorded, PairingInputs(_items(100, 0.0, seed=1), (-1.0, 1.0), 0.1))
    assert other_seed.unpaired.startswith("the run shares no item with its baseline (another seed")
    few = paired(
        compare(_entry(0.0, 50), _entry(0.0, 50), 0.0),
        read_recorded(*_recorded(_items(50, 0.0))),
        PairingInputs(_items(50, 0.0), (-1.0, 1.0), 0.1),
    )
    assert few.unpaired == (  # chosen by size before any difference is seen, so the choice cannot bias the test
        "50 shared prompts are too few for the paired interval to show the margin 0.1 (it needs 158); "
        "record the baseline and run at that size to pair"
    )
    no_items = paired(base, recorded, PairingInputs([], (-1.0, 1.0), 0.1))
    assert no_items.unpaired == "this run reports no per-item scores for the measure"
    changed = compare(_entry(0.0, 100), replace(_entry(0.0, 100), versions={"v": "2"}), 0.0)
    assert (
        paired(changed, recorded, inputs).unpaired
        == "the inputs differ from the baseline's, so its items are other items"
    )


def _recorded(items: list[ItemScores]) -> tuple[ItemsReference, str]:
    text = render_items([(i.key, i.cluster) for i in items], [i.scores[0] for i in items])
    return items_reference("s.c", text, len(items)), text


def test_a_paired_comparison_decides_on_the_shared_items_and_says_what_pairing_bought():
    recorded = read_recorded(*_recorded(_items(200, 0.0)))
    base = compare(_entry(0.0, 200), _entry(0.0, 200), 0.0)
    same = paired(base, recorded, PairingInputs(_items(200, 0.0), (-1.0, 1.0), 0.1))
    assert same.paired is not None and same.paired.outcome == "pass" and same.status == "within margin"
    assert same.difference == 0 and same.paired.undrawn == 0
    assert "paired on 200 items in 200 clusters (betting interval; ρ = 1.00" in explain(same)
    assert "shown within the margin 0.1 on all 200 of the baseline's items" in explain(same)
    worse = paired(base, recorded, PairingInputs(_items(170, 0.3), (-1.0, 1.0), 0.1))
    assert worse.paired.outcome == "fail" and worse.status == "regressed" and worse.paired.undrawn == 30
    assert worse.p == worse.paired.p_beyond < worse.paired.fail_alpha
    # the run restates it at the FAIL level, not at alpha: a p between the two does not count, and what it then
    # showed is neither a regression nor "unchanged"
    assert worse.restated(worse.paired.fail_alpha * 1.5, "holm", 2, 0.05).status == "undecided"
    assert worse.restated(worse.paired.fail_alpha / 2, "holm", 2, 0.05).status == "regressed"
    noisy = paired(base, recorded, PairingInputs(_items(200, 0.1), (-1.0, 1.0), 0.1))
    assert noisy.paired.outcome == "inconclusive" and noisy.status == "undecided" and not noisy.alarm
    noninferior = paired(compare(_entry(0.0, 200), _entry(0.0, 200), 0.1, mode="noninferiority"), recorded,
                         PairingInputs(_items(200, 0.0), (-1.0, 1.0), None))  # fmt: skip
    assert noninferior.status == "non-inferior" and noninferior.paired.margin == 0.1


def test_a_record_with_items_and_a_paired_comparison_round_trips_through_json():
    recorded = read_recorded(*_recorded(_items(100, 0.0)))
    comparison = paired(compare(_entry(0.0, 100), _entry(0.0, 100), 0.0), recorded,
                        PairingInputs(_items(100, 0.0), (-1.0, 1.0), 0.1))  # fmt: skip
    from pytest_fairness.records.measure_result import MeasureResult
    from pytest_fairness.stats.gate import Outcome
    from pytest_fairness.stats.intervals import summarize

    result = MeasureResult("implicit_bias", "x", summarize([0.1, 0.2]), 0, [], "f", "m", {}, {},
                           samples=[0.1, 0.2], items=[("0:0", "0:0"), ("0:1", "0:1")])  # fmt: skip
    record = CheckRecord("s", "c", Outcome.PASS, Threshold(max=0.5), result, comparison)
    again = CheckRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert again.result.items == result.items and again.baseline == comparison


# -- a run against its baseline ---------------------------------------------------------------------------


def test_an_unchanged_model_from_the_cache_pairs_to_identical_items_and_a_planted_regression_fails(pytester):
    assert run(pytester, 0.1, "--snapshot-update").ret == pytest.ExitCode.OK
    files = sorted(p.name for p in folder(pytester).iterdir())
    assert files == sorted(f"pr.{s}{x}" for s in ("buddhism", "islam", "judaism") for x in (".items.tsv", ".yaml"))
    islam = (folder(pytester) / "pr.islam.items.tsv").read_text()
    assert len(islam.splitlines()) == 201 and len(islam.encode()) < 4000  # 200 samples in under 4 kB
    assert f"sha256: {digest(islam)}" in (folder(pytester) / "pr.islam.yaml").read_text()

    same = run(pytester, 0.1)
    assert same.ret == pytest.ExitCode.OK
    report = json.loads((pytester.path / "out.json").read_text())
    assert sum(c["result"]["calls"]["calls"] for c in report["checks"]) == 0  # every answer from the cache
    for comparison in comparisons(pytester).values():
        assert comparison["status"] == "within margin" and comparison["paired"]["outcome"] == "pass"
        assert comparison["difference"] == 0 and comparison["paired"]["items"] == 200

    planted = run(pytester, 0.9)
    assert planted.ret == pytest.ExitCode.TESTS_FAILED
    for comparison in comparisons(pytester).values():
        assert comparison["status"] == "regressed" and comparison["paired"]["outcome"] == "fail"
    planted.stdout.fnmatch_lines(
        ["pr::islam REGRESSED: * paired on 200 items in 200 clusters *shown worse than the margin 0.1*"]
    )


def test_unusable_items_files_give_one_line_each_and_the_unpaired_comparison(pytester):
    assert run(pytester, 0.1, "--snapshot-update").ret == pytest.ExitCode.OK
    run(pytester, 0.1, "--fairness-seed=1")  # other prompts: nothing is shared
    for comparison in comparisons(pytester).values():
        assert comparison["unpaired"].startswith("the run shares no item with its baseline")
    where = folder(pytester)
    edited = where / "pr.islam.items.tsv"
    edited.write_text(edited.read_text().replace("0:7\t", "0:7x\t"))
    (where / "pr.judaism.items.tsv").unlink()
    old = where / "pr.buddhism.yaml"
    old.write_text(old.read_text().split("  items:")[0])  # a baseline recorded before items were kept
    run(pytester, 0.1)
    found = comparisons(pytester)
    assert (
        found["islam"]["unpaired"]
        == "its items file pr.islam.items.tsv does not match the hash in the YAML (edited or replaced)"
    )
    assert (
        found["judaism"]["unpaired"]
        == "its items file pr.judaism.items.tsv is missing (it is committed beside the YAML)"
    )
    assert found["buddhism"]["unpaired"].startswith("the baseline keeps no per-item scores")
    for comparison in found.values():
        assert comparison["paired"] is None and "unpaired comparison (Welch)" in comparison["explanation"]
