"""The table of providers: how ``--fairness-model`` strings become models, and what each provider says of itself.

A spec reads ``provider[:target][?key=value&...]``. Each provider is one ``Provider`` line in
``PROVIDERS``: the ``module:Class`` of its model (imported only when a spec names it, so neither heavy
clients nor the test doubles load otherwise), how a spec names it (the help and error messages list
these), and how its price is found (``pricing`` reads that, never a provider's name). A team's own
provider is added from its conftest.py with ``register_provider``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

from pytest_fairness.models.spec import PLUGIN_OPTIONS, VERSION_OPTION, ModelSpec, ModelSpecError, versioned

if TYPE_CHECKING:
    from pytest_fairness.models.interface import ChatModel

#: How litellm's price map lists a spec's model: the provider that bills it, and the keys to try, in order.
PriceKeys = Callable[[str], tuple[str, tuple[str, ...]]]


def billed_by(provider: str) -> PriceKeys:
    """A provider whose models the price map lists under their own name, billed by ``provider``."""
    return lambda model: (provider, (model,))


def billed_by_prefix(model: str) -> tuple[str, tuple[str, ...]]:
    """``PROVIDER/MODEL``: billed by PROVIDER; the map keys some models with the prefix, some without."""
    provider, _, bare = model.partition("/")
    return provider, (model, bare)


@dataclass(frozen=True)
class Provider:
    """A provider as the plugin knows it before importing it.

    ``model`` is the ``module:Class`` of its ``ChatModel`` (built by ``from_spec``); ``spec`` shows how a
    spec names it, for help and errors; ``free``: it runs on this machine, with no per-token charge;
    ``price_keys``: how litellm's bundled price map lists its models (None: it lists none, so only a spec's
    own ``?price_in=&price_out=`` prices it).
    """

    model: str
    spec: str
    free: bool = False
    price_keys: PriceKeys | None = None


PROVIDERS: dict[str, Provider] = {
    "local": Provider(
        "pytest_fairness.models.local:LocalModel",
        "'local' (the embedded SmolLM2), 'local:/path/model.gguf'",
        free=True,
    ),
    "openai": Provider(
        "pytest_fairness.models.openai:OpenAIModel",
        "'openai:MODEL' or 'openai:MODEL@BASE_URL'",
        price_keys=billed_by("openai"),
    ),
    "litellm": Provider(
        "pytest_fairness.models.litellm:LiteLLMModel", "'litellm:PROVIDER/MODEL'", price_keys=billed_by_prefix
    ),
    "synthetic": Provider(
        "pytest_fairness.testing:SyntheticModel",
        "'synthetic:iat?bias=0.4' (a test double with a planted bias)",
        free=True,
    ),
    "python": Provider(
        "pytest_fairness.models.python:PythonModel",
        "'python:MODULE:ATTR' (your own application: a function (messages) -> str or a model object)",
    ),
}


def register_provider(name: str, provider: Provider) -> Provider:
    """Make a provider available to specs (e.g. a team's own, from its conftest.py); its name must be new."""
    if PROVIDERS.get(name, provider) != provider:
        raise ValueError(f"a model provider named {name!r} is already registered")
    PROVIDERS[name] = provider
    return provider


def spec_help() -> str:
    """How to write a spec, provider by provider (for ``--fairness-model``'s help and spec errors)."""
    specs = [p.spec for p in PROVIDERS.values()]
    return "use " + ", ".join(specs[:-1]) + f", or {specs[-1]}" if len(specs) > 1 else f"use {specs[0]}"


def parse_model_spec(spec: str) -> ModelSpec:
    """Split a model spec string; raise ModelSpecError naming the problem and the fix."""
    raw = spec
    spec = spec.strip()
    if not spec:
        raise ModelSpecError(f"empty model spec: {spec_help()}")
    head, _, query = spec.partition("?")
    provider, _, target = head.partition(":")
    provider = provider.strip().lower()
    if provider not in PROVIDERS:
        raise ModelSpecError(
            f"unknown model provider {provider!r} in {raw!r}; valid providers: {', '.join(PROVIDERS)}. {spec_help()}"
        )
    for pair in filter(None, query.split("&")):
        if "=" not in pair:
            raise ModelSpecError(f"option {pair!r} in model spec {raw!r} must look like key=value")
    options = dict(parse_qsl(query, keep_blank_values=True))
    return ModelSpec(provider=provider, target=target.strip(), options=options, raw=raw)


def provider_class(provider: str) -> type[ChatModel]:
    """Import the class a provider name stands for (only now: its imports may be heavy)."""
    module, _, name = PROVIDERS[provider].model.partition(":")
    model: type[ChatModel] = getattr(importlib.import_module(module), name)
    return model


def load_model(spec: str | ModelSpec) -> ChatModel:
    """Instantiate the provider a spec names. Heavy imports happen only for the chosen provider. A ``?version=``
    joins the model's id whatever the provider (a Python app keeps it as its own version)."""
    parsed = parse_model_spec(spec) if isinstance(spec, str) else spec
    kind = provider_class(parsed.provider)
    own = getattr(kind, "own_version", False)
    options = {k: v for k, v in parsed.options.items() if k not in PLUGIN_OPTIONS and (own or k != VERSION_OPTION)}
    model = kind.from_spec(ModelSpec(parsed.provider, parsed.target, options, parsed.raw))
    version = parsed.options.get(VERSION_OPTION, "").strip()
    if version and not own:
        model.name = versioned(model.name, version)
    return model
