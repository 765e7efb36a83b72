"""Dollar prices of models: what a plan would cost and what a run spent, standard and batch.

A release-size run is hundreds of thousands of calls, so its bill should be seen before it arrives.
Prices come, in this order, from the model spec (``?price_in=…&price_out=…``, USD per million tokens:
private endpoints have no public price), for models that run on this machine nothing, or from
litellm's bundled price map (read offline, never fetched) for providers whose models it lists. Each
provider says which applies (``models.providers.Provider``). Otherwise the price is unknown and says
why. litellm is an optional extra: without it only spec prices are known.

Batch rates are the map's own (``*_cost_per_token_batches``) where it lists them; otherwise half the
standard rate for providers that document a fixed 50% batch discount (OpenAI, Anthropic), whether the standard
rate came from the map or from the spec (so a spec-priced ``openai:gpt-4o-mini`` has batch rates without
litellm); a self-hosted ``@BASE_URL`` and a provider without a documented discount have no batch price.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pytest_fairness.models.providers import PROVIDERS, parse_model_spec
from pytest_fairness.models.spec import PLUGIN_OPTIONS, ModelSpec, ModelSpecError

#: Spec options that set a price (USD per million prompt / completion tokens); no provider sees them.
PRICE_OPTIONS = PLUGIN_OPTIONS
#: Providers whose batch APIs document a 50% discount on both rates (OpenAI Batch API, Anthropic Message
#: Batches), used only when the price map lists no batch rate of its own.
DOCUMENTED_BATCH_DISCOUNT: Mapping[str, float] = {"openai": 0.5, "anthropic": 0.5}
MILLION = 1_000_000
PRICE_HINT = "give ?price_in=USD&price_out=USD (per million tokens) in the model spec"


@dataclass(frozen=True)
class Price:
    """A model's rates in USD per million tokens; ``input`` None means the price is unknown (``source`` says why)."""

    input: float | None
    output: float | None
    source: str
    batch_input: float | None = None
    batch_output: float | None = None
    batch_source: str = "no batch price"

    @property
    def known(self) -> bool:
        return self.input is not None and self.output is not None

    @property
    def has_batch(self) -> bool:
        return self.batch_input is not None and self.batch_output is not None

    def cost(self, prompt_tokens: float, completion_tokens: float, *, batch: bool = False) -> float | None:
        """USD for these tokens at the standard (or batch) rates; None when that rate is unknown."""
        rates = (self.batch_input, self.batch_output) if batch else (self.input, self.output)
        if rates[0] is None or rates[1] is None:
            return None
        return (prompt_tokens * rates[0] + completion_tokens * rates[1]) / MILLION

    def describe(self) -> str:
        """One line for plans and reports, e.g. ``$0.15 in / $0.6 out per M tokens (source); batch …``."""
        if not self.known:
            return f"price unknown ({self.source})"
        line = f"${self.input:g} in / ${self.output:g} out per M tokens ({self.source})"
        if self.has_batch:
            return line + f"; batch ${self.batch_input:g} / ${self.batch_output:g} ({self.batch_source})"
        return line + f"; {self.batch_source}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_per_mtok": self.input,
            "output_per_mtok": self.output,
            "source": self.source,
            "batch_input_per_mtok": self.batch_input,
            "batch_output_per_mtok": self.batch_output,
            "batch_source": self.batch_source,
        }


def spec_price(spec: ModelSpec) -> tuple[float, float] | None:
    """The spec's own ``?price_in=…&price_out=…``, validated; None when it gives neither."""
    given = [k for k in PRICE_OPTIONS if k in spec.options]
    if not given:
        return None
    if len(given) == 1:
        raise ModelSpecError(f"{spec.raw!r} gives {given[0]} alone: give both price_in and price_out")
    values = []
    for key in PRICE_OPTIONS:
        try:
            value = float(spec.options[key])
        except ValueError:
            value = -1.0
        if not value >= 0 or value == float("inf"):
            raise ModelSpecError(f"option {key}={spec.options[key]!r} in {spec.raw!r} must be a number >= 0 (USD/M)")
        values.append(value)
    return values[0], values[1]


