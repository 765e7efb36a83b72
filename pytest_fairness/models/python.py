"""A team's own application (or judge) as the model under test: ``python:MODULE:ATTR``.

Teams ship more than a model: a system prompt, retrieval, tools, post-processing. This provider gates
the thing users talk to. ``ATTR`` is either

* a function ``(messages) -> str``, sync or async, where ``messages`` is a list of
  ``{"role": ..., "content": ...}`` dicts; it is also given ``temperature``, ``seed`` and ``max_tokens``
  when its signature names them (or takes ``**kwargs``), so sampled routes can draw varied replies;
* an object implementing the public model interface (``chat`` required, ``logprobs`` optional; see
  ``models.base.ChatModel``), a class with a no-argument constructor, or a factory function taking no
  argument that returns one.

``MODULE`` is imported as pytest imports a test module: the rootdir and the suite files' folders are
importable (``IMPORT_PATHS``, set by the plugin on the controller and on every xdist worker).

Measures that want log-probabilities from a chat-only app are served by its replies: the candidates'
shares among sampled replies (``?samples=``, default 10) when the function takes ``temperature`` or
``seed``; otherwise its one deterministic reply is read (a judge's letter). The responses say so, and
so does each result's fidelity. Exact probabilities of plain text (PCF) cannot be read from replies:
such a request raises ``CannotServe`` and the measure ends "cannot serve" with the reason.

Identity: ``python:MODULE:ATTR@VERSION``, where the version is the object's ``version``, else the
spec's ``?version=``, else a hash of the source of the module defining the app (plus the values a
closure or ``functools.partial`` binds), so an edited app never reads a stale cache entry.

Every failure of the user's code is a ``PermanentError`` naming the spec and the fix, with the user's
own traceback; ``TransientError`` raised by the app is retried like a provider's.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import importlib
import inspect
import math
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_fairness.models.base import (
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
from pytest_fairness.models.registry import ModelSpec, ModelSpecError

OPTIONS = ("version", "concurrency", "timeout", "samples", "instruct", "context")
DEFAULT_TIMEOUT = 60.0
DEFAULT_SAMPLES = 10  # sampled replies per log-prob request, as the paper sampled its judges
SAMPLE_TEMPERATURE = 1.0
SAMPLE_MAX_TOKENS = 16  # only the reply's start is read
SYNC_CONCURRENCY = 4  # a plain function may not be thread-safe: few threads unless ?concurrency= says more
ASYNC_CONCURRENCY = 16
SAMPLING_KEYWORDS = ("temperature", "seed", "max_tokens")
FORMAT = "python:MODULE:ATTR, e.g. python:my_app:answer (my_app.py in the rootdir or beside the suite file)"
SIGNATURE = "def answer(messages: list[dict[str, str]]) -> str"
#: Folders MODULE is imported from (the rootdir, suite folders), put on sys.path when an app is loaded.
IMPORT_PATHS: list[Path] = []
_HERE = str(Path(__file__).resolve().parents[1])


class AppError(PermanentError):
    """The user's app failed (raised, hung, returned no text): the message names the spec and the fix."""


def add_import_paths(paths: Iterable[Path | str]) -> None:
    """Folders an app module may live in (the plugin adds the rootdir and the suite files' folders)."""
    for path in paths:
        resolved = Path(path).resolve()
        if resolved not in IMPORT_PATHS:
            IMPORT_PATHS.append(resolved)


# -- the user's code, adapted to one shape ------------------------------------------------------------


@dataclass(frozen=True)
class _App:
    """What a user's ATTR turned into: how to chat, whether it has log-probs, and its identity."""

    chat: Callable[[ChatRequest], Awaitable[ChatResponse]]
    logprobs: Callable[[LogprobRequest], Awaitable[LogprobResponse]] | None
    samples_vary: bool  # whether repeated calls can give different replies (it takes temperature or seed)
    version: str | None
    name: str | None
    concurrency: int
    follows_list_instructions: bool | None
    context_tokens: int | None
    owner: object


