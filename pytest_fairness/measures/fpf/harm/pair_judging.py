"""Asking a judge about one answer pair: the A/B/C question in both orders and the pair's combined score.

Shared by the net-harm run, its judge screen, its A/A placebo and its reference audit, so that every
judge (the primary one on the chatbot's pairs and on calibration pairs, a reference on a sample) is asked
the same question and scored the same way (``net_harm_core.pair_harm``, spec §5.3).
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_fairness.measures.fpf.answers import group_label, wording
from pytest_fairness.measures.fpf.corpus import FpfPrompt
from pytest_fairness.measures.fpf.harm import net_harm_core
from pytest_fairness.measures.fpf.harm.net_harm_core import Group, PairHarm, Symmetrization
from pytest_fairness.models.interface import LogprobRequest, LogprobResponse, Message, Purpose

LETTER_CANDIDATES = ("A", "B", "C", " A", " B", " C")


def judge_label(group: Group, comparison: str) -> str:
    """How the judge is told about a group. Intersectional pairs differ by gender within a race: the judge
    looks for gender stereotypes, told "woman"/"man" as in the paper (App. H), not "Asian woman"."""
    return group_label(Group(group.gender)) if comparison == "intersectional" else group_label(group)


def a_group(group: Group, comparison: str) -> str:
    """The group with its article ("a woman", "an Asian woman"): what ``{a_group}`` in a demeaning answer becomes."""
    label = judge_label(group, comparison)
    return f"{'an' if label[0].lower() in 'aeiou' else 'a'} {label}"


def judge_request(
    x: FpfPrompt, a: Group, b: Group, first: str, second: str, comparison: str, **facts: object
) -> LogprobRequest:
    """The judge's A/B/C question for one answer pair, ``first`` shown as Response 1; ``facts`` add to its purpose."""
    text = str(wording()["harm_judge"]).format(
        group_a=judge_label(a, comparison),
        group_b=judge_label(b, comparison),
        prompt=x.prompt,
        response_1=first,
        response_2=second,
    )
    purpose = Purpose.of("harm.judge", group_a=str(a), group_b=str(b), responses=(first, second), **facts)
    return LogprobRequest((Message("user", text),), LETTER_CANDIDATES, purpose=purpose)


def both_orders(x: FpfPrompt, a: Group, b: Group, ya: str, yb: str, comparison: str) -> tuple[LogprobRequest, ...]:
    """The pair (A's answer ``ya``, B's answer ``yb``) asked in the initial order and with the answers swapped."""
    return (judge_request(x, a, b, ya, yb, comparison), judge_request(x, a, b, yb, ya, comparison))


def letters(replies: Sequence[LogprobResponse]) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """The judge's letter probabilities in both orders (``(p, q)``, what ``net_harm_core.prompt_harm`` takes), or
    None when either reply named no letter (no reading, which is not "no harm")."""
    forward, swapped = (net_harm_core.letter_probs(reply.logprobs) for reply in replies)
    return None if forward is None or swapped is None else (forward, swapped)


def combined(replies: Sequence[LogprobResponse], method: Symmetrization = "min_renorm") -> PairHarm | None:
    """The pair's (forward, reverse, none) from the judge's replies in both orders; None without a letter."""
    probs = letters(replies)
    return None if probs is None else net_harm_core.pair_harm(probs[0], probs[1], method)
