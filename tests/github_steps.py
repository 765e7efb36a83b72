"""GitHub's part in the CI kit's tests: a workflow of docs/ci/ played as GitHub Actions plays it.

``Workflow`` runs one step's shell script as a runner does (``bash -e``, the workflow's env, this interpreter as
``python``). ``GitHubStandIn`` plays a workflow's jobs, step by step, over a team's repository
(``TeamRepository``: a real git repository in a folder, its ``origin`` a bare one):

* jobs: those whose ``if:`` holds, in ``needs`` order, a ``strategy.matrix`` job once per entry (``matrix.*``,
  ``strategy.job-total``), each in its own checkout; a job runs when the jobs it needs succeeded, unless its
  ``if:`` names a status function (``!cancelled()``, ``always()``);
* ``actions/checkout``: a clone of origin; for a pull request the merge of its head into its base, as GitHub's
  ``refs/pull/N/merge``; the workflow is read from the commit checked out;
* ``actions/cache``: restored by exact key, else by the newest entry with a ``restore-keys`` prefix, in the run's
  own scope first, then (a pull request) its base branch's; saved after the job when it succeeded and the key was
  no exact hit (``actions/cache/restore`` only restores). ``actions/cache/save`` saves under its key in the
  run's scope;
* ``actions/upload-artifact``: copied into the run's artefacts, its ``artifact-url`` an output;
  ``actions/download-artifact``: the run's artefacts whose name matches ``pattern``, each in a folder of its name;
* ``run:`` steps: ``bash -e`` with the workflow's, job's and step's env, the ``GITHUB_*`` variables, a
  ``GITHUB_OUTPUT`` file read back into ``steps.ID.outputs``, and ``${{ }}`` expressions substituted; steps named
  ``Install`` are skipped (the plugin is this checkout, on PYTHONPATH);
* step ``if:`` conditions (``success()`` implied, ``always()``, ``failure()``, ``&&``, ``||``, ``!``, ``==``),
  ``continue-on-error``, and the job's conclusion;
* ``gh``: a script on PATH that records its calls and keeps the pull requests and their comments in a folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from paths import REPO


def runner_env(home: Path) -> dict[str, str]:
    """What every step gets from the runner: this interpreter first on PATH as ``python`` (a wrapper: a venv's
    interpreter finds its packages by its path), this checkout on PYTHONPATH, and none of the test run's own pytest
    or xdist variables (a step runs an ordinary pytest)."""
    bindir = home / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    python = bindir / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GITHUB_"))}
    return env | {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO)}


class Workflow:
    """One workflow file of the CI kit (``docs/ci/NAME``)."""

    def __init__(self, name: str) -> None:
        self.path = REPO / "docs" / "ci" / name

    @property
    def document(self) -> dict[str, Any]:
        return yaml.safe_load(self.path.read_text())

    def steps(self, job: str) -> list[dict[str, Any]]:
        return self.document["jobs"][job]["steps"]

    def step(self, job: str, name: str) -> dict[str, Any]:
        """The job's first step whose name starts with ``name``."""
        return next(s for s in self.steps(job) if s.get("name", "").startswith(name))

    def run(self, job: str, name: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """A step's shell script as the runner runs it (``bash -e``), in ``cwd`` with ``env``."""
        script = self.step(job, name)["run"]
        return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True)

    def copied(self, env: dict[str, str], edits: dict[str, str] | None = None) -> str:
        """The workflow as a team copies it into ``.github/workflows/``: the values of its env block's entries
        ``env`` names set to theirs, and each text of ``edits`` replaced (each must be in the shipped file)."""
        text, shipped = self.path.read_text(), self.document.get("env", {})
        for name, value in env.items():
            line = f"  {name}: {shipped[name]}\n"
            assert line in text, name
            text = text.replace(line, f"  {name}: {value}\n")
        for before, after in (edits or {}).items():
            assert before in text, before
            text = text.replace(before, after)
        return text

    def env(self, home: Path, run_id: str, **variables: str) -> dict[str, str]:
        """What a runner gives the workflow's steps: the workflow's own env block, this interpreter first on
        PATH as ``python``, the GitHub variables the steps read, and ``variables``."""
        return runner_env(home) | {
            **self.document.get("env", {}),
            "GITHUB_STEP_SUMMARY": str(home / "summary.md"),
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_REPOSITORY": "team/model",
            "GITHUB_RUN_ID": run_id,
            **variables,
        }


