"""Model specs and the table of providers: how ``--fairness-model`` strings become models.

A spec reads ``provider[:target][?key=value&...]``. Providers are found by name in ``PROVIDERS``, a
table of ``module:Class`` paths imported only when chosen, so neither heavy clients nor the test
doubles (which know the measures) load unless a spec names them.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

if TYPE_CHECKING:
    from pytest_fairness.models.base import ChatModel


class ModelSpecError(ValueError):
    """A ``--fairness-model`` / ``--fairness-judge`` string that cannot be used."""


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec: ``provider[:target][?key=value&...]``."""

    provider: str
    target: str = ""
    options: dict[str, str] = field(default_factory=dict)
    raw: str = ""


#: Provider name -> "module:Class"; the class must offer ``from_spec(ModelSpec)``.
PROVIDERS: Mapping[str, str] = {
    "local": "pytest_fairness.models.local:LocalModel",
    "openai": "pytest_fairness.models.openai:OpenAIModel",
    "litellm": "pytest_fairness.models.litellm:LiteLLMModel",
    "synthetic": "pytest_fairness.testing:SyntheticModel",
    "python": "pytest_fairness.models.python:PythonModel",
}
SPEC_HELP = (
    "use 'local' (the embedded SmolLM2), 'local:/path/model.gguf', 'openai:MODEL' or 'openai:MODEL@BASE_URL', "
    "'litellm:PROVIDER/MODEL', 'python:MODULE:ATTR' (your own application: a function (messages) -> str or a "
    "model object), or 'synthetic:iat?bias=0.4' (a test double with a planted bias)"
)
#: Spec options the plugin reads itself (a model's price, USD per million tokens); providers never see them.
PLUGIN_OPTIONS = ("price_in", "price_out")


def parse_model_spec(spec: str) -> ModelSpec:
    """Split a model spec string; raise ModelSpecError naming the problem and the fix."""
    raw = spec
    spec = spec.strip()
    if not spec:
        raise ModelSpecError(f"empty model spec: {SPEC_HELP}")
    head, _, query = spec.partition("?")
    provider, _, target = head.partition(":")
    provider = provider.strip().lower()
    if provider not in PROVIDERS:
        raise ModelSpecError(
            f"unknown model provider {provider!r} in {raw!r}; valid providers: {', '.join(PROVIDERS)}. {SPEC_HELP}"
        )
    for pair in filter(None, query.split("&")):
        if "=" not in pair:
            raise ModelSpecError(f"option {pair!r} in model spec {raw!r} must look like key=value")
    options = dict(parse_qsl(query, keep_blank_values=True))
    return ModelSpec(provider=provider, target=target.strip(), options=options, raw=raw)


def provider_class(provider: str) -> type[ChatModel]:
    """Import the class a provider name stands for (only now: its imports may be heavy)."""
    module, _, name = PROVIDERS[provider].partition(":")
    return getattr(importlib.import_module(module), name)


def load_model(spec: str | ModelSpec) -> ChatModel:
    """Instantiate the provider a spec names. Heavy imports happen only for the chosen provider."""
    parsed = parse_model_spec(spec) if isinstance(spec, str) else spec
    options = {k: v for k, v in parsed.options.items() if k not in PLUGIN_OPTIONS}
    return provider_class(parsed.provider).from_spec(ModelSpec(parsed.provider, parsed.target, options, parsed.raw))  # type: ignore[attr-defined]


def model_from(value: object) -> ChatModel:
    """A model from a spec string, a built model, or a user's app object or function (a fixture's ``model=``)."""
    from pytest_fairness.models.base import ChatModel

    if isinstance(value, str | ModelSpec):
        return load_model(value)
    if isinstance(value, ChatModel) and getattr(value, "provider", None):
        return value  # a provider's model, built already
    return provider_class("python").from_object(value)  # type: ignore[attr-defined]
