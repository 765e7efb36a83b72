"""A team's app adapted to one shape: how to chat with it, whether it has log-probs, and its identity.

``models.python`` turns a ``python:MODULE:ATTR`` spec (or an object a fixture is handed) into a model; this
module reads what ATTR is (a function, sync or async, an object with ``chat``, a class or a factory),
calls it (a sync function in a daemon thread, so a hung one cannot block the exit), and reads what it
returns: the reply text, a ``ChatResponse`` (with token counts, if it has them), or an OpenAI-format
completion (the SDK's object or a dict), whose ``usage`` then counts the app's tokens. A function that
takes no ``temperature`` or ``max_tokens`` answers without the measure's sampling settings: its replies
say so, and so does each result's fidelity.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import inspect
import threading
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_fairness.models.app_identity import source_digest
from pytest_fairness.models.interface import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    LogprobRequest,
    LogprobResponse,
    PermanentError,
    join_notes,
)
from pytest_fairness.models.openai_replies import read_field, usage
from pytest_fairness.models.providers import ModelSpecError

SYNC_CONCURRENCY = 4  # a plain function may not be thread-safe: few threads unless ?concurrency= says more
ASYNC_CONCURRENCY = 16
SAMPLING_KEYWORDS = ("temperature", "seed", "max_tokens")
SIGNATURE = "def answer(messages: list[dict[str, str]]) -> str"
RETURNS = (
    "an app must return the reply text as a str, a pytest_fairness.ChatResponse (with its token counts, if it has "
    "them), or the chat completion as the OpenAI SDK gives it (its usage then counts the app's tokens)"
)
#: The measure's sampling settings a function app may ignore, which the result's fidelity then names.
IGNORABLE = ("temperature", "max_tokens")
_HERE = str(Path(__file__).resolve().parents[1])


class AppError(PermanentError):
    """The user's app failed (raised, hung, returned no text): the message names the spec and the fix."""


@dataclass(frozen=True)
class App:
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


def user_traceback(exc: BaseException) -> str:
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


def version_of(app: object, given: str | None, owner: object) -> str:
    """The app's version: its own ``version``, else ?version=, else a hash of its own code and data files
    (``app_identity``: its package, and the repository's modules it imports) and its bound values."""
    own = getattr(owner, "version", None)
    if isinstance(own, str) and own:
        return own
    if given:
        return given
    digest = hashlib.sha256(f"{source_digest(app)}|{_bound_values(app)}".encode()).hexdigest()
    return f"src-{digest[:12]}"


def adapt(value: object, where: str, *, factory_allowed: bool = True) -> tuple[App, object]:
    """Turn a function, model object, class or factory into an ``App``; ModelSpecError naming the fix."""
    if inspect.isclass(value):
        try:
            value = value()
        except TypeError as exc:
            raise ModelSpecError(
                f"{where}: the class {value.__qualname__} cannot be built without arguments ({exc}); give it a "
                "no-argument constructor, or point the spec at an instance or a factory function taking none"
            ) from None
        except Exception as exc:
            raise ModelSpecError(f"{where}: building {value.__qualname__}() raised:\n{user_traceback(exc)}") from None
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
            raise ModelSpecError(f"{where}: the factory {_describe(value)} raised:\n{user_traceback(exc)}") from None
        return adapt(built, where, factory_allowed=False)
    if required > 1 or (required == 0 and positional == 0):
        raise ModelSpecError(
            f"{where}: {_describe(value)} cannot take one argument; an app function takes the chat messages and "
            f"returns the reply: {SIGNATURE} (optionally also temperature=, seed=, max_tokens= keywords)"
        )
    return _function_app(value, where, names, var_kw), value


def _function_app(fn: Callable[..., Any], where: str, names: set[str], var_kw: bool) -> App:
    takes = {k for k in SAMPLING_KEYWORDS if var_kw or k in names}
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)

    async def chat(request: ChatRequest) -> ChatResponse:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        given = {"temperature": request.temperature, "seed": request.seed, "max_tokens": request.max_tokens}
        kwargs = {k: v for k, v in given.items() if k in takes and v is not None}
        reply = read_reply(await _call(fn, is_async, messages, **kwargs), where)
        ignored = [k for k in IGNORABLE if given[k] is not None and k not in takes]
        if not ignored:
            return reply
        note = f"the app takes no {' or '.join(ignored)}: it answered without the measure's {' and '.join(ignored)}"
        return replace(reply, note=join_notes(reply.note, note))

    return App(
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


def read_reply(value: Any, where: str) -> ChatResponse:
    """What an app's chat returned, as a ChatResponse: the reply text, a ChatResponse, or an OpenAI-format chat
    completion (the SDK's object or a dict), whose ``usage`` counts the app's tokens; AppError otherwise."""
    if isinstance(value, str):
        return ChatResponse(value, "stop")
    if isinstance(value, ChatResponse):
        return value
    found = read_field(value, "choices")
    if isinstance(found, list) and found:
        content = read_field(read_field(found[0], "message"), "content")
        if isinstance(content, str) or (content is None and read_field(found[0], "message") is not None):
            finish = read_field(found[0], "finish_reason")
            prompt_tokens, completion_tokens = usage(value)
            return ChatResponse(
                content or "", finish if isinstance(finish, str) else "stop", prompt_tokens, completion_tokens
            )
    if value is None:
        raise AppError(f"{where} returned None instead of the reply: a missing `return`? {RETURNS}")
    raise AppError(f"{where} returned a {type(value).__name__} ({_short(value)}) instead of the reply: {RETURNS}")


def _object_app(obj: Any, where: str) -> App:
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
        return read_reply(await _call(obj.chat, inspect.iscoroutinefunction(obj.chat), request), f"{where}: chat()")

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
    return App(
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
