"""Eloundou et al., first-person fairness: names, prompts, shared answer generation, net harm, quality and axes."""
