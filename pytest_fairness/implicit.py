"""Public API of LLM Implicit Bias: score answers you already have, or run the measure."""

from pytest_fairness.measures.bai.implicit import MEASURE, ResponseScore, count_cells, implicit_bias, score_response
from pytest_fairness.measures.bai.implicit_parse import ParsedAnswer, parse_answer

#: Run the measure outside pytest: ``run(Runner(load_model("local")), stereotype="career", iterations=20)``.
run = MEASURE.run_with

__all__ = ["ParsedAnswer", "ResponseScore", "count_cells", "implicit_bias", "parse_answer", "run", "score_response"]
