"""README.md and docs/ say what the code does: every figure in them is generated from the code or checked here.

The generator (docs/docgen, run by ``python docs/generate.py``) fills the pages' marks: inline figures,
tables, command examples with their real output. These tests regenerate every page and compare, find
numbers written by hand where a figure belongs, and check that links, mentioned files and the README's
commands are real.
"""

from __future__ import annotations

import configparser
import difflib
import importlib.util
import re
import sys
from pathlib import Path

import pytest
from paths import REPO

ROOT = REPO
sys.path.insert(0, str(ROOT / "docs"))

import docgen  # noqa: E402
from docgen import markup  # noqa: E402

PAGES = {str(path.relative_to(ROOT)): path for path in docgen.pages()}
#: Pages whose marks run the slow examples (the release plan prices every request of the gender suite).
HEAVY = {"docs/release-runs.md": 40, "docs/baselines.md": 20, "docs/reading-a-run.md": 10}
#: Numbers in prose that are not figures of the code.
NON_FIGURES = (
    r"Python \d+\.\d+",  # the Python a checkout needs
    r"^\s*\d+\.\s",  # numbered lists
    r"^#+ \d+\.\s",  # numbered headings
    r"§\s?\d+(?:\.\d+)*",  # sections of the papers' specs
    r"\b(?:Eq|App)\. \w+",  # the papers' equations and appendices
    r"\bHTTP \d{3}\b|\b429s?\b",  # HTTP statuses
    r"\(\d{4}\)",  # years of the papers' citations
    r"\bper million\b",  # a unit of prices
    r"(?<![\w.,−-])[−-]?[01](?![\w.,]?\d)",  # 0 and 1: the ends of scales, none and one
)
#: Hand-written code blocks hold inputs (commands, suites, code) or formats, never output.
INPUT_FENCES = {"bash", "python", "yaml", "toml", "text"}
#: Pages written in parallel with these: linked before they land.
PRICE_MAP = re.compile(r"litellm (\d[\w.]*) price map")
LINK = re.compile(r"\]\(([^)\s]+)\)")
MENTIONED_FILE = re.compile(
    r"`((?:tests|pytest_fairness|benchmarks|docs|suites|data)/[\w./-]+\.(?:py|md|yaml|yml|jsonl))`"
)


def _pages(heavy: bool = True) -> list[object]:
    marks = {name: [pytest.mark.heavy(HEAVY[name])] if name in HEAVY and heavy else [] for name in PAGES}
    return [pytest.param(name, marks=marks[name], id=name) for name in PAGES]


@pytest.mark.parametrize("name", _pages())
def test_every_generated_figure_matches_the_code(name: str) -> None:
    held, fresh = PAGES[name].read_text(), docgen.render(PAGES[name])
    if held != fresh and _priced_by_another_litellm(held, fresh):
        if PRICE_MAP.sub("", held) == PRICE_MAP.sub("", fresh):
            return  # the same prices, from another release of litellm's price map
        pytest.skip("the installed litellm's price map has other prices than the one the pages were made with")
    diff = "".join(difflib.unified_diff(held.splitlines(True), fresh.splitlines(True), name, "from the code", n=1))
    assert held == fresh, f"{name} is stale; run `python docs/generate.py {name}`:\n{diff[:6000]}"


def _priced_by_another_litellm(held: str, fresh: str) -> bool:
    """The plan example reads prices from the installed litellm's bundled map, which a fresh machine may hold
    in another release than the pages were made with; a machine with the documented release checks every
    digit."""
    return {m.group(1) for m in PRICE_MAP.finditer(held)} != {m.group(1) for m in PRICE_MAP.finditer(fresh)}


@pytest.mark.parametrize("name", _pages(heavy=False))
def test_no_figure_is_written_by_hand(name: str) -> None:
    stray = markup.stray_figures(PAGES[name].read_text(), NON_FIGURES)
    assert not stray, f"{name}: numbers outside a generated mark (make each a <!--fig:...--> figure):\n" + "\n".join(
        map(str, stray)
    )


@pytest.mark.parametrize("name", _pages(heavy=False))
def test_shown_output_is_generated_not_pasted(name: str) -> None:
    pasted = [(line, info) for line, info, _ in markup.fences(PAGES[name].read_text()) if info not in INPUT_FENCES]
    assert not pasted, f"{name}: hand-written code blocks that are not input (line, language): {pasted}"


