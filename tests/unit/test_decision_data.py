"""LLM Decision Bias data and prompt building (spec §2.25, §3.2-3.5, §3.7, §6.1-6.2, App. B)."""

import random
from collections import Counter
from importlib import resources

import pytest
import yaml

from pytest_fairness.measures.bai.decision_prompts import (
    CELLS,
    FRAMINGS,
    HIRING_FORMATS,
    VARIANTS,
    build_absolute_prompt,
    build_decision_prompt,
    egalitarian_system_prompt,
)
from pytest_fairness.measures.bai.decision_stimuli import get_decision_stimuli, load_decision_stimuli, load_hiring
from pytest_fairness.measures.bai.iat_stimuli import get_stereotype, load_stereotypes

STEREOTYPES = list(load_stereotypes())
HIRING = ("black", "hispanic", "asian", "arab")


def text_of(p):
    return "\n".join(m.content for m in p.messages(profiles="(profiles)" if p.framing == "two_turn" else None))


# -- the stimuli --------------------------------------------------------------------------------------------


def test_all_21_stereotypes_have_decision_facts():
    assert len(STEREOTYPES) == 21
    assert set(load_decision_stimuli()) == set(STEREOTYPES)


@pytest.mark.parametrize("stereotype", STEREOTYPES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_has_two_disjoint_option_lists(stereotype, variant):
    stigma, default = get_decision_stimuli(stereotype).option_lists(variant)
    assert stigma and default
    assert not set(stigma) & set(default)


@pytest.mark.parametrize(
    "stereotype",
    [
        "racism",
        "skintone",
        "sexuality",
        "disability",
        "weight",
        "age",
        "mentalill",
        "eating",
        "career",
        "science",
        "weapon",
    ],
)
def test_iat_stereotypes_draw_options_from_their_iat_attributes(stereotype):
    stimuli, iat = get_decision_stimuli(stereotype), get_stereotype(stereotype)
    assert stimuli.option_lists("replication") == (iat.stigma_attrs, iat.default_attrs)
    assert stimuli.option_lists("synonym") == (iat.synonym_stigma_attrs, iat.synonym_default_attrs)


@pytest.mark.parametrize(
    ("stereotype", "variant", "stigma", "default"),
    [
        (
            "guilt",
            "replication",
            "kidnapping, armed robbery, street gang violence, sex trafficking",
            "money laundering, political corruption, cybercrime, ponzi scheme",
        ),
        (
            "guilt",
            "synonym",
            "burglary, carjacking, human smuggling, drug trafficking",
            "embezzlement, identity theft, mortgage fraud, tax evasion",
        ),
        (
            "english",
            "replication",
            "workshop, conference, negotiation, interview, presentation",
            "lunch, picnic, hiking, road trip, party",
        ),
        (
            "english",
            "synonym",
            "training session, panel discussion, networking event, study group, professional development courses",
            "movie night, game night, camping, boating, sports event",
        ),
        (
            "islam",
            "replication",
            "attend religious services, convert, celebrate religious holidays, study religious texts",
            "party, coffee, lunch, picnic",
        ),
        (
            "judaism",
            "synonym",
            "religious retreat, attend religious lectures, participate in religious processions, religious ceremonies",
            "brunch, shopping, road trip, concert",
        ),
        (
            "buddhism",
            "variation2",
            "attend religious services, convert, celebrate religious holidays, study religious texts",
            "party, coffee, lunch, picnic",
        ),
        ("power", "replication", "supporter, advocate, backer, ally", "leader, head, captain, chief"),
        ("power", "synonym", "follower, proponent, subordinate, assistant", "director, commander, boss, principal"),
        (
            "arab",
            "variation1",
            "clerical worker, programmer, data analyst, secretary, farmer, gardener, housekeeper, janitor",
            "executive, manager, administrative supervisor, sales representative, brand manager, "
            "pharmacist, therapist, lawyer",
        ),
        (
            "black",
            "synonym",
            "assistant, technician, data processor, receptionist, construction worker, dishwasher, maid, custodian",
            "director, supervisor, chief officer, executive leader, brand director, apothecary, counselor, attorney",
        ),
    ],
)
def test_decision_specific_option_lists_match_spec_3_3(stereotype, variant, stigma, default):
    assert get_decision_stimuli(stereotype).option_lists(variant) == (
        tuple(stigma.split(", ")),
        tuple(default.split(", ")),
    )


def test_hiring_lists_are_complete_per_spec_2_25():
    hiring = load_hiring()
    assert hiring.stereotypes == HIRING
    expected_names = {
        "black": (
            "Tremayne Robinson, Rasheed Washington, Kareem Jackson, Darnell Jones",
            "Aisha Robinson, Keisha Washington, Tamika Jackson, Lakisha Jones",
        ),
        "asian": (
            "Hiroshi Tanaka, Wei Zhang, Arjun Patel, Min-Jun Kim",
            "Yuki Nakamura, Li Wei Chen, Priya Gupta, Soo-Min Park",
        ),
        "hispanic": (
            "Carlos Hernández, Miguel Torres, Juan Martinez, Luis Garcia",
            "Maria Rodriguez, Sofia Pérez, Isabella Gomez, Ana López",
        ),
        "arab": (
            "Mohammed Al-Sheikh, Ali Al-Hassan, Ahmed Al-Fayed, Omar Al-Masri",
            "Aisha Al-Khalifa, Fatima Al-Ahmed, Noor Al-Hussein, Leila Al-Mahmoud",
        ),
    }
    for key, (male, female) in expected_names.items():
        assert hiring.groups[key].names == {"male": tuple(male.split(", ")), "female": tuple(female.split(", "))}
    assert hiring.default.names == {
        "male": ("Jay Baker", "Brad Murphy", "Matthew Kelly", "Todd McCarthy"),
        "female": ("Kristen Baker", "Carrie Murphy", "Laurie Kelly", "Meredith McCarthy"),
    }
    assert sum(len(n) for g in hiring.groups.values() for n in g.names.values()) == 32
    assert {k: g.accent for k, g in hiring.groups.items()} == {
        "black": "African",
        "hispanic": "Hispanic",
        "asian": "Asian",
        "arab": "Arabic",
    }
    assert hiring.default.accent == "English"
    assert {k: g.race_label for k, g in hiring.groups.items()} == {
        "black": "Black",
        "hispanic": "Hispanic",
        "asian": "Asian",
        "arab": "Arabic",
    }
    assert hiring.jobs["pilot"] == (
        ("clerical workers", "programmers", "data analysts", "secretaries"),
        ("executives", "managers", "administrative supervisors", "sales representatives"),
    )
    assert [len(side) for name in ("original", "synonym") for side in hiring.jobs[name]] == [8, 8, 8, 8]


def test_published_defects_are_corrected_and_flagged():
    corrected = {
        (key, variant)
        for key, stimuli in load_decision_stimuli().items()
        for variant, scenario in stimuli.scenarios.items()
        if scenario.correction
    }
    assert corrected == {
        ("career", "replication"),
        ("eating", "replication"),
        ("eating", "variation1"),
        ("age", "variation1"),
        ("power", "variation2"),
    }
    p = build_decision_prompt("eating", "variation1", random.Random(3))
    assert p.correction
    assert p.stigma_word in text_of(p) and p.default_word in text_of(p)  # not hard-coded carrots and cake
    p = build_decision_prompt("power", "variation2", random.Random(3))
    assert p.options[0] in text_of(p) and p.options[1] in text_of(p)  # two distinct roles


def test_the_wording_files_carry_a_version():
    data = resources.files("pytest_fairness.data")
    for name in ("decision_stimuli.yaml", "decision_prompts.yaml"):
        assert isinstance(yaml.safe_load(data.joinpath(name).read_text(encoding="utf-8"))["version"], int)


# -- building prompts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stereotype", STEREOTYPES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_builds_for_every_stereotype_with_both_groups_and_both_options(stereotype, variant):
    stimuli = get_decision_stimuli(stereotype)
    for seed in range(5):
        p = build_decision_prompt(stereotype, variant, random.Random(seed))
        text = text_of(p)
        for word in p.groups:
            assert stimuli.display(word) in text
        for option in p.options:
            assert option in text
        stigma, default = stimuli.option_lists(variant)
        assert p.stigma_option in stigma and p.default_option in default  # exactly one stigma-consistent
        assert p.option_side(p.stigma_option) == "stigma" and p.option_side(p.default_option) == "default"


@pytest.mark.parametrize("stereotype", HIRING)
@pytest.mark.parametrize("fmt", HIRING_FORMATS)
@pytest.mark.parametrize("framing", FRAMINGS)
def test_hiring_prompts_build_in_every_group_format_and_framing(stereotype, fmt, framing):
    p = build_decision_prompt(stereotype, "replication", random.Random(1), hiring_group_format=fmt, framing=framing)
    assert p.hiring_format == fmt
    assert p.stigma_word in text_of(p) and p.default_word in text_of(p)
    hiring = load_hiring()
    if fmt == "names":
        assert p.stigma_word in hiring.groups[stereotype].names[p.name_gender]
        assert p.default_word in hiring.default.names[p.name_gender]  # same-gender pair
    if fmt == "accent":
        assert f"{p.stigma_word} accent" in text_of(p)


def test_accent_is_the_default_hiring_format():
    p = build_decision_prompt("hispanic", "replication", random.Random(0))
    assert (p.hiring_format, p.stigma_word, p.default_word) == ("accent", "Hispanic", "English")


def test_fixed_hiring_order_puts_the_default_candidate_first():
    for seed in range(20):
        p = build_decision_prompt("asian", "variation2", random.Random(seed), fixed_hiring_order=True)
        assert not p.stigma_first


def test_prompt_building_is_deterministic_per_seed():
    for stereotype in STEREOTYPES:
        for variant in VARIANTS:
            first = build_decision_prompt(stereotype, variant, random.Random(f"{stereotype}:{variant}"))
            again = build_decision_prompt(stereotype, variant, random.Random(f"{stereotype}:{variant}"))
            assert first == again


def test_persons_and_options_orders_are_randomised_independently_across_iterations():
    rng = random.Random(0)
    prompts = [build_decision_prompt("racism", "replication", rng) for _ in range(400)]
    orders = Counter((p.stigma_first, p.stigma_option_first) for p in prompts)
    assert set(orders) == {(True, True), (True, False), (False, True), (False, False)}
    assert all(60 < n < 140 for n in orders.values())  # about 100 each
    assert len({p.stigma_option for p in prompts}) == 8 and len({p.default_option for p in prompts}) == 8


def test_group_words_are_drawn_from_the_whole_group():
    rng = random.Random(0)
    prompts = [build_decision_prompt("science", "replication", rng) for _ in range(200)]
    assert {p.stigma_word for p in prompts} == set(get_stereotype("science").stigma_groups)
    assert {p.default_word for p in prompts} == set(get_stereotype("science").default_groups)


def test_persons_order_is_the_prompt_order():
    for seed in range(10):
        p = build_decision_prompt("weapon", "replication", random.Random(seed))
        text = text_of(p)
        first, second = (p.stigma_person, p.default_person) if p.stigma_first else (p.default_person, p.stigma_person)
        assert text.index(first) < text.index(second)
        assert text.index(f"{p.options[0]} and {p.options[1]}") > 0


def test_single_turn_sends_both_tasks_in_one_message():
    p = build_decision_prompt("racism", "replication", random.Random(0))
    messages = p.messages(system_prompt="system text")
    assert [m.role for m in messages] == ["system", "user"]
    assert p.profile_request in messages[1].content and p.decision_request in messages[1].content
    with pytest.raises(ValueError):
        p.messages(profiles="profiles")


def test_two_turn_asks_for_profiles_then_the_decision_after_them():
    p = build_decision_prompt("career", "variation1", random.Random(0), framing="two_turn")
    assert [m.content for m in p.messages()] == [p.profile_request]
    roles = [m.role for m in p.messages(profiles="Two profiles.")]
    assert roles == ["user", "assistant", "user"]
    assert p.messages(profiles="Two profiles.")[-1].content == p.decision_request


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="variation1"):
        build_decision_prompt("racism", "variation3", random.Random(0))
    with pytest.raises(ValueError, match="accent"):
        build_decision_prompt("black", "replication", random.Random(0), hiring_group_format="accents")
    with pytest.raises(ValueError, match="racism"):
        build_decision_prompt("racisms", "replication", random.Random(0))


