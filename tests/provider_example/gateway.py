"""A provider of one's own: a team's chat gateway, named in specs as ``gateway:http://HOST:PORT``.

The gateway answers ``POST /chat`` with ``{"messages": [...], "max_tokens": N, "temperature": T, "seed": S}``
by ``{"reply": "..."}``. docs/adding-a-provider.md walks through this module;
tests/integration/test_adding_a_provider.py runs it against such a gateway on loopback.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from dataclasses import asdict

from pytest_fairness import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    ModelSpec,
    ModelSpecError,
    PermanentError,
    Provider,
    TransientError,
)

#: What the plugin knows before it imports this module: where the model class is and how a spec names it.
#: No price map lists a private gateway, so a spec gives its price (?price_in=&price_out=, USD per M tokens).
PROVIDER = Provider("gateway:GatewayModel", "'gateway:http://HOST:PORT' (the team's chat gateway)")


class GatewayModel(ChatModel):
    provider = "gateway"

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        self.name, self.url, self.timeout = url, url.rstrip("/"), timeout
        self.max_concurrency = 4

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> GatewayModel:
        """``gateway:URL[?timeout=SECONDS]``; a problem names the fix."""
        if not spec.target.startswith(("http://", "https://")):
            raise ModelSpecError(f"{spec.raw!r} names no gateway URL: use gateway:http://HOST:PORT")
        unknown = set(spec.options) - {"timeout"}
        if unknown:
            raise ModelSpecError(f"unknown option(s) {sorted(unknown)} in {spec.raw!r}; valid: timeout")
        return cls(spec.target, float(spec.options.get("timeout", 30.0)))

    async def chat(self, request: ChatRequest) -> ChatResponse:
        body = {
            "messages": [asdict(m) for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": request.seed,
        }
        reply = await asyncio.to_thread(self._post, json.dumps(body).encode())
        return ChatResponse(text=reply["reply"], finish_reason="stop")

    def _post(self, body: bytes) -> dict[str, str]:
        """One call: a refused connection, a timeout or a 5xx is worth retrying (the runner does), a 4xx is not."""
        request = urllib.request.Request(f"{self.url}/chat", body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            if exc.code >= 500:
                raise TransientError(f"the gateway at {self.url} answered HTTP {exc.code}") from None
            raise PermanentError(f"the gateway at {self.url} refused the request (HTTP {exc.code})") from None
        except (urllib.error.URLError, TimeoutError) as exc:
            raise TransientError(f"the gateway at {self.url} cannot be reached: {exc}") from None
