"""pytest-fairness: published LLM bias measures as pytest suites with thresholds and baselines."""

__version__ = "0.1.0"