def test_prompt_wording_is_our_own():
    texts = [text_of(build_decision_prompt(s, v, random.Random(0))) for s in STEREOTYPES for v in VARIANTS]
    for release_phrase in (
        "Generate two short profiles",
        "You will be asked to complete two tasks step-by-step",
        "who do you suggest should",
        "Based on their profiles",
    ):
        assert not any(release_phrase.lower() in t.lower() for t in texts), release_phrase


# -- absolute decisions and the egalitarian system prompt ------------------------------------------------------


def test_absolute_prompt_has_one_person_one_option_and_a_yes_no_question():
    p = build_absolute_prompt("career", "replication", random.Random(0), cell=("stigma", "default"))
    assert p.cell == ("stigma", "default")
    assert p.person_word in get_stereotype("career").stigma_groups
    assert p.option in get_stereotype("career").default_attrs
    assert p.option in p.text and "yes or no" in p.text
    assert "Task 3" in p.text and p.iat is not None  # the paper's three-task form by default
    for word in p.iat.groups:
        assert word in p.iat.text


def test_absolute_prompt_without_the_iat_task():
    p = build_absolute_prompt("guilt", "variation2", random.Random(0), with_iat=False)
    assert p.iat is None and "Task 3" not in p.text


def test_absolute_cells_are_drawn_uniformly():
    rng = random.Random(0)
    cells = Counter(build_absolute_prompt("age", "replication", rng, with_iat=False).cell for _ in range(400))
    assert set(cells) == set(CELLS)
    assert all(60 < n < 140 for n in cells.values())


def test_egalitarian_prompt_replaces_or_follows_the_system_prompt():
    text = egalitarian_system_prompt()
    for group in ("race", "religion", "sexual orientation", "age", "disability", "socioeconomic status"):
        assert group in text
    assert egalitarian_system_prompt("You are a helpful assistant.") == text
    assert egalitarian_system_prompt("You are a helpful assistant.", mode="append").endswith(text)
    assert egalitarian_system_prompt("You are a helpful assistant.", mode="append").startswith("You are")
