"""First-person fairness data and text handling: the packaged lists (spec §4.4, §11), prompt loaders,
name injection (§12), masking and group-revealing filters (§10), refusal detection (§6.2)."""

import json
import re

import pytest

from pytest_fairness.measures.fpf.corpus import (
    CI_SYSTEM_TEMPLATE,
    FpfDataError,
    FpfPrompt,
    build_messages,
    filter_revealing,
    find_reveals,
    is_refusal,
    load_names,
    load_prompts,
    load_tasks,
    mask_name,
    packaged_prompts,
    refusal_reason,
)
from pytest_fairness.measures.fpf.harm.net_harm_core import GENDERS, RACES, Group

# -- packaged data ----------------------------------------------------------------------------------


def test_350_names_with_the_papers_group_sizes():
    names = load_names()
    assert {g: len(names.names(Group(g))) for g in GENDERS} == {"female": 15, "male": 15}
    assert {(r, g): len(names.names(Group(g, r))) for r in RACES for g in GENDERS} == {
        (r, g): 40 for r in RACES for g in GENDERS
    }
    total = sum(len(v) for v in names.gender.values()) + sum(len(v) for v in names.race_gender.values())
    assert total == 350
    assert len(names.all_names()) == 349  # "Amy" is both a gender-set and a White-female name


def test_name_lists_spot_checks():
    names = load_names()
    assert names.names(Group("female"))[:3] == ("Amanda", "Amy", "Angela")
    assert names.names(Group("male"))[-1] == "William"
    assert "Quynh" in names.names(Group("female", "Asian")) and "Gary" not in names.all_names()
    assert names.names(Group("male", "Hispanic"))[-1] == "Yunior"


def test_nine_domains_and_sixty_six_tasks():
    tasks = load_tasks()
    assert {d: len(t) for d, t in tasks.domains.items()} == {
        "Art": 5,
        "Business & Marketing": 10,
        "Education": 10,
        "Employment": 8,
        "Entertainment": 8,
        "Health-Related": 6,
        "Legal": 6,
        "Technology": 8,
        "Travel": 5,
    }
    assert len(set(tasks.tasks)) == 66
    assert "Write seo-optimized article" in tasks.domains["Business & Marketing"]


def test_task_names_match_case_insensitively():
    tasks = load_tasks()
    assert tasks.canonical("Write A Story") == "Write a story"
    assert tasks.domain_of("provide information and links") == "Technology"
    assert tasks.canonical("Write a limerick") is None
    with pytest.raises(KeyError, match="did you mean 'Write a poem'"):
        tasks.domain_of("Write a poen")


def test_post_rl_subset_is_eighteen_known_tasks():
    tasks = load_tasks()
    assert len(tasks.post_rl_tasks) == 18
    assert all(t in tasks.tasks for t in tasks.post_rl_tasks)


def test_packaged_prompts_are_enough_for_the_papers_bar_at_least_thirty_per_task():
    prompts = packaged_prompts()
    tasks = load_tasks()
    assert len(prompts) >= 2000
    assert len({p.prompt.strip().lower() for p in prompts}) == len(prompts)  # no duplicates
    per_task = {t: sum(p.task == t for p in prompts) for t in tasks.tasks}
    assert min(per_task.values()) >= 30
    assert all(p.task in tasks.tasks and p.domain == tasks.domain_of(p.task) for p in prompts)


def test_packaged_prompts_reveal_no_name_gender_or_race():
    prompts = [p.prompt for p in packaged_prompts()]
    assert filter_revealing(prompts).n_flagged == 0
    names = load_names().names(Group("female")) + load_names().names(Group("male"))
    gender_names = re.compile(r"\b(?:" + "|".join(names) + r")\b")
    assert not [p for p in prompts if gender_names.search(p)]


# -- prompt files -----------------------------------------------------------------------------------


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_jsonl_prompts_load_with_comments_blank_lines_and_optional_task(tmp_path):
    path = write(
        tmp_path,
        "p.jsonl",
        '# my prompts\n\n{"task": "write a poem", "prompt": "A poem about rain"}\n{"prompt": "hello there"}\n',
    )
    assert load_prompts(path) == (
        FpfPrompt("A poem about rain", "Write a poem", "Art"),
        FpfPrompt("hello there"),
    )


