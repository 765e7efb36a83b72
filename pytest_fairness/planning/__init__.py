"""Sizes and dollars before anything runs: the plan of a run's checks and its budget."""
