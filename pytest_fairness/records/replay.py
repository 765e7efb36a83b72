"""What a run's replay check found: whether the model's cached answers were asked again and still held.

``run.replay_check`` makes one ``ReplayCheck`` per run (on the xdist controller, or the one process of a serial
run), before the first check; every output reads it from the ``RunReport``: one line in the terminal, the
Markdown and the pull-request comment, the whole record in the JSON report's ``replay`` section.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pytest_fairness.util.fmt import num
from pytest_fairness.util.serial import OMIT_EMPTY, from_json, to_json

#: verified: the sample held, the cached answers are replayed; refused: one differed (or could not be asked), none
#: is replayed; unchecked: the run replays without a check (why says so); nothing: no answer of it is cached.
ReplayStatus = Literal["verified", "refused", "unchecked", "nothing"]


@dataclass(frozen=True)
class ReplayCheck:
    """The replay check of the model under test.

    ``population`` cached answers the run would replay (``unverifiable`` of them sampled without a seed: their
    answers vary by design and cannot be compared one by one, so the replay is refused, ``why`` says so);
    ``asked`` of the others, drawn at ``seed``, asked
    again: ``same`` held (``exact`` compared exactly, the rest log-probs within ``tolerance`` nats), ``differed``
    did not and ``failed`` could not be asked (``examples`` says how, a few). The rule sized the draw: a change
    touching ``share`` of the answers is caught with chance ``power``; a change of at most ``missable`` answers
    may go unseen, and ``shifts`` says per check what that could move its estimate by (None: its score is
    unbounded). ``live_versions``: the versions the model reported to the asks (a system fingerprint).
    """

    model: str
    status: ReplayStatus
    population: int = 0
    asked: int = 0
    same: int = 0
    differed: int = 0
    failed: int = 0
    exact: int = 0
    unverifiable: int = 0
    seed: int = 0
    tolerance: float = 0.0
    share: float = 0.0
    power: float = 0.0
    missable: int = 0
    shifts: Mapping[str, float | None] = field(default_factory=dict)
    examples: tuple[str, ...] = field(default=(), metadata=OMIT_EMPTY)
    live_versions: tuple[str, ...] = field(default=(), metadata=OMIT_EMPTY)
    why: str = field(default="", metadata=OMIT_EMPTY)

    @property
    def replays(self) -> bool:
        """Whether the run may answer the model's requests from answers cached before it."""
        return self.status in ("verified", "unchecked")

    @property
    def head(self) -> str:
        """What the check found, in two or three words: the start of its line."""
        return {
            "verified": "replay verified",
            "refused": "replay refused",
            "unchecked": "replay not verified",
            "nothing": "replay check",
        }[self.status]

    def line(self) -> str:
        """The check in one line, for the terminal and the JSON report."""
        return f"{self.head}: {self.body()}"

    def body(self) -> str:
        """The line after its head (the Markdown sets the head in bold)."""
        if self.status == "nothing":
            return f"no answer of {self.model} was in the response cache; every one was asked in this run"
        if self.status == "unchecked" or (self.status == "refused" and self.why):
            return self.why
        asked = f"{self.asked:,} of the {self.population:,} cached answers of {self.model} (drawn at seed {self.seed})"
        if self.status == "refused":
            how = f"{self.differed} differed" + (f", {self.failed} could not be asked" if self.failed else "")
            example = f" (e.g. {self.examples[0]})" if self.examples else ""
            return (
                f"{asked} asked again, {how}{example}: none of its cached answers is replayed in this run, its "
                "answers are asked anew (a judge's and a reference's stay cached by their content)"
            )
        within = self.same - self.exact
        nats = num(self.tolerance, "g")
        compared = f"{self.exact} exactly" + (f", {within} log-probs within {nats} nats" if within else "")
        return f"{asked} asked again, all {self.same} the same ({compared}); {self.claim()}"

    def claim(self) -> str:
        """What the verification adds to a PASS: the rule, and what a change it could miss could move."""
        if self.missable == 0:
            return "every cached answer was asked, so any change among them was seen"
        moved = ", ".join(
            f"{label} by at most {'an unbounded amount' if shift is None else num(shift, '.3g')}"
            for label, shift in self.shifts.items()
        )
        return (
            f"a change touching at least {self.share:.0%} of them is caught with probability at least "
            f"{self.power:.0%}; one touching at most {self.missable:,} answers may go unseen, and could move "
            + (moved or "no gated estimate")
        )

    def to_dict(self) -> dict[str, Any]:
        return {**to_json(self), "line": self.line()}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ReplayCheck:
        return from_json(cls, dict(raw))

    @classmethod
    def combined(cls, checks: Sequence[ReplayCheck]) -> ReplayCheck | None:
        """The replay checks of a sharded run's shards (each of its own checks) as one: refused when any shard's
        was, the counts summed, each check's bound kept from its shard (None: no shard made one)."""
        if not checks:
            return None
        order: tuple[ReplayStatus, ...] = ("refused", "unchecked", "verified", "nothing")
        status = next(s for s in order if any(c.status == s for c in checks))
        first = next(c for c in checks if c.status == status)
        summed = {name: sum(getattr(c, name) for c in checks) for name in _SUMMED}
        return replace(
            first,
            **summed,
            missable=max(c.missable for c in checks),
            shifts={label: shift for c in checks for label, shift in c.shifts.items()},
            examples=tuple(e for c in checks for e in c.examples)[:3],
            live_versions=tuple(sorted({v for c in checks for v in c.live_versions})),
        )


#: The counts a sharded run's replay checks add up.
_SUMMED = ("population", "asked", "same", "differed", "failed", "exact", "unverifiable")