def _user_traceback(exc: BaseException) -> str:
    """The exception with only the user's frames (ours, asyncio's and importlib's say nothing to them)."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith(_HERE) and "importlib" not in f.filename and "asyncio" not in f.filename
    ]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)] if frames else []
    return "".join([*lines, *traceback.format_exception_only(type(exc), exc)]).rstrip()


def _accepts(fn: Callable[..., Any]) -> tuple[int, int, set[str], bool]:
    """(required positional, all positional, keyword names, takes **kwargs) of a callable's signature."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1, 1, set(), False  # a builtin without a signature: assume it takes messages
    positional = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    required = [p for p in positional if p.kind is not p.VAR_POSITIONAL and p.default is p.empty]
    required_keyword = [p for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if required_keyword:
        return len(required) + len(required_keyword), len(positional), set(), False
    names = {p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return len(required), len(positional), names, any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())


def _describe(fn: Callable[..., Any]) -> str:
    try:
        return f"{getattr(fn, '__name__', type(fn).__name__)}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        return repr(fn)


def _source_digest(obj: object) -> str | None:
    """Hash of the source file defining ``obj`` (its class for an instance), or None when it has none."""
    target = obj.func if isinstance(obj, functools.partial) else obj
    if not (inspect.isfunction(target) or inspect.isclass(target) or inspect.ismethod(target)):
        target = type(target)
    module = inspect.getmodule(target)
    path = getattr(module, "__file__", None)
    if not path:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _bound_values(obj: object) -> str:
    """A stable text of the simple values a closure, a partial or an instance binds: variants of one app
    made by one factory (another system prompt, temperature) must not share cache entries."""
    simple = (str, int, float, bool, type(None), bytes)

    def plain(value: object) -> object:
        if isinstance(value, simple):
            return value
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
        return f"<{type(value).__qualname__}>"

    bound: list[object] = []
    if isinstance(obj, functools.partial):
        bound += [plain(list(obj.args)), plain(obj.keywords), _bound_values(obj.func)]
    cells = getattr(obj, "__closure__", None) or ()
    for cell in cells:
        try:
            bound.append(plain(cell.cell_contents))
        except ValueError:  # an empty cell
            bound.append(None)
    if not (inspect.isfunction(obj) or inspect.isclass(obj) or isinstance(obj, functools.partial)):
        bound.append(
            plain({k: v for k, v in vars(obj).items() if not k.startswith("_")}) if hasattr(obj, "__dict__") else ""
        )
    return repr(bound)


def _version_of(app: object, given: str | None, owner: object) -> str:
    """The app's version: its own ``version``, else ?version=, else a hash of its source and bound values."""
    own = getattr(owner, "version", None)
    if isinstance(own, str) and own:
        return own
    if given:
        return given
    digest = hashlib.sha256(f"{_source_digest(app)}|{_bound_values(app)}".encode()).hexdigest()
    return f"src-{digest[:12]}"


def _adapt(value: object, where: str, *, factory_allowed: bool = True) -> tuple[_App, object]:
    """Turn a function, model object, class or factory into an ``_App``; ModelSpecError naming the fix."""
    if inspect.isclass(value):
        try:
            value = value()
        except TypeError as exc:
            raise ModelSpecError(
                f"{where}: the class {value.__qualname__} cannot be built without arguments ({exc}); give it a "
                "no-argument constructor, or point the spec at an instance or a factory function taking none"
            ) from None
        except Exception as exc:
            raise ModelSpecError(f"{where}: building {value.__qualname__}() raised:\n{_user_traceback(exc)}") from None
    chat = getattr(value, "chat", None)
    if callable(chat) and not inspect.isclass(value):
        return _object_app(value, where), value
    if not callable(value):
        raise ModelSpecError(
            f"{where} is a {type(value).__name__}, not an app: point the spec at a function ({SIGNATURE}) or at an "
            "object with a chat(request) method (the public model interface: from pytest_fairness import ChatModel)"
        )
    required, positional, names, var_kw = _accepts(value)
    if positional == 0 and required == 0 and factory_allowed:
        try:
            built = value()
        except Exception as exc:
            raise ModelSpecError(f"{where}: the factory {_describe(value)} raised:\n{_user_traceback(exc)}") from None
        return _adapt(built, where, factory_allowed=False)
    if required > 1 or (required == 0 and positional == 0):
        raise ModelSpecError(
            f"{where}: {_describe(value)} cannot take one argument; an app function takes the chat messages and "
            f"returns the reply: {SIGNATURE} (optionally also temperature=, seed=, max_tokens= keywords)"
        )
    return _function_app(value, where, names, var_kw), value


def _function_app(fn: Callable[..., Any], where: str, names: set[str], var_kw: bool) -> _App:
    takes = {k for k in SAMPLING_KEYWORDS if var_kw or k in names}
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)

    async def chat(request: ChatRequest) -> ChatResponse:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        given = {"temperature": request.temperature, "seed": request.seed, "max_tokens": request.max_tokens}
        kwargs = {k: v for k, v in given.items() if k in takes and v is not None}
        text = await _call(fn, is_async, messages, **kwargs)
        if text is None:
            raise AppError(
                f"{where} returned None instead of the reply text: the function must return a str (a missing "
                f"`return`?): {SIGNATURE}"
            )
        if not isinstance(text, str):
            raise AppError(
                f"{where} returned a {type(text).__name__} ({_short(text)}) instead of the reply text: the function "
                f"must return a str: {SIGNATURE}"
            )
        return ChatResponse(text, "stop")

    return _App(
        chat=chat,
        logprobs=None,
        samples_vary=bool(takes & {"temperature", "seed"}),
        version=None,
        name=None,
        concurrency=ASYNC_CONCURRENCY if is_async else SYNC_CONCURRENCY,
        follows_list_instructions=None,
        context_tokens=None,
        owner=fn,
    )


