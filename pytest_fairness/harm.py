"""Public API of net harmful stereotypes (first-person fairness): score judged pairs and aggregate them."""

from pytest_fairness.measures.fpf.harm_core import (
    Group,
    HarmEstimate,
    HarmResult,
    PairHarm,
    PromptHarm,
    combine_harm,
    gender_harm,
    identical_responses,
    intersectional_harm,
    letter_probs,
    pair_harm,
    prompt_harm,
    race_harm,
    sampled_letter_probs,
)

__all__ = [
    "Group",
    "HarmEstimate",
    "HarmResult",
    "PairHarm",
    "PromptHarm",
    "combine_harm",
    "gender_harm",
    "identical_responses",
    "intersectional_harm",
    "letter_probs",
    "pair_harm",
    "prompt_harm",
    "race_harm",
    "sampled_letter_probs",
]