# -- a team's repository -------------------------------------------------------------------------------------


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")
    return done.stdout


@dataclass
class TeamRepository:
    """A team's repository: ``origin`` (bare, what the runner clones and pushes to) and a clone to author in."""

    root: Path

    def __post_init__(self) -> None:
        self.origin, self.work = self.root / "origin.git", self.root / "work"
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.origin.exists():
            git(self.root, "init", "-q", "--bare", "-b", "main", str(self.origin))
            git(self.root, "clone", "-q", str(self.origin), str(self.work))
            git(self.work, "config", "user.name", "dev")
            git(self.work, "config", "user.email", "dev@example.com")
            git(self.work, "checkout", "-q", "-b", "main")

    def commit(self, branch: str, files: dict[str, str | None], message: str, *, base: str = "main") -> str:
        """Commit ``files`` (path -> text; None deletes it) on ``branch`` (made from ``base`` if new) and push it."""
        git(self.work, "fetch", "-q", "origin")
        remote = set(git(self.work, "branch", "-r", "--format=%(refname:short)").split())
        if f"origin/{branch}" in remote:
            git(self.work, "checkout", "-q", "-B", branch, f"origin/{branch}")
        elif f"origin/{base}" in remote:
            git(self.work, "checkout", "-q", "-B", branch, f"origin/{base}")
        else:  # the repository's first commit
            git(self.work, "symbolic-ref", "HEAD", f"refs/heads/{branch}")
        for path, text in files.items():
            if text is None:
                git(self.work, "rm", "-q", "-r", path)
                continue
            target = self.work / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            git(self.work, "add", path)
        git(self.work, "commit", "-q", "--allow-empty", "-m", message)
        git(self.work, "push", "-q", "--force", "origin", f"HEAD:refs/heads/{branch}")
        return git(self.work, "rev-parse", "HEAD").strip()

    def add_folder(self, branch: str, folder: Path, inside: str, message: str) -> None:
        """Commit a folder's files under ``inside`` on ``branch`` (e.g. baselines a team re-recorded itself)."""
        files = {
            f"{inside}/{p.relative_to(folder).as_posix()}": p.read_text() for p in folder.rglob("*") if p.is_file()
        }
        self.commit(branch, files, message)

    def rerecord(self, branch: str, head: str, args: list[str]) -> None:
        """A pull request that re-records its own baselines: on a checkout of ``head``, pytest ``args`` with
        --fairness-baselines --snapshot-update, the baselines folder committed on ``branch`` (made from ``head``)."""
        own = self.root / f"rerecord-{branch}"
        git(self.root, "clone", "-q", str(self.origin), str(own))
        git(own, "checkout", "-q", f"origin/{head}")
        command = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0", "-q"]
        command += [*args, "--fairness-baselines", "--snapshot-update"]
        subprocess.run(command, cwd=own, env=runner_env(self.root), capture_output=True, check=False)
        self.commit(branch, {}, "start", base=head)
        self.add_folder(branch, own / "baselines", "baselines", "Re-record our own baselines")

    def merge(self, head: str, into: str = "main") -> None:
        """Merge a pull request's branch into ``into`` (a merge commit), as the merge button does."""
        git(self.work, "fetch", "-q", "origin")
        git(self.work, "checkout", "-q", "-B", into, f"origin/{into}")
        git(self.work, "merge", "-q", "--no-ff", "--no-edit", f"origin/{head}")
        git(self.work, "push", "-q", "origin", f"HEAD:refs/heads/{into}")

    def show(self, ref: str, path: str) -> str:
        git(self.work, "fetch", "-q", "origin")
        return git(self.work, "show", f"origin/{ref}:{path}")

    def files(self, ref: str, inside: str) -> list[str]:
        git(self.work, "fetch", "-q", "origin")
        return git(self.work, "ls-tree", "-r", "--name-only", f"origin/{ref}", "--", inside).split()


# -- the gh command line -----------------------------------------------------------------------------------------

