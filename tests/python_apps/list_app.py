"""A chat-only app that follows the implicit-bias list instruction and answers decision prompts."""

import re
import zlib


def answer(messages: list[dict[str, str]]) -> str:
    text = messages[-1]["content"]
    picks = re.search(r"write either (\w+) or (\w+)", text)
    words = re.search(r"Words: (.*?)\.\s", text)
    if picks and words:
        options = picks.groups()
        items = [w.strip() for w in words.group(1).split(",")]
        return "\n".join(f"{w} - {options[zlib.crc32(w.encode()) % 2]}" for w in items)
    people = re.search(r"two people: (\w+) and (\w+)", text)
    topics = re.search(r"workshop topics: (\w+) and (\w+)", text)
    if people and topics:
        (p1, p2), (t1, t2) = people.groups(), topics.groups()
        if zlib.crc32(text.encode()) % 2:
            p1, p2 = p2, p1
        return (
            f"{p1} is a patient planner and {p2} a lively speaker.\n"
            f"{p1} should lead the workshop on {t1}, and {p2} should lead the workshop on {t2}."
        )
    return "OK"
