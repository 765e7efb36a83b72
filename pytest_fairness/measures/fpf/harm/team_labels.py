"""``--fairness-judge-reference=labels:FILE``: a team's own labels of answer pairs as the net-harm reference.

FILE is JSON Lines, one labelled pair a line: ``{"response_1": ..., "response_2": ..., "label": "A"}`` with the
label a person gives the judge's question for that order (A: giving Response 1 to the first group and
Response 2 to the second is a harmful stereotype; B: the other way; C: neither). A pair labelled in one order
answers the other too (A and B swap). The audit asks the reference about the pairs it sampled from the run;
a pair without a label gets no letter, the check is inconclusive with that reason, and the pairs still to
label are written to ``FILE.todo.jsonl`` (label them, append them to FILE, and run again: the response
cache keeps the chatbot's answers, so the same pairs are sampled).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pytest_fairness.models.interface import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    LogprobRequest,
    LogprobResponse,
    PermanentError,
)

SWAPPED = {"A": "B", "B": "A", "C": "C"}
#: Log-probability of the letters a label rules out.
RULED_OUT = -30.0


class LabelsError(PermanentError):
    """A labels file that cannot be used; the message names the line and the fix."""


def read_labels(path: Path) -> dict[tuple[str, str], str]:
    """(response_1, response_2) -> label, for both orders of every labelled pair."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise LabelsError(f"--fairness-judge-reference=labels:{path}: cannot read it ({exc.strerror})") from None
    out: dict[tuple[str, str], str] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            first, second, label = str(row["response_1"]), str(row["response_2"]), str(row["label"]).strip().upper()
        except (ValueError, KeyError, TypeError):
            raise LabelsError(
                f"labels:{path}, line {number}: need JSON with response_1, response_2 and label (A, B or C)"
            ) from None
        if label not in SWAPPED:
            raise LabelsError(f"labels:{path}, line {number}: label {label!r} is not A, B or C")
        out[first, second], out[second, first] = label, SWAPPED[label]
    return out


class LabelledPairs(ChatModel):
    """Answers the net-harm judge question from a labels file; a pair it has no label for gets no letter."""

    provider = "labels"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.labels = read_labels(self.path)
        self.name = self.path.name
        self.version = hashlib.sha256(self.path.read_bytes()).hexdigest()[:12]
        self.todo = self.path.with_name(f"{self.path.name}.todo.jsonl")
        self._listed: set[tuple[str, str]] = set()

    @property
    def model_id(self) -> str:
        return f"labels:{self.name}@{self.version}"

    async def chat(self, request: ChatRequest) -> ChatResponse:
        raise PermanentError("a labels: reference answers the net-harm judge question only")

    async def logprobs(self, request: LogprobRequest) -> LogprobResponse:
        facts = dict(request.purpose.facts) if request.purpose is not None else {}
        first, second = facts.get("responses", ("", ""))
        label = self.labels.get((first, second))
        if label is None:  # no letter at all: the audit counts it unreadable, and the pair goes on the to-do list
            if (second, first) not in self._listed and (first, second) not in self._listed:
                self._listed.add((first, second))
                with self.todo.open("a", encoding="utf-8") as todo:
                    todo.write(json.dumps({"response_1": first, "response_2": second, "label": ""}) + "\n")
            return LogprobResponse({}, True, 0, self.model_id)
        return LogprobResponse(
            {c: (0.0 if c.strip() == label else RULED_OUT) for c in request.candidates}, True, 0, self.model_id
        )
