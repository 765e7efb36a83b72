"""Anything litellm reaches: ``litellm:PROVIDER/MODEL``, optionally ``@BASE_URL`` for a self-hosted server.

Same semantics as the OpenAI provider (litellm answers in the OpenAI format and its exceptions
subclass openai's), so only the transport differs. litellm is an optional extra, imported on first
use with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` so that importing it never reaches the network.
Provider keys are read by litellm from the environment, as usual; none is stored by us.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, TypeVar

from pytest_fairness.models.interface import ChatRequest, LogprobRequest, Message, PermanentError, TransientError
from pytest_fairness.models.openai import (
    BATCH_ENDPOINT,
    LISTED_BATCHES,
    SDK_TIMEOUTS,
    OpenAIModel,
    _options,
    batch_metadata,
    classify,
)
from pytest_fairness.models.providers import ModelSpec, ModelSpecError

E = TypeVar("E", bound=Exception)
INSTALL_HINT = "install the extra: pip install 'pytest-fairness[litellm]'"


def _import_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError:
        raise ModelSpecError(f"the litellm provider needs litellm: {INSTALL_HINT}") from None
    litellm.suppress_debug_info = True  # errors are reported by the runner, once, with the fix
    return litellm


def _secrets() -> list[str]:
    """Values of key-like environment variables, to keep them out of error messages."""
    return [v for k, v in os.environ.items() if v and k.endswith(("_API_KEY", "_TOKEN", "_SECRET"))]


def _hide_secrets(error: E) -> E:
    """The error with every key-like environment value in its message replaced by ``***`` (litellm's
    messages may quote what it sent)."""
    for secret in _secrets():
        error.args = (str(error).replace(secret, "***"),)
    return error


#: Providers whose batches litellm runs from OpenAI-format request lines (its files and batches API).
BATCH_PROVIDERS = ("openai", "azure", "vertex_ai", "bedrock", "hosted_vllm", "litellm_proxy", "anthropic", "mistral")


class LiteLLMModel(OpenAIModel):
    provider = "litellm"

    @property
    def offers_batches(self) -> bool:  # type: ignore[override]
        return self._provider in BATCH_PROVIDERS

    @property
    def _provider(self) -> str:
        return self.model.split("/", 1)[0]

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> LiteLLMModel:
        model, _, base_url = spec.target.partition("@")
        if "/" not in model:
            raise ModelSpecError(
                f"{spec.raw!r}: litellm models are named PROVIDER/MODEL, e.g. litellm:anthropic/claude-3-5-sonnet "
                "or litellm:openai/my-model@http://127.0.0.1:8000/v1"
            )
        provider = model.split("/", 1)[0]
        if "batch" in spec.options and provider not in BATCH_PROVIDERS:
            raise ModelSpecError(
                f"{spec.raw!r}: litellm runs batches for {', '.join(BATCH_PROVIDERS)}, not {provider!r}; drop "
                "?batch=1 (or use an openai: spec for an OpenAI-compatible server with the Batch API)"
            )
        _import_litellm()
        return cls(model, base_url or None, **_options(spec))

    async def _create(self, messages: Sequence[Message], **params: Any) -> Any:
        chat = [{"role": m.role, "content": m.content} for m in messages]
        return await self._send(_import_litellm().acompletion, "chat", messages=chat, **params)

    async def _complete(self, prompt: str | list[str], **params: Any) -> Any:
        return await self._send(_import_litellm().atext_completion, "completions", prompt=prompt, **params)

    async def _send(self, endpoint: Any, kind: str, **params: Any) -> Any:
        """One request within its deadline, as the OpenAI provider sends it (and the provider's own
        ``x-ratelimit-*`` headers read from litellm's hidden parameters)."""
        import openai

        sent = {**self._server(), **{k: v for k, v in params.items() if v is not None}}
        timeout = SDK_TIMEOUTS * self.timeout
        async with self.rate_limit().slot(slow_after=self.timeout / 2):
            call = endpoint(model=self.model, timeout=timeout, num_retries=0, **sent)
            try:
                raw = await self.deadlines.within(call, kind)
            except openai.APIError as exc:
                raise _hide_secrets(classify(exc, self.model_id, None, timeout)) from None
            except ValueError as exc:
                raise TransientError(f"{self.model_id}: {kind} answered a body that is not JSON ({exc})") from None
            hidden = getattr(raw, "_hidden_params", None) or {}
            self.rate_limit().observe(hidden.get("additional_headers"))  # the provider's own x-ratelimit-* headers
            return raw

    # -- batch mode through litellm's files and batches API ---------------------------------------------

    def batch_body(self, request: ChatRequest | LogprobRequest) -> dict[str, Any] | None:
        """The OpenAI-format line, naming the model as its provider knows it (no ``PROVIDER/`` prefix)."""
        body = super().batch_body(request)
        if body is not None:
            body["model"] = self.model.split("/", 1)[1]
        return body

    def _server(self) -> dict[str, str]:
        """A self-hosted server's address and key as litellm takes them (none for a hosted provider)."""
        if not self.base_url:
            return {}
        return {"api_base": self.base_url, "api_key": os.environ.get("OPENAI_API_KEY") or "not-needed"}

    def _batch_target(self) -> dict[str, Any]:
        """Where litellm sends batch calls: the provider, and the server for a self-hosted one."""
        return {"custom_llm_provider": self._provider, "max_retries": 0, **self._server()}  # the runner retries

    async def _batch_call(self, path: str, call: Any, *args: Any, **params: Any) -> Any:
        """The OpenAI provider's Batch API call, with key-like values kept out of its errors as in ``_send``."""
        try:
            return await super()._batch_call(path, call, *args, **params)
        except (TransientError, PermanentError) as exc:
            raise _hide_secrets(exc) from None

    async def _upload_file(self, data: bytes) -> Any:
        litellm = _import_litellm()
        return await litellm.acreate_file(file=("fairness-batch.jsonl", data), purpose="batch", **self._batch_target())

    async def _start_batch(self, file_id: str, tag: str) -> Any:
        return await _import_litellm().acreate_batch(
            completion_window="24h",
            endpoint=BATCH_ENDPOINT,
            input_file_id=file_id,
            metadata=batch_metadata(tag),
            **self._batch_target(),
        )

    async def _list_batches(self) -> list[Any]:
        return list((await _import_litellm().alist_batches(limit=LISTED_BATCHES, **self._batch_target())).data)

    async def _retrieve_batch(self, batch_id: str) -> Any:
        return await _import_litellm().aretrieve_batch(batch_id=batch_id, **self._batch_target())

    async def _file_text(self, file_id: str) -> str:
        return str((await _import_litellm().afile_content(file_id=file_id, **self._batch_target())).text)

    def _account(self) -> tuple[str, str | None]:
        """The server (the base URL, or the provider litellm routes to) and the key litellm sends it."""
        if self.base_url:
            return self.base_url, os.environ.get("OPENAI_API_KEY")
        return self._provider, os.environ.get(f"{self._provider.upper()}_API_KEY")

    async def aclose(self) -> None:
        """Stop what litellm started on our event loop (HTTP clients, its logging worker) before it closes."""
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

        litellm = _import_litellm()
        await GLOBAL_LOGGING_WORKER.stop()
        await litellm.close_litellm_async_clients()
        litellm.in_memory_llm_clients_cache.flush_cache()
