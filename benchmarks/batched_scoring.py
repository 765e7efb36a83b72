"""Log-prob requests on the embedded model: the plugin against one batched llama.cpp decode of the same tokens.

Raw: for each group of requests that share a conversation, one `llama_decode` from an empty context
holding the conversation once, each request's reply prefix and each multi-token candidate's leading
tokens as sequences sharing it, with logits only at the rows read (and those rows normalised, as the
plugin does). That is the least llama.cpp work for the numbers. Plugin: the same requests through the
runner (cache off, so every one is computed). Three workloads: PCF probes (one request each, 79
candidates), an implicit-bias prompt's forced-choice words (one group per prompt and group order) and
harm-judge questions (one request, six letters). A and B alternate per round in one process, one
llama.cpp thread each; the ratio's median over rounds is reported.

    python benchmarks/batched_scoring.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from types import SimpleNamespace

import llama_cpp
import numpy as np

from pytest_fairness.measures.bai import implicit
from pytest_fairness.measures.bai.iat_stimuli import load_stereotypes
from pytest_fairness.measures.bai.implicit_prompts import draw_prompt, variants
from pytest_fairness.measures.fpf.harm import judge_screen, net_harm
from pytest_fairness.measures.pcf import prejudice_caprice as pcf
from pytest_fairness.measures.pcf.inputs import Occupations, load_attributes, load_templates
from pytest_fairness.models.cache import CacheMode
from pytest_fairness.models.interface import LogprobRequest
from pytest_fairness.models.local import LocalModel
from pytest_fairness.models.local_scoring import Job, _Batch, leading, log_softmax
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner


class OneDecode:
    """A context of its own on the plugin's weights: each group of jobs in one decode call."""

    def __init__(self, model: LocalModel) -> None:
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = params.n_batch = params.n_ubatch = 2048
        params.n_seq_max, params.kv_unified = 256, True
        params.n_threads = params.n_threads_batch = 1
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED  # as the plugin scores
        weights = model._llm._model.model
        self.ctx = llama_cpp.llama_init_from_model(weights, params)
        self.mem = llama_cpp.llama_get_memory(self.ctx)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(weights))
        self.batch = _Batch(llama_cpp, 2048, 256)

    def run(self, jobs: list[Job]) -> None:
        llama_cpp.llama_memory_clear(self.mem, True)
        b, head = self.batch, jobs[0].head
        b.clear()
        plans, seq = [], 0
        for job in jobs:
            runs = leading(job.candidates)
            plans.append((seq, list(range(seq + 1, seq + 1 + len(runs))), runs))
            seq += 1 + len(runs)
        every = list(range(seq))
        for i, token in enumerate(head):
            b.add(token, i, every, i == len(head) - 1)
        for job, (own, seqs, runs) in zip(jobs, plans, strict=True):
            for i, token in enumerate(job.tail):
                b.add(token, len(head) + i, [own, *seqs], i == len(job.tail) - 1)
            at = len(head) + len(job.tail)
            for s, lead in zip(seqs, runs, strict=True):
                for i, token in enumerate(lead):
                    b.add(token, at + i, [s], True)
        assert llama_cpp.llama_decode(self.ctx, b.raw) == 0
        for i in range(b.raw.n_tokens):
            if b.raw.logits[i]:
                log_softmax(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self.ctx, i), shape=(self.n_vocab,)))


def workloads() -> dict[str, list[list[LogprobRequest]]]:
    """Groups of requests per workload: each group is what one raw decode computes."""
    occupations = Occupations(("nurse", "engineer"), None, "benchmark")
    probes = pcf._probes(load_attributes("gender"), load_templates("gender"), occupations)[:4]
    rng = random.Random(0)
    stereotypes = list(load_stereotypes().values())[:1]
    prompts = [draw_prompt(st, variants()[0], rng) for st in stereotypes]
    words = implicit._forced_requests(SimpleNamespace(prompts=prompts), system_prompt=None)
    groups: dict[tuple, list[LogprobRequest]] = {}
    for request in words:
        groups.setdefault(request.messages, []).append(request)
    judge = [r for x in judge_screen.calibration_requests("gender", net_harm.screen_pairs(0)) for r in x.requests][:4]
    return {
        "PCF probe (79 words)": [[p] for p in probes],
        "implicit-bias prompt's words": list(groups.values()),
        "harm-judge question (6 letters)": [[q] for q in judge],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    model = load_model("local?threads=1")
    assert isinstance(model, LocalModel)
    runner = Runner(model, cache_mode=CacheMode.OFF)
    runner.run(workloads()["harm-judge question (6 letters)"][0])  # load the weights
    raw = OneDecode(model)
    print("| workload | groups × requests | raw ms/group | plugin ms/group | plugin/raw (median of rounds) |")
    print("|---|---|---|---|---|")
    for name, groups in workloads().items():
        jobs = [[model._job(r) for r in group] for group in groups]
        ratios, raw_ms, ours_ms = [], [], []
        for _ in range(args.rounds):
            start = time.perf_counter()
            for group in jobs:
                raw.run(group)
            raw_s = time.perf_counter() - start
            start = time.perf_counter()
            for group in groups:
                runner.run(group)
            ours_s = time.perf_counter() - start
            ratios.append(ours_s / raw_s)
            raw_ms.append(1000 * raw_s / len(groups))
            ours_ms.append(1000 * ours_s / len(groups))
        sizes = f"{len(groups)} × {statistics.mean(len(g) for g in groups):.0f}"
        print(
            f"| {name} | {sizes} | {statistics.median(raw_ms):.0f} | {statistics.median(ours_ms):.0f} | "
            f"{statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f}) |"
        )
    model.close()


if __name__ == "__main__":
    main()
