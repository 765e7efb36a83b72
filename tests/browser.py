"""Headless Debian chromium driven over the DevTools protocol on a pipe: the standard library only (a test helper).

Chromium's ``--remote-debugging-pipe`` reads protocol messages on fd 3 and writes them on fd 4, each a JSON
object ended by a NUL byte: no port, no websocket, no driver binary, nothing to download. A test opens a
page (``Browser.open``), acts on it (``click``, ``type``), reads it (``text``, ``js``) and asserts on what
the page logged (``errors``) and on every request it made (``requests``: an offline report makes none but
its own file). One browser per test session; each page gets a fresh tab.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The flags this machine needs (no sandbox as root, no GPU), and none of chromium's own network traffic.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
)


MISSING = "no chromium on PATH (apt-get install chromium)"


def find_chromium() -> str | None:
    """Debian's chromium, or another on PATH; None when there is none (tests then skip, saying so)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    """The browser answered a command with an error, or stopped answering."""


@dataclass
class Page:
    """One tab: its session, and what it logged and requested since it opened."""

    browser: Browser
    session: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        return self.browser.send(method, params, self.session)

    def js(self, expression: str) -> Any:
        """The value of ``expression`` in the page (a promise is awaited); a thrown error is a BrowserError."""
        out = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in out:
            raise BrowserError(f"{expression!r} threw: {_exception_text(out['exceptionDetails'])}")
        return out["result"].get("value")

    def text(self, selector: str) -> str:
        return self.js(f"document.querySelector({json.dumps(selector)}).innerText")

    def count(self, selector: str, visible: bool = True) -> int:
        """Elements matching ``selector`` (only those laid out, with ``visible``)."""
        test = ".filter(e => e.getClientRects().length > 0)" if visible else ""
        return self.js(f"Array.from(document.querySelectorAll({json.dumps(selector)})){test}.length")

    def click(self, selector: str) -> None:
        """A real mouse click at the element's centre (scrolled into view first), as a reviewer makes it."""
        box = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        if box is None:
            raise BrowserError(f"no element matches {selector!r}")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)
        self.settle()

    def type(self, selector: str, text: str) -> None:
        """Focus the field, clear it, and type ``text`` as keyboard input (the page sees input events)."""
        self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.focus(); e.select(); }})()")
        self.send("Input.insertText", text=text)
        self.settle()

    def choose(self, selector: str, value: str) -> None:
        """Pick ``value`` in a select, as a reviewer does (the page sees input and change events)."""
        self.js(
            f"(() => {{ const s = document.querySelector({json.dumps(selector)}); s.value = {json.dumps(value)};"
            " if (s.value !== " + json.dumps(value) + ") throw new Error('no such option');"
            " for (const kind of ['input', 'change']) s.dispatchEvent(new Event(kind, {bubbles: true})); })()"
        )
        self.settle()

    def settle(self) -> None:
        """Let the page finish what the last action queued (two animation frames)."""
        self.js("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        self.browser.drain()

    def screenshot(
        self, path: Path, selector: str | None = None, full_page: bool = False, max_height: int | None = None
    ) -> Path:
        """A PNG of the viewport, of one element (its first ``max_height`` pixels), or of the whole page."""
        params: dict[str, Any] = {"format": "png"}
        if selector is not None:
            rect = self.js(
                f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView();"
                " const r = e.getBoundingClientRect();"
                " return {x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height}; })()"
            )
            if max_height is not None:
                rect["height"] = min(rect["height"], max_height)
            params |= {"clip": {**rect, "scale": 1}, "captureBeyondViewport": True}
        elif full_page:
            params["captureBeyondViewport"] = True
            size = self.js(
                "({width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight})"
            )
            params["clip"] = {"x": 0, "y": 0, **size, "scale": 1}
        data = self.send("Page.captureScreenshot", **params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self.browser.send("Target.closeTarget", {"targetId": self.browser.targets.pop(self.session)})


class Browser:
    """A headless chromium on a DevTools pipe, with a fresh profile folder removed on ``close``."""

    def __init__(self, binary: str | None = None, width: int = 1280, height: int = 900) -> None:
        binary = binary or find_chromium()
        if binary is None:
            raise BrowserError(MISSING)
        self.profile = tempfile.mkdtemp(prefix="fairness-chromium-")
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()
        # Moved above 4 first: a pipe end that already is fd 3 or 4 would keep its close-on-exec flag in dup2.
        to_browser, from_browser = (_above(fd, 10) for fd in (to_browser, from_browser))

        def fds() -> None:  # the child's fd 3 reads our commands, fd 4 writes its replies
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        args = [binary, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}"]
        self.proc = subprocess.Popen(
            [*args, "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=fds,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._next, self.targets = b"", 0, {}
        self._pages: dict[str, Page] = {}
        self.version = self.send("Browser.getVersion")["product"]

    # -- the protocol -------------------------------------------------------------------------------

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send one command and wait (30 s at most) for its reply, keeping the events that arrive meanwhile."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + 30
        while True:
            for reply in self._messages(deadline):
                if reply.get("id") == self._next:
                    if "error" in reply:
                        raise BrowserError(f"{method}: {reply['error'].get('message')}")
                    return reply.get("result", {})
                self._event(reply)

    def drain(self) -> None:
        """Take the events already sent (console messages, requests) without waiting for more."""
        for event in self._messages(time.monotonic(), wait=False):
            self._event(event)

    def _messages(self, deadline: float, wait: bool = True) -> list[dict[str, Any]]:
        while b"\0" not in self._buffer:
            left = max(0.0, deadline - time.monotonic()) if wait else 0.0
            ready, _, _ = select.select([self._read], [], [], left)
            if not ready:
                if wait:
                    raise BrowserError("chromium did not answer within 30 s")
                return []
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise BrowserError("chromium closed its DevTools pipe")
            self._buffer += chunk
        *whole, self._buffer = self._buffer.split(b"\0")
        return [json.loads(m) for m in whole if m]

    def _event(self, event: dict[str, Any]) -> None:
        page = self._pages.get(event.get("sessionId", ""))
        if page is None:
            return
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            page.errors.append(_exception_text(params["exceptionDetails"]))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            page.errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            page.errors.append(params["entry"]["text"])
        elif method == "Network.requestWillBeSent":
            page.requests.append(params["request"]["url"])

    # -- pages --------------------------------------------------------------------------------------

    def open(self, url: str) -> Page:
        """A new tab showing ``url``, loaded; its console errors, exceptions and requests recorded from the start."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = self._pages[session] = Page(self, session)
        self.targets[session] = target
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.send(f"{domain}.enable")
        page.send("Page.navigate", url=url)
        page.js("new Promise(r => document.readyState === 'complete' ? r() : addEventListener('load', () => r()))")
        page.settle()
        return page

    def close(self) -> None:
        with contextlib.suppress(BrowserError):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._write)
        os.close(self._read)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _above(fd: int, lowest: int) -> int:
    """``fd`` moved to a number of at least ``lowest`` (close-on-exec), the original closed."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, lowest)
    os.close(fd)
    return moved


def _exception_text(details: dict[str, Any]) -> str:
    exception = details.get("exception") or {}
    return str(exception.get("description") or details.get("text") or "exception")
