"""Write every output of six synthetic runs to a folder, so two versions of the code can be diffed byte by byte.

``python benchmarks/output_identity.py OUT`` runs the gender, religion, race and axes suites on the synthetic
doubles (seed 1, cache off, sequential, baselines recorded once then compared), each from a fresh empty
project, and writes per run the JSON report, the Markdown summary, the JUnit XML, the history line and the
terminal output, with what changes between any two runs of the same code (times, paths, durations, the live
progress lines of a slow machine, the checkout's own path) masked.
Run it on two checkouts and ``diff -r`` the folders: a restructure that keeps outputs must show no difference.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

#: The checkout whose code runs: the built-in suites' path in the reports is relative to it.
CHECKOUT = Path(__file__).resolve().parents[1]
RUNS = {
    "gender-harm": ("gender", "synthetic:harm?bias=0.05"),
    "gender-iat": ("gender", "synthetic:iat?bias=0.2"),
    "gender-pcf": ("gender", "synthetic:pcf?bias=0.3"),
    "religion-decision": ("religion", "synthetic:decision?bias=0.3"),
    "race-harm": ("race", "synthetic:harm?bias=0"),
    "axes-harm": ("axes", "synthetic:harm?bias=0.2"),
}
COMMON = ["--fairness-seed=1", "--fairness-cache-mode=off", "--fairness-sequential", "-p", "no:randomly"]
#: Text that differs between two runs of the same code: wall-clock times, temporary paths, seconds columns.
MASKS = [
    (re.compile(r"\d+(\.\d+)?s( \(\d+:\d+:\d+\))?(?= =+$)", re.M), "<time>"),
    (re.compile(r'"(seconds|duration|time|started|finished|timestamp|elapsed)": [^,\n]+'), r'"\1": <masked>'),
    (re.compile(r'(time|timestamp|hostname)="[^"]*"'), r'\1="<masked>"'),
    (re.compile(r"\b\d+\.\d+ ?s\b"), "<sec>"),
    (re.compile(r"rootdir: .*"), "rootdir: <root>"),
    (re.compile(r"platform .*"), "platform <masked>"),
    (re.compile(r"plugins: .*"), "plugins: <masked>"),
    (re.compile(r"cachedir: .*"), "cachedir: <masked>"),
]


#: A cost table row: check, calls, cache hits, retries, prompt and completion tokens, seconds, dollars.
COST_ROW = re.compile(r"^(\S+(?: \S+)*\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+)(\d+\.\d)(\s+)", re.M)
#: A live progress line, written when a check runs past the redraw interval: how many depends on the machine.
TICK = re.compile(r"^  \S+::.*: round \d+, n=\d+, requests \d+/\d+ \(\d+s\).*\n", re.M)
#: The test-progress block (``fairness/gender ..I.F   [100%]``), which those lines break at machine-dependent places.
PROGRESS = re.compile(r"^(fairness/\S+ )([.IFsEx\n]*?)\s*(\[100%\])$", re.M)
#: pytest's closing line, whose padding follows the length of its (masked) time.
CLOSING = re.compile(r"^=+ (.*<time>.*?) =+$", re.M)


def mask(text: str, root: Path) -> str:
    """What differs between two runs of the same code masked: times, paths, the seconds column (and its width),
    and the live progress lines a slower machine shows more of."""
    text = text.replace(os.path.relpath(CHECKOUT, root), "<checkout>").replace(str(root), "<root>")
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    text = COST_ROW.sub(lambda m: m.group(1) + "<sec> ", text)
    text = PROGRESS.sub(lambda m: m.group(1) + re.sub(r"\s", "", m.group(2)) + " " + m.group(3), TICK.sub("", text))
    return CLOSING.sub(r"= \1 =", text)


def run(name: str, suite: str, model: str, out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        base = [sys.executable, "-m", "pytest", f"--fairness-suite={suite}", f"--fairness-model={model}", *COMMON]
        subprocess.run([*base, "--fairness-baselines", "--snapshot-update", "-q"], cwd=root, capture_output=True)
        outputs = ["--fairness-report=r.json", "--fairness-markdown=r.md", "--junitxml=r.xml", "--fairness-history=h"]
        done = subprocess.run([*base, "--fairness-baselines", *outputs], cwd=root, capture_output=True, text=True)
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "terminal.txt").write_text(mask(done.stdout + done.stderr, root) + f"\nexit {done.returncode}\n")
        for produced, kept in (("r.json", "report.json"), ("r.md", "summary.md"), ("r.xml", "junit.xml")):
            path = root / produced
            (folder / kept).write_text(mask(path.read_text(), root) if path.exists() else "<missing>\n")
        history = root / "h" / "history.jsonl"
        (folder / "history.jsonl").write_text(mask(history.read_text(), root) if history.exists() else "<missing>\n")
        for baseline in sorted((root / "baselines").rglob("*")) if (root / "baselines").exists() else []:
            if baseline.is_file():
                target = folder / "baselines" / baseline.relative_to(root / "baselines")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(baseline.read_bytes())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", nargs="*", choices=sorted(RUNS), help="run these alone")
    args = parser.parse_args()
    for name in args.only or RUNS:
        suite, model = RUNS[name]
        run(name, suite, model, args.out)
        print(f"{name}: written", flush=True)


if __name__ == "__main__":
    main()
