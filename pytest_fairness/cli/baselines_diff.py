"""``baselines diff OLD NEW``: the baseline-diff table between two sets of committed baselines.

OLD and NEW are each a folder (the baselines folder, or one model's folder in it) or a git ref (``origin/main``,
``HEAD``, a commit; ``REF:path`` names another folder in it), so the one command serves the rebaseline job
(``HEAD`` against the folder it just re-recorded), a pull request that edits baselines/ (the target branch
against its merge commit) and a reviewer at a terminal. The table is Markdown on stdout (``--output`` also
writes it to a file), or plain text with ``--text``. Exit status 0; 1 with ``--fail-on-gate`` when a new
baseline fails its threshold (a release that fails a gate, for a job to stop on); 2 when an input cannot be read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

DEFAULT_DIR = "baselines"


def register(commands: Any) -> None:
    group = commands.add_parser("baselines", help="committed baselines: the diff table between two refs or folders")
    steps = group.add_subparsers(dest="step", required=True)
    diff = steps.add_parser("diff", help="per check: before -> after, the change beyond noise, the new verdict")
    diff.add_argument("old", help="a baselines folder, one model's folder, or a git ref (REF or REF:path)")
    diff.add_argument("new", help="the same, for the new baselines")
    diff.add_argument("--dir", default=DEFAULT_DIR, help=f"the baselines folder within a ref (default {DEFAULT_DIR})")
    diff.add_argument("--model", default=None, help="only this model folder (e.g. the model line)")
    diff.add_argument("--repo", type=Path, default=Path("."), help="the git repository refs are read from")
    diff.add_argument("--alpha", type=float, default=0.05, help="the level of the paired and unpaired tests")
    diff.add_argument("--output", type=Path, default=None, help="also write the Markdown table to this file")
    diff.add_argument("--text", action="store_true", help="a plain-text table instead of Markdown on stdout")
    diff.add_argument("--accepted", default="", help="who accepted a release that fails a gate (said in the table)")
    diff.add_argument("--fail-on-gate", action="store_true", help="exit 1 when a new baseline fails its threshold")
    diff.set_defaults(run=run)


def _resolve(spec: str, args: argparse.Namespace) -> Path:
    """A folder as given, or the baselines of a git ref read into a folder of their own."""
    from pytest_fairness.baseline.git_ref import baselines_at

    if Path(spec).is_dir():
        return Path(spec)
    ref, _, inside = spec.partition(":")
    return baselines_at(args.repo.resolve(), ref, inside or args.dir)


def model_folders(root: Path, only: str | None) -> dict[str, Path]:
    """The model folders under a baselines folder by name (the folder itself when it holds baselines)."""
    from pytest_fairness.baseline.entry import model_folder

    if any(root.glob("*.yaml")):
        return {root.name: root}
    found = {p.name: p for p in sorted(root.iterdir()) if p.is_dir() and any(p.glob("*.yaml"))} if root.is_dir() else {}
    if only is not None:
        name = model_folder(only)
        return {name: found[name]} if name in found else {}
    return found


def run(args: argparse.Namespace) -> int:
    from pytest_fairness.baseline.folder_diff import diff_folders, read_folder
    from pytest_fairness.baseline.git_ref import RefError
    from pytest_fairness.report.baseline_diff import diff_markdown, diff_text, failing

    try:
        old_root, new_root = _resolve(args.old, args), _resolve(args.new, args)
        old, new = model_folders(old_root, args.model), model_folders(new_root, args.model)
        if len(old) == 1 and len(new) == 1 and args.model is None:  # two single model folders: compare them
            old, new = {"": next(iter(old.values()))}, {"": next(iter(new.values()))}
        changes = {name: diff_folders(_read(old.get(name), read_folder), _read(new.get(name), read_folder), args.alpha)
                   for name in sorted(set(old) | set(new))}  # fmt: skip
    except (RefError, ValueError, OSError) as exc:
        print(f"baselines diff: {exc}", file=sys.stderr)
        return 2
    if not changes:
        print(f"baselines diff: no baselines in {args.old} or {args.new}", file=sys.stderr)
        return 2
    markdown = [
        diff_markdown(found, args.old, args.new, line=name, accepted=args.accepted) for name, found in changes.items()
    ]
    fails = any(failing(found) for found in changes.values())
    if args.text:
        print(
            "\n\n".join("\n".join(diff_text(found, args.old, args.new, line=name)) for name, found in changes.items())
        )
    else:
        print("\n".join(markdown))
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text("\n".join(markdown), encoding="utf-8")
    return 1 if args.fail_on_gate and fails else 0


def _read(folder: Path | None, read: Any) -> dict[str, Any]:
    return {} if folder is None else read(folder)
