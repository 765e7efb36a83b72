"""Chat generation on a llama.cpp context through its C API, re-using a shared prompt prefix.

Most of a short generation's time is evaluating its prompt, and the requests of one measure share long
prefixes (net harm's system message, up to the user's name, is about 100 of its 140 tokens). The prompt
is therefore decoded in blocks at fixed positions (tokens 0-31, 32-63, ...; the last block, whole or
partial, with the only logits row that is read), and the blocks before the last stay in the context: the
next prompt decodes only from its first block that differs (``local_scoring.reusable``, as for scoring).
A block's numbers depend only on its own tokens and the blocks before it, which were decoded the same
way, so an answer is still a function of the request alone, whether its leading blocks were computed now
or for an earlier request (llama.cpp's numbers do depend on how a prompt is split into decode calls;
here the split is a function of the prompt).

Sampling is llama-cpp-python's chain for chat completions (top-k 40, typical 1, top-p 0.95, min-p 0.05,
temperature, then a seeded draw; greedy at temperature 0), run by llama.cpp itself, so the only
Python work per token is one batch entry and one call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_fairness.models.local_scoring import BLOCK, _Batch, blocks, leading_matches, reusable


@dataclass(frozen=True)
class Generated:
    """A generation's tokens (end-of-turn token excluded) and why it ended: ``stop`` or ``length``."""

    tokens: tuple[int, ...]
    finish_reason: str


class BlockGenerator:
    """Generates on one llama.cpp context (not its own: it must not be used by anything else)."""

    def __init__(self, ctx: Any, model: Any, *, n_ctx: int, n_batch: int, block: int = BLOCK) -> None:
        import llama_cpp

        if not 1 <= block <= n_batch:
            raise ValueError(f"a prompt block of {block} tokens does not fit a decode call of {n_batch}")
        self.block = block
        self._api = llama_cpp
        self._ctx = ctx
        self._mem = llama_cpp.llama_get_memory(ctx)
        self._vocab = llama_cpp.llama_model_get_vocab(model)
        self.n_ctx = n_ctx
        self._batch = _Batch(llama_cpp, block, 1)
        # Complete prompt blocks in the context before a prompt's last block, in order from position 0.
        self._blocks: list[tuple[int, ...]] = []
        self.reused_tokens = 0  # prompt tokens taken from the context instead of decoded (for benchmarks)

    def generate(self, prompt: Sequence[int], *, max_tokens: int | None, temperature: float, seed: int) -> Generated:
        """Tokens after ``prompt``, sampled as llama-cpp-python's ``create_chat_completion`` samples them."""
        if not prompt:
            raise ValueError("an empty prompt has nothing to continue")
        if len(prompt) >= self.n_ctx:
            raise ValueError(f"prompt of {len(prompt)} tokens does not fit the context of {self.n_ctx}; raise n_ctx")
        room = self.n_ctx - len(prompt)
        budget = room if max_tokens is None or max_tokens <= 0 else min(max_tokens, room)
        self._prefill(prompt)
        sampler = self._sampler(temperature, seed)
        api, out = self._api, []
        try:
            for pos in range(len(prompt), len(prompt) + budget):
                token = api.llama_sampler_sample(sampler, self._ctx, -1)
                if api.llama_vocab_is_eog(self._vocab, token):
                    return Generated(tuple(out), "stop")
                out.append(token)
                if len(out) == budget:
                    break
                self._decode([token], pos, logits_last=True)
        finally:
            api.llama_sampler_free(sampler)
        return Generated(tuple(out), "length")

    def _prefill(self, prompt: Sequence[int]) -> None:
        """Decode the prompt from its first block not already in the context; logits at its last token only.
        The block holding the last token is never kept: the next request, even the same prompt again, decodes
        it anew, so the logits it samples from are its own."""
        cut = reusable(len(prompt), self.block)
        wanted = blocks(prompt[:cut], self.block)
        keep = leading_matches(self._blocks, wanted)
        # Everything after the kept blocks goes: the last request's final block and its reply.
        self._api.llama_memory_seq_rm(self._mem, -1, keep * self.block, -1)
        del self._blocks[keep:]
        self.reused_tokens += keep * self.block
        for i, block in enumerate(wanted[keep:], start=keep):
            self._decode(block, i * self.block, logits_last=False)
            self._blocks.append(block)
        self._decode(prompt[cut:], cut, logits_last=True)

    def _decode(self, tokens: Sequence[int], start: int, *, logits_last: bool) -> None:
        batch = self._batch
        batch.clear()
        for i, token in enumerate(tokens):
            batch.add(token, start + i, (0,), logits_last and i == len(tokens) - 1)
        status = self._api.llama_decode(self._ctx, batch.raw)
        if status != 0:
            self.forget()
            raise RuntimeError(f"llama_decode failed with status {status}")

    def _sampler(self, temperature: float, seed: int) -> Any:
        """llama-cpp-python's chat sampler chain (its penalties are neutral at its defaults and left out)."""
        api = self._api
        chain = api.llama_sampler_chain_init(api.llama_sampler_chain_default_params())
        if temperature < 0:
            stages = [api.llama_sampler_init_dist(seed & 0xFFFFFFFF)]
        elif temperature == 0:
            stages = [api.llama_sampler_init_greedy()]
        else:
            stages = [
                api.llama_sampler_init_top_k(40),
                api.llama_sampler_init_typical(1.0, 1),
                api.llama_sampler_init_top_p(0.95, 1),
                api.llama_sampler_init_min_p(0.05, 1),
                api.llama_sampler_init_temp(temperature),
                api.llama_sampler_init_dist(seed & 0xFFFFFFFF),
            ]
        for stage in stages:
            api.llama_sampler_chain_add(chain, stage)
        return chain

    def set_threads(self, n: int) -> None:
        """Threads for the next decode calls (the numbers do not depend on it)."""
        self._api.llama_set_n_threads(self._ctx, n, n)

    def forget(self) -> None:
        """Empty the context (after a failure, or when something else used it)."""
        self._api.llama_memory_clear(self._mem, True)
        self._blocks = []

    def free(self) -> None:
        self._batch.free()
