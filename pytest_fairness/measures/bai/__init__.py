"""Bai et al., LLM Implicit Bias and Decision Bias: stimuli, prompts, answer parsing and coding, cores, runs."""
