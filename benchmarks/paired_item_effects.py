"""How much of the embedded model's implicit-bias score is the item's own, and how much re-sampling noise.

`python benchmarks/paired_item_effects.py [--iterations 40] [--stereotypes islam,judaism,buddhism]`

The implicit-bias measure's forced-choice route (the embedded SmolLM2's) reads, per prompt draw (an item:
group words, their order and the attribute order) and attribute word, the probability p that the model
pairs the word with the stigma group (both group orders averaged), then draws each word's group from it.
So per item the score's distribution is known exactly: the IAT score of independent Bernoulli(p_w)
choices, enumerated over all 2^words outcomes. Across items this gives the between-item variance of the
items' expected scores, the within-item variance of a re-sampled answer, and the pairing correlation
ρ = between / (between + within) of two runs on the same items (one sample per item each). The paired
release simulations (``pytest_fairness.testing.releases``) state these figures as their source.
No wall-clock figure is reported; the model's calls are cached like any run's.
"""

from __future__ import annotations

import argparse
import itertools
import math

import numpy as np

from pytest_fairness.measures.bai import implicit
from pytest_fairness.measures.bai.iat_stimuli import get_stereotype
from pytest_fairness.measures.bai.implicit_core import EPSILON, count_cells, implicit_bias
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner


def _word_probabilities(runner: Runner, stereotype: str, iterations: int, seed: int) -> list[list[tuple[str, float]]]:
    """Per item, each attribute word with its probability of going to the stigma group (both orders averaged)."""
    st = get_stereotype(stereotype)
    plan = implicit._plan(st, "replication", iterations, seed)
    responses = iter(runner.run(implicit._forced_requests(plan, system_prompt=None)))
    items = []
    for prompt in plan.prompts:
        orders = [[next(responses) for _ in prompt.attributes] for _ in range(2)]
        words = []
        for w, attribute in enumerate(prompt.attributes):
            p = []
            for order in orders:
                la = implicit._group_logprob(order[w], prompt.stigma_word)
                lb = implicit._group_logprob(order[w], prompt.default_word)
                p.append(1.0 / (1.0 + math.exp(lb - la)))
            words.append((attribute, float(np.mean(p))))
        items.append(words)
    return items


def _item_moments(stereotype: str, words: list[tuple[str, float]], stigma: str, default: str) -> tuple[float, float]:
    """Exact mean and variance of the item's score over every outcome of its words' choices."""
    st = get_stereotype(stereotype)
    values, weights = [], []
    for choice in itertools.product((True, False), repeat=len(words)):
        pairs = [(a, stigma if c else default) for (a, _), c in zip(words, choice, strict=True)]
        score = implicit_bias(*count_cells(pairs, st), epsilon=EPSILON)
        values.append(0.0 if score is None else score)
        weights.append(math.prod(p if c else 1 - p for (_, p), c in zip(words, choice, strict=True)))
    v, w = np.array(values), np.array(weights)
    mean = float(w @ v)
    return mean, float(w @ (v - mean) ** 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--stereotypes", default="islam,judaism,buddhism")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    runner = Runner(load_model("local"))
    print("| stereotype | items | mean score | between-item SD | within-item SD | ρ (K = 1) |")
    print("|---|---|---|---|---|---|")
    for stereotype in args.stereotypes.split(","):
        st = get_stereotype(stereotype)
        plan = implicit._plan(st, "replication", args.iterations, args.seed)
        moments = [
            _item_moments(stereotype, words, prompt.stigma_word, prompt.default_word)
            for words, prompt in zip(
                _word_probabilities(runner, stereotype, args.iterations, args.seed), plan.prompts, strict=True
            )
        ]
        means, variances = np.array([m for m, _ in moments]), np.array([v for _, v in moments])
        between, within = float(np.var(means, ddof=1)), float(variances.mean())
        print(
            f"| {stereotype} | {len(means)} | {means.mean():+.3f} | {math.sqrt(between):.3f} | "
            f"{math.sqrt(within):.3f} | {between / (between + within):.2f} |"
        )


if __name__ == "__main__":
    main()