GH = r'''#!/usr/bin/env python3
"""gh, as the workflow calls it: sticky comments through the REST API, pull requests through `gh pr`."""
import json, os, pathlib, sys
state = pathlib.Path(os.environ["GH_STAND_IN"]); state.mkdir(parents=True, exist_ok=True)
args = sys.argv[1:]
with (state / "calls.jsonl").open("a") as log:
    log.write(json.dumps(args) + "\n")
def option(name, default=None):
    return args[args.index(name) + 1] if name in args else default
def body():
    field = option("-F") or option("--body-file")
    if field is None:
        return option("--body", "")
    path = field.split("=", 1)[1][1:] if field.startswith("body=") else field
    return pathlib.Path(path).read_text()
comments, pulls = state / "comments", state / "pulls"
comments.mkdir(exist_ok=True); pulls.mkdir(exist_ok=True)
if args[0] == "api":
    method, path = option("-X", "GET"), next(a for a in args[1:] if a.startswith("repos/"))
    if method == "GET":  # --jq: the ids of the comments that start with the marker
        number = path.split("/")[-2]
        for c in sorted((comments / number).glob("*.md")) if (comments / number).is_dir() else []:
            if c.read_text().startswith("<!-- pytest-fairness -->"):
                print(c.stem)
    elif method == "POST":
        number = path.split("/")[-2]
        (comments / number).mkdir(exist_ok=True)
        cid = str(1000 + len(list(comments.glob("*/*.md"))))
        (comments / number / f"{cid}.md").write_text(body())
        print(json.dumps({"id": int(cid)}))
    elif method == "PATCH":
        cid = path.rsplit("/", 1)[1]
        (found,) = comments.glob(f"*/{cid}.md")
        found.write_text(body())
        print(json.dumps({"id": int(cid)}))
elif args[:2] == ["pr", "list"]:
    for p in sorted(pulls.glob("*.json")):
        pr = json.loads(p.read_text())
        if pr["head"] == option("--head") and pr["base"] == option("--base") and pr["state"] == "open":
            print(pr["number"]); break
elif args[:2] == ["pr", "create"]:
    number = 100 + len(list(pulls.glob("*.json")))
    pr = {"number": number, "head": option("--head"), "base": option("--base"), "title": option("--title"),
          "body": body(), "state": "open"}
    (pulls / f"{number}.json").write_text(json.dumps(pr))
    print(f"https://github.example/{os.environ.get('GITHUB_REPOSITORY')}/pull/{number}")
elif args[:2] == ["pr", "edit"]:
    p = pulls / f"{args[2]}.json"
    pr = json.loads(p.read_text()); pr["body"] = body(); p.write_text(json.dumps(pr))
else:
    sys.exit(f"gh stand-in: {args} is not played")
'''


# -- expressions -------------------------------------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][\w-]*(?:\.[\w-]+)*(?:\(\))?|'[^']*'|&&|\|\||!=|==|!|\(|\)|\s+|\S")


def _value(text: str) -> str:
    if text is None:
        return ""
    if isinstance(text, bool):
        return "true" if text else "false"
    return str(text)


def evaluate(expression: str, context: dict[str, Any], status: dict[str, bool]) -> Any:
    """A GitHub expression (the part between ``${{ }}``): dotted names looked up in ``context`` (missing: ''),
    literals, ``&&`` ``||`` ``!`` ``==`` ``!=``, and the status functions."""
    out = []
    for token in _NAME.findall(expression.strip()):
        if token.isspace():
            continue
        if token in ("&&", "||", "!", "==", "!=", "(", ")"):
            out.append({"&&": " and ", "||": " or ", "!": " not "}.get(token, f" {token} "))
        elif token.startswith("'"):
            out.append(repr(token[1:-1]))
        elif token in ("true", "false", "null"):
            out.append({"true": "True", "false": "False", "null": "None"}[token])
        elif token.endswith("()"):
            out.append(repr(status[token[:-2]]))
        elif re.fullmatch(r"\d+(\.\d+)?", token):
            out.append(token)
        else:
            out.append(repr(context.get(token, "")))
    return eval("".join(out))


def substitute(text: str, context: dict[str, Any]) -> str:
    """``${{ expr }}`` replaced by its value, as GitHub does before a step runs."""
    status = {"always": True, "success": True, "failure": False}
    return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", lambda m: _value(evaluate(m[1], context, status)), text)


# -- runs -------------------------------------------------------------------------------------------------------


@dataclass
class Step:
    name: str
    outcome: str  # success, failure or skipped
    code: int | None = None
    log: str = ""


@dataclass
class JobRun:
    """One job as it ran: its steps in order, its conclusion, its workspace and what it left behind."""

    job: str
    run_id: int
    workspace: Path
    steps: list[Step] = field(default_factory=list)
    conclusion: str = "success"
    summary: str = ""
    artifacts: Path | None = None
    #: The jobs the run played before this one (e.g. a sharded workflow's shard jobs), in order.
    earlier: list[JobRun] = field(default_factory=list)

    def step(self, prefix: str) -> Step:
        return next(s for s in self.steps if s.name.startswith(prefix))

    @property
    def log(self) -> str:
        return "\n".join(f"--- {s.name}: {s.outcome} ({s.code})\n{s.log}" for s in self.steps)


