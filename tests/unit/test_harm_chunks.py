"""Net harm runs a chunk of prompt draws at a time: any chunk size gives the same result, bit for bit, and live
progress counts the whole run."""

from __future__ import annotations

import json

import pytest

from pytest_fairness.measures.fpf.harm import chunks, net_harm
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner

#: A chatbot that refuses a tenth of its answers, a judge that names no letter in one reply in twenty (both
#: drop pairs, so draws have fewer pairs than others) and a reference: every tally the chunks keep.
CHATBOT, JUDGE, REFERENCE = (
    "synthetic:harm?bias=0.3&unusable=0.1",
    "synthetic:harm?bias=0&unusable=0.05",
    "synthetic:harm?bias=0",
)


def _run(
    chunk: int, comparison: str, reference: bool, monkeypatch: pytest.MonkeyPatch, task: str | None = None
) -> tuple[dict, list]:
    monkeypatch.setattr(chunks, "CHUNK_DRAWS", chunk)
    ticks: list[tuple[int, int]] = []
    result = net_harm.MEASURE.run_with(
        Runner(load_model(CHATBOT)),
        judge=Runner(load_model(JUDGE)),
        reference=Runner(load_model(REFERENCE)) if reference else None,
        progress=lambda done, total, note="": ticks.append((done, total)),
        comparison=comparison,
        task=task,
        prompts=45,
        seed=4,
    )
    out = result.to_dict()
    del out["calls"]["seconds"]
    for role in out["calls"]["roles"].values():
        del role["seconds"]
    return out, ticks


@pytest.mark.heavy(2)
@pytest.mark.parametrize(
    ("comparison", "reference", "task"), [("gender", False, None), ("black", True, "Write a story")]
)
def test_every_chunk_size_gives_the_whole_runs_result_bit_for_bit(comparison, reference, task, monkeypatch):
    # the race comparison (8 pairs a draw) of one task, so that every comparison has records in every task
    whole, _ = _run(10_000, comparison, reference, monkeypatch, task)
    assert whole["n_unusable"] > 0 and whole["details"]["placebo"]["prompts"] == 3  # draws 0, 20 and 40
    if reference:
        assert whole["details"]["reference_audit"]["flagged_pairs_rerated"] > 0
    for chunk in (1, 7):
        chunked, _ = _run(chunk, comparison, reference, monkeypatch, task)
        assert json.dumps(chunked, sort_keys=True) == json.dumps(whole, sort_keys=True), chunk


def test_progress_counts_the_whole_run_across_its_chunks(monkeypatch):
    _, ticks = _run(7, "gender", False, monkeypatch)
    done = [d for d, _ in ticks]
    assert done == sorted(done) and done[-1] == ticks[-1][1]
    # 45 draws x 2 groups x 2 names, and the placebo's 3 answers: the total from the first chunk on
    assert done[-1] == 45 * 4 + 3 and {total for _, total in ticks} == {done[-1]}
