"""Suite files: built-in suites load, and every mistake gets one error naming file, key and fix."""

import pytest
import yaml

from pytest_fairness.config import suite


@pytest.mark.parametrize("name", ["gender", "race", "religion", "health"])
def test_builtin_suites_load_with_one_check_per_stereotype(name):
    loaded = suite.load(name)
    assert loaded.name == name
    implicit = [c for c in loaded.checks if c.measure.name == "implicit_bias"]
    assert implicit and all(c.id == f"implicit_bias[{c.params.subject}]" for c in implicit)


def test_all_21_stereotypes_are_covered_by_the_builtin_suites():
    covered = {
        c.params.subject
        for n in ("gender", "race", "religion", "health")
        for c in suite.load(n).checks
        if c.measure.name == "implicit_bias"
    }
    assert len(covered) == 21


def write(tmp_path, document) -> str:
    path = tmp_path / "mine.yaml"
    path.write_text(document if isinstance(document, str) else yaml.safe_dump(document))
    return str(path)


def test_a_user_suite_with_params_samples_and_a_custom_id(tmp_path):
    loaded = suite.load(
        write(
            tmp_path,
            {
                "suite": "mine",
                "checks": [
                    {
                        "id": "career-synonyms",
                        "measure": "implicit_bias",
                        "stereotype": "career",
                        "variant": "synonym",
                        "samples": {"quick": 8},
                        "threshold": {"abs_max": 0.3},
                    }
                ],
            },
        )
    )
    (check,) = loaded.checks
    assert check.id == "career-synonyms"
    assert check.params.variant == "synonym"
    assert check.sample_size("quick") == 8 and check.sample_size("paper") == 50


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("checks: [", "not valid YAML"),
        ({"checks": []}, "key 'suite' is missing"),
        ({"suite": "x", "checks": []}, "'checks' must be a non-empty list"),
        ({"suite": "x", "tests": [], "checks": [{}]}, r"unknown top-level key\(s\) \['tests'\]"),
        (
            {"suite": "x", "checks": [{"measure": "vibes"}]},
            r"checks\[0\]\.measure: unknown measure 'vibes'; valid: implicit_bias",
        ),
        (
            {"suite": "x", "checks": [{"measure": "implicit_bias", "stereotype": "career"}]},
            r"checks\[0\]: key 'threshold' is missing; add e\.g\.",
        ),
        (
            {"suite": "x", "checks": [{"measure": "implicit_bias", "stereotype": "vibes", "threshold": {"max": 0.2}}]},
            r"checks\[0\]: unknown stereotype 'vibes'; valid: racism",
        ),
        (
            {
                "suite": "x",
                "checks": [
                    {"measure": "implicit_bias", "stereotype": "career", "threshold": {"max": 0.2}, "temprature": 1}
                ],
            },
            r"unknown key\(s\) \['temprature'\] for measure implicit_bias; allowed: .*temperature",
        ),
        (
            {"suite": "x", "checks": [{"measure": "implicit_bias", "stereotype": "career", "threshold": {"mx": 1}}]},
            r"checks\[0\]\.threshold: unknown threshold key",
        ),
        (
            {
                "suite": "x",
                "checks": [
                    {
                        "measure": "implicit_bias",
                        "stereotype": "career",
                        "stereotypes": ["age"],
                        "threshold": {"max": 1},
                    }
                ],
            },
            "give exactly one of 'stereotype' or 'stereotypes'",
        ),
        (
            {
                "suite": "x",
                "checks": [
                    {
                        "measure": "implicit_bias",
                        "stereotype": "career",
                        "samples": {"quick": 1},
                        "threshold": {"max": 1},
                    }
                ],
            },
            r"samples\.quick: must be a whole number >= 2",
        ),
        (
            {
                "suite": "x",
                "checks": [
                    {"measure": "implicit_bias", "stereotype": "age", "threshold": {"max": 1}},
                    {"measure": "implicit_bias", "stereotype": "age", "threshold": {"max": 2}},
                ],
            },
            r"two checks have the id 'implicit_bias\[age\]'",
        ),
    ],
)
def test_bad_suite_files_get_one_error_naming_file_key_and_fix(tmp_path, document, message):
    path = write(tmp_path, document)
    with pytest.raises(suite.SuiteError, match=message) as err:
        suite.load(path)
    assert str(err.value).startswith(path)


def test_unknown_suite_name_lists_the_builtin_suites():
    expected = f"unknown suite 'gendre'; built-in suites: {', '.join(suite.builtin_suites())}"
    assert {"gender", "race", "religion", "health", "intersectional", "axes"} <= set(suite.builtin_suites())
    with pytest.raises(suite.SuiteError, match=expected):
        suite.load("gendre")


def test_a_suite_file_that_is_not_utf8_names_the_byte_and_the_fix(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"suite: s\ndescription: caf\xe9\nchecks: []\n")
    offset = path.read_bytes().index(b"\xe9")
    with pytest.raises(suite.SuiteError, match=rf"not UTF-8 \(byte {offset} is 0xe9\); save the file as UTF-8"):
        suite.load(str(path))


def test_a_directory_as_suite_path_says_to_give_a_yaml_file(tmp_path):
    (tmp_path / "mine.yaml").write_text("suite: s\n")
    with pytest.raises(suite.SuiteError, match=r"is a directory, give a \.yaml file \(suite files in it: mine\.yaml\)"):
        suite.load(str(tmp_path))


PROMPTS = "".join(f'{{"task": "Write a story", "prompt": "Tell me a story about a {w}."}}\n' for w in ("cat", "owl"))


def _harm_suite(prompts_file: str) -> dict:
    check = {"measure": "net_harm", "comparison": "gender", "prompts_file": prompts_file, "threshold": {"max": 1}}
    return {"suite": "h", "checks": [check]}


def test_file_parameters_are_read_relative_to_the_suite_files_folder(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "p.jsonl").write_text(PROMPTS)
    (tmp_path / "sub" / "h.yaml").write_text(yaml.safe_dump(_harm_suite("p.jsonl")))
    monkeypatch.chdir(tmp_path)  # the working directory holds no p.jsonl
    (check,) = suite.load("sub/h.yaml").checks
    assert check.params.prompts_file == "sub/p.jsonl"  # relative to the working directory, so baselines travel


def test_absolute_file_parameters_are_kept_as_given(tmp_path, monkeypatch):
    prompts = tmp_path / "data" / "p.jsonl"
    prompts.parent.mkdir()
    prompts.write_text(PROMPTS)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "h.yaml").write_text(yaml.safe_dump(_harm_suite(str(prompts))))
    monkeypatch.chdir(tmp_path / "sub")
    (check,) = suite.load("h.yaml").checks
    assert check.params.prompts_file == str(prompts)


@pytest.mark.parametrize(("key", "limit"), [("samples", suite.MAX_SAMPLES), ("budget", suite.MAX_BUDGET)])
def test_absurd_sample_sizes_are_refused_with_the_limit(tmp_path, key, limit):
    # A sequential budget may go further than a size: a run stops at the first look that decides.
    document = {"suite": "x", "checks": [{"measure": "implicit_bias", "stereotype": "age", "threshold": {"max": 1}}]}
    document["checks"][0][key] = limit + 1
    with pytest.raises(suite.SuiteError, match=rf"{key}\.quick: {limit + 1} is above the limit of"):
        suite.load(write(tmp_path, document))
    document["checks"][0][key] = limit
    assert suite.load(write(tmp_path, document)).checks
