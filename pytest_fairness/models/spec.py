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
