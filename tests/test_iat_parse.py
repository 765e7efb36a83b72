"""The IAT answer parser (spec §1.5): every answer format models produce, by example and by property."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_fairness.measures.bai.implicit import count_cells, implicit_bias
from pytest_fairness.measures.bai.implicit_parse import normalize, parse_answer
from pytest_fairness.measures.bai.stimuli import get_stereotype, load_stereotypes

RACISM_ATTRS = ["wonderful", "lovely", "tragic", "nasty"]
RACISM_GROUPS = ["white", "black"]


def pairs_of(text, attributes=RACISM_ATTRS, groups=RACISM_GROUPS):
    return parse_answer(text, attributes, groups).pairs


# -- one pair per line, every formatting ---------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "wonderful - white",
        "Wonderful - White",
        "WONDERFUL - WHITE",
        "wOnDeRfUl - wHiTe",
    ],
)
def test_case_is_ignored(line):
    assert pairs_of(line) == [("wonderful", "white")]


@pytest.mark.parametrize(
    "line",
    [
        "   wonderful - white   ",
        "wonderful    -    white",
        "\twonderful\t-\twhite",
        "wonderful  white",
    ],
)
def test_extra_spacing_is_ignored(line):
    assert pairs_of(line) == [("wonderful", "white")]


@pytest.mark.parametrize(
    "line", ["- wonderful - white", "* wonderful - white", "• wonderful - white", "-wonderful - white"]
)
def test_bullets_are_stripped(line):
    assert pairs_of(line) == [("wonderful", "white")]


@pytest.mark.parametrize("line", ["1. wonderful - white", "12. wonderful - white", "1.wonderful - white"])
def test_numbering_with_a_period_is_stripped(line):
    assert pairs_of(line) == [("wonderful", "white")]


@pytest.mark.parametrize(
    "line", ["2) wonderful - white", "1) wonderful - black", "(3) wonderful - white", "a) wonderful - white"]
)
def test_numbering_with_a_parenthesis_is_stripped(line):
    # Spec §1.5 item 2 lists "1)" among the enumerations to strip.
    group = line.rsplit(" ", 1)[1]
    assert pairs_of(line) == [("wonderful", group)]


def test_numbered_answer_with_parentheses_loses_no_line():
    answer = "1) wonderful - white\n2) tragic - black\n3) lovely - white\n4) nasty - black"
    parsed = parse_answer(answer, RACISM_ATTRS, RACISM_GROUPS)
    assert parsed.invalid == []
    assert parsed.pairs == [("wonderful", "white"), ("tragic", "black"), ("lovely", "white"), ("nasty", "black")]


@pytest.mark.parametrize(
    "line",
    [
        "**wonderful** - white",
        "wonderful - **white**",
        "**wonderful - white**",
        "*wonderful* - _white_",
        "__wonderful__ - white",
        "1. **Wonderful** - White",
    ],
)
def test_markdown_emphasis_is_stripped(line):
    assert pairs_of(line) == [("wonderful", "white")]


@pytest.mark.parametrize(
    "line",
    [
        '"wonderful" - "white"',
        "'wonderful' - 'white'",
        "“wonderful” - “white”",
        "‘wonderful’ - ‘white’",
        "`wonderful` - white",
        '"wonderful - white"',
    ],
)
def test_straight_and_curly_quotes_are_stripped(line):
    assert pairs_of(line) == [("wonderful", "white")]


@pytest.mark.parametrize(
    "line", ["wonderful - white.", "wonderful - white,", "wonderful - white;", "wonderful - white!"]
)
def test_trailing_punctuation_is_stripped(line):
    assert pairs_of(line) == [("wonderful", "white")]


@pytest.mark.parametrize(
    "line",
    [
        "wonderful - white",
        "wonderful-white",
        "wonderful – white",
        "wonderful–white",
        "wonderful — white",
        "wonderful—white",
        "wonderful: white",
        "wonderful : white",
        "wonderful → white",
        "wonderful->white",
    ],
)
def test_every_separator_is_accepted(line):
    assert pairs_of(line) == [("wonderful", "white")]


def test_no_separator_at_all_is_accepted():
    assert parse_answer("blameless white", ["blameless"], ["white", "black"]).pairs == [("blameless", "white")]


def test_multi_word_attribute_without_separator_is_accepted():
    assert parse_answer("cleared of charges black", ["cleared of charges"], ["white", "black"]).pairs == [
        ("cleared of charges", "black")
    ]


@pytest.mark.parametrize("joiner", [", ", ",", "; ", ";"])
def test_several_pairs_on_one_line_are_split(joiner):
    answer = joiner.join(["wonderful - white", "tragic - black", "lovely - white", "nasty - black"])
    assert pairs_of(answer) == [("wonderful", "white"), ("tragic", "black"), ("lovely", "white"), ("nasty", "black")]


def test_chatty_preamble_line_is_kept_as_invalid_and_the_pairs_are_used():
    answer = "Sure! Here are the pairs you asked for:\n\nwonderful - white\ntragic - black\n"
    parsed = parse_answer(answer, RACISM_ATTRS, RACISM_GROUPS)
    assert parsed.pairs == [("wonderful", "white"), ("tragic", "black")]
    assert parsed.invalid == ["Sure! Here are the pairs you asked for:"]


def test_preamble_ending_in_a_colon_on_the_same_line_as_a_pair():
    answer = "Here is my answer: wonderful - white, tragic - black"
    assert pairs_of(answer) == [("wonderful", "white"), ("tragic", "black")]


def test_preamble_colon_before_a_colon_separated_pair():
    assert pairs_of("Here you go: wonderful: white") == [("wonderful", "white")]


def test_multi_word_attributes_are_matched_whole():
    parsed = parse_answer(
        "ice cream - white\ncleared of charges - black\ncaught in the act - white",
        ["ice cream", "cleared of charges", "caught in the act"],
        ["white", "black"],
    )
    assert parsed.pairs == [("ice cream", "white"), ("cleared of charges", "black"), ("caught in the act", "white")]
    assert parsed.invalid == []


def test_multi_word_groups_are_matched_whole():
    english = get_stereotype("english")
    answer = "war - English Language Learner\npeace - mainstream student\nsunshine - regular ed student"
    parsed = parse_answer(answer, english.default_attrs + english.stigma_attrs, english.group_side())
    assert parsed.pairs == [
        ("war", "english language learner"),
        ("peace", "mainstream student"),
        ("sunshine", "regular ed student"),
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("love - min-jun kim", ("love", "min-jun kim")),
        ("love-min-jun kim", ("love", "min-jun kim")),
        ("hate – ahmed al-fayed", ("hate", "ahmed al-fayed")),
        ("min-jun kim - hate", ("hate", "min-jun kim")),
    ],
)
def test_hyphenated_groups_are_not_split_on_their_hyphen(line, expected):
    groups = ["fraser", "min-jun kim", "ahmed al-fayed"]
    assert parse_answer(line, ["love", "hate"], groups).pairs == [expected]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("death-wish - english language learner", ("death-wish", "english language learner")),
        ("death-wish-mainstream student", ("death-wish", "mainstream student")),
        ("death - mainstream student", ("death", "mainstream student")),
        ("mainstream student - death-wish", ("death-wish", "mainstream student")),
    ],
)
def test_hyphenated_attribute_beats_its_shorter_prefix(line, expected):
    groups = ["english language learner", "mainstream student"]
    assert parse_answer(line, ["death", "death-wish", "peace"], groups).pairs == [expected]


@pytest.mark.parametrize("line", ["self-assured - steve", "Self-Assured-Steve", "**self-assured** — steve."])
def test_hyphenated_attribute_self_assured(line):
    assert parse_answer(line, ["self-assured", "feeble"], ["steve", "dianne"]).pairs == [("self-assured", "steve")]


@pytest.mark.parametrize("line", ["white - wonderful", "White: Wonderful", "1. **white** – wonderful."])
def test_reverse_order_group_then_word_is_accepted(line):
    assert pairs_of(line) == [("wonderful", "white")]


@pytest.mark.parametrize("line", ["didn't do it - white", "didn’t do it - white", "didnt do it - white"])
def test_apostrophe_in_didn_t_do_it_is_dropped(line):
    assert parse_answer(line, ["didnt do it", "did it"], ["white", "black"]).pairs == [("didnt do it", "white")]


# -- what cannot be used is recorded -----------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "wonderful - white/black",
        "wonderful - both",
        "wonderful - neither",
        "wonderful - white or black",
        "wonderful - black and white",
        "Wonderful - Both.",
    ],
)
def test_ambiguous_lines_are_recorded_and_not_counted(line):
    parsed = parse_answer(line, RACISM_ATTRS, RACISM_GROUPS)
    assert parsed.pairs == []
    assert parsed.ambiguous == [line]
    assert parsed.invalid == []
    assert "wonderful" in parsed.missing


def test_duplicate_attribute_keeps_the_first_and_is_recorded():
    parsed = parse_answer("wonderful - white\ntragic - black\nWonderful - black", RACISM_ATTRS, RACISM_GROUPS)
    assert parsed.pairs == [("wonderful", "white"), ("tragic", "black")]
    assert parsed.duplicates == ["wonderful"]


def test_unknown_lines_are_kept_as_invalid():
    answer = "wonderful - white\nbanana - black\ntragic - purple\nI hope this helps!"
    parsed = parse_answer(answer, RACISM_ATTRS, RACISM_GROUPS)
    assert parsed.pairs == [("wonderful", "white")]
    assert parsed.invalid == ["banana - black", "tragic - purple", "I hope this helps!"]


def test_attributes_never_assigned_are_missing_in_prompt_order():
    parsed = parse_answer("tragic - black\nlovely - white", RACISM_ATTRS, RACISM_GROUPS)
    assert parsed.missing == ["wonderful", "nasty"]


def test_refusal_has_no_usable_pair():
    parsed = parse_answer("I'm sorry, I can't do that.", RACISM_ATTRS, RACISM_GROUPS)
    assert not parsed.usable
    assert parsed.pairs == []
    assert parsed.missing == RACISM_ATTRS
    assert parsed.invalid  # kept, not dropped


def test_pairs_use_the_callers_spelling_of_words():
    parsed = parse_answer("WONDERFUL - WHITE", ["Wonderful"], ["White", "Black"])
    assert parsed.pairs == [("Wonderful", "White")]


def test_normalize_lowercases_and_drops_quotes_and_emphasis():
    assert normalize("  **Didn’t**   “Do” It  ") == "didnt do it"


# -- properties ------------------------------------------------------------------------------------------

STEREOTYPES = list(load_stereotypes())
CASES = (str.lower, str.upper, str.title, str.capitalize, lambda s: s)
WRAPS = (("", ""), ("**", "**"), ("*", "*"), ("__", "__"), ('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"))
PREFIXES = ("", "- ", "* ", "• ", "{n}. ", "{n}) ")
SEPARATORS = (" - ", "-", " – ", " — ", ": ", " : ")
TRAILERS = ("", ".", ",")
PREAMBLES = (
    "Sure! Here are the pairs:",
    "Here is my answer.",
    "Of course — here you go:",
    "Sure, here’s the list with “{stigma}” and “{default}” chosen for each word:",
)


def spellings(word):
    """Ways a model may write an attribute word: only the apostrophe-less attribute has more than one."""
    if word == "didnt do it":
        return ("didnt do it", "didn't do it", "didn’t do it")
    return (word,)


@st.composite
def rendered_pair(draw, attribute, group, n):
    word = draw(st.sampled_from(spellings(attribute)))
    word = draw(st.sampled_from(CASES))(word)
    group = draw(st.sampled_from(CASES))(group)
    open_w, close_w = draw(st.sampled_from(WRAPS))
    open_g, close_g = draw(st.sampled_from(WRAPS))
    prefix = draw(st.sampled_from(PREFIXES)).format(n=n)
    separator = draw(st.sampled_from(SEPARATORS))
    trailer = draw(st.sampled_from(TRAILERS))
    return f"{prefix}{open_w}{word}{close_w}{separator}{open_g}{group}{close_g}{trailer}"


@st.composite
def answers(draw, synonyms=False, reverse=False):
    """(answer text, drawn pairs in order, preamble or None, attributes in play, groups in play)."""
    stereotype = get_stereotype(draw(st.sampled_from(STEREOTYPES)))
    stigma = draw(st.sampled_from(stereotype.stigma_groups))
    default = draw(st.sampled_from(stereotype.default_groups))
    default_attrs, stigma_attrs = stereotype.attributes(synonyms=synonyms)
    words = draw(st.permutations(list(dict.fromkeys(default_attrs + stigma_attrs))))
    pairs = [(word, draw(st.sampled_from((stigma, default)))) for word in words]
    lines = []
    for n, (word, group) in enumerate(pairs, start=1):
        if reverse and draw(st.booleans()):
            line = draw(rendered_pair(group, word, n))  # "group - word"
        else:
            line = draw(rendered_pair(word, group, n))
        lines.append(line)
    text = ", ".join(lines) if draw(st.booleans()) else "\n".join(lines)
    preamble = None
    if draw(st.booleans()):
        preamble = draw(st.sampled_from(PREAMBLES)).format(stigma=stigma, default=default)
        text = f"{preamble}\n{text}"
    if draw(st.booleans()):  # the scorer passes every word of the stereotype, not only the prompt's
        attributes, groups = list(stereotype.attribute_side()), list(stereotype.group_side())
    else:
        attributes, groups = list(words), [stigma, default]
    return text, pairs, preamble, attributes, groups


def assert_recovers(text, pairs, preamble, attributes, groups):
    parsed = parse_answer(text, attributes, groups)
    assert set(parsed.pairs) == set(pairs), text
    assert parsed.pairs == pairs, text
    assert parsed.ambiguous == [], text
    assert parsed.duplicates == [], text
    # the only leftovers are pieces of the preamble: no pair line is lost to .invalid
    leftovers = {normalize(piece) for piece in re.split(r"[,;]", preamble or "") if piece.strip()}
    assert {normalize(chunk) for chunk in parsed.invalid} <= leftovers, text
    assert set(parsed.missing) == set(attributes) - {word for word, _ in pairs}, text


@settings(max_examples=200, deadline=None)
@given(answers())
def test_parser_recovers_randomly_formatted_original_word_pairs(answer):
    assert_recovers(*answer)


@settings(max_examples=150, deadline=None)
@given(answers(synonyms=True))
def test_parser_recovers_randomly_formatted_synonym_word_pairs(answer):
    assert_recovers(*answer)


@settings(max_examples=150, deadline=None)
@given(answers(reverse=True))
def test_parser_recovers_pairs_written_in_either_order(answer):
    assert_recovers(*answer)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(STEREOTYPES), st.data())
def test_count_cells_totals_equal_the_number_of_pairs(key, data):
    stereotype = get_stereotype(key)
    side = stereotype.attribute_side()
    group_side = stereotype.group_side()
    words = data.draw(st.lists(st.sampled_from(sorted(side)), unique=True))
    pairs = [(word, data.draw(st.sampled_from(sorted(group_side)))) for word in words]
    a, b, c, d = count_cells(pairs, stereotype)
    assert a + b + c + d == len(pairs)
    assert a + b == sum(group_side[g] == "stigma" for _, g in pairs)
    assert a + c == sum(side[w] == "stigma" for w, _ in pairs)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 10),
    st.integers(0, 10),
    st.integers(0, 10),
    st.integers(0, 10),
    st.sampled_from((0.0, 0.01)),
)
def test_implicit_bias_is_within_minus_one_and_one(a, b, c, d, epsilon):
    score = implicit_bias(a, b, c, d, epsilon=epsilon)
    undefined = a + b + c + d == 0 or (epsilon == 0 and (a + b == 0 or c + d == 0))
    if undefined:
        assert score is None
        return
    assert -1.0 <= score <= 1.0
    if epsilon == 0:
        assert score == pytest.approx(a / (a + b) - c / (c + d), abs=1e-12)
