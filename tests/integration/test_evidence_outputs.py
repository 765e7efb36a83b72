"""The evidence page as a run writes it: serially and under xdist alike, from the shard merge, and inside
pytest-html's report when that plugin writes one (and nothing changes when it does not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_fairness.cli.main import main
from pytest_fairness.plugin.html_extras import PLUGIN

SUITE = """
suite: shown
checks:
  - id: implicit
    measure: implicit_bias
    stereotype: career
    samples: 30
    threshold: {max: 0.2}
  - id: decision
    measure: decision_bias
    stereotype: career
    samples: 30
    threshold: {max: 0.7}
  - id: pcf
    measure: pcf
    attribute: gender
    samples: 12
    threshold: {max: 400}
"""
MODEL = "--fairness-model=synthetic:iat?bias=0.5&unusable=0.1"
ARGS = ["-p", "no:randomly", "-p", "no:cacheprovider", "--fairness-suite=shown.yaml", MODEL]


def _data(path: Path) -> dict:
    """The run as the page embeds it."""
    text = path.read_text()
    return json.loads(text.split('id="fairness-data">', 1)[1].split("</script>", 1)[0])


def _evidence(path: Path) -> dict[str, dict]:
    return {c["label"]: c["result"]["evidence"] for c in _data(path)["checks"]}


@pytest.mark.heavy(12)
def test_the_page_is_written_serially_and_under_xdist_with_the_same_evidence(pytester):
    pytester.makefile(".yaml", shown=SUITE)
    for workers in ("0", "2"):
        result = pytester.runpytest_subprocess(*ARGS, "-n", workers, f"--fairness-html=out{workers}/fairness.html")
        assert result.ret == pytest.ExitCode.TESTS_FAILED  # implicit bias fails its threshold
    serial, parallel = (_evidence(pytester.path / f"out{w}" / "fairness.html") for w in ("0", "2"))
    assert sorted(serial) == ["shown::decision", "shown::implicit", "shown::pcf"]
    assert serial == parallel
    assert {e["kind"] for e in serial.values()} == {"word_pairings", "decisions", "occupations"}


@pytest.mark.heavy(12)
def test_the_merge_writes_the_page_of_the_whole_run(pytester, in_process_syrupy):
    pytester.makefile(".yaml", shown=SUITE)
    whole = pytester.runpytest(*ARGS, "--fairness-html=whole.html")
    for i in (1, 2):
        pytester.runpytest(*ARGS, f"--fairness-shard={i}/2", f"--fairness-report=shard{i}.json")
    shards = [str(pytester.path / f"shard{i}.json") for i in (1, 2)]
    status = main(["merge", *shards, "--html", str(pytester.path / "merged.html")])
    assert status == whole.ret
    merged, alone = _data(pytester.path / "merged.html"), _data(pytester.path / "whole.html")
    assert [c["label"] for c in merged["checks"]] == [c["label"] for c in alone["checks"]]
    assert _evidence(pytester.path / "merged.html") == _evidence(pytester.path / "whole.html")


@pytest.mark.heavy(15)
@pytest.mark.parametrize("workers", ["0", "2"])
def test_pytest_html_gets_the_fairness_summary_and_each_checks_plot_and_link(pytester, workers):
    pytest.importorskip("pytest_html")
    pytester.makefile(".yaml", shown=SUITE)
    result = pytester.runpytest_subprocess(
        *ARGS, "-n", workers, "--html=out/pytest.html", "--self-contained-html", "--fairness-html=out/fairness.html"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = (pytester.path / "out" / "pytest.html").read_text()
    assert "<h3>Fairness</h3><p>Run complete: 3 checks." in text  # the summary table, above pytest's own
    for check in ("implicit", "decision", "pcf"):
        assert f'href="fairness.html#check=shown%3A%3A{check}"' in text  # relative: both in one artefact folder
    # each check's row carries its verdict line and plot (pytest-html keeps a row's extras as escaped JSON)
    for verdict in ("FAIL: implicit_bias on career = ", ": decision_bias on career = ", ": pcf on gender = "):
        assert text.count(verdict) == 1, verdict
    assert text.count("<svg") == 3  # the summary's plots (the rows' are escaped inside their extras)


def test_without_pytest_html_writing_a_report_nothing_is_registered(pytester):
    pytester.makefile(".yaml", shown=SUITE)
    pytester.makeconftest(
        f"""
def pytest_sessionfinish(session):
    print("extras registered:", session.config.pluginmanager.has_plugin("{PLUGIN}"))
"""
    )
    result = pytester.runpytest_subprocess(*ARGS, "-s", "-k", "implicit")
    result.stdout.fnmatch_lines(["*extras registered: False*"])
    plain = pytester.runpytest_subprocess(*ARGS, "-s", "-k", "implicit", "-p", "no:html")
    plain.stdout.fnmatch_lines(["*extras registered: False*"])
    assert plain.ret == result.ret == pytest.ExitCode.TESTS_FAILED
