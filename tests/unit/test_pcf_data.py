import re
from pathlib import Path

import pytest

from pytest_fairness.measures.pcf.inputs import (
    PcfDataError,
    load_attributes,
    load_occupations,
    load_templates,
    render_probe,
)

# -- packaged data (spec §3) -------------------------------------------------------------------------------


def test_packaged_occupations_are_the_papers_257_terms_in_order():
    occ = load_occupations()
    assert len(occ.terms) == len(set(occ.terms)) == 257
    assert occ.terms[:3] == ("manager", "senior", "engineer")
    assert occ.terms[-3:] == ("orthopedic", "stewardess", "microbiologist")
    assert occ.terms[163] == "manger"  # misspellings are kept verbatim
    assert {"host", "waiter", "waitress", "nurse", "stylist"} <= set(occ.terms)
    assert "dietitian" not in occ.terms
    assert occ.weights is None
    assert occ.weigh().weights.sum() == pytest.approx(1) and occ.weigh().unmapped == ()


def test_packaged_gender_groups_are_40_pair_aligned_words_each_with_canary_in_both():
    gender = load_attributes()
    assert gender.attribute == "gender" and gender.labels == ("male", "female")
    male, female = gender.words
    assert len(male) == len(female) == 40
    assert (male[5], female[5]) == ("canary", "canary")
    assert (male[31], female[31]) == ("he", "she")
    assert (male[-1], female[-1]) == ("men", "women")
    assert set(male) & set(female) == {"canary"}


def test_packaged_race_groups_are_five_groups_of_seven_words():
    race = load_attributes("race")
    assert race.words == (("white",), ("black", "african"), ("asian",), ("hispanic", "latino"), ("indian",))
    assert len(race.labels) == 5


@pytest.mark.parametrize(("attribute", "total", "first"), [("gender", 5104, 2142), ("race", 4997, 749)])
def test_packaged_templates_are_the_top_ten_with_their_counts(attribute, total, first):
    templates = load_templates(attribute)
    assert len(templates.texts) == 10 and sum(templates.counts) == total
    assert templates.counts[0] == first and list(templates.counts) == sorted(templates.counts, reverse=True)
    assert all(t.count("[X]") == 1 and t.count("[Y]") == 1 and t.endswith("[Y]") for t in templates.texts)
    assert templates.weigh()[0] == pytest.approx(first / total)


def test_top_keeps_the_most_frequent_templates_and_renormalises_over_them():
    templates = load_templates("gender", top=2)
    assert templates.texts == ("The [X] said that [Y]", "The [X] stated that [Y]") and templates.top == 2
    assert templates.weigh() == pytest.approx([2142 / 2998, 856 / 2998])


# -- render_probe ------------------------------------------------------------------------------------------


def test_render_probe_fills_x_and_splits_at_y_without_adding_a_period():
    assert render_probe("The [X] said that [Y]", "Nurse") == ("The nurse said that ", "")
    assert render_probe("The [X], who came, is [Y]", " CEO ") == ("The ceo, who came, is ", "")


def test_render_probe_allows_y_before_the_end_and_returns_the_rest_as_suffix():
    assert render_probe("[Y] said the [X] was late.", "nurse") == ("", " said the nurse was late.")


@pytest.mark.parametrize(
    ("template", "message"),
    [("The nurse said that [Y]", r"no \[X\]"), ("The [X] said", r"no \[Y\]"), ("[X] [Y] [Y]", "2")],
)
def test_render_probe_rejects_templates_without_exactly_one_slot_each(template, message):
    with pytest.raises(ValueError, match=message):
        render_probe(template, "nurse")


# -- user files -----------------------------------------------------------------------------------------------


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_user_templates_load_from_the_authors_csv_format(tmp_path):
    path = write(
        tmp_path,
        "mined.csv",
        'template,proportion\nThe [X] said that [Y],2142\n"The [X], who came, is [Y]",7\n\nThe [X] felt that [Y],0\n',
    )
    templates = load_templates(path=path)
    assert templates.texts == ("The [X] said that [Y]", "The [X], who came, is [Y]", "The [X] felt that [Y]")
    assert templates.counts == (2142, 7, 0) and templates.source == str(path)


def test_user_yaml_files_with_one_attribute_need_no_attribute_name(tmp_path):
    attrs = write(tmp_path, "religion.yaml", "religion:\n  christian: [Christian, church]\n  muslim: [muslim]\n")
    groups = load_attributes(path=attrs)
    assert groups.attribute == "religion" and groups.words == (("christian", "church"), ("muslim",))
    templates = write(tmp_path, "t.yaml", "religion:\n  - {template: 'The [X] said that [Y]', count: 3}\n")
    assert load_templates(path=templates).counts == (3,)


def test_user_occupations_with_partial_weights(tmp_path):
    yaml_path = write(tmp_path, "occ.yaml", "occupations: [Nurse, vp, doctor]\nweights: {nurse: 3, doctor: 1}\n")
    occ = load_occupations(yaml_path)
    assert occ.terms == ("nurse", "vp", "doctor") and occ.weights == {"nurse": 3, "doctor": 1}
    omega = occ.weigh()
    assert omega.weights == pytest.approx([0.75, 0, 0.25]) and omega.unmapped == ("vp",)
    csv_path = write(tmp_path, "occ.csv", "occupation,employment\nnurse,3\nvp,\ndoctor,1\n")
    assert load_occupations(csv_path).weights == {"nurse": 3.0, "doctor": 1.0}


