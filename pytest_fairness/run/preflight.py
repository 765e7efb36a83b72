"""The check before the first check: one tiny request to each model, of the kinds the run will send.

A closed port, a rejected key or an unknown model then stop the run at once with the fix (``RunFault``)
instead of failing every check. The model under test gets the probes its selected checks need (a
PCF-only run asks a base model behind a completions-only server for a text completion, never a chat it
would refuse); the judge is always asked to chat.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Collection, Sequence

from pytest_fairness.config.suite import Check
from pytest_fairness.measures import Params, ParamsError
from pytest_fairness.models.cache import CacheMode
from pytest_fairness.models.interface import (
    CannotServe,
    ChatModel,
    ChatRequest,
    LogprobRequest,
    Message,
    PermanentError,
)
from pytest_fairness.models.runner import CallStats, RetriesExhausted, Runner

#: The request sent to each model before the first check when the run chats with it (or may: a fixture or
#: ``fairness_session`` whose requests are not known in advance): as small as a chat request gets.
PROBE = ChatRequest((Message("user", "Reply with OK."),), temperature=0.0, max_tokens=1, seed=0)
#: The probe of a run whose checks only score plain-text continuations (PCF): one text completion, no chat
#: template, no candidates to score. A base model served for /v1/completions alone must pass it.
TEXT_PROBE = LogprobRequest((), (), prefix="Reply with OK.")


class RunFault(RuntimeError):
    """The model, judge or cache cannot be used at all; found before the first check, the message names the fix."""


def _chats(request: ChatRequest | LogprobRequest) -> bool:
    """Whether a request goes through the model's chat interface (a chat template, /v1/chat/completions)."""
    return isinstance(request, ChatRequest) or bool(request.messages)


def _fewest(params: Params) -> Params:
    """The same check at its smallest valid sample size: its requests are of the same kinds, and cheap to list."""
    field = next(f for f in dataclasses.fields(params) if f.name == params.samples_field())
    try:
        return params.with_samples(int(field.metadata.get("low") or 1))
    except ParamsError:
        return params


def probes_for(
    checks: Sequence[Check] | None, measures: Collection[str], model: ChatModel, seed: int
) -> list[ChatRequest | LogprobRequest]:
    """The probes a run needs: a chat probe when any selected check chats with the model, a text probe when
    any scores plain text, and the chat probe when the run's needs are unknown (``checks`` None, or a measure
    in ``measures`` that no check runs: a fixture call). Each measure's ``requests`` is listed once, at the
    smallest sample size of its first check, since a measure's request kinds do not depend on its size."""
    if checks is None:
        return [PROBE]
    chat, text = False, False
    first = {c.measure.name: c for c in reversed(checks)}
    for check in first.values():
        sent = check.measure.requests(_fewest(check.params), model, seed)
        chat = chat or any(_chats(r) for r in sent)
        text = text or any(not _chats(r) for r in sent)
    chat = chat or any(m not in first for m in measures)
    return [p for p, needed in ((PROBE, chat), (TEXT_PROBE, text)) if needed] or [PROBE]


def probe(
    runners: Sequence[Runner],
    checks: Sequence[Check] | None,
    measures: Collection[str],
    seed: int,
    *,
    load_weights: bool = True,
    roles: Sequence[str] = (),
    stats: CallStats | None = None,
) -> None:
    """Probe the model under test (``runners[0]``) with the kinds of request the run needs and any other
    runner (the judge, its reference) with a chat; ``load_weights=False`` skips local models (an xdist
    controller runs no check and need not hold their weights). RunFault when one fails, naming its role
    (``roles``, one per runner after the first) when it is not the model under test. The probes' calls are
    counted in ``stats`` (a run's calls include its pre-flight)."""
    for i, runner in enumerate(runners):
        if load_weights or runner.model.provider != "local":
            needs = probes_for(checks, measures, runner.model, seed) if i == 0 else [PROBE]
            role = roles[i - 1] if 0 < i <= len(roles) else ""
            _probe(runner, needs, role=role, stats=stats)


def _probe(
    runner: Runner,
    probes: Sequence[ChatRequest | LogprobRequest] = (PROBE,),
    *,
    role: str = "",
    stats: CallStats | None = None,
) -> None:
    """One uncached request of each kind through a throwaway runner (same model and retry policy); RunFault
    when one fails, its message led by ``role`` when given."""
    model = runner.model
    throwaway = Runner(model, None, CacheMode.OFF, 1, runner.retry, price=runner.price)  # its spend is the run's
    lead = f"{role}: " if role else ""
    try:
        for request in probes:
            with contextlib.suppress(CannotServe):  # no run fault: the checks needing it end "cannot serve"
                throwaway.run([request], stats=stats)  # type: ignore[list-item]
    except RetriesExhausted as exc:
        raise RunFault(
            f"{lead}{exc.__cause__ or exc} (after {_attempts(runner.retry.max_attempts)}): check that the server is "
            "running and the model spec's URL is right, or run from the cache alone with --fairness-cache-mode=replay"
        ) from None
    except PermanentError as exc:
        raise RunFault(f"{lead}{exc}") from None
    finally:
        throwaway.close()  # also drops the model's client bound to the probe's event loop


def _attempts(n: int) -> str:
    return "1 attempt" if n == 1 else f"{n} attempts"