def price_for(spec: str | ModelSpec) -> Price:
    """What a model spec's calls cost (see the module doc for the order of sources)."""
    parsed = parse_model_spec(spec) if isinstance(spec, str) else spec
    given = spec_price(parsed)
    provider = PROVIDERS[parsed.provider]
    model, _, base_url = parsed.target.partition("@")
    if given is not None:
        billed = provider.price_keys(model)[0] if provider.price_keys is not None and not base_url else ""
        if billed in DOCUMENTED_BATCH_DISCOUNT:
            return Price(given[0], given[1], "model spec price_in/price_out", *_discounted(given, billed))
        return Price(given[0], given[1], "model spec price_in/price_out")
    if provider.free:
        return Price(0.0, 0.0, "runs on this machine: no per-token charge", 0.0, 0.0, "runs on this machine")
    if base_url:
        return Price(None, None, f"a self-hosted endpoint has no public price: {PRICE_HINT}")
    if provider.price_keys is None:
        return Price(None, None, f"no price map for provider {parsed.provider!r}: {PRICE_HINT}")
    table = price_map()
    if table is None:
        return Price(None, None, f"litellm is not installed for its price map: {PRICE_HINT}")
    entries, version = table
    billed, keys = provider.price_keys(model)
    entry = _entry(entries, billed, keys)
    if entry is None:
        return Price(None, None, f"{model!r} is not in litellm {version}'s price map: {PRICE_HINT}")
    per_m = {k: float(v) * MILLION for k, v in entry.items() if k.endswith("cost_per_token") or k.endswith("_batches")}
    if "input_cost_per_token" not in per_m or "output_cost_per_token" not in per_m:
        return Price(None, None, f"litellm {version}'s price map lists no token rates for {model!r}: {PRICE_HINT}")
    std_in, std_out = per_m["input_cost_per_token"], per_m["output_cost_per_token"]
    source = f"litellm {version} price map"
    if "input_cost_per_token_batches" in per_m and "output_cost_per_token_batches" in per_m:
        batch = (per_m["input_cost_per_token_batches"], per_m["output_cost_per_token_batches"], source)
    elif billed in DOCUMENTED_BATCH_DISCOUNT:
        batch = _discounted((std_in, std_out), billed)
    else:
        return Price(std_in, std_out, source)
    return Price(std_in, std_out, source, *batch)


def _discounted(rates: tuple[float, float], billed: str) -> tuple[float, float, str]:
    """Batch rates of a provider with a documented fixed discount, and their source in words."""
    factor = DOCUMENTED_BATCH_DISCOUNT[billed]
    return rates[0] * factor, rates[1] * factor, f"{billed}'s documented {1 - factor:.0%} batch discount"


@dataclass(frozen=True)
class RolePrices:
    """The prices of a run's three roles: the model under test, its judge and the judge's reference; what a
    release plan with a reference sizes its two-phase checks by (``measures.sizing.reference_plan``)."""

    model: Price
    judge: Price
    reference: Price


def _entry(entries: Mapping[str, Any], billed: str, keys: tuple[str, ...]) -> Mapping[str, Any] | None:
    """The map's entry under the first of ``keys`` that the ``billed`` provider bills (``openai:`` names only
    OpenAI's own models)."""
    for key in keys:
        entry = entries.get(key)
        if isinstance(entry, Mapping) and str(entry.get("litellm_provider", "")).split("_")[0] == billed.split("_")[0]:
            return entry
    return None


@cache
def price_map() -> tuple[dict[str, Any], str] | None:
    """litellm's bundled price map and litellm's version, offline; None without litellm.

    The bundled JSON file is read directly (importing litellm takes seconds); when a litellm release
    moves it, litellm itself is imported, with its local map, so that nothing is fetched."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("litellm")
    except PackageNotFoundError:
        release = "?"
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "model_prices_and_context_window_backup.json"
        if path.is_file():
            return json.loads(path.read_text()), release
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before the import: never fetch the map
    try:
        import litellm
    except ImportError:
        return None
    return dict(litellm.model_cost), release
