"""The evidence page at release size: its bytes, its load time in headless chromium (offline), and the run's peak
memory with and without ``--fairness-html``.

    python benchmarks/evidence_page.py [--bias 0 0.3] [--scale 1] [--repeats 3]
    python benchmarks/evidence_page.py --page PATH     # the load time of a page written elsewhere

Each row is two whole ``pytest`` processes from an empty project, alike but for ``--fairness-html``: a suite
of the gender suite's overall ``net_harm`` check alone at its release size (times ``--scale``), on
``synthetic:harm?bias=B`` as chatbot and ``synthetic:harm?bias=0`` as judge, cache off, serial. Their peak
RSS is read from the kernel (``RUSAGE_CHILDREN`` of a fresh wrapper per process). ``bias=0`` flags almost
no pair (the uniform sample is the evidence); ``bias=0.3`` flags thousands, so the flag cap binds: the most a
net-harm check keeps. The page is then opened ``--repeats`` times in headless chromium (tests/browser.py),
from its file, and the median load event and evidence view ready (the page's own ``fairness-ready`` mark,
the check's evidence view open) are reported; the run fails if the page requests anything but itself or
logs an error. Targets (issue 47): the page at most 10 MB, and the peak RSS with it within 10% of without.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

WRAPPER = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[2:], cwd=sys.argv[1], capture_output=True, text=True)
print(done.stdout[-400:], file=sys.stderr)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def suite(scale: float) -> str:
    """The gender suite's overall net-harm check, alone, at its release size times ``scale``."""
    from pytest_fairness.config.suite import load

    check = next(c for c in load("gender").checks if c.id == "net_harm")
    n = round(check.sample_size("release") * scale)
    return (
        "suite: release\nchecks:\n  - id: net_harm\n    measure: net_harm\n    comparison: gender\n"
        f"    max_tokens: {check.params.max_tokens}\n    samples: {n}\n    threshold: {{max: 0.001}}\n"
    )


def peak(folder: Path, args: list[str]) -> tuple[int, float]:
    """A pytest process's exit status and peak RSS in MB."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    command = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-q", *args]
    out = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(folder), *command], capture_output=True, text=True, env=env
    )
    status, kilobytes = out.stdout.split()
    return int(status), int(kilobytes) / 1024


def load_time(path: Path, label: str, repeats: int) -> dict[str, float]:
    """Median load event and evidence-view-ready times (ms) of ``path`` opened at ``label``'s check."""
    from browser import Browser

    loads, ready = [], []
    url = path.resolve().as_uri()
    with Browser() as browser:
        for _ in range(repeats):
            tab = browser.open(f"{url}#check={label.replace('::', '%3A%3A')}")
            times = tab.js(
                "({load: performance.getEntriesByType('navigation')[0].loadEventEnd,"
                " ready: performance.getEntriesByName('fairness-ready')[0].startTime,"
                " rows: document.querySelectorAll('#evidence tr.ev-row').length})"
            )
            if tab.errors or tab.requests != [url] or not times["rows"]:
                raise SystemExit(f"{path}: errors {tab.errors}, requests {tab.requests}, rows {times['rows']}")
            loads.append(times["load"])
            ready.append(times["ready"])
            tab.close()
    return {"load_ms": statistics.median(loads), "ready_ms": statistics.median(ready), "chromium": browser.version}


def row(bias: str, scale: float, repeats: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "release.yaml").write_text(suite(scale))
        (folder / "pytest.ini").write_text("[pytest]\n")
        args = [
            "--fairness-suite=release.yaml",
            f"--fairness-model=synthetic:harm?bias={bias}",
            "--fairness-judge=synthetic:harm?bias=0",
            "--fairness-cache-mode=off",
            "--fairness-report=report.json",
        ]
        status_without, without = peak(folder, args)
        status_with, with_page = peak(folder, [*args, "--fairness-html=fairness.html"])
        page = folder / "fairness.html"
        report = json.loads((folder / "report.json").read_text())
        check = report["checks"][0]
        selection = check["result"]["evidence"]["selection"]
        return {
            "bias": bias,
            "prompts": check["result"]["params"]["prompts"],
            "calls": report["totals"]["calls"],
            "outcome": check["outcome"],
            "status": (status_without, status_with),
            "peak_mb_without": without,
            "peak_mb_with": with_page,
            "ratio": with_page / without,
            "page_bytes": page.stat().st_size,
            "evidence_bytes": len(json.dumps(check["result"]["evidence"])),
            "kept": selection,
            **load_time(page, "release::net_harm", repeats),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bias", nargs="+", default=["0", "0.3"])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--page", type=Path, help="only time this page, opened at --check")
    parser.add_argument("--check", default="gender::net_harm")
    args = parser.parse_args()
    if args.page is not None:
        print(json.dumps({"page_bytes": args.page.stat().st_size, **load_time(args.page, args.check, args.repeats)}))
        return
    for bias in args.bias:
        print(json.dumps(row(bias, args.scale, args.repeats)), flush=True)


if __name__ == "__main__":
    main()