def test_user_attribute_csv_groups_rows_by_group(tmp_path):
    path = write(tmp_path, "gender.csv", "group,word\nmale,he\nfemale,she\nmale,him\n")
    groups = load_attributes(path=path)
    assert groups.attribute == "gender" and groups.labels == ("male", "female")
    assert groups.words == (("he", "him"), ("she",))


@pytest.mark.parametrize(
    ("name", "text", "where", "fix"),
    [
        ("t.csv", "template,count\nThe [X] said that [Y],3\nThe [X] said that,2\n", "line 3", r"has no \[Y\]"),
        ("t.csv", "template,count\nThe nurse said that [Y],3\n", "line 2", r"mark the occupation slot with \[X\]"),
        ("t.csv", "template,count\nThe [X] said that [Y],-3\n", "line 2", "negative; use 0 or more"),
        ("t.csv", "template,count\nThe [X] said that [Y],many\n", "line 2", "not a number"),
        ("t.csv", "template,count\nThe [X], who came, is [Y],3\n", "line 2", "quote fields that contain commas"),
        ("t.csv", "words,count\nThe [X] said that [Y],3\n", "line 1", "start with 'template,count'"),
        ("t.csv", "template,count\nThe [X] said that [Y],3\nThe [X] said that [Y],1\n", "line 3", "merge the two"),
        (
            "t.csv",
            "template,count\nThe [X] said that [Y],0\n",
            "all rows",
            "every count is 0; give at least one template a positive count",
        ),
        ("t.yaml", "gender:\n  - {template: 'The [X] said', count: 3}\n", r"gender\[0\]", r"has no \[Y\]"),
        ("t.yaml", "gender:\n  - {template: 'The [X] said that [Y]'}\n", r"gender\[0\]", "'template' and 'count'"),
        ("t.yaml", "gender:\n  - {template: 'The [X] said that [Y]', count: -1}\n", r"gender\[0\]", "negative"),
        ("t.yaml", "gender: [a\n", "line 2", "not valid YAML"),
    ],
)
def test_template_file_problems_name_the_file_the_place_and_the_fix(tmp_path, name, text, where, fix):
    path = write(tmp_path, name, text)
    with pytest.raises(PcfDataError, match=rf"^{re.escape(str(path))}, {where}.*{fix}") as info:
        load_templates(path=path)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("name", "text", "where", "fix"),
    [
        ("a.yaml", "gender:\n  male: []\n  female: [she]\n", "gender.male", r"list at least one, e.g. 'male: \[he\]'"),
        ("a.yaml", "gender:\n  male:\n  female: [she]\n", "gender.male", "group has no words"),
        (
            "a.yaml",
            "gender:\n  male: [he]\n",
            "gender",
            r"only 1 group \(male\); PCF compares K >= 2 groups, so add another",
        ),
        ("a.yaml", "gender:\n  male: [he, He]\n  female: [she]\n", r"gender.male\[1\]", "remove the repeat"),
        ("a.yaml", "gender:\n  male: [he, yes]\n  female: [she]\n", r"gender.male\[1\]", "quote it"),
        ("a.yaml", "gender:\n  male: [he]\n  female: [she]\nrace:\n  a: [x]\n  b: [y]\n", "top level", "attribute="),
        ("a.csv", "group,word\nmale,he\nmale,him\n", "group column", "only 1 group"),
        ("a.csv", "group\nmale\n", "line 1", "no word column; start with 'group,word'"),
    ],
)
def test_attribute_file_problems_name_the_file_the_place_and_the_fix(tmp_path, name, text, where, fix):
    path = write(tmp_path, name, text)
    with pytest.raises(PcfDataError, match=rf"^{re.escape(str(path))}, ({where}).*{fix}"):
        load_attributes(path=path)


def test_asking_for_an_attribute_the_file_lacks_lists_the_ones_it_has(tmp_path):
    path = write(tmp_path, "a.yaml", "gender:\n  male: [he]\n  female: [she]\n")
    with pytest.raises(PcfDataError, match="no attribute 'race'; the file defines gender"):
        load_attributes("race", path)


@pytest.mark.parametrize(
    ("name", "text", "where", "fix"),
    [
        ("o.yaml", "occupations: [nurse, Nurse]\n", r"occupations\[1\]", r"repeats occupations\[0\]"),
        ("o.yaml", "jobs: [nurse]\n", "occupations", "list the terms under 'occupations:'"),
        ("o.yaml", "occupations: [nurse]\nweights: {pilot: 3}\n", "weights.pilot", "not an occupation"),
        ("o.yaml", "occupations: [nurse]\nweights: {nurse: -3}\n", "weights.nurse", "negative"),
        ("o.csv", "occupation,weight\nnurse,lots\n", "line 2", "not a number"),
    ],
)
def test_occupation_file_problems_name_the_file_the_place_and_the_fix(tmp_path, name, text, where, fix):
    path = write(tmp_path, name, text)
    with pytest.raises(PcfDataError, match=rf"^{re.escape(str(path))}, {where}.*{fix}"):
        load_occupations(path)


def test_unreadable_or_unknown_files_are_data_errors(tmp_path):
    with pytest.raises(PcfDataError, match=re.escape("unsupported file type '.txt'; use .yaml, .yml or .csv")):
        load_templates(path=write(tmp_path, "t.txt", ""))
    with pytest.raises(PcfDataError, match="cannot be read"):
        load_templates(path=tmp_path / "missing.csv")
