"""The model a fixture call's ``model=`` or ``judge=`` names: a spec, a model built already, or a team's app.

Apart from the provider table (``models.providers``), which every provider imports for its spec types: an
app is wrapped by the ``python`` provider, which the table itself never imports.
"""

from __future__ import annotations

from pytest_fairness.models.interface import ChatModel
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.python import PythonModel
from pytest_fairness.models.spec import ModelSpec


def model_from(value: object) -> ChatModel:
    """A model from a spec string, a built model, or a user's app object or function."""
    if isinstance(value, str | ModelSpec):
        return load_model(value)
    if isinstance(value, ChatModel) and getattr(value, "provider", None):
        return value  # a provider's model, built already
    return PythonModel.from_object(value)