def _object_app(obj: Any, where: str) -> _App:
    required, _, _, _ = _accepts(obj.chat)
    if required != 1:
        raise ModelSpecError(
            f"{where}: {type(obj).__qualname__}.{_describe(obj.chat)} must take one argument, the ChatRequest: "
            "async def chat(self, request: ChatRequest) -> ChatResponse (or -> str)"
        )
    own_logprobs = getattr(obj, "logprobs", None)
    if isinstance(obj, ChatModel) and type(obj).logprobs is ChatModel.logprobs:
        own_logprobs = None  # the interface's default: it has none

    async def chat(request: ChatRequest) -> ChatResponse:
        reply = await _call(obj.chat, inspect.iscoroutinefunction(obj.chat), request)
        if isinstance(reply, str):
            return ChatResponse(reply, "stop")
        if not isinstance(reply, ChatResponse):
            raise AppError(
                f"{where}: chat() returned a {type(reply).__name__} ({_short(reply)}); it must return a ChatResponse "
                "or the reply text as a str"
            )
        return reply

    async def logprobs(request: LogprobRequest) -> LogprobResponse:
        reply = await _call(own_logprobs, inspect.iscoroutinefunction(own_logprobs), request)
        if isinstance(reply, dict) and all(isinstance(v, int | float) for v in reply.values()):
            return LogprobResponse({str(k): float(v) for k, v in reply.items()})
        if not isinstance(reply, LogprobResponse):
            raise AppError(
                f"{where}: logprobs() returned a {type(reply).__name__} ({_short(reply)}); it must return a "
                "LogprobResponse or a dict of candidate -> log-probability"
            )
        return reply

    instruct = getattr(obj, "follows_list_instructions", None)
    context = getattr(obj, "context_tokens", None)
    concurrency = getattr(obj, "max_concurrency", None)
    return _App(
        chat=chat,
        logprobs=logprobs if callable(own_logprobs) else None,
        samples_vary=True,  # an object reads the request's temperature and seed itself
        version=getattr(obj, "version", None) or None,
        name=getattr(obj, "name", None) or None,
        concurrency=concurrency if isinstance(concurrency, int) and concurrency > 0 else ASYNC_CONCURRENCY,
        follows_list_instructions=instruct if isinstance(instruct, bool) else None,
        context_tokens=context if isinstance(context, int) else None,
        owner=obj,
    )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# -- calling user code: in a daemon thread (a hung function cannot block the exit), with a deadline ---------


async def _call(fn: Callable[..., Any], is_async: bool, *args: Any, **kwargs: Any) -> Any:
    """Run a user callable; the model's ``_guard`` adds the deadline and turns its failures into AppError."""
    if is_async:
        return await fn(*args, **kwargs)
    result = await _in_thread(fn, *args, **kwargs)
    if inspect.isawaitable(result):  # a sync wrapper that returns a coroutine
        return await result
    return result


def _in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> asyncio.Future[Any]:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not future.done():
            future.set_result(value) if ok else future.set_exception(value)

    def work() -> None:
        try:
            value, ok = fn(*args, **kwargs), True
        except BaseException as exc:  # handed to the awaiting side, which classifies it
            value, ok = exc, False
        with contextlib.suppress(RuntimeError):  # the loop closed while the app still worked (after a timeout)
            loop.call_soon_threadsafe(settle, ok, value)

    threading.Thread(target=work, name="fairness-app", daemon=True).start()
    return future


# -- the provider -------------------------------------------------------------------------------------------


class PythonModel(ChatModel):
    """The user's app behind the ChatModel interface: deadline, checks on what it returns, identity."""

    provider = "python"

    def __init__(
        self,
        target: str,
        app: _App,
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
        app, owner = _adapt(value, where)
        version = _version_of(value, options.pop("version", None), owner)
        return cls(f"{module}:{attr}", app, version=version, **options)

    @classmethod
    def from_object(cls, value: object, **options: Any) -> PythonModel:
        """An app handed over in Python (a fixture's ``model=``): named by its ``name`` or where it is defined."""
        own = getattr(value, "name", None)
        base = value.func if isinstance(value, functools.partial) else value
        defined = f"{getattr(base, '__module__', '?')}:{getattr(base, '__qualname__', type(base).__qualname__)}"
        target = own if isinstance(own, str) and own else defined
        app, owner = _adapt(value, f"the app {target}")
        return cls(target, app, version=_version_of(value, options.pop("version", None), owner), **options)

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
        """The app's answer within the deadline; its failures become one AppError naming the fix."""
        try:
            return await asyncio.wait_for(call, self.timeout)
        except (TransientError, PermanentError):
            raise
        except TimeoutError:
            raise AppError(
                f"{self.spec} gave no answer to a {kind} request within {self.timeout:g}s: fix what hangs, or allow "
                f"more time with ?timeout=SECONDS in the spec (e.g. {self.spec}?timeout=300)"
            ) from None
        except Exception as exc:
            raise AppError(
                f"{self.spec} raised {type(exc).__name__} while answering a {kind} request; fix the app (its "
                "traceback is below), or raise pytest_fairness.TransientError from it for a failure worth "
                f"retrying.\n{_user_traceback(exc)}"
            ) from None

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
        raise ModelSpecError(f"{where}: importing {module} failed; fix the import:\n{_user_traceback(exc)}") from None
    except Exception as exc:
        raise ModelSpecError(f"{where}: importing {module} failed; fix the error:\n{_user_traceback(exc)}") from None
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
