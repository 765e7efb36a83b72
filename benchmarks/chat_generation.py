"""Short chat generations on the embedded model: the plugin against bare llama.cpp calls of the same tokens.

Raw: a context of its own on the plugin's weights and settings; per request, from an empty context,
one `llama_decode` of the whole prompt (logits at its last token only), then for each token the plugin
generated, one sample with the same sampler chain and one single-token decode. That is the least
llama.cpp work for these tokens when nothing is re-used between requests. Raw blocks: the plugin's own
llama.cpp work (`BlockGenerator` on a third context: the prompt from its first block not in the
context, then the same sampling), without its Python around it (chat template, tokenizer, runner,
lock, detokenizer), so plugin/raw blocks is the per-call overhead. Plugin: the same requests through
the runner (cache off), as a measure sends them. Previous: llama-cpp-python's
`create_chat_completion` from a reset context on a second `Llama` (the plugin's path before block
prefill). Workloads: the start-up probe (one token), net-harm answers (two prompts × four names, whose
system message is shared up to the name) and decision prompts, each capped at 16 tokens. The three
alternate per round in one process, one llama.cpp thread each; ratios are medians over rounds.

    python benchmarks/chat_generation.py [--rounds 5] [--tokens 16]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import llama_cpp

from pytest_fairness.config import suite
from pytest_fairness.models.cache import CacheMode
from pytest_fairness.models.interface import ChatRequest
from pytest_fairness.models.local import N_BATCH, LocalModel
from pytest_fairness.models.local_generation import BlockGenerator
from pytest_fairness.models.local_scoring import _Batch
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner
from pytest_fairness.run.preflight import PROBE


class Bare:
    """Whole prompt in one decode from an empty context, then one decode per given token."""

    def __init__(self, model: LocalModel) -> None:
        weights = model._llm._model.model
        self.ctx = llama_cpp.llama_init_from_model(weights, model._llm.context_params)  # the plugin's settings
        self.mem = llama_cpp.llama_get_memory(self.ctx)
        self.batch = _Batch(llama_cpp, N_BATCH, 1)
        self.sampler = model._generator._sampler  # the same chain, built per request as the plugin does

    def run(self, prompt: list[int], tokens: tuple[int, ...], temperature: float, seed: int) -> None:
        llama_cpp.llama_memory_clear(self.mem, True)
        b = self.batch
        b.clear()
        for i, token in enumerate(prompt):
            b.add(token, i, (0,), i == len(prompt) - 1)
        assert llama_cpp.llama_decode(self.ctx, b.raw) == 0
        chain = self.sampler(temperature, seed)
        for k, token in enumerate(tokens):
            llama_cpp.llama_sampler_sample(chain, self.ctx, -1)
            if k == len(tokens) - 1:
                break
            b.clear()
            b.add(token, len(prompt) + k, (0,), True)
            assert llama_cpp.llama_decode(self.ctx, b.raw) == 0
        llama_cpp.llama_sampler_free(chain)


def workloads(model: LocalModel, tokens: int) -> dict[str, list[ChatRequest]]:
    checks = {c.id: c for c in suite.load("gender").checks}

    def first(check: str, n: int) -> list[ChatRequest]:
        c = checks[check]
        sent = c.measure.requests(c.params_for("quick"), model, 0)[:n]
        return [dataclasses.replace(r, max_tokens=tokens) for r in sent]

    return {
        "start-up probe (1 token)": [dataclasses.replace(PROBE, seed=i) for i in range(4)],
        f"net-harm answers (2 prompts × 4 names, ≤{tokens} tokens)": first("net_harm", 8),
        f"decision prompts (≤{tokens} tokens)": first("decision_bias[career]", 8),
    }


def _ratio(values: list[float]) -> str:
    """Median over rounds, and the range."""
    return f"{statistics.median(values):.3f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--only", default="", help="only the workloads whose name starts with this")
    args = parser.parse_args()
    model = load_model("local?threads=1")
    assert isinstance(model, LocalModel)
    runner = Runner(model, cache_mode=CacheMode.OFF)
    runner.run([PROBE])  # load the weights
    bare = Bare(model)
    blocks = BlockGenerator(
        llama_cpp.llama_init_from_model(model._llm._model.model, model._llm.context_params),
        model._llm._model.model,
        n_ctx=model.n_ctx,
        n_batch=N_BATCH,
    )
    previous = llama_cpp.Llama(
        model_path=str(model.path),
        n_ctx=model.n_ctx,
        n_batch=N_BATCH,
        n_ubatch=N_BATCH,
        logits_all=False,
        n_threads=1,
        n_threads_batch=1,
        seed=0,
        verbose=False,
    )
    print(
        "| workload | requests | prompt tokens | raw ms/request | raw blocks | plugin | "
        "plugin/raw | plugin/raw blocks | previous/raw |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, requests in workloads(model, args.tokens).items():
        if not name.startswith(args.only):
            continue
        prompts = [model._prompt_tokens(r.messages) for r in requests]
        answers = runner.run(requests)
        made = [
            model._generator.generate(p, max_tokens=r.max_tokens, temperature=r.temperature or 0.0, seed=r.seed or 0)
            for p, r in zip(prompts, requests, strict=True)
        ]
        assert [len(g.tokens) for g in made] == [a.completion_tokens for a in answers]
        ratios, old_ratios, overheads, raw_ms, blocks_ms, ours_ms = [], [], [], [], [], []
        for _ in range(args.rounds):
            start = time.perf_counter()
            for p, r, g in zip(prompts, requests, made, strict=True):
                bare.run(p, g.tokens, r.temperature or 0.0, r.seed or 0)
            raw_s = time.perf_counter() - start
            start = time.perf_counter()
            for p, r in zip(prompts, requests, strict=True):
                blocks.generate(p, max_tokens=r.max_tokens, temperature=r.temperature or 0.0, seed=r.seed or 0)
            blocks_s = time.perf_counter() - start
            start = time.perf_counter()
            runner.run(requests)
            ours_s = time.perf_counter() - start
            start = time.perf_counter()
            for r in requests:
                previous.reset()
                previous.create_chat_completion(
                    messages=[{"role": m.role, "content": m.content} for m in r.messages],
                    temperature=r.temperature or 0.0,
                    max_tokens=r.max_tokens,
                    seed=r.seed or 0,
                )
            old_s = time.perf_counter() - start
            ratios.append(ours_s / raw_s)
            old_ratios.append(old_s / raw_s)
            overheads.append(ours_s / blocks_s)
            raw_ms.append(1000 * raw_s / len(requests))
            blocks_ms.append(1000 * blocks_s / len(requests))
            ours_ms.append(1000 * ours_s / len(requests))
        mean_prompt = statistics.mean(len(p) for p in prompts)
        print(
            f"| {name} | {len(requests)} | {mean_prompt:.0f} | {statistics.median(raw_ms):.0f} | "
            f"{statistics.median(blocks_ms):.0f} | {statistics.median(ours_ms):.0f} | {_ratio(ratios)} | "
            f"{_ratio(overheads)} | {_ratio(old_ratios)} |"
        )
    previous.close()
    model.close()


if __name__ == "__main__":
    main()
