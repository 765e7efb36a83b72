"""Test doubles: models with a planted bias of known size, for testing measures and suites."""

from pytest_fairness.testing.synthetic import REFUSAL, SyntheticModel, planted_kinds

__all__ = ["REFUSAL", "SyntheticModel", "planted_kinds"]
