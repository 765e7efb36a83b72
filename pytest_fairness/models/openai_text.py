"""Plain-text continuations over ``/v1/completions`` (PCF's probes): each candidate scored exactly, or refused.

A candidate that is itself one of the listed next tokens is read from ``top_logprobs`` (route
``top_logprobs``). Any other candidate is sent after the prefix as a prompt with ``echo`` and
``logprobs``, and the log-probs of its own tokens are summed (route ``echo``). Echo is trusted only once
it has been checked, per model, against the server's own next-token log-probs (llama_cpp.server 0.3.x
scores every prompt token from the position after it); a server that fails the check, or does not echo
prompt log-probs, gets a PermanentError naming the fault and the fix. A server without any log-probs is
sampled ``n`` times (route ``sampled``, labelled).

The completions API takes a list of prompts in one request (vLLM and others batch them internally), so a
request's echoes (the prefix, and each candidate after it) go as lists of up to ``ECHO_LIST`` prompts once
the server has shown, once per model, that it answers a prompt in a list as it answers it alone. A server
that refuses lists (llama_cpp.server takes one prompt), or answers them otherwise, gets one prompt per
request from then on. The numbers are the same either way; only the request count differs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from pytest_fairness.models.deadline import DeadlineExceeded
from pytest_fairness.models.interface import (
    LogprobRequest,
    LogprobResponse,
    PermanentError,
    RateLimited,
    TransientError,
)
from pytest_fairness.models.openai_replies import (
    TEXT,
    Echo,
    Where,
    next_token_top,
    parse_echo,
    parse_echoes,
    sampled_logprobs,
    usage,
    version,
)

ROUTE_TOP, ROUTE_ECHO, ROUTE_SAMPLED = "top_logprobs", "echo", "sampled"
ECHO_TOLERANCE = 0.05  # nats between an echoed prompt log-prob and the same token's next-token log-prob
ECHO_CHECKS = 3  # listed next tokens compared before echo is trusted
ECHO_TOP = 5  # alternatives asked per echoed token (the most OpenAI's completions allow): they reveal a shift
ECHO_TRIES = 8  # listed next tokens tried (some re-tokenise when appended to the prefix)
ECHO_LIST = 64  # most prompts echoed in one request, where the server takes lists
EXACT_FIX = (
    "PCF needs exact slot probabilities: serve the model with a server whose /v1/completions returns correct "
    "prompt log-probs for echo=true with logprobs (vLLM does), or score it with the local provider "
    "('local:/path/to/model.gguf')"
)
Complete = Callable[..., Awaitable[Any]]


class TextScoring:
    """One model's plain-text continuation scores; ``complete(prompt, **params)`` sends one completions request
    (``prompt`` a text or a list of texts). What it learns about the server (echo trusted, lists taken) is kept."""

    def __init__(self, model_id: str, complete: Complete, *, top_logprobs: int, samples: int, fanout: int) -> None:
        self.model_id = model_id
        self.where = Where(model_id, TEXT)
        self._complete = complete
        self.top_logprobs = top_logprobs
        self.samples = samples
        self.fanout = fanout
        self._echo_problem: str | None = None  # None: echo not checked yet; "": trusted; else why not
        self.lists: bool | None = None  # None: not learnt yet; whether the server answers prompt lists
        self._locks: dict[str, asyncio.Lock] = {}
        self._fanout: asyncio.Semaphore | None = None

    def reset(self) -> None:
        """Forget the locks bound to the closing event loop (what was learnt about the server stays)."""
        self._locks, self._fanout = {}, None

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        """Each candidate's whole continuation of ``prefix``, read exactly (or sampled when no log-probs)."""
        prefix = request.prefix
        raw = await self._complete(prefix, temperature=0.0, max_tokens=1, logprobs=self.top_logprobs)
        top = next_token_top(raw, self.where)
        if top is None:  # no log-probs at all: the labelled sampling adaptation
            sampled = await self._complete(prefix, temperature=1.0, max_tokens=8, n=self.samples)
            return replace(sampled_logprobs(sampled, request.candidates, self.where), route=ROUTE_SAMPLED)
        prompt_tokens, completion_tokens = usage(raw)
        out = {c: top[c] for c in request.candidates if c in top}  # a listed single token: exact as it stands
        missing = [c for c in request.candidates if c not in out]
        if not missing:
            return LogprobResponse(out, True, prompt_tokens, version(raw), "", completion_tokens, route=ROUTE_TOP)
        if not prefix:
            raise PermanentError(f"{self.model_id}: an empty text has no next-token log-probs to echo; {EXACT_FIX}")
        await self._trust_echo(prefix, top)
        base, *echoes = await self._echoes([prefix, *(prefix + c for c in missing)])
        head = base.span(0, len(prefix))
        if head is None:
            raise PermanentError(f"{self.model_id}: the echoed tokens of {prefix!r} do not end where it ends")
        prefix_tokens = [base.tokens[i] for i in head]
        for candidate, echo in zip(missing, echoes, strict=True):
            out[candidate] = self._continuation(echo, prefix, candidate, prefix_tokens)
        prompt_tokens += sum(e.prompt_tokens for e in (base, *echoes))
        # exact, so no approximation note: ``route`` tells how the values were read
        return LogprobResponse(out, True, prompt_tokens, version(raw), "", completion_tokens, route=ROUTE_ECHO)

    def _continuation(self, echo: Echo, prefix: str, candidate: str, prefix_tokens: list[str]) -> float:
        """Sum of the candidate's own token log-probs, refused unless its tokens start exactly after the prefix."""
        end = len(prefix) + len(candidate)
        head, tail = echo.span(0, len(prefix)), echo.span(len(prefix), end)
        if head is None or tail is None or not tail:
            raise PermanentError(
                f"{self.model_id}: the server tokenises {prefix + candidate!r} with a token across the end of the "
                f"prefix, so {candidate!r} cannot be scored as its continuation exactly; {EXACT_FIX}"
            )
        if [echo.tokens[i] for i in head] != prefix_tokens:
            raise PermanentError(
                f"{self.model_id}: the server tokenises the prefix {prefix!r} differently when {candidate!r} follows "
                f"it, so the candidate's log-prob would be read in another context; {EXACT_FIX}"
            )
        values = [echo.logprobs[i] for i in tail]
        if any(v is None for v in values):
            raise PermanentError(f"{self.model_id}: the echo of {prefix + candidate!r} lacks log-probs; {EXACT_FIX}")
        return float(sum(v for v in values if v is not None))

    def _lock(self, name: str) -> asyncio.Lock:
        if name not in self._locks:
            self._locks[name] = asyncio.Lock()
        return self._locks[name]

    # -- echoes: one prompt a request, or lists -------------------------------------------------------------

    async def _echoes(self, prompts: Sequence[str]) -> list[Echo]:
        """Every prompt's echo, in order: in lists where the server takes them, else one request each."""
        if self.lists is None and len(prompts) > 1:
            async with self._lock("lists"):
                if self.lists is None:
                    self.lists = await self._takes_lists(prompts[:2])
        if not self.lists:
            return await self._gather(self._echoed(p) for p in prompts)
        chunks = [list(prompts[i : i + ECHO_LIST]) for i in range(0, len(prompts), ECHO_LIST)]
        return [echo for chunk in await self._gather(self._listed(c) for c in chunks) for echo in chunk]

    async def _takes_lists(self, prompts: Sequence[str]) -> bool:
        """Whether the server answers a list of prompts, each prompt as it answers it alone (learnt once)."""
        try:
            raw = await self._complete(list(prompts), temperature=0.0, max_tokens=1, logprobs=ECHO_TOP, echo=True)
            listed = parse_echoes(raw, prompts, self.where)
        except (RateLimited, DeadlineExceeded):
            raise  # says nothing about lists: the request is retried, and the question asked again
        except (TransientError, PermanentError):
            return False  # refused (llama_cpp.server: one prompt a request) or garbled
        if listed is None or any(e is None for e in listed):
            return False
        alone = await self._echoed(prompts[0])
        first = listed[0]
        assert first is not None
        return first.tokens == alone.tokens and all(
            (a is None) == (b is None) and (a is None or b is None or abs(a - b) <= ECHO_TOLERANCE)
            for a, b in zip(first.logprobs, alone.logprobs, strict=True)
        )

    async def _listed(self, prompts: list[str]) -> list[Echo]:
        """The echoes of a list of prompts, from one request (one by one if this answer is not one per prompt)."""
        if len(prompts) == 1:
            return [await self._echoed(prompts[0])]
        raw = await self._complete(prompts, temperature=0.0, max_tokens=1, logprobs=ECHO_TOP, echo=True)
        listed = parse_echoes(raw, prompts, self.where)
        if listed is None:  # not one answer per prompt this time: one by one (within the slot this list held)
            return [await self._echoed(p) for p in prompts]
        return [self._required(echo, prompt) for echo, prompt in zip(listed, prompts, strict=True)]

    async def _echo(self, prompt: str) -> Echo | None:
        raw = await self._complete(prompt, temperature=0.0, max_tokens=1, logprobs=ECHO_TOP, echo=True)
        return parse_echo(raw, prompt, self.where)

    async def _echoed(self, prompt: str) -> Echo:
        """An echo the verified server must give; refused, never guessed, when it does not."""
        return self._required(await self._echo(prompt), prompt)

    def _required(self, echo: Echo | None, prompt: str) -> Echo:
        if echo is None:
            raise PermanentError(
                f"{self.model_id}: the server returned no prompt log-probs for {prompt!r}; {EXACT_FIX}"
            )
        return echo

    async def _gather(self, calls: Any) -> list[Any]:
        """Run one request's fan-out of echo calls, at most ``fanout`` in flight across requests."""
        if self._fanout is None:
            self._fanout = asyncio.Semaphore(self.fanout)
        fanout = self._fanout

        async def bounded(call: Any) -> Any:
            async with fanout:
                return await call

        return list(await asyncio.gather(*(bounded(c) for c in calls)))

    # -- is echo right on this server? -------------------------------------------------------------------------

    async def _trust_echo(self, prefix: str, top: dict[str, float]) -> None:
        """Check echo once per model (the verdict is kept); raise PermanentError when it cannot be trusted."""
        if self._echo_problem is None:
            async with self._lock("echo"):
                if self._echo_problem is None:
                    self._echo_problem = await self._echo_problem_for(prefix, top)
        if self._echo_problem:
            raise PermanentError(self._echo_problem)

    async def _echo_problem_for(self, prefix: str, top: dict[str, float]) -> str:
        """Why the echo route is wrong on this server ("" when it agrees with the next-token route).

        The server's most likely next tokens after ``prefix`` are appended to it and echoed; each one's
        echoed log-prob must equal the one ``top_logprobs`` gave it. A server that scores prompt tokens
        from the wrong position fails here, before any result is read through it.
        """
        compared: list[tuple[str, float, float, Echo, int]] = []
        for token, expected in sorted(top.items(), key=lambda kv: -kv[1])[:ECHO_TRIES]:
            if not token:
                continue
            try:
                echo = await self._echo(prefix + token)
            except PermanentError as exc:
                return f"{self.model_id}: the completions endpoint refused echo=true with logprobs ({exc}); {EXACT_FIX}"
            if echo is None:
                return (
                    f"{self.model_id}: this endpoint's completions API does not return prompt log-probs "
                    f"(echo=true with logprobs); {EXACT_FIX}"
                )
            span = echo.span(len(prefix), len(prefix) + len(token))
            if span is None or len(span) != 1 or echo.logprobs[span[0]] is None:
                continue  # the token merges with the prefix's end when appended: not comparable
            compared.append((token, expected, float(echo.logprobs[span[0]] or 0.0), echo, span[0]))
            if len(compared) == ECHO_CHECKS:
                break
        if not compared:
            return (
                f"{self.model_id}: could not check the server's echoed prompt log-probs against its next-token "
                f"log-probs after {prefix!r} (no listed token could be echoed on its own); {EXACT_FIX}"
            )
        for token, expected, echoed, echo, at in compared:
            if abs(echoed - expected) > ECHO_TOLERANCE:
                shift = ""
                if _shifted_by_one(echo, at, top):
                    shift = (
                        "; its echo lists, at the prefix's last token, the alternatives for the token after it: the "
                        "server scores each prompt token from the position after it (an off-by-one, as "
                        "llama_cpp.server 0.3.x has for models that add no BOS token)"
                    )
                return (
                    f"{self.model_id}: the server's echoed prompt log-probs disagree with its own next-token "
                    f"log-probs: log p({token!r} | {prefix!r}) reads {echoed:.2f} by echo but {expected:.2f} by "
                    f"top_logprobs{shift}. Its echo cannot be trusted, so exact slot probabilities cannot be read "
                    f"from it; {EXACT_FIX}"
                )
        return ""


def _shifted_by_one(echo: Echo, at: int, top: dict[str, float]) -> bool:
    """Whether the echo lists, at token ``at - 1``, the next-token alternatives that belong to token ``at``.

    ``top`` is the server's next-token list after the prefix, which ends with token ``at - 1``; a
    correct echo lists there the alternatives for that token itself, a shifted one those for ``at``.
    """
    if at < 1 or len(echo.tops) <= at - 1 or not echo.tops[at - 1]:
        return False
    listed = echo.tops[at - 1]
    shared = [t for t in listed if t in top and t != echo.tokens[at - 1]]  # the token itself is always added
    return bool(shared) and all(abs(listed[t] - top[t]) <= ECHO_TOLERANCE for t in shared)
