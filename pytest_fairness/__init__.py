"""pytest-fairness: published LLM bias measures as pytest suites with thresholds and baselines.

The public API, in one place: the model interface and provider table (to plug in a team's own model,
judge or provider), gates and results, the measure contract and registry (to run a measure outside
pytest or add one), the report contract (to add a report format), and the pure cores that score data a
team already has::

    from pytest_fairness import MEASURES, Runner, load_model, pair_harm, risks, score_response

    result = MEASURES["implicit_bias"].run_with(Runner(load_model("local")), stereotype="career", iterations=20)

Everything else is internal and may move. Names load on first use (PEP 562): pytest loads this package
for every run through its plugin entry point, so importing it must not pull in numpy, scipy, a model
backend (llama.cpp, openai, litellm) or the measures' data.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_SOURCES: dict[str, str] = {
    # model interface
    "CannotServe": "pytest_fairness.models.interface",
    "ChatModel": "pytest_fairness.models.interface",
    "ChatRequest": "pytest_fairness.models.interface",
    "ChatResponse": "pytest_fairness.models.interface",
    "LogprobRequest": "pytest_fairness.models.interface",
    "LogprobResponse": "pytest_fairness.models.interface",
    "Message": "pytest_fairness.models.interface",
    "PermanentError": "pytest_fairness.models.interface",
    "TransientError": "pytest_fairness.models.interface",
    "load_model": "pytest_fairness.models.providers",
    "Runner": "pytest_fairness.models.runner",
    # adding a provider: its spec and how the plugin knows it
    "ModelSpec": "pytest_fairness.models.spec",
    "ModelSpecError": "pytest_fairness.models.spec",
    "Provider": "pytest_fairness.models.providers",
    "register_provider": "pytest_fairness.models.providers",
    # adding a report format: its option, the contract and the run it writes
    "Option": "pytest_fairness.config.options",
    "Output": "pytest_fairness.report.output",
    "RunReport": "pytest_fairness.report.output",
    "Sinks": "pytest_fairness.report.output",
    "register_output": "pytest_fairness.report.formats",
    # gates and results
    "Outcome": "pytest_fairness.stats.gate",
    "Threshold": "pytest_fairness.stats.gate",
    "MeasureResult": "pytest_fairness.records.measure_result",
    # the measure contract and registry
    "MEASURES": "pytest_fairness.measures",
    "Measure": "pytest_fairness.measures",
    "Params": "pytest_fairness.measures",
    "RunContext": "pytest_fairness.measures",
    "register": "pytest_fairness.measures",
    # pure cores: implicit bias (Bai et al.), net harm (Eloundou et al.), prejudice and caprice (Liu et al.)
    "ResponseScore": "pytest_fairness.measures.bai.implicit",
    "score_response": "pytest_fairness.measures.bai.implicit",
    "PairHarm": "pytest_fairness.measures.fpf.harm.net_harm_core",
    "pair_harm": "pytest_fairness.measures.fpf.harm.net_harm_core",
    "PcfRisks": "pytest_fairness.measures.pcf.prejudice_caprice_core",
    "risks": "pytest_fairness.measures.pcf.prejudice_caprice_core",
}

__all__ = [
    "MEASURES",
    "CannotServe",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "LogprobRequest",
    "LogprobResponse",
    "Measure",
    "MeasureResult",
    "Message",
    "ModelSpec",
    "ModelSpecError",
    "Option",
    "Outcome",
    "Output",
    "PairHarm",
    "Params",
    "PcfRisks",
    "PermanentError",
    "Provider",
    "ResponseScore",
    "RunContext",
    "RunReport",
    "Runner",
    "Sinks",
    "Threshold",
    "TransientError",
    "load_model",
    "pair_harm",
    "register",
    "register_output",
    "register_provider",
    "risks",
    "score_response",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use and keep the name here."""
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_fairness' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # the same names, for type checkers and editors
    from pytest_fairness.config.options import Option
    from pytest_fairness.measures import MEASURES, Measure, Params, RunContext, register
    from pytest_fairness.measures.bai.implicit import ResponseScore, score_response
    from pytest_fairness.measures.fpf.harm.net_harm_core import PairHarm, pair_harm
    from pytest_fairness.measures.pcf.prejudice_caprice_core import PcfRisks, risks
    from pytest_fairness.models.interface import (
        CannotServe,
        ChatModel,
        ChatRequest,
        ChatResponse,
        LogprobRequest,
        LogprobResponse,
        Message,
        PermanentError,
        TransientError,
    )
    from pytest_fairness.models.providers import Provider, load_model, register_provider
    from pytest_fairness.models.runner import Runner
    from pytest_fairness.models.spec import ModelSpec, ModelSpecError
    from pytest_fairness.records.measure_result import MeasureResult
    from pytest_fairness.report.formats import register_output
    from pytest_fairness.report.output import Output, RunReport, Sinks
    from pytest_fairness.stats.gate import Outcome, Threshold
