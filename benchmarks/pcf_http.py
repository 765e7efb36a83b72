"""PCF over HTTP: requests and wall time with each probe's echoes sent as prompt lists, against one request
per echo (the code before prompt lists), with the risks compared bit for bit.

    python benchmarks/pcf_http.py [--occupations 4] [--templates 3] [--latency 0.005] [--rounds 3] [--llama]

Stub: the tests' fake server (``tests/fake_openai.py``) serving its toy language model, the gender
attribute's 79 words (most of them several tokens for the toy model, so most are read by echo), a fixed
latency per request. One prompt a request is forced by a stub that refuses lists, as llama_cpp.server does.
The two alternate per round; requests are counted at the server.

``--llama``: the same against llama.cpp's own server (``python -m llama_cpp.server``) serving the embedded
model, with the two words its echo need not read (" he", " she": listed next tokens). llama_cpp.server
0.3.x takes one prompt per request and mis-scores echoed prompts of this model, so it shows the other
side: nothing to batch, and nothing lost (requests counted at the client).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fake_openai import FakeOpenAI

from pytest_fairness.measures.pcf import prejudice_caprice as pcf
from pytest_fairness.models.local import embedded_model_path
from pytest_fairness.models.openai import OpenAIModel
from pytest_fairness.models.runner import Runner

RISKS = ("R", "R_prejudice", "R_caprice")


def counted(model: OpenAIModel) -> list[int]:
    """Count the model's HTTP responses (its client's response hook)."""
    seen = [0]
    observe = model._observe

    async def hook(response: Any) -> None:
        seen[0] += 1
        await observe(response)

    model._observe = hook  # type: ignore[method-assign]
    return seen


def run(base_url: str, params: dict[str, Any], lists: bool | None) -> tuple[dict[str, float], int, float]:
    """(risks, HTTP requests, seconds) of one PCF run; ``lists`` False forces one prompt per request."""
    model = OpenAIModel(params.get("served", "fake"), base_url)
    seen = counted(model)
    if lists is False:
        model.text_scoring().lists = False
    runner = Runner(model)
    start = time.perf_counter()
    result = pcf.MEASURE.run_with(runner, **{k: v for k, v in params.items() if k != "served"})
    took = time.perf_counter() - start
    runner.close()
    return {k: result.details[k] for k in RISKS}, seen[0], took


def stub(args: argparse.Namespace) -> None:
    params = {"attribute": "gender", "occupations": args.occupations, "top_templates": args.templates}
    rows: dict[str, list[tuple[int, float]]] = {"one prompt a request": [], "prompt lists": []}
    risks: dict[str, dict[str, float]] = {}
    for _ in range(args.rounds):
        for name, lists in (("one prompt a request", False), ("prompt lists", True)):
            with FakeOpenAI(latency=args.latency, prompt_lists=lists) as server:
                found, _, took = run(server.base_url, params, None)
                rows[name].append((len(server.requests), took))
                risks[name] = found
    assert risks["prompt lists"] == risks["one prompt a request"], risks
    print(f"stub, gender: {args.occupations} occupations x {args.templates} templates, {args.latency * 1000:g} ms")
    report(rows)
    print(f"risks identical: {risks['prompt lists']}")


def llama(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder:
        words = Path(folder) / "words.csv"
        words.write_text("group,word\nmale,he\nfemale,she\n")
        params = {
            "attribute": "gender",
            "occupations": args.occupations,
            "top_templates": args.templates,
            "attributes_file": words,
            "served": "smollm2",
        }
        proc, base_url = start_llama()
        try:
            rows: dict[str, list[tuple[int, float]]] = {"one prompt a request": [], "prompt lists": []}
            risks = {}
            for _ in range(args.rounds):
                for name, lists in (("one prompt a request", False), ("prompt lists", None)):
                    found, requests, took = run(base_url, params, lists)
                    rows[name].append((requests, took))
                    risks[name] = found
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert risks["prompt lists"] == risks["one prompt a request"], risks
    print(f"llama_cpp.server, embedded model, he/she: {args.occupations} occupations x {args.templates} templates")
    report(rows)


def start_llama() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path, _ = embedded_model_path()
    args = [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host", "127.0.0.1", "--port", str(port)]
    args += ["--logits_all", "true", "--n_ctx", "2048", "--model_alias", "smollm2", "--flash_attn", "true"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    for _ in range(240):
        try:
            urllib.request.urlopen(f"{base}/models", timeout=2)
            return proc, base
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("llama.cpp server did not start")


def report(rows: dict[str, list[tuple[int, float]]]) -> None:
    print(f"{'':22}{'requests':>10}{'seconds (median)':>20}")
    for name, seen in rows.items():
        print(f"{name:22}{seen[0][0]:>10}{statistics.median(t for _, t in seen):>20.2f}")
    before, after = rows["one prompt a request"][0][0], rows["prompt lists"][0][0]
    b_s = statistics.median(t for _, t in rows["one prompt a request"])
    a_s = statistics.median(t for _, t in rows["prompt lists"])
    print(f"requests after/before {after / before:.3f}; wall time after/before {a_s / b_s:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--occupations", type=int, default=4)
    parser.add_argument("--templates", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.005)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--llama", action="store_true")
    args = parser.parse_args()
    stub(args)
    if args.llama:
        llama(args)


if __name__ == "__main__":
    main()