@dataclass
class CacheEntry:
    scope: str
    key: str
    path: Path
    created: float


class GitHubStandIn:
    """Plays a team's workflow (``.github/workflows/WORKFLOW`` of the commit checked out) as GitHub would."""

    def __init__(
        self,
        home: Path,
        repository: TeamRepository,
        *,
        name: str = "acme/chatbot",
        actor: str = "dev",
        workflow: str = "fairness.yml",
    ):
        self.home, self.repository, self.name, self.actor, self.workflow = home, repository, name, actor, workflow
        self.caches: list[CacheEntry] = []
        self.runs = 0
        self.gh = home / "gh"
        (home / "bin").mkdir(parents=True, exist_ok=True)
        gh = home / "bin" / "gh"
        gh.write_text(GH)
        gh.chmod(0o755)

    # -- what starts a run --------------------------------------------------------------------------------

    def pull_request(self, number: int, head: str, base: str = "main", *, restore: bool = True) -> JobRun:
        """The pull-request event of branch ``head`` into ``base``: its merge commit checked out."""
        github = {"event_name": "pull_request", "head_ref": head, "base_ref": base, "ref_name": f"{number}/merge",
                  "ref": f"refs/pull/{number}/merge", "event.pull_request.number": str(number)}  # fmt: skip
        return self._run(github, {}, scopes=[f"refs/pull/{number}/merge", f"refs/heads/{base}"], restore=restore)

    def dispatch(self, ref: str = "main", **inputs: Any) -> JobRun:
        """workflow_dispatch on branch ``ref`` with ``inputs``."""
        github = {"event_name": "workflow_dispatch", "head_ref": "", "base_ref": "", "ref_name": ref,
                  "ref": f"refs/heads/{ref}", "event.pull_request.number": ""}  # fmt: skip
        return self._run(github, inputs, scopes=[f"refs/heads/{ref}"])

    def merge(self, number: int) -> None:
        """Merge a pull request (its branch into its base, a merge commit), as its merge button does."""
        path = self.gh / "pulls" / f"{number}.json"
        pull = json.loads(path.read_text())
        self.repository.merge(pull["head"], pull["base"])
        path.write_text(json.dumps(pull | {"state": "merged"}))

    def comments(self, number: int) -> list[str]:
        folder = self.gh / "comments" / str(number)
        return [p.read_text() for p in sorted(folder.glob("*.md"))] if folder.is_dir() else []

    def pulls(self) -> list[dict[str, Any]]:
        folder = self.gh / "pulls"
        return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []

    def gh_calls(self) -> list[list[str]]:
        log = self.gh / "calls.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    # -- a run ------------------------------------------------------------------------------------------------

    def _checkout(self, workspace: Path, github: dict[str, str]) -> None:
        git(self.home, "clone", "-q", str(self.repository.origin), str(workspace))
        git(workspace, "config", "user.name", "runner")
        git(workspace, "config", "user.email", "runner@example.com")
        if github["event_name"] == "pull_request":
            git(workspace, "checkout", "-q", "--detach", f"origin/{github['base_ref']}")
            git(workspace, "merge", "-q", "--no-ff", "--no-edit", f"origin/{github['head_ref']}")
        else:
            git(workspace, "checkout", "-q", "-B", github["ref_name"], f"origin/{github['ref_name']}")

    def _run(self, github: dict[str, str], inputs: dict[str, Any], scopes: list[str], restore: bool = True) -> JobRun:
        """Every job of the workflow that runs on this event, in ``needs`` order; the last one played, the others
        in its ``earlier``."""
        self.runs += 1
        run_id = 7000 + self.runs
        first = self.home / f"run-{run_id}"
        self._checkout(first, github)
        document = yaml.safe_load((first / ".github" / "workflows" / self.workflow).read_text())
        base = {f"github.{k}": v for k, v in github.items()} | {
            "github.run_id": str(run_id), "github.token": "stand-in-token", "github.actor": self.actor,
        }  # fmt: skip
        base |= {f"inputs.{k}": v for k, v in inputs.items()}
        workflow_env = {k: str(v) for k, v in (document.get("env") or {}).items()}
        played: list[JobRun] = []
        concluded: dict[str, list[str]] = {}
        for job_name, job in _in_needs_order(document["jobs"]):
            needs = [job["needs"]] if isinstance(job.get("needs"), str) else list(job.get("needs") or [])
            succeeded = all(c == "success" for need in needs for c in concluded.get(need, ["skipped"]))
            context = base | {f"env.{k}": v for k, v in workflow_env.items()}
            status = {"always": True, "success": succeeded, "failure": not succeeded, "cancelled": False}
            if not evaluate(_with_status(job.get("if", "true"), status), context, status):
                concluded[job_name] = ["skipped"]
                continue
            entries = _matrix(job)
            for index, entry in enumerate(entries):
                workspace = first if not played else self.home / f"run-{run_id}-{job_name}-{index}"
                if played:
                    self._checkout(workspace, github)
                given = context | {f"matrix.{k}": v for k, v in entry.items()}
                given |= {"strategy.job-total": str(len(entries)), "strategy.job-index": str(index)}
                done = self._job(job_name, job, run_id, workspace, github, workflow_env, given, scopes, restore)
                played.append(done)
                concluded.setdefault(job_name, []).append(done.conclusion)
        if not played:
            raise AssertionError(f"no job of the workflow runs on {github['event_name']}")
        played[-1].earlier = played[:-1]
        return played[-1]

    def _job(self, name: str, job: dict[str, Any], run_id: int, workspace: Path, github: dict[str, str],
             env: dict[str, str], context: dict[str, Any], scopes: list[str], restore: bool) -> JobRun:  # fmt: skip
        run = JobRun(name, run_id, workspace, artifacts=self.home / "artifacts" / str(run_id))
        env = env | {k: substitute(str(v), context) for k, v in (job.get("env") or {}).items()}
        summary, failed, posts = self.home / f"summary-{run_id}.md", False, []
        summary.write_text("")
        outputs: dict[str, dict[str, str]] = {}
        for index, step in enumerate(job["steps"]):
            title = step.get("name") or step.get("uses") or f"step {index}"
            sid = step.get("id", f"_{index}")
            context = context | {f"env.{k}": v for k, v in env.items()}
            status = {"always": True, "success": not failed, "failure": failed, "cancelled": False}
            if not evaluate(_with_status(step.get("if", "success()"), status), context, status):
                run.steps.append(Step(title, "skipped"))
                context |= {f"steps.{sid}.outcome": "skipped"}
                continue
            step_env = env | {k: substitute(str(v), context) for k, v in (step.get("env") or {}).items()}
            given = {k: substitute(str(v), context | {f"env.{k2}": v2 for k2, v2 in step_env.items()})
                     for k, v in (step.get("with") or {}).items()}  # fmt: skip
            code, log, produced = self._step(step, title, given, step_env, run, github, scopes, restore, posts)
            outputs[sid] = produced
            outcome = "success" if code == 0 else "failure"
            run.steps.append(Step(title, outcome, code, log))
            context |= {f"steps.{sid}.outcome": outcome} | {f"steps.{sid}.outputs.{k}": v for k, v in produced.items()}
            failed = failed or (code != 0 and not step.get("continue-on-error"))
        for path, key in posts:  # actions/cache's post step: saved only when the job succeeded
            if not failed:
                self._save(scopes[0], key, workspace / path)
        run.conclusion = "failure" if failed else "success"
        run.summary = summary.read_text()
        return run

    def _step(self, step: dict[str, Any], title: str, given: dict[str, str], env: dict[str, str], run: JobRun,
              github: dict[str, str], scopes: list[str], restore: bool, posts: list[tuple[str, str]]
              ) -> tuple[int, str, dict[str, str]]:  # fmt: skip
        uses, workspace = step.get("uses", ""), run.workspace
        if uses.startswith("actions/checkout"):
            return 0, "checked out before the workflow was read", {}
        if uses.startswith("actions/setup-python"):
            return 0, f"python is {sys.executable}", {}
        if uses.startswith("actions/cache/save"):
            self._save(scopes[0], given["key"], workspace / given["path"])
            return 0, f"saved {given['key']}", {}
        if uses.startswith("actions/cache"):
            keys = [k.strip() for k in given.get("restore-keys", "").splitlines() if k.strip()]
            found = self._restore(scopes, given["key"], keys) if restore else None
            if found is not None:
                shutil.copytree(found.path, workspace / given["path"], dirs_exist_ok=True)
            if (found is None or found.key != given["key"]) and not uses.startswith("actions/cache/restore"):
                posts.append((given["path"], given["key"]))
            return 0, f"restored {None if found is None else found.scope + ' ' + found.key}", {}
        if uses.startswith("actions/upload-artifact"):
            assert run.artifacts is not None
            source = workspace / given["path"]
            if source.exists():
                shutil.copytree(source, run.artifacts / given["name"], dirs_exist_ok=True)
            url = f"https://github.example/{self.name}/actions/runs/{run.run_id}/artifacts/{given['name']}"
            return 0, f"uploaded {given['path']}", {"artifact-url": url}
        if uses.startswith("actions/download-artifact"):
            assert run.artifacts is not None
            found = sorted(run.artifacts.glob(given.get("pattern") or given["name"])) if run.artifacts.is_dir() else []
            for artifact in found:
                shutil.copytree(artifact, workspace / given.get("path", ".") / artifact.name, dirs_exist_ok=True)
            return 0, f"downloaded {[a.name for a in found]}", {}
        if title == "Install":
            return 0, "skipped by the stand-in: the plugin is this checkout", {}
        output = self.home / f"output-{run.run_id}"
        output.write_text("")
        variables = {
            "GITHUB_EVENT_NAME": github["event_name"],
            "GITHUB_REF": github["ref"],
            "GITHUB_REF_NAME": github["ref_name"],
            "GITHUB_HEAD_REF": github["head_ref"],
            "GITHUB_BASE_REF": github["base_ref"],
            "GITHUB_REPOSITORY": self.name,
            "GITHUB_RUN_ID": str(run.run_id),
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_ACTOR": self.actor,
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(self.home / f"summary-{run.run_id}.md"),
            "GITHUB_WORKFLOW_REF": f"{self.name}/.github/workflows/{self.workflow}@{github['ref']}",
            "CI": "true",
            "GH_STAND_IN": str(self.gh),
        }
        full = runner_env(self.home) | env | variables
        script = substitute(step["run"], {f"env.{k}": v for k, v in env.items()})
        done = subprocess.run(["bash", "-e", "-c", script], cwd=workspace, env=full, capture_output=True, text=True)
        produced = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        return done.returncode, done.stdout + done.stderr, produced

    def _restore(self, scopes: list[str], key: str, prefixes: list[str]) -> CacheEntry | None:
        for scope in scopes:
            exact = [c for c in self.caches if c.scope == scope and c.key == key]
            if exact:
                return exact[-1]
        for prefix in prefixes:
            for scope in scopes:
                found = [c for c in self.caches if c.scope == scope and c.key.startswith(prefix)]
                if found:
                    return max(found, key=lambda c: c.created)
        return None

    def _save(self, scope: str, key: str, source: Path) -> None:
        if not source.exists() or any(c.scope == scope and c.key == key for c in self.caches):
            return
        stored = self.home / "caches" / f"{len(self.caches)}"
        shutil.copytree(source, stored)
        self.caches.append(CacheEntry(scope, key, stored, time.time()))


