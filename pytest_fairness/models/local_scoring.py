"""Candidate log-probabilities from llama.cpp's C API, many continuations per decode call.

A request is tokenised as a *head* (the conversation), a *tail* (the reply prefix) and its candidates.
With a tail, the head is decoded from an empty context in one call and kept as sequence 0, so the next
request with the same conversation (every attribute word of one implicit-bias prompt) re-uses it; the
tail and every multi-token candidate's leading tokens then go in one further call, each candidate as its
own sequence sharing the tail's cache cells (a cell may belong to several sequences). Without a tail the
head is the request's own and goes in that one call, from an empty context. Logits are computed only at
the rows that are read: the last prompt token and each candidate's leading tokens.

llama.cpp's numbers depend on how tokens were split into decode calls (a 135M model's log-probabilities
moved by up to 0.18 when a candidate was decoded with 23 others instead of alone), so that layout is a
function of the request alone, and so are the numbers: each request's own tokens are decoded in a call of
their own, from the same cache state (the head's cells or nothing), whatever ran before or beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Sequences one context holds: the head's plus one per multi-token candidate scored in the same call.
N_SEQ = 64


@dataclass(frozen=True)
class Job:
    """One request in tokens: candidates are scored as continuations of ``head + tail``."""

    head: tuple[int, ...]
    tail: tuple[int, ...]
    candidates: tuple[tuple[int, ...], ...]

    @property
    def prompt_tokens(self) -> int:
        return len(self.head) + len(self.tail)


def log_softmax(row: np.ndarray) -> np.ndarray:
    """Log-probabilities from one row of logits (the normaliser summed in float64)."""
    top = float(row.max())
    return row - (top + float(np.log(np.exp(row.astype(np.float64) - top).sum())))


class _Batch:
    """A ``llama_batch`` filled token by token; each token may belong to several sequences."""

    def __init__(self, llama_cpp: Any, capacity: int, n_seq: int) -> None:
        self._api = llama_cpp
        self.capacity = capacity
        self.raw = llama_cpp.llama_batch_init(capacity, 0, n_seq)
        self.rows: list[int] = []  # batch index of each token that asked for logits, in order

    def clear(self) -> None:
        self.raw.n_tokens = 0
        self.rows = []

    def add(self, token: int, pos: int, seqs: Sequence[int], logits: bool) -> int:
        """Append one token; returns its index in the batch."""
        i = self.raw.n_tokens
        if i >= self.capacity:
            raise ValueError(f"more than {self.capacity} tokens in one decode call")
        self.raw.token[i] = token
        self.raw.pos[i] = pos
        self.raw.n_seq_id[i] = len(seqs)
        for k, seq in enumerate(seqs):
            self.raw.seq_id[i][k] = seq
        self.raw.logits[i] = logits
        self.raw.n_tokens = i + 1
        return i

    def free(self) -> None:
        self._api.llama_batch_free(self.raw)


class SequenceScorer:
    """Scores jobs on one llama.cpp context of its own (the weights are shared with the caller's model)."""

    def __init__(self, model: Any, *, n_ctx: int, n_batch: int, n_threads: int) -> None:
        import llama_cpp

        self._api = llama_cpp
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = params.n_ubatch = n_batch
        params.n_seq_max = N_SEQ
        params.kv_unified = True  # one cache whose cells sequences share, not a copy per sequence
        params.n_threads = params.n_threads_batch = n_threads
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED  # as the chat context
        params.no_perf = True
        self._ctx = llama_cpp.llama_init_from_model(model, params)
        if not self._ctx:
            raise RuntimeError("llama.cpp could not create a scoring context")
        self._mem = llama_cpp.llama_get_memory(self._ctx)
        self._n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
        self.n_ctx = n_ctx
        self._batch = _Batch(llama_cpp, n_batch, N_SEQ)
        self._head: tuple[int, ...] | None = None
        self._head_row: np.ndarray | None = None  # logits after the head's last token

    def close(self) -> None:
        if self._ctx:
            self._batch.free()
            self._api.llama_free(self._ctx)
            self._ctx = None

    def score(self, job: Job) -> list[float]:
        """Log-probability of each candidate of ``job``, in order."""
        if job.prompt_tokens + max((len(c) for c in job.candidates), default=0) > self.n_ctx:
            raise ValueError(f"prompt and candidate exceed the context of {self.n_ctx} tokens; raise n_ctx")
        if not job.tail and len(job.head) < self._batch.capacity:
            job = Job((), job.head, job.candidates)  # nothing to share: the whole prompt is the request's own
        if len(job.tail) >= self._batch.capacity:
            raise ValueError(
                f"a reply prefix of {len(job.tail)} tokens does not fit a decode call of {self._batch.capacity} tokens"
            )
        self._hold(job.head)
        try:
            return self._continue(job)
        finally:
            if job.head:
                self._api.llama_memory_seq_rm(self._mem, -1, len(job.head), -1)  # back to the head alone
            else:
                self._api.llama_memory_clear(self._mem, True)

    # -- decode calls ------------------------------------------------------------------------------

    def _hold(self, head: tuple[int, ...]) -> None:
        """Make the cache hold exactly ``head`` as sequence 0, decoded from empty in one call."""
        if self._head == head:
            return
        self._head = self._head_row = None
        self._api.llama_memory_clear(self._mem, True)
        if not head:
            self._head = head
            return
        for start in range(0, len(head), self._batch.capacity):  # one call unless longer than a batch
            self._batch.clear()
            chunk = head[start : start + self._batch.capacity]
            for i, token in enumerate(chunk, start=start):
                self._batch.add(token, i, (0,), i == len(head) - 1)
            self._decode()
        self._head_row = self._row(self._batch.raw.n_tokens - 1)
        self._head = head

    def _continue(self, job: Job) -> list[float]:
        """The tail and every multi-token candidate's leading tokens, in as few calls as the batch allows."""
        leading = list(dict.fromkeys(c[:-1] for c in job.candidates if len(c) > 1))
        groups = self._groups(len(job.tail), leading)
        base = self._head_row
        rows: dict[tuple[int, ...], list[np.ndarray]] = {}
        for k, group in enumerate(groups):
            tail_row, got = self._decode_group(job, group)
            if k == 0 and tail_row is not None:
                base = tail_row
            rows.update(got)
        assert base is not None
        out = []
        for cand in job.candidates:
            total = float(base[cand[0]])
            for row, token in zip(rows.get(cand[:-1], ()), cand[1:], strict=True):
                total += float(row[token])
            out.append(total)
        return out

    def _groups(self, n_tail: int, leading: list[tuple[int, ...]]) -> list[list[tuple[int, ...]]]:
        """Split the candidates' leading tokens into decode calls, in order, each within the batch size
        and the sequence count (the tail is decoded again in each call after the first)."""
        groups: list[list[tuple[int, ...]]] = [[]]
        size = n_tail
        for lead in leading:
            if len(groups[-1]) + 2 > N_SEQ or size + len(lead) > self._batch.capacity:
                groups.append([])
                size = n_tail
            groups[-1].append(lead)
            size += len(lead)
        return groups

    def _decode_group(
        self, job: Job, group: list[tuple[int, ...]]
    ) -> tuple[np.ndarray | None, dict[tuple[int, ...], list[np.ndarray]]]:
        """One call: the tail (as every sequence of the group) and each leading-token run as its own sequence."""
        api, batch, h = self._api, self._batch, len(job.head)
        seqs = list(range(1, len(group) + 1))
        api.llama_memory_seq_rm(self._mem, -1, h, -1)  # the head alone, whatever an earlier group left
        for seq in seqs:
            api.llama_memory_seq_cp(self._mem, 0, seq, -1, -1)
        batch.clear()
        tail_last = None
        for i, token in enumerate(job.tail):
            tail_last = batch.add(token, h + i, (0, *seqs), i == len(job.tail) - 1)
        at = h + len(job.tail)
        where: list[list[int]] = []
        for seq, lead in zip(seqs, group, strict=True):
            where.append([batch.add(token, at + i, (seq,), True) for i, token in enumerate(lead)])
        if batch.raw.n_tokens == 0:
            return None, {}
        self._decode()
        base = self._row(tail_last) if tail_last is not None else None
        rows = {lead: [self._row(i) for i in idx] for lead, idx in zip(group, where, strict=True)}
        for seq in seqs:
            api.llama_memory_seq_rm(self._mem, seq, -1, -1)
        return base, rows

    def _decode(self) -> None:
        code = self._api.llama_decode(self._ctx, self._batch.raw)
        if code != 0:
            self._head = self._head_row = None
            raise RuntimeError(f"llama_decode failed with code {code}")

    def _row(self, index: int) -> np.ndarray:
        """Log-probabilities of the next token after the batch's ``index``-th token."""
        ptr = self._api.llama_get_logits_ith(self._ctx, index)
        return log_softmax(np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)))
