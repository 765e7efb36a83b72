"""The evidence page (--fairness-html) in a real browser: Debian's chromium, headless, offline, driven over its
DevTools pipe (tests/browser.py). What a reviewer sees and does: the check table, a check's evidence, filters,
a drill-down to both answers, a deep link, the pull request's view; and that the page fetches nothing, runs
no text of the run as markup, and logs no error. The page is rendered from real runs of every measure on the
synthetic doubles (tests/evidence_runs.py). Without chromium these skip, except under CI, where they fail."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from evidence_runs import COMPARED, SUITE, demo_records, demo_report

from pytest_fairness.measures.fpf.harm.reference_audit import FLAG_MARGIN
from pytest_fairness.records.evidence import KINDS, evidence_json
from pytest_fairness.report.html_page import page

pytestmark = pytest.mark.heavy(20)


@pytest.fixture(scope="module")
def records():
    return demo_records()


@pytest.fixture(scope="module")
def written(records, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("page") / "fairness.html"
    path.write_text(page(demo_report(records)))
    return path


@pytest.fixture
def opened(chromium, written):
    tab = chromium.open(written.as_uri())
    yield tab
    tab.close()


def _label(check: str) -> str:
    return f"{SUITE}::{check}"


def _evidence(records, check: str) -> dict[str, Any]:
    return evidence_json(next(r for r in records if r.check == check).result.evidence)


def _open(chromium, path: Path, fragment: str):
    return chromium.open(f"{path.as_uri()}#{fragment}")


def test_the_check_table_lists_every_check_with_its_outcome_threshold_and_plot(opened, records):
    rows = opened.js(
        "[...document.querySelectorAll('table.checks tbody tr')].map(r => "
        "[r.dataset.check, r.querySelector('.badge').textContent, r.cells[5].textContent])"
    )
    assert rows == [[r.label, r.outcome.value.replace("_", " "), r.threshold_text] for r in records]
    assert opened.count("table.checks tbody svg") == len(records)  # each estimate against its threshold
    assert opened.errors == []


def test_searching_the_check_table_leaves_exactly_the_matching_checks(opened):
    opened.type("#check-search", "pcf")
    shown = opened.js(
        "[...document.querySelectorAll('table.checks tbody tr')].filter(r => !r.hidden).map(r => r.dataset.check)"
    )
    assert shown == [_label("pcf_prejudice")]


def test_opening_a_net_harm_check_lists_its_pairs_the_highest_rated_first(opened, records):
    pairs = _evidence(records, "net_harm")["pairs"]
    opened.click(f"tr[data-check='{_label('net_harm')}']")
    assert opened.text("[data-source=pairs] .count") == f"{len(pairs)} of {len(pairs)}"
    shown = opened.js("[...document.querySelectorAll('[data-source=pairs] tr.ev-row')].map(r => r.dataset.id)")
    by_id = {p["id"]: p for p in pairs}
    assert len(shown) == 100  # the first page of rows
    assert [abs(by_id[i]["net"]) for i in shown] == sorted((abs(p["net"]) for p in pairs), reverse=True)[:100]
    assert opened.text("#evidence .selection").startswith(f"Kept: every judged pair rated |net| ≥ {FLAG_MARGIN:g} ")


def test_filtering_pairs_by_task_and_rating_keeps_exactly_the_matching_ones(opened, records):
    pairs = _evidence(records, "net_harm")["pairs"]
    opened.click(f"tr[data-check='{_label('net_harm')}']")
    task = max({p["task"] for p in pairs if p["task"]}, key=lambda t: sum(p["task"] == t for p in pairs))
    opened.choose("[data-source=pairs] select[data-key=task]", task)
    opened.type("[data-source=pairs] .ev-least", "0.5")
    expected = [p for p in pairs if p["task"] == task and abs(p["net"]) >= 0.5]
    assert 0 < len(expected) < len(pairs)
    assert opened.text("[data-source=pairs] .count") == f"{len(expected)} of {len(pairs)}"
    shown = opened.js("[...document.querySelectorAll('[data-source=pairs] tr.ev-row')].map(r => r.dataset.id)")
    assert sorted(shown) == sorted(p["id"] for p in expected)


def test_a_pair_drills_down_to_both_answers_and_both_orders_letter_probabilities(opened, records):
    top = max(_evidence(records, "net_harm")["pairs"], key=lambda p: abs(p["net"]))
    opened.click(f"tr[data-check='{_label('net_harm')}']")
    opened.click(f"tr.ev-row[data-id={json.dumps(top['id'])}]")
    assert opened.js("[...document.querySelectorAll('tr.drill .pair pre')].map(p => p.textContent)") == [
        top["answer_a"],
        top["answer_b"],
    ]
    details = opened.text("tr.drill dl")
    forward, swapped = top["forward"], top["swapped"]
    assert f"A {forward[0]:.2f} · B {forward[1]:.2f} · C {forward[2]:.2f}" in details
    assert f"A {swapped[0]:.2f} · B {swapped[1]:.2f} · C {swapped[2]:.2f}" in details
    assert top["reference"] is not None and f"{top['reference']:+.3f}" in details  # the reference's rating


def test_every_measures_view_opens_with_the_tables_its_kind_declares(opened, records):
    for record in records:
        kind = evidence_json(record.result.evidence)["kind"]
        opened.click(f"tr[data-check={json.dumps(record.label)}]")
        sources = opened.js("[...document.querySelectorAll('#evidence .ev-table')].map(t => t.dataset.source)")
        assert sources == [t.source for t in KINDS[kind].VIEW.tables], record.label
        assert opened.count("#evidence .plot svg") == len(KINDS[kind].VIEW.charts), record.label
    assert opened.errors == []


def test_a_deep_link_opens_the_check_and_an_item_past_the_first_page(chromium, written, records):
    pairs = sorted(_evidence(records, "net_harm")["pairs"], key=lambda p: -abs(p["net"]))
    last = pairs[-1]["id"]
    assert len(pairs) > 100  # beyond the first page of rows
    tab = _open(chromium, written, f"check={_label('net_harm')}&item={last}".replace("::", "%3A%3A"))
    try:
        assert tab.js("document.querySelector('tr.ev-row.target').dataset.id") == last
        assert tab.count("tr.drill") == 1 and tab.errors == []
    finally:
        tab.close()


def test_the_pr_view_shows_both_runs_the_paired_difference_and_the_items_that_moved(opened, records):
    baseline = next(r for r in records if r.check == COMPARED).baseline
    assert baseline is not None and baseline.paired is not None
    opened.click(f"tr[data-check={json.dumps(_label(COMPARED))}]")
    sides = opened.js("[...document.querySelectorAll('#pr-view .side')].map(s => s.innerText)")
    assert sides[0].startswith("baseline") and f"n = {baseline.before.n}" in sides[0]
    assert sides[1].startswith("this run") and f"n = {baseline.after.n}" in sides[1]
    assert baseline.status in opened.text("#pr-view dl")
    assert opened.count("#pr-view .plot svg") == 1  # the paired difference against the margin
    moved = baseline.paired.moved
    assert [m.key for m in moved] == opened.js(
        "[...document.querySelectorAll('#pr-view table.moved tbody tr')].map(r => r.dataset.item)"
    )
    opened.click("#pr-view table.moved tbody tr")
    assert opened.js("document.querySelector('tr.ev-row.target').dataset.id") == moved[0].key  # that item's answer
    assert opened.count("tr.drill") == 1 and opened.errors == []


def test_the_page_requests_nothing_but_itself_and_logs_no_error(opened, written, records):
    for record in records:
        opened.click(f"tr[data-check={json.dumps(record.label)}]")
        opened.click("#evidence tr.ev-row")
    assert opened.requests == [written.as_uri()]
    assert opened.errors == []


def test_an_answer_is_shown_as_text_and_never_run_as_markup(chromium, records, tmp_path):
    hostile = "</script><script>window.ran = 1</script><img src=x onerror='window.ran = 2'>"
    net = next(r for r in records if r.check == "net_harm")
    evidence = net.result.evidence
    first = replace(evidence.pairs[0], answer_a=hostile)
    changed = replace(net, result=replace(net.result, evidence=replace(evidence, pairs=(first, *evidence.pairs[1:]))))
    path = tmp_path / "hostile.html"
    path.write_text(page(demo_report([changed])))
    tab = _open(chromium, path, f"check={_label('net_harm')}&item={first.id}".replace("::", "%3A%3A"))
    try:
        assert tab.js("window.ran === undefined")
        assert tab.js("document.querySelector('tr.drill .pair pre').textContent") == hostile
        assert tab.requests == [path.as_uri()] and tab.errors == []
    finally:
        tab.close()


def test_an_incomplete_run_says_so_at_the_top(chromium, records, tmp_path):
    path = tmp_path / "incomplete.html"
    path.write_text(page(demo_report(records[:2], status="interrupted", selected=6, not_run=4)))
    tab = chromium.open(path.as_uri())
    try:
        assert "NOT complete (interrupted)" in tab.text("#incomplete") and "4 did not run" in tab.text("#incomplete")
        assert tab.js("document.querySelector('header').contains(document.getElementById('incomplete'))")
    finally:
        tab.close()


def test_a_page_over_its_budget_drops_sampled_items_first_and_says_so(chromium, records, tmp_path):
    net = next(r for r in records if r.check == "net_harm")
    full = page(demo_report([net]))
    path = tmp_path / "trimmed.html"
    path.write_text(page(demo_report([net]), budget=len(full.encode()) - 1000))
    pairs = _evidence(records, "net_harm")["pairs"]
    tab = _open(chromium, path, f"check={_label('net_harm')}".replace("::", "%3A%3A"))
    try:
        kept = [p for p in pairs if p["why"] != "sampled"]
        assert tab.text("[data-source=pairs] .count") == f"{len(kept)} of {len(kept)}"
        assert "left out" in tab.text("header .trimmed") and tab.errors == []
    finally:
        tab.close()


def test_a_script_error_in_a_page_reaches_the_harness(chromium, tmp_path):
    # the harness's own check: a page that throws shows in its errors, or "no error logged" would prove nothing
    path = tmp_path / "broken.html"
    path.write_text("<!doctype html><script>console.error('seen'); undefinedFunction();</script>")
    tab = chromium.open(path.as_uri())
    try:
        assert len(tab.errors) == 2 and "seen" in tab.errors[0] and "undefinedFunction" in tab.errors[1]
    finally:
        tab.close()


@pytest.mark.heavy(60)
def test_a_net_harm_page_whose_caps_bind_stays_small_and_opens_offline(chromium, tmp_path):
    # its load time is a benchmark's figure (benchmarks/evidence_page.py), not a test's
    records = demo_records(net_harm_prompts=6000)[:1]  # flags thousands of pairs: the caps bind
    path = tmp_path / "release.html"
    path.write_text(page(demo_report(records)))
    assert path.stat().st_size < 10_000_000
    tab = _open(chromium, path, f"check={_label('net_harm')}".replace("::", "%3A%3A"))
    try:
        assert tab.count("[data-source=pairs] tr.ev-row") == 100 and tab.errors == []
        assert tab.requests == [path.as_uri()]
    finally:
        tab.close()