def _with_status(condition: Any, status: dict[str, bool]) -> str:
    """An ``if:`` as GitHub reads it: ``${{ }}`` optional, ``success() &&`` implied unless it names a status."""
    text = re.sub(r"^\$\{\{\s*(.*?)\s*\}\}$", r"\1", str(condition).strip())
    return text if any(f"{fn}()" in text for fn in status) else f"success() && ({text})"


def _matrix(job: dict[str, Any]) -> list[dict[str, Any]]:
    """A job's matrix entries (one list-valued key, as the CI kit's workflows use), or one entry without one."""
    matrix = (job.get("strategy") or {}).get("matrix") or {}
    if not matrix:
        return [{}]
    ((key, values),) = matrix.items()
    return [{key: value} for value in values]


def _in_needs_order(jobs: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The jobs in the file's order, each after the jobs it needs."""
    ordered: list[tuple[str, dict[str, Any]]] = []
    waiting = dict(jobs)
    while waiting:
        for name, job in waiting.items():
            needs = [job["needs"]] if isinstance(job.get("needs"), str) else list(job.get("needs") or [])
            if all(need in dict(ordered) for need in needs):
                ordered.append((name, job))
                del waiting[name]
                break
        else:
            raise AssertionError(f"jobs {sorted(waiting)} need each other or a missing job")
    return ordered