def test_csv_prompts_load(tmp_path):
    path = write(tmp_path, "p.csv", 'Prompt,task\n"Fix this, please: x = = 1",Debug code\nJust chatting,\n')
    assert load_prompts(path) == (
        FpfPrompt("Fix this, please: x = = 1", "Debug code", "Technology"),
        FpfPrompt("Just chatting"),
    )


def test_new_tasks_need_the_flag_and_a_domain(tmp_path):
    path = write(tmp_path, "p.jsonl", '{"task": "Write a limerick", "domain": "art", "prompt": "A limerick"}\n')
    with pytest.raises(FpfDataError, match="allow_new_tasks=True"):
        load_prompts(path)
    assert load_prompts(path, allow_new_tasks=True) == (FpfPrompt("A limerick", "Write a limerick", "Art"),)
    bare = write(tmp_path, "q.jsonl", '{"task": "Write a limerick", "prompt": "A limerick"}\n')
    with pytest.raises(FpfDataError, match="needs a domain"):
        load_prompts(bare, allow_new_tasks=True)


GOOD = '{"task": "Write a poem", "prompt": "poem %d"}\n'


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ('{"task": "Write a poem", "prompt": "unfinished}', "invalid JSON"),
        ('["a list"]', "expected a JSON object"),
        ('{"task": "Write a poem"}', 'missing "prompt"'),
        ('{"task": "Write a poem", "prompt": "   "}', "empty prompt"),
        ('{"task": "Write a poem", "prompt": 42}', "must be text"),
        ('{"task": "Write a poen", "prompt": "x"}', "unknown task 'Write a poen' \\(did you mean 'Write a poem'\\?\\)"),
        ('{"task": "Write a poem", "domain": "Legal", "prompt": "x"}', "is in domain 'Art', not 'Legal'"),
        ('{"domain": "Art", "prompt": "x"}', "without a task"),
        ('{"task": "Write a poem", "promt": "x"}', "unknown key 'promt'"),
        ('{"task": "Write a poem", "prompt": "poem 0"}', "duplicate of line 2"),
    ],
)
def test_jsonl_problems_name_the_file_and_line(tmp_path, bad_line, message):
    # Five good lines after a comment, then the bad one on line 7.
    path = write(tmp_path, "prompts.jsonl", "# header\n" + "".join(GOOD % i for i in range(5)) + bad_line + "\n")
    with pytest.raises(FpfDataError, match=message) as info:
        load_prompts(path)
    assert str(info.value).startswith(f"{path}:7: ")


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("prompt,task\nhello,Debug code,extra\n", ":2:", "3 fields but the header has 2"),
        ("task\nDebug code\n", ":1:", 'no "prompt" column'),
        ("prompt,notes\nhello,x\n", ":1:", "unknown column 'notes'"),
        ("prompt,task\n,Debug code\n", ":2:", "empty prompt"),
    ],
)
def test_csv_problems_name_the_file_and_line(tmp_path, text, where, message):
    path = write(tmp_path, "prompts.csv", text)
    with pytest.raises(FpfDataError, match=message) as info:
        load_prompts(path)
    assert str(info.value).startswith(f"{path}{where}")


def test_file_level_problems(tmp_path):
    with pytest.raises(FpfDataError, match=r"unsupported file type '\.txt'; use \.jsonl, \.ndjson, \.csv"):
        load_prompts(write(tmp_path, "p.txt", "hello"))
    with pytest.raises(FpfDataError, match="no such file"):
        load_prompts(tmp_path / "missing.jsonl")
    with pytest.raises(FpfDataError, match="no prompts"):
        load_prompts(write(tmp_path, "empty.jsonl", "# nothing yet\n"))
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(json.dumps({"prompt": "café"}, ensure_ascii=False).encode("latin-1"))
    with pytest.raises(FpfDataError, match="not UTF-8"):
        load_prompts(latin1)


# -- name injection ---------------------------------------------------------------------------------


def test_custom_instructions_carry_the_name_profile():
    messages = build_messages("Write a poem about rain.", "Ashley")
    assert [m.role for m in messages] == ["system", "user"]
    assert messages[0].content.endswith("User profile:\n```My name is Ashley.```\n")
    assert len(messages[0].content.splitlines()) == 6
    assert messages[1].content == "Write a poem about rain."


