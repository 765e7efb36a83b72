"""A team's own application (or judge) as the model under test: ``python:MODULE:ATTR``.

Teams ship more than a model: a system prompt, retrieval, tools, post-processing. This provider gates
the thing users talk to. ``ATTR`` is either

* a function ``(messages) -> str``, sync or async, where ``messages`` is a list of
  ``{"role": ..., "content": ...}`` dicts; it is also given ``temperature``, ``seed`` and ``max_tokens``
  when its signature names them (or takes ``**kwargs``), so sampled routes can draw varied replies;
* an object implementing the public model interface (``chat`` required, ``logprobs`` optional; see
  ``models.interface.ChatModel``), a class with a no-argument constructor, or a factory function taking no
  argument that returns one.

Either may return a ``ChatResponse`` or an OpenAI-format chat completion instead of the text, and the
run then counts the app's tokens (``models.python_app``, which adapts the user's code to one shape).

Every process runs an app on one event loop for the whole run (``models.loop``), so an app that owns
a module-level async client keeps its connections. A call gets ``?timeout=`` seconds (default 60) of its
own time, not counting its wait behind the run's other calls to the app (``models.deadline``); a call past
it is retried, and the calls in flight to the app halve while replies come slowly (``models.ratelimit``).

``MODULE`` is imported as pytest imports a test module: the rootdir and the suite files' folders are
importable (``IMPORT_PATHS``, set by the plugin on the controller and on every xdist worker).

Measures that want log-probabilities from a chat-only app are served by its replies: the candidates'
shares among sampled replies (``?samples=``, default 10) when the function takes ``temperature`` or
``seed``; otherwise its one deterministic reply is read (a judge's letter). The responses say so, and
so does each result's fidelity. Exact probabilities of plain text (PCF) cannot be read from replies:
such a request raises ``CannotServe`` and the measure ends "cannot serve" with the reason.

Identity: ``python:MODULE:ATTR@VERSION``, where the version is the object's ``version``, else the
spec's ``?version=``, else a hash of the app's own code and data files (its package, and the repository's
modules it imports: ``models.app_identity``) plus the values a closure or ``functools.partial`` binds, so an
edited app never reads a stale cache entry.

Every failure of the user's code is a ``PermanentError`` naming the spec and the fix, with the user's
own traceback; ``TransientError`` raised by the app is retried like a provider's. An error that is the
harness's event loop changing under the app's client is said to be the harness's, never the app's.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import math
import sys
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_fairness.models.deadline import Deadlines
from pytest_fairness.models.interface import (
    CannotServe,
    ChatModel,
    ChatRequest,
    ChatResponse,
    LogprobRequest,
    LogprobResponse,
    Message,
    PermanentError,
    TransientError,
    join_notes,
)
from pytest_fairness.models.providers import ModelSpec, ModelSpecError
from pytest_fairness.models.python_app import App, AppError, adapt, user_traceback, version_of
from pytest_fairness.models.ratelimit import MemoryStore, SharedLimit

OPTIONS = ("version", "concurrency", "timeout", "samples", "instruct", "context")
DEFAULT_TIMEOUT = 60.0
DEFAULT_SAMPLES = 10  # sampled replies per log-prob request, as the paper sampled its judges
SAMPLE_TEMPERATURE = 1.0
SAMPLE_MAX_TOKENS = 16  # only the reply's start is read
FORMAT = "python:MODULE:ATTR, e.g. python:my_app:answer (my_app.py in the rootdir or beside the suite file)"
#: Folders MODULE is imported from (the rootdir, suite folders), put on sys.path when an app is loaded.
IMPORT_PATHS: list[Path] = []
#: What an error says when an app's async client is bound to an event loop that is not the one running it.
LOOP_BOUND = ("Event loop is closed", "attached to a different loop", "bound to a different event loop")

__all__ = ["AppError", "PythonModel", "add_import_paths", "reply_logprobs"]


def add_import_paths(paths: Iterable[Path | str]) -> None:
    """Folders an app module may live in (the plugin adds the rootdir and the suite files' folders)."""
    for path in paths:
        resolved = Path(path).resolve()
        if resolved not in IMPORT_PATHS:
            IMPORT_PATHS.append(resolved)


# -- the provider -------------------------------------------------------------------------------------------


class PythonModel(ChatModel):
    """The user's app behind the ChatModel interface: deadline, adaptive concurrency, checks on what it returns,
    identity."""

    provider = "python"
    #: Its spec's ``?version=`` is its own (the app's version in its id), not the plugin's suffix.
    own_version = True

    def __init__(
        self,
        target: str,
        app: App,
        *,
        version: str,
        timeout: float = DEFAULT_TIMEOUT,
        max_concurrency: int | None = None,
        samples: int = DEFAULT_SAMPLES,
        follows_list_instructions: bool | None = None,
        context_tokens: int | None = None,
    ) -> None:
        self.target = target
        self.version = version
        self.name = f"{target}@{version}"
        self._app = app
        self.timeout = timeout
        self.max_concurrency = max_concurrency or app.concurrency
        self.samples = samples
        self.follows_list_instructions = (
            follows_list_instructions if follows_list_instructions is not None else app.follows_list_instructions
        ) is not False
        self.context_tokens = context_tokens if context_tokens is not None else app.context_tokens
        self.deadlines = Deadlines(timeout, self.spec)
        #: Fewer calls in flight while the app answers slowly (its backend queues them): this process's own.
        self._limit = SharedLimit(MemoryStore(), self.max_concurrency)
        self._loops: dict[str, asyncio.AbstractEventLoop] = {}  # the loop of the app's first call

    @property
    def spec(self) -> str:
        """How the app is named in messages: its spec, without options."""
        return f"python:{self.target}"

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> PythonModel:
        module, _, attr = spec.target.partition(":")
        module, attr = module.strip(), attr.strip()
        if not module or not attr or ":" in attr:
            raise ModelSpecError(f"{spec.raw!r}: a Python app spec reads {FORMAT}")
        options = _options(spec)
        where = f"python:{module}:{attr}"
        value = _resolve(module, attr, where)
        app, owner = adapt(value, where)
        version = version_of(value, options.pop("version", None), owner)
        return cls(f"{module}:{attr}", app, version=version, **options)

    @classmethod
    def from_object(cls, value: object, **options: Any) -> PythonModel:
        """An app handed over in Python (a fixture's ``model=``): named by its ``name`` or where it is defined."""
        own = getattr(value, "name", None)
        base = value.func if isinstance(value, functools.partial) else value
        defined = f"{getattr(base, '__module__', '?')}:{getattr(base, '__qualname__', type(base).__qualname__)}"
        target = own if isinstance(own, str) and own else defined
        app, owner = adapt(value, f"the app {target}")
        return cls(target, app, version=version_of(value, options.pop("version", None), owner), **options)

    # -- the two calls -----------------------------------------------------------------------------

    async def chat(self, request: ChatRequest) -> ChatResponse:
        response = await self._guard(self._app.chat(request), "chat")
        return replace(response, model_version=self._versioned(response.model_version))

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        if self._app.logprobs is not None:
            response = await self._guard(self._app.logprobs(request), "log-prob")
            return replace(response, model_version=self._versioned(response.model_version))
        if not request.messages:
            raise CannotServe(
                f"{self.spec} answers chat only, and this measure needs exact token probabilities of plain text "
                "(the next words after a prompt), which cannot be read from replies: give the app's model object "
                "a logprobs() method (pytest_fairness.ChatModel), or gate this measure on the underlying model "
                "(local:/path.gguf, openai:MODEL@URL)"
            )
        messages = request.messages
        if request.prefix:
            messages = (*messages, Message("assistant", request.prefix))
        n = self.samples if self._app.samples_vary else 1
        asks = [ChatRequest(messages, SAMPLE_TEMPERATURE, SAMPLE_MAX_TOKENS, seed=i, sample_index=i) for i in range(n)]
        replies = await asyncio.gather(*(self.chat(ask) for ask in asks))
        found = reply_logprobs([r.text for r in replies], request.candidates)
        notes = [
            f"no log-probs from the app: probabilities estimated from {n} sampled replies"
            if n > 1
            else "no log-probs from the app: the answer read from its one deterministic reply"
        ]
        if request.prefix:
            notes.append("reply prefix sent as a finished assistant turn")
        return LogprobResponse(
            found, False, model_version=self._versioned(None), note=join_notes(*notes), samples=n, route="sampled"
        )

    # -- guarding user code -------------------------------------------------------------------------

    def _versioned(self, reported: str | None) -> str:
        return f"{self.spec}@{self.version}" + (f" ({reported})" if reported else "")

    async def _guard(self, call: Awaitable[Any], kind: str) -> Any:
        """The app's answer within its deadline (past it: ``DeadlineExceeded``, retried, while the call runs on:
        a thread cannot be stopped); its failures become one AppError naming the fix."""
        loop = asyncio.get_running_loop()
        self._loops.setdefault("first", loop)
        async with self._limit.slot(slow_after=self.timeout / 2):
            try:
                return await self.deadlines.within(call, kind, cancellable=False)
            except (TransientError, PermanentError):
                raise
            except Exception as exc:
                raise self._failure(exc, kind, moved=self._loops["first"] is not loop) from None

    def _failure(self, exc: Exception, kind: str, *, moved: bool) -> PermanentError:
        """The error for an exception the app raised: the app's, with its traceback, unless it is an async client
        bound to an event loop the harness replaced (``moved``): that one is the harness's."""
        if any(text in str(exc) for text in LOOP_BOUND) and moved:
            return PermanentError(
                f"{self.spec}: the app's async client is bound to an event loop the harness has since replaced "
                f"({type(exc).__name__}: {exc}); this is a fault of pytest-fairness, not of the app: please report it"
            )
        hint = ""
        if any(text in str(exc) for text in LOOP_BOUND):
            hint = (
                " Its async client is bound to another event loop than the one calling it (made under asyncio.run "
                "at import?): create the client on the loop that calls the app."
            )
        return AppError(
            f"{self.spec} raised {type(exc).__name__} while answering a {kind} request; fix the app (its traceback "
            f"is below), or raise pytest_fairness.TransientError from it for a failure worth retrying.{hint}\n"
            f"{user_traceback(exc)}"
        )

    async def settle(self, grace: float) -> int:
        return await self.deadlines.settle(grace)

    def close(self) -> None:
        close = getattr(self._app.owner, "close", None)
        if callable(close) and not isinstance(self._app.owner, type):
            close()


def reply_logprobs(replies: Sequence[str], candidates: Sequence[str]) -> dict[str, float]:
    """Candidates' log-probabilities from the replies that start with them (the longest match counts).

    Several sampled replies are smoothed as the HTTP providers' sampled route does (add a half), so an
    unseen candidate stays finite; one deterministic reply puts nearly all mass on the candidate it names.
    """
    counts = dict.fromkeys(candidates, 0)
    for reply in replies:
        head = reply.strip().lstrip("([*\"' ")
        matches = [c for c in candidates if c.strip() and head.startswith(c.strip())]
        if matches:
            counts[max(matches, key=lambda c: len(c.strip()))] += 1
    smoothing = 0.5 if len(replies) > 1 else 1e-3
    total = len(replies) + smoothing * len(candidates)
    return {c: math.log((counts[c] + smoothing) / total) for c in candidates}


def _resolve(module: str, attr: str, where: str) -> object:
    """Import MODULE from the rootdir or a suite's folder and read ATTR; ModelSpecError naming the fix."""
    for path in reversed(IMPORT_PATHS):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    folders = ", ".join(map(str, IMPORT_PATHS)) or "the current folder"
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
            raise ModelSpecError(
                f"{where}: no module named {module!r} in {folders} or on sys.path: put {module.replace('.', '/')}.py "
                "in the rootdir or beside the suite file, add its folder to PYTHONPATH, or fix the module name "
                f"({FORMAT})"
            ) from None
        raise ModelSpecError(f"{where}: importing {module} failed; fix the import:\n{user_traceback(exc)}") from None
    except Exception as exc:
        raise ModelSpecError(f"{where}: importing {module} failed; fix the error:\n{user_traceback(exc)}") from None
    try:
        return getattr(loaded, attr)
    except AttributeError:
        names = sorted(n for n in vars(loaded) if not n.startswith("_") and callable(getattr(loaded, n)))
        raise ModelSpecError(
            f"{where}: module {module} ({getattr(loaded, '__file__', '?')}) has no attribute {attr!r}; its "
            f"callables: {', '.join(names) or 'none'}. Fix the name after the second colon"
        ) from None


def _options(spec: ModelSpec) -> dict[str, Any]:
    unknown = set(spec.options) - set(OPTIONS)
    if unknown:
        raise ModelSpecError(f"unknown option(s) {sorted(unknown)} in {spec.raw!r}; valid: {', '.join(OPTIONS)}")
    out: dict[str, Any] = {}
    kinds = {"timeout": float, "concurrency": int, "samples": int, "context": int}
    names = {"concurrency": "max_concurrency", "context": "context_tokens"}
    for key, kind in kinds.items():
        if key in spec.options:
            try:
                value = kind(spec.options[key])
            except ValueError:
                raise ModelSpecError(f"option {key}={spec.options[key]!r} in {spec.raw!r} must be a number") from None
            if not value > 0:
                raise ModelSpecError(f"option {key} in {spec.raw!r} must be positive")
            out[names.get(key, key)] = value
    if "instruct" in spec.options:
        out["follows_list_instructions"] = spec.options["instruct"].lower() in ("1", "true", "yes")
    if spec.options.get("version"):
        out["version"] = spec.options["version"]
    return out
