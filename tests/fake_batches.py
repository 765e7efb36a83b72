"""The OpenAI Batch API for the fake server (``fake_openai.FakeOpenAI``): files, batches, result files.

A batch runs its lines through the same answering code as online requests, so a batched and an online
run see the same answers. Each new batch takes the next behaviour from ``script`` (else "complete"):

    "complete"    done at the first look after creation
    "hold"        in progress until ``release()``, then done
    "expire"      ends "expired": the first half of its lines answered, the rest listed as batch_expired
    "fail_lines"  done, but every third line failed (HTTP 500 in the error file)
    "failed"      the whole batch fails validation
    "lost_reply"  created and run as "complete", but the creation is answered HTTP 502 (the client cannot
                  know it was created; ``GET /v1/batches`` lists it)

``submitted`` counts, per custom_id, how many batches a request was submitted in (what a run paid for).
"""

from __future__ import annotations

import email.parser
import email.policy
import json
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Answer = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Batch:
    id: str
    input_file_id: str
    behaviour: str
    status: str = "validating"
    output_file_id: str | None = None
    error_file_id: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
            "created_at": 0,
            "input_file_id": self.input_file_id,
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "metadata": self.metadata,
        }
        if self.status == "failed":
            out["errors"] = {"object": "list", "data": [{"code": "invalid_request", "message": "fake validation"}]}
        return out


@dataclass
class FakeBatchAPI:
    enabled: bool = True
    script: deque[str] = field(default_factory=deque)
    files: dict[str, bytes] = field(default_factory=dict)
    batches: dict[str, Batch] = field(default_factory=dict)
    submitted: Counter[str] = field(default_factory=Counter)
    lines_run: int = 0
    polls: int = 0  # looks at a batch's state
    held: bool = True

    def release(self) -> None:
        """Let held batches finish at their next look."""
        self.held = False

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes, answer: Answer) -> tuple[int, Any]:
        """(status, JSON payload or raw bytes) for a Batch API request."""
        if not self.enabled:
            return 404, {"detail": "Not Found"}
        parts = path.partition("?")[0].strip("/").split("/")[1:]  # without "v1" and the query
        if method == "POST" and parts == ["files"]:
            return 200, self._upload(headers, body)
        if method == "GET" and len(parts) == 3 and parts[0] == "files" and parts[2] == "content":
            return (200, self.files[parts[1]]) if parts[1] in self.files else (404, {"error": {"message": "no file"}})
        if method == "POST" and parts == ["batches"]:
            request = json.loads(body)
            batch = Batch(f"batch_{len(self.batches) + 1}", request["input_file_id"], self._next_behaviour())
            batch.metadata = dict(request.get("metadata") or {})
            for line in self._lines(batch):
                self.submitted[line["custom_id"]] += 1
            self.batches[batch.id] = batch
            if batch.behaviour == "failed":
                batch.status = "failed"
            if batch.behaviour == "lost_reply":
                return 502, {"error": {"message": "bad gateway (the batch was created)", "type": "server_error"}}
            return 200, batch.to_dict()
        if method == "GET" and parts == ["batches"]:  # newest first, as the API lists them
            data = [b.to_dict() for b in reversed(self.batches.values())]
            return 200, {"object": "list", "data": data, "has_more": False}
        if method == "GET" and len(parts) == 2 and parts[0] == "batches" and parts[1] in self.batches:
            batch = self.batches[parts[1]]
            self.polls += 1
            if batch.status == "validating" and not (batch.behaviour == "hold" and self.held):
                self._run(batch, answer)
            elif batch.status == "validating":
                batch.status = "in_progress"
            elif batch.status == "in_progress" and not self.held:
                self._run(batch, answer)
            return 200, batch.to_dict()
        return 404, {"error": {"message": f"no route {method} {path}"}}

    def _next_behaviour(self) -> str:
        return self.script.popleft() if self.script else "complete"

    def _upload(self, headers: dict[str, str], body: bytes) -> dict[str, Any]:
        """A multipart/form-data upload (as the SDK sends it): the part named "file" is stored."""
        message = email.parser.BytesParser(policy=email.policy.default).parsebytes(
            f"content-type: {headers['content-type']}\r\n\r\n".encode() + body
        )
        data = next(
            part.get_payload(decode=True)
            for part in message.iter_parts()
            if part.get_param("name", header="content-disposition") == "file"
        )
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = data
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": 0, "filename": "in.jsonl",
                "purpose": "batch", "status": "processed"}  # fmt: skip

    def _lines(self, batch: Batch) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.files[batch.input_file_id].decode().splitlines() if x.strip()]

    def _run(self, batch: Batch, answer: Answer) -> None:
        lines = self._lines(batch)
        out, errors = [], []
        for i, line in enumerate(lines):
            cid = line["custom_id"]
            if batch.behaviour == "expire" and i >= len(lines) // 2:
                error = {"code": "batch_expired", "message": "not run before the window closed"}
                errors.append({"id": f"req_{i}", "custom_id": cid, "response": None, "error": error})
            elif batch.behaviour == "fail_lines" and i % 3 == 0:
                body = {"error": {"message": "fake server error", "type": "server_error"}}
                errors.append({"id": f"req_{i}", "custom_id": cid, "response": {"status_code": 500, "body": body}})
            else:
                self.lines_run += 1
                response = {"status_code": 200, "request_id": f"r{i}", "body": answer(line["body"])}
                out.append({"id": f"req_{i}", "custom_id": cid, "response": response, "error": None})
        batch.output_file_id = self._store(out)
        batch.error_file_id = self._store(errors) if errors else None
        batch.status = "expired" if batch.behaviour == "expire" else "completed"

    def _store(self, lines: list[dict[str, Any]]) -> str:
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = "".join(json.dumps(x) + "\n" for x in lines).encode()
        return file_id
