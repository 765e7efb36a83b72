"""Public API of LLM Implicit Bias: score answers you already have, or run the measure."""

from pytest_fairness.measures.iat_parse import ParsedAnswer, parse_answer
from pytest_fairness.measures.implicit import ResponseScore, count_cells, implicit_bias, run, score_response

__all__ = ["ParsedAnswer", "ResponseScore", "count_cells", "implicit_bias", "parse_answer", "run", "score_response"]