@pytest.mark.parametrize("name", _pages(heavy=False))
def test_links_and_mentioned_files_exist(name: str) -> None:
    page = PAGES[name]
    text = markup.COMMENT.sub("", page.read_text())
    missing = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in _anchors(file)):
            missing.append(target)
    for mentioned in MENTIONED_FILE.findall(text):
        candidates = [ROOT / mentioned, ROOT / "pytest_fairness" / mentioned]
        if not any(c.exists() for c in candidates):
            missing.append(mentioned)
    assert not missing, f"{name}: links or files that do not exist: {missing}"


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_measured_block_names_the_script_that_writes_it(name: str) -> None:
    """A timing is the machine's, not the code's: it stays in a block its script rewrites, never by hand."""
    for m in markup.MEASURED.finditer(PAGES[name].read_text()):
        script = ROOT / m["script"]
        assert script.exists(), f"{name}: {m['script']} does not exist"
        assert "markup.measured(" in script.read_text() and m["script"] in script.read_text()


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings."""
    headings = re.findall(r"^#+ (.+)$", markup.FENCE.sub("", page.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_page_is_reachable_from_the_docs_index() -> None:
    index = PAGES["docs/README.md"]
    linked = {(index.parent / target.partition("#")[0]).resolve() for target in LINK.findall(index.read_text())}
    orphans = [
        name for name, path in PAGES.items() if name.startswith("docs/") and path != index and path not in linked
    ]
    assert not orphans, f"pages docs/README.md does not link: {orphans}"


def test_readme_is_a_landing_page_with_the_commands_ci_runs() -> None:
    readme = PAGES["README.md"].read_text()
    assert len(readme.splitlines()) <= 250
    for env in ("tests", "gender"):
        assert f"python3 -m pip install tox && python3 -m tox -e {env}" in readme
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    assert {"testenv:tests", "testenv:gender"} <= set(tox.sections())
    assert "python3 -m tox -e tests" in (ROOT / ".ci" / "run").read_text()


#: How the code points readers to a page: ``(docs/statistics.md, Sample sizes)`` or ``docs/ci.md: "CI: ..."``.
POINTER = re.compile(r"\b(README|docs/[\w/-]+\.md)[:,] (?:\"([^\"]+)\"|([\w -]+?)[);.])")


def test_where_the_code_points_readers_to_a_page_it_finds_the_words() -> None:
    """Messages and comments that say "docs/<page>.md: <topic>" must still find the topic on that page; none
    points to the README, a landing page whose topics moved to docs/."""
    sources = [
        *(ROOT / "pytest_fairness").rglob("*.py"),
        *(ROOT / "suites").glob("*.yaml"),
        ROOT / "docs/ci/fairness.yml",
    ]
    pointers = {
        (path.name, page, quoted or plain)
        for path in sources
        for page, quoted, plain in POINTER.findall(path.read_text())
    }
    assert len(pointers) >= 3, pointers  # the pointers are found at all
    to_readme = [(where, topic) for where, page, topic in sorted(pointers) if page == "README"]
    assert not to_readme, f"point these to the docs/ page that holds the topic: {to_readme}"
    lost = [
        (where, page, topic)
        for where, page, topic in sorted(pointers)
        if page != "README" and topic.lower() not in (ROOT / page).read_text().lower()
    ]
    assert not lost, f"the pages no longer mention what these point to: {lost}"


def test_the_gender_suite_states_the_release_size_of_its_net_harm_gate() -> None:
    """The suite's comment on what passing 0.1% takes is the size the release profile computes."""
    from pytest_fairness.config import suite

    stated = re.search(r"takes the release size, ([\d,]+)", (ROOT / "suites/gender.yaml").read_text())
    assert stated is not None
    check = next(c for c in suite.load("gender").checks if c.id == "net_harm")
    assert int(stated.group(1).replace(",", "")) == check.samples["release"]


def test_a_pasted_number_is_found_and_a_generated_one_is_not() -> None:
    page = (
        "The screen needs <!--fig:bar-->85% and 40 judgments.\n\n"
        "<!--gen:table-->\n| 38,992 |\n<!--/gen-->\n\n"
        "```bash\npytest -n 2 --fairness-budget=100\n```\n\nRun `-n 2` on Python 3.11, from 0 to 1.\n"
    )
    assert [s.token for s in markup.stray_figures(page, NON_FIGURES)] == ["40"]
    assert [s.token for s in markup.stray_figures("eight canaries", NON_FIGURES)] == ["eight"]
    filled = markup.fill(page, lambda key: {"bar": "90%", "table": "| 1 |"}[key])
    assert "<!--fig:bar-->90% and 40" in filled and "<!--gen:table-->\n| 1 |\n<!--/gen-->" in filled
    with pytest.raises(markup.MarkupError, match="not one number"):
        markup.fill(page, lambda key: "ninety" if key == "bar" else "| 1 |")


def _example_options() -> set[str]:
    """The options of the worked example of a report format (docs/adding-a-report-format.md), which only a
    project that registers it has."""
    spec = importlib.util.spec_from_file_location("csv_output", ROOT / "tests" / "output_example" / "csv_output.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return {option.flag for option in example.CsvFile.options}


def test_every_option_the_pages_name_exists() -> None:
    from docgen import public

    known = {option.flag.split("=")[0] for option in public.options()} | _example_options()
    named = {
        (name, flag)
        for name, path in PAGES.items()
        for flag in re.findall(r"--fairness-[a-z-]*[a-z]", path.read_text())
    }
    unknown = sorted((name, flag) for name, flag in named if flag not in known)
    assert not unknown, f"options the pages name that `pytest --help` does not know: {unknown}"


def test_every_measure_and_the_pull_request_have_a_picture_of_their_evidence_view() -> None:
    """docs/screenshots.py takes them from real runs; each registered measure's view is shown and exists."""
    from pytest_fairness.measures import MEASURES

    page = (ROOT / "docs" / "reading-a-run.md").read_text()
    for name in [*MEASURES, "pr", "checks"]:
        image = f"images/reading-a-run/{name}.png"
        assert f"]({image})" in page, name
        assert (ROOT / "docs" / image).stat().st_size > 10_000, name
