"""A parsed model spec, ``provider[:target][?key=value&...]``, and the error of one that cannot be used.

Below both the model interface (``ChatModel.from_spec`` takes a ``ModelSpec``) and the provider table
(``models.registry`` parses specs), so neither imports the other to name it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class ModelSpecError(ValueError):
    """A ``--fairness-model`` / ``--fairness-judge`` string that cannot be used."""


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec: ``provider[:target][?key=value&...]``."""

    provider: str
    target: str = ""
    options: dict[str, str] = field(default_factory=dict)
    raw: str = ""


#: Spec options the plugin reads itself (a model's price, USD per million tokens); providers never see them.
PLUGIN_OPTIONS = ("price_in", "price_out")
#: The spec option that declares a model's version, for every provider: part of its id (and so of its cache keys
#: and its baselines' folder), so a team bumps it when a redeploy or a change the id cannot see changes answers.
VERSION_OPTION = "version"


def versioned(name: str, version: str) -> str:
    """A model's name with its declared version: ``my-model@http://host/v1?version=2``, as the spec said it."""
    return f"{name}{'&' if '?' in name else '?'}{VERSION_OPTION}={version}"
