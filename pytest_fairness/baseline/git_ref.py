"""Committed baselines read from a git ref (``--fairness-baseline-ref``, ``baselines diff``), not the working tree.

A pull request that re-records its own baselines must not be compared with them: a worse release would pass
against the worse baselines it committed. So a pull request's gate reads the baselines of the branch it targets
(``--fairness-baseline-ref=origin/main``): the folder as that commit holds it, written once per commit into a
folder beside the system's temporary files (``git archive``, read by the same code as a working tree's folder).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path, PurePosixPath


class RefError(ValueError):
    """A ref that cannot be read: not a git repository, an unknown ref; the message names it and the fix."""


def _git(root: Path, *args: str) -> bytes:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)
    except OSError as exc:
        raise RefError(f"git cannot be run ({exc}): install git to read baselines from a ref") from None
    if done.returncode != 0:
        said = " ".join(done.stderr.decode(errors="replace").split())[:300]
        raise RefError(f"git {' '.join(args[:2])} failed in {root}: {said}")
    return done.stdout


def commit_of(root: Path, ref: str) -> str:
    """The commit a ref names, in the repository holding ``root``; RefError naming the fix when there is none."""
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except RefError:
        raise RefError(
            f"--fairness-baseline-ref={ref}: no such commit in the repository at {root}; fetch it first (e.g. "
            f"git fetch origin main, then origin/main), or name a branch, tag or commit that exists"
        ) from None


def baselines_at(root: Path, ref: str, directory: str) -> Path:
    """The baseline folder ``directory`` (relative to ``root``) as the commit ``ref`` names holds it, written to a
    folder of its own once per commit and path (empty when the commit has no such folder); returns that folder."""
    commit = commit_of(root, ref)
    prefix = _git(root, "rev-parse", "--show-prefix").decode().strip()
    inside = PurePosixPath(prefix, directory).as_posix().strip("/")
    # Named as in the repository (``.../<commit>/baselines``), so messages naming the folder read the same.
    place = Path(tempfile.gettempdir()) / "pytest-fairness-baselines" / commit[:16] / _slug(inside)
    if place.is_dir():
        return place
    listed = _git(root, "ls-tree", "-r", "--name-only", commit, "--", inside).decode().splitlines()
    staging = Path(tempfile.mkdtemp(prefix=".writing-", dir=_made(place.parent)))
    if listed:
        archive = _git(root, "archive", "--format=tar", commit, "--", inside)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            for member in tar.getmembers():
                if not member.isfile():
                    continue
                relative = PurePosixPath(member.name).relative_to(inside)
                if ".." in relative.parts:
                    continue
                target = staging.joinpath(*relative.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None
                target.write_bytes(source.read())
    try:
        os.replace(staging, place)  # another process may have written the same commit's folder meanwhile
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not place.is_dir():
            raise
    return place


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _slug(path: str) -> str:
    """A folder name for a path in the repository: its last part when that is all it is, else its parts joined."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in path) or "root"
