"""Evidence is chosen while a run streams: bounded keepers, a uniform order-free sample, every flagged pair up to
the cap, stable ids, and a JSON form that reads back into each kind."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from pytest_fairness.measures.bai import decision, implicit
from pytest_fairness.measures.fpf import quality
from pytest_fairness.measures.fpf.axes import bias_axes
from pytest_fairness.measures.fpf.harm import chunks, harm_evidence, net_harm, net_harm_core
from pytest_fairness.measures.fpf.harm.reference_audit import FLAG_MARGIN
from pytest_fairness.measures.pcf import prejudice_caprice as pcf
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner
from pytest_fairness.records.check_record import CheckRecord, result_from_dict
from pytest_fairness.records.evidence import KINDS, BottomK, Keeper, TopK, UnreadEvidence, read_evidence
from pytest_fairness.stats.gate import Threshold, decide
from pytest_fairness.stats.intervals import proportion_interval
from pytest_fairness.stats.paired.matching import ItemScores, most_moved, pair_items


def test_a_bottom_k_sample_is_the_same_whatever_the_order_and_never_larger_than_k():
    ids = [f"7:{d}/female|male/a|b" for d in range(5000)]
    first, second = BottomK(50, "s"), BottomK(50, "s")
    for i in ids:
        first.offer(i, lambda i=i: i)
    for i in random.Random(1).sample(ids, len(ids)):
        second.offer(i, lambda i=i: i)
    assert first.items() == second.items() and len(first.items()) == 50 and first.offered == 5000


def test_a_bottom_k_sample_keeps_each_item_with_probability_k_over_n():
    # 100 items, a sample of 10 under 2,000 salts: 0.1 lies in every item's Clopper-Pearson interval of its share
    # of samples, at 1 - 0.001/100 each (Bonferroni over the items: a uniform sampler fails this < 0.1% of the time)
    counts = np.zeros(100)
    for salt in range(2000):
        keep: BottomK[int] = BottomK(10, str(salt))
        for i in range(100):
            keep.offer(str(i), lambda i=i: i)
        counts[keep.items()] += 1
    intervals = [proportion_interval(int(c), 2000, 1 - 0.001 / 100) for c in counts]
    assert all(low <= 0.1 <= high for low, high in intervals), counts
    assert counts.sum() == 2000 * 10


def test_top_k_keeps_exactly_the_highest_and_builds_only_what_it_keeps():
    built: list[str] = []
    top: TopK[str] = TopK(3)
    for score, i in [(0.2, "a"), (0.9, "b"), (0.5, "c"), (0.1, "d"), (0.95, "e"), (0.5, "f")]:
        top.offer(score, i, lambda i=i: built.append(i) or i)
    assert top.items() == ["e", "b", "c"] and top.offered == 6  # ties: the smaller id
    assert "d" not in built  # below the cut once full: never built, its texts never copied


def test_a_keeper_marks_why_each_item_was_kept_and_samples_over_every_item():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Item:
        id: str
        why: str = ""

    keeper: Keeper[Item] = Keeper(cap=5, sample=20, salt="k")
    for i in range(200):
        keeper.offer(f"i{i}", float(i) if i % 10 == 0 else None, lambda i=i: Item(f"i{i}"))
    kept = keeper.kept()
    flagged = [k for k in kept if k.why.startswith("flagged")]
    assert [k.id for k in flagged] == ["i190", "i180", "i170", "i160", "i150"]
    assert len({k.id for k in kept}) == len(kept) == 5 + sum(k.why == "sampled" for k in kept)
    assert sum(k.why != "flagged" for k in kept) == 20  # the sample, flagged or not
    selection = keeper.selection("scored", "items")
    assert (selection.seen, selection.flagged, selection.kept_flagged, selection.sampled) == (200, 20, 5, 20)


# -- net harm ----------------------------------------------------------------------------------------------------

CHATBOT, JUDGE, REFERENCE = (
    "synthetic:harm?bias=0.3&unusable=0.1",
    "synthetic:harm?bias=0&unusable=0.05",
    "synthetic:harm?bias=0",
)


def _net_harm(prompts: int, seed: int = 4, chunk: int | None = None, monkeypatch=None):
    if chunk is not None:
        monkeypatch.setattr(chunks, "CHUNK_DRAWS", chunk)
    return net_harm.MEASURE.run_with(
        Runner(load_model(CHATBOT)),
        judge=Runner(load_model(JUDGE)),
        reference=Runner(load_model(REFERENCE)),
        comparison="gender",
        prompts=prompts,
        seed=seed,
    )


@pytest.mark.heavy(8)
def test_every_flagged_pair_up_to_the_cap_is_kept_the_highest_first(monkeypatch):
    # a recording judge: every pair it rated, with its net; the flagged ones are |net| >= FLAG_MARGIN
    seen: list[float] = []
    original = chunks._by_draw

    def recording(by_record, method):
        out = original(by_record, method)
        seen.extend(j.net for judged in out.values() for j in judged if not j.identical)
        return out

    monkeypatch.setattr(chunks, "_by_draw", recording)
    monkeypatch.setattr(harm_evidence, "FLAG_CAP", 40)
    evidence = _net_harm(150).evidence
    flagged = sorted((abs(n) for n in seen if abs(n) >= FLAG_MARGIN), reverse=True)
    assert evidence.selection.flagged == len(flagged) > 40  # every flagged pair was offered; the cap binds
    kept = [abs(p.net) for p in evidence.pairs if p.why.startswith("flagged")]
    assert len(kept) == evidence.selection.kept_flagged == 40 and kept == flagged[:40]
    assert evidence.selection.sampled == harm_evidence.SAMPLE
    assert any(p.reference is not None for p in evidence.pairs)  # the reference's rating of re-rated pairs
    pair = evidence.pairs[0]
    assert pair.forward is not None and pair.net == pytest.approx(
        net_harm_core.pair_harm(pair.forward, pair.swapped, "min_renorm").net
    )  # the kept letters are the ones the net was combined from


@pytest.mark.heavy(3)
def test_net_harm_evidence_and_its_ids_are_the_same_for_any_chunk_size_and_rerun(monkeypatch):
    whole = _net_harm(60, chunk=10_000, monkeypatch=monkeypatch).evidence
    assert whole.placebo and whole.dropped
    assert any(p.net == 0.0 and p.forward is None for p in whole.placebo) or all(p.forward for p in whole.placebo)
    assert _net_harm(60, chunk=7, monkeypatch=monkeypatch).evidence == whole
    assert {p.id for p in _net_harm(60, chunk=10_000, monkeypatch=monkeypatch).evidence.pairs} == {
        p.id for p in whole.pairs
    }
    other = _net_harm(60, seed=5, chunk=10_000, monkeypatch=monkeypatch).evidence
    assert not {p.id for p in other.pairs} & {p.id for p in whole.pairs}  # another seed: other items, other ids


def test_identical_placebo_pairs_are_sampled_too():
    evidence = net_harm.MEASURE.run_with(
        Runner(load_model("synthetic:harm?bias=0")),
        judge=Runner(load_model(JUDGE)),
        comparison="gender",
        prompts=81,
        seed=1,
    ).evidence
    assert evidence.placebo and all(p.answer_a == p.answer_b and p.forward is None for p in evidence.placebo)


# -- every kind --------------------------------------------------------------------------------------------------


def _runner(spec: str) -> Runner:
    return Runner(load_model(spec))


RUNS = {
    "quality_pairs": lambda: quality.MEASURE.run_with(
        _runner("synthetic:harm?bias=0.3"), comparison="gender", prompts=12, seed=3
    ),
    "word_pairings": lambda: implicit.MEASURE.run_with(
        _runner("synthetic:iat?bias=0.5&unusable=0.2"), stereotype="career", iterations=30, seed=3
    ),
    "decisions": lambda: decision.MEASURE.run_with(
        _runner("synthetic:decision?bias=0.4&unusable=0.2"), stereotype="career", iterations=20, seed=3
    ),
    "occupations": lambda: pcf.MEASURE.run_with(
        _runner("synthetic:pcf?bias=0.4&caprice=0.7"), attribute="gender", occupations=8, seed=3
    ),
    "axes": lambda: bias_axes.MEASURE.run_with(
        _runner("synthetic:harm?bias=0.5"), comparison="gender", prompts=40, t=8, seed=3
    ),
    "answer_pairs": lambda: _net_harm(30),
}


@pytest.mark.heavy(4)
@pytest.mark.parametrize("kind", sorted(RUNS))
def test_each_kind_of_evidence_round_trips_through_the_json_report_and_stays_out_of_the_compact_record(kind):
    result = RUNS[kind]()
    assert type(result.evidence) is KINDS[kind]
    record = CheckRecord(
        suite="s", check="c", outcome=decide(result.ci, Threshold(max=1)), threshold=Threshold(max=1), result=result
    )
    raw = json.loads(json.dumps(record.to_dict()))
    assert raw["result"]["evidence"]["kind"] == kind
    assert CheckRecord.from_dict(raw).result.evidence == result.evidence
    assert "evidence" not in record.compact()["result"]
    ids = [
        item["id"]
        for value in raw["result"]["evidence"].values()
        if isinstance(value, list)
        for item in value
        if isinstance(item, dict) and "id" in item
    ]
    assert ids and len(ids) == len(set(ids))  # every kept item has an id, unique within its check


def test_evidence_of_an_unregistered_kind_is_kept_as_read():
    raw = {"kind": "a_teams_own", "rows": [{"id": "x"}], "selection": {}}
    read = read_evidence(raw)
    assert isinstance(read, UnreadEvidence)
    result = result_from_dict({**_net_harm_dict(), "evidence": raw})
    assert result.to_dict()["evidence"] == raw


def _net_harm_dict() -> dict:
    return json.loads(
        json.dumps(
            implicit.MEASURE.run_with(
                _runner("synthetic:iat?bias=0.5"), stereotype="career", iterations=4, seed=1
            ).to_dict()
        )
    )


# -- the items that moved ----------------------------------------------------------------------------------------


def test_the_items_that_moved_most_are_the_largest_item_differences_with_both_sides():
    old = [ItemScores(f"7:{i}", f"7:{i}", (0.1 * (i % 5),)) for i in range(30)]
    new = [ItemScores(f"7:{i}", f"7:{i}", (0.1 * (i % 5) + (0.05 * i if i % 3 == 0 else 0.0),)) for i in range(30)]
    moved = most_moved(pair_items(old, new), k=4)
    assert [m.key for m in moved] == ["7:27", "7:24", "7:21", "7:18"]
    assert all(m.after - m.before == pytest.approx(0.05 * int(m.key[2:])) for m in moved)
    assert most_moved(pair_items(old, old)) == ()  # nothing moved, nothing named


def test_the_moved_items_of_a_pull_request_open_this_runs_evidence():
    from pytest_fairness.baseline.entry import baseline_entry
    from pytest_fairness.baseline.entry_comparison import compare
    from pytest_fairness.baseline.items_file import RecordedItems, run_items
    from pytest_fairness.baseline.pairing import PairingInputs, paired

    def run(bias: float):
        return implicit.MEASURE.run_with(
            _runner(f"synthetic:iat?bias={bias}"), stereotype="career", iterations=160, seed=2
        )

    before, after = run(0.2), run(0.6)
    t = Threshold(max=0.2)
    old, new = (
        CheckRecord(suite="s", check="c", outcome=decide(r.ci, t), threshold=t, result=r) for r in (before, after)
    )
    inputs = PairingInputs(run_items(*after.per_sample()), (-1.0, 1.0), 0.1)
    comparison = paired(
        compare(baseline_entry(old), baseline_entry(new)), RecordedItems(tuple(run_items(*before.per_sample()))), inputs
    )
    assert comparison.paired is not None and comparison.paired.moved
    answers = {a.id for a in after.evidence.answers}
    assert {m.key for m in comparison.paired.moved} <= answers  # each moved item is an answer the page shows
