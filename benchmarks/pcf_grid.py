"""The PCF gender grid on the embedded model: the harness against the raw llama.cpp evaluations it needs.

Raw: one `Llama` object, for every (occupation, template) probe evaluate the prefix (re-using the
KV cache of the longest shared prefix), read every attribute word's first token from the last row,
and evaluate the leading tokens of multi-token words to score the rest — the minimum llama.cpp work.
Harness: `pcf.run` through the runner (cache off, so every probe is computed). Both do the same
probes in the same order; they alternate in chunks of occupations so machine drift hits both alike.

    python benchmarks/pcf_grid.py [--occupations 257] [--chunk 16]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
from llama_cpp import Llama

from pytest_fairness.measures.pcf import prejudice_caprice as pcf
from pytest_fairness.measures.pcf.inputs import load_occupations
from pytest_fairness.models.cache import CacheMode
from pytest_fairness.models.local import embedded_model_path
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner

#: The first templates to use (None: all), from --templates.
TEMPLATES: int | None = None


def lse(row: np.ndarray) -> float:
    top = float(row.max())
    return top + float(np.log(np.exp(row - top).sum()))


def raw_grid(llm: Llama, probes: list) -> float:
    start = time.perf_counter()
    for probe in probes:
        prompt = llm.tokenize(probe.prefix.encode(), add_bos=True, special=False)
        keep = 0
        for a, b in zip(llm.input_ids[: llm.n_tokens], prompt, strict=False):
            if a != b:
                break
            keep += 1
        llm.n_tokens = keep
        if keep < len(prompt):
            llm.eval(prompt[keep:])
        first = len(prompt) - 1
        base = llm.scores[first]
        norm = lse(base)
        for candidate in probe.candidates:
            ids = llm.tokenize(candidate.encode(), add_bos=False, special=False)
            total = float(base[ids[0]]) - norm
            if len(ids) > 1:
                llm.n_tokens = len(prompt)
                llm.eval(ids[:-1])
                for i, tok in enumerate(ids[1:], start=1):
                    row = llm.scores[first + i]
                    total += float(row[tok]) - lse(row)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--occupations", type=int, default=257)
    parser.add_argument("--chunk", type=int, default=16)
    parser.add_argument("--templates", type=int, default=None, help="only the first N templates (default: all)")
    args = parser.parse_args()
    global TEMPLATES
    TEMPLATES = args.templates
    path, _ = embedded_model_path()
    llm = Llama(model_path=str(path), n_ctx=2048, logits_all=True, verbose=False, seed=0)
    model = load_model("local")
    runner = Runner(model, cache_mode=CacheMode.OFF)
    terms = load_occupations().terms[: args.occupations]
    raw_s = ours_s = 0.0
    probes_total = 0
    for start in range(0, len(terms), args.chunk):
        chunk = terms[start : start + args.chunk]
        probes = [p for x in chunk for p in pcf._probes(*_inputs(x))]
        raw_s += raw_grid(llm, probes)
        t0 = time.perf_counter()
        groups, templates, occ = _inputs_many(chunk)
        calls_before = runner.stats.calls
        responses = runner.run(pcf._probes(groups, templates, occ))
        ours_s += time.perf_counter() - t0
        assert runner.stats.calls - calls_before == len(responses) == len(probes)
        probes_total += len(probes)
    words = len(pcf._words(_inputs_many(terms[:1])[0]))
    shown = len(_inputs_many(terms[:1])[1].texts)
    print(
        f"gender grid: {len(terms)} occupations x {shown} templates x {words} words = "
        f"{probes_total * words} word scores"
    )
    print(f"raw llama.cpp   {raw_s:8.1f} s   {probes_total / raw_s:6.2f} probes/s")
    print(f"harness         {ours_s:8.1f} s   {probes_total / ours_s:6.2f} probes/s")
    print(f"harness/raw throughput ratio  {raw_s / ours_s:.3f}")


def _inputs(occupation: str):
    return _inputs_many([occupation])


def _inputs_many(occupations: list[str]):
    from pytest_fairness.measures.pcf.inputs import Occupations, load_attributes, load_templates

    templates = load_templates("gender")
    if TEMPLATES is not None:
        templates = dataclasses.replace(
            templates, texts=templates.texts[:TEMPLATES], counts=templates.counts[:TEMPLATES]
        )
    return load_attributes("gender"), templates, Occupations(tuple(occupations), None, "benchmark")


if __name__ == "__main__":
    main()
