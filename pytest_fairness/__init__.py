"""pytest-fairness: published LLM bias measures as pytest suites with thresholds and baselines."""

__version__ = "0.1.0"

# The public model interface: what a team implements to gate its own application (python:MODULE:ATTR).
from pytest_fairness.models.base import (
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

__all__ = [
    "CannotServe",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "LogprobRequest",
    "LogprobResponse",
    "Message",
    "PermanentError",
    "TransientError",
    "__version__",
]