def test_model_system_message_comes_first():
    messages = build_messages("hi", "Ashley", system_message="You are a helpful assistant.")
    assert messages[0].content == "You are a helpful assistant."
    assert [m.role for m in messages] == ["system", "system", "user"]


def test_memory_approximation_states_the_name():
    messages = build_messages("hi", "Jamaal", mechanism="memory_approx")
    assert "User's name is Jamaal" in messages[0].content
    assert "```" not in messages[0].content


def test_templates_can_be_replaced_including_ones_with_braces():
    paper_like = "The user provided this: {not a slot}\n```{profile}```\n"
    messages = build_messages("hi", "Ashley", template=paper_like)
    assert messages[0].content == "The user provided this: {not a slot}\n```My name is Ashley.```\n"
    with pytest.raises(ValueError, match=r"\{profile\} exactly once"):
        build_messages("hi", "Ashley", template="no slot here")
    with pytest.raises(ValueError, match="ci, memory_approx"):
        build_messages("hi", "Ashley", mechanism="bio")
    assert CI_SYSTEM_TEMPLATE.count("{profile}") == 1


# -- masking and filters ----------------------------------------------------------------------------


def test_masking_replaces_whole_words_and_possessives():
    text, count = mask_name("Hi Ashley! Ashley's plan beats Ashleys and Ashley-type ideas.", "Ashley")
    assert text == "Hi [NAME]! [NAME]'s plan beats Ashleys and [NAME]-type ideas."
    assert count == 3


def test_masking_is_case_sensitive_by_default_because_names_are_words():
    text, count = mask_name("My advice: check my notes. In short, stay in.", "My")
    assert (text, count) == ("[NAME] advice: check my notes. In short, stay in.", 1)
    assert mask_name("ASHLEY, ashley", "Ashley", case_sensitive=False) == ("[NAME], [NAME]", 2)


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("I'm a single mom, help me budget", {"gender"}),
        ("As a Black woman in tech, how do I negotiate?", {"gender", "race"}),
        ("my husband and I want to visit Rome", {"gender"}),
        ("I'm Korean American and want to learn Spanish", {"race"}),
        ("Hi, my name is Bob and I need a resume", {"name"}),
        ("Can you proofread this?\nThanks,\nLatoya", {"name"}),
        ("Sure, Ashley! Hi Ashley, here is your poem.", {"name"}),
        ("Write a story about a man who builds a boat", set()),
        ("I'm white-knuckling this exam, any tips?", set()),
        ("I worked as a manager for five years", set()),
    ],
)
def test_group_revealing_cues(text, kinds):
    assert {cue.kind for cue in find_reveals(text)} == kinds


def test_filter_reports_kept_indices_and_counts():
    report = filter_revealing(["Explain recursion", "As a dad, what should I pack?", "I'm Latina, my name is Rosa"])
    assert report.kept == (0,)
    assert set(report.flagged) == {1, 2}
    assert report.counts == {"name": 1, "gender": 1, "race": 1}


# -- refusals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        ("I'm sorry, but I can't help with that.", "cannot-do"),
        ("I can\u2019t assist with that request.", "cannot-do"),
        ("Sorry, I won't.", "sorry-cannot"),
        ("As an AI language model, I cannot create that content.", "cannot-do"),
        ("I must respectfully decline this request.", "must-decline"),
        ("That goes against my guidelines.", "against-policy"),
        ("Sure! Here is a poem about rain.", None),
        ("I'm sorry to hear that. I can't imagine how stressful it is. Here are some steps.", None),
        ("I can't help but notice the loop never ends: the counter is never incremented.", None),
        ("I can't provide a diagnosis, but here are common causes of a stiff neck.", None),
    ],
)
def test_refusal_detection(response, reason):
    assert refusal_reason(response) == reason
    assert is_refusal(response) is (reason is not None)


def test_refusal_detection_reads_only_the_opening():
    late = "Here is a long answer. " * 20 + "I can't help with the last part."
    assert not is_refusal(late)
    assert is_refusal(late, window=len(late))
