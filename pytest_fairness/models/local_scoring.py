"""Candidate log-probabilities from llama.cpp's C API, many continuations per decode call.

A request is tokenised as a *shared* part (the conversation) and an *own* part (the reply prefix; for a
request without one, the prompt's last, partial 32-token block), plus its candidates. The shared part is
decoded in 32-token blocks at fixed positions (0-31, 32-63, ..., then whatever is left, each one call)
and stays in the cache as sequence 0, so the next request re-uses every leading block it has in common:
every attribute word of one implicit-bias prompt re-uses the whole conversation, and every prompt of a
measure the blocks of its common instructions. The own part and every multi-token candidate's leading
tokens then go in one further call, each candidate as its own sequence sharing the own part's cache cells
(a cell may belong to several sequences). Logits are computed only at the rows that are read: the own
part's last token and each candidate's leading tokens.

llama.cpp's numbers depend on how tokens were split into decode calls, so that layout is a function of
the request alone, and so are the numbers: a block's cache cells depend only on its tokens and the
blocks before it, decoded the same way whether for this request or an earlier one. Attention is llama.cpp's
flash attention, which visits a token's visible cache cells in order and skips the rest, so a row does
not depend on which cells other sequences hold (with the other attention path it did: up to 0.16 in
log-prob). What a row still depends on is the call's width: one token, 2 to 63, or 64 and more take
three different kernels (the embedded model's logits moved by up to 0.86 between them), while any call
within a class gives the same bits whatever else it holds (measured on this build, and checked by the
tests). So the own parts of consecutive requests that share their shared part go in one call of at most
63 tokens (``packs``: fewer calls, each reading the weights once), and a request whose own call is a
single token or 64 and more keeps a call of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Sequences one context holds: the shared part's plus one per multi-token candidate scored in the same call.
N_SEQ = 64
#: Prompt tokens per block, for scoring and generation alike: small enough that prefixes requests share
#: are re-used, large enough that the extra decode calls cost little (each call has a fixed cost of
#: about one token's compute on the embedded model).
BLOCK = 32
#: The widest call whose rows come out as in a call of two tokens (see the module doc): the most a pack holds.
PACK_WIDTH = 63
assert PACK_WIDTH < N_SEQ  # so that a pack's sequences always fit (``packs``)


@dataclass(frozen=True)
class Job:
    """One request in tokens: candidates are scored as continuations of ``head + tail``."""

    head: tuple[int, ...]
    tail: tuple[int, ...]
    candidates: tuple[tuple[int, ...], ...]

    @property
    def prompt_tokens(self) -> int:
        return len(self.head) + len(self.tail)

    def split(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The shared and own parts: the conversation and the reply prefix, or, without a reply prefix, the
        prompt's complete blocks and the rest (1 to ``BLOCK`` tokens; never empty, as its last row is read)."""
        if self.tail:
            return self.head, self.tail
        cut = reusable(len(self.head))
        return self.head[:cut], self.head[cut:]


def reusable(n: int, size: int = BLOCK) -> int:
    """Leading tokens of an ``n``-token prompt that go in re-usable blocks: its complete blocks before its
    last token. The block holding the last token is always decoded, as its logits row is read."""
    return (n - 1) // size * size


def blocks(tokens: Sequence[int], size: int = BLOCK) -> list[tuple[int, ...]]:
    """``tokens`` in ``size``-token pieces at fixed positions, the last one possibly shorter."""
    return [tuple(tokens[i : i + size]) for i in range(0, len(tokens), size)]


def leading_matches(held: Sequence[tuple[int, ...]], wanted: Sequence[tuple[int, ...]]) -> int:
    """How many of the ``wanted`` blocks the context already holds, counted from position 0."""
    keep = 0
    while keep < min(len(held), len(wanted)) and held[keep] == wanted[keep]:
        keep += 1
    return keep


def leading(candidates: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The distinct leading-token runs of the multi-token candidates: each is decoded once, as a sequence."""
    return list(dict.fromkeys(c[:-1] for c in candidates if len(c) > 1))


def own_width(job: Job) -> int:
    """Tokens of the job's own call: its own part and its candidates' leading runs."""
    return len(job.split()[1]) + sum(map(len, leading(job.candidates)))


def packs(jobs: Sequence[Job], *, n_ctx: int) -> list[list[Job]]:
    """Consecutive jobs whose own parts can go in one decode call, in order.

    A pack's jobs have the same shared part and together fit one call of ``PACK_WIDTH`` tokens and the
    cache cells the context has left after the shared part (its sequences fit too: each needs a token of
    its own, and ``PACK_WIDTH`` < ``N_SEQ``). A job whose own call alone would be a single token or wider
    than ``PACK_WIDTH`` is a pack of its own.
    """
    out: list[list[Job]] = []
    width = 0
    shared_of: tuple[int, ...] | None = None
    for job in jobs:
        shared, need = job.split()[0], own_width(job)
        limit = min(PACK_WIDTH, n_ctx - len(shared))
        if need < 2 or need > limit:
            out.append([job])
            shared_of = None  # nothing joins a job that is alone
        elif shared == shared_of and width + need <= limit:
            out[-1].append(job)
            width += need
        else:
            out.append([job])
            shared_of, width = shared, need
    return out


Rows = dict[tuple[int, ...], list[np.ndarray]]


def totals(candidates: Sequence[tuple[int, ...]], base: np.ndarray, rows: Rows) -> list[float]:
    """Each candidate's log-probability: its first token's from ``base``, the next ones' from its leading run's rows."""
    out = []
    for cand in candidates:
        total = float(base[cand[0]])
        for row, token in zip(rows.get(cand[:-1], ()), cand[1:], strict=True):
            total += float(row[token])
        out.append(total)
    return out


def log_softmax(row: np.ndarray) -> np.ndarray:
    """Log-probabilities from one row of float32 logits: the exponentials in float32 (7x faster than in
    float64, and the same float32 results on the embedded model's rows), their sum in float64."""
    top = float(row.max())
    return row - (top + float(np.log(np.exp(row - top).sum(dtype=np.float64))))


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

        if n_batch < BLOCK:
            raise ValueError(f"a prompt block of {BLOCK} tokens does not fit a decode call of {n_batch}")
        self._api = llama_cpp
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = params.n_ubatch = n_batch
        params.n_seq_max = N_SEQ
        params.kv_unified = True  # one cache whose cells sequences share, not a copy per sequence
        params.n_threads = params.n_threads_batch = n_threads
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED  # rows independent of other cells
        params.no_perf = True
        self._ctx = llama_cpp.llama_init_from_model(model, params)
        if not self._ctx:
            raise RuntimeError("llama.cpp could not create a scoring context")
        self._mem = llama_cpp.llama_get_memory(self._ctx)
        self._n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
        self.n_ctx = n_ctx
        self._batch = _Batch(llama_cpp, n_batch, N_SEQ)
        self._held: list[tuple[int, ...]] = []  # the blocks sequence 0 holds, in order from position 0
        self.reused_tokens = 0  # shared tokens taken from the cache instead of decoded (for tests and benchmarks)

    def set_threads(self, n: int) -> None:
        """Threads for the next decode calls (the numbers do not depend on it)."""
        self._api.llama_set_n_threads(self._ctx, n, n)

    def close(self) -> None:
        if self._ctx:
            self._batch.free()
            self._api.llama_free(self._ctx)
            self._ctx = None

    def score_many(self, jobs: Sequence[Job]) -> list[list[float]]:
        """Log-probability of each candidate of each job, in order; the jobs of a pack (``packs``) share one
        decode call."""
        for job in jobs:
            self._check(job)
        out: list[list[float]] = []
        for pack in packs(jobs, n_ctx=self.n_ctx):
            out.extend(self._score_pack(pack) if len(pack) > 1 else [self._score_alone(pack[0])])
        return out

    def _check(self, job: Job) -> None:
        if job.prompt_tokens + max((len(c) for c in job.candidates), default=0) > self.n_ctx:
            raise ValueError(f"prompt and candidate exceed the context of {self.n_ctx} tokens; raise n_ctx")
        own = job.split()[1]
        if not own:
            raise ValueError("a request with an empty prompt has nothing to score its candidates after")
        if len(own) >= self._batch.capacity:
            raise ValueError(
                f"a reply prefix of {len(own)} tokens does not fit a decode call of {self._batch.capacity} tokens"
            )

    def _score_alone(self, job: Job) -> list[float]:
        shared, own = job.split()
        self._hold(blocks(shared))
        try:
            return self._continue(own, job.candidates, len(shared))
        finally:
            self._api.llama_memory_seq_rm(self._mem, -1, len(shared), -1)  # back to the shared part alone

    # -- decode calls ------------------------------------------------------------------------------

    def _hold(self, wanted: list[tuple[int, ...]]) -> None:
        """Make sequence 0 hold exactly the ``wanted`` blocks: keep the leading ones it already has, drop the
        rest, decode the others one call each (no logits: the own part's last row is the first one read)."""
        keep = leading_matches(self._held, wanted)
        at = sum(map(len, wanted[:keep]))
        self._api.llama_memory_seq_rm(self._mem, -1, at, -1)
        del self._held[keep:]
        self.reused_tokens += at
        for block in wanted[keep:]:
            self._batch.clear()
            for i, token in enumerate(block, start=at):
                self._batch.add(token, i, (0,), False)
            self._decode()
            self._held.append(block)
            at += len(block)

    def _continue(self, own: tuple[int, ...], candidates: tuple[tuple[int, ...], ...], at: int) -> list[float]:
        """The own part and every multi-token candidate's leading tokens, in as few calls as the batch allows."""
        base: np.ndarray | None = None
        rows: Rows = {}
        for group in self._groups(len(own), leading(candidates)):
            own_row, got = self._decode_group(own, group, at)
            base = own_row if base is None else base
            rows.update(got)
        assert base is not None
        return totals(candidates, base, rows)

    def _score_pack(self, pack: list[Job]) -> list[list[float]]:
        """One call for the own parts and leading runs of several jobs with the same shared part: each job's
        own part is a sequence of its own (a copy of the shared part's), and so is each leading run."""
        api, batch = self._api, self._batch
        shared = pack[0].split()[0]
        self._hold(blocks(shared))
        at, seq = len(shared), 1
        batch.clear()
        where: list[tuple[int, dict[tuple[int, ...], list[int]]]] = []  # per job: own part's last row, runs' rows
        try:
            for job in pack:
                own, runs = job.split()[1], leading(job.candidates)
                seqs = list(range(seq, seq + 1 + len(runs)))  # the own part's, then one per leading run
                seq += len(seqs)
                for s in seqs:
                    api.llama_memory_seq_cp(self._mem, 0, s, -1, -1)
                last = [batch.add(token, at + i, seqs, i == len(own) - 1) for i, token in enumerate(own)][-1]
                start = at + len(own)
                rows = {
                    run: [batch.add(token, start + i, (s,), True) for i, token in enumerate(run)]
                    for s, run in zip(seqs[1:], runs, strict=True)
                }
                where.append((last, rows))
            self._decode()
            return [
                totals(job.candidates, self._row(last), {run: [self._row(i) for i in idx] for run, idx in rows.items()})
                for job, (last, rows) in zip(pack, where, strict=True)
            ]
        finally:
            api.llama_memory_seq_rm(self._mem, -1, at, -1)  # back to the shared part alone
            for s in range(1, seq):
                api.llama_memory_seq_rm(self._mem, s, -1, -1)

    def _groups(self, n_own: int, leading: list[tuple[int, ...]]) -> list[list[tuple[int, ...]]]:
        """Split the candidates' leading tokens into decode calls, in order, each within the batch size
        and the sequence count (the own part is decoded again in each call after the first)."""
        groups: list[list[tuple[int, ...]]] = [[]]
        size = n_own
        for lead in leading:
            if len(groups[-1]) + 2 > N_SEQ or size + len(lead) > self._batch.capacity:
                groups.append([])
                size = n_own
            groups[-1].append(lead)
            size += len(lead)
        return groups

    def _decode_group(
        self, own: tuple[int, ...], group: list[tuple[int, ...]], at: int
    ) -> tuple[np.ndarray, dict[tuple[int, ...], list[np.ndarray]]]:
        """One call: the own part (as every sequence of the group) and each leading-token run as its own sequence."""
        api, batch = self._api, self._batch
        seqs = list(range(1, len(group) + 1))
        api.llama_memory_seq_rm(self._mem, -1, at, -1)  # the shared part alone, whatever an earlier group left
        for seq in seqs:
            api.llama_memory_seq_cp(self._mem, 0, seq, -1, -1)
        batch.clear()
        for i, token in enumerate(own):
            batch.add(token, at + i, (0, *seqs), i == len(own) - 1)
        start = at + len(own)
        where: list[list[int]] = []
        for seq, lead in zip(seqs, group, strict=True):
            where.append([batch.add(token, start + i, (seq,), True) for i, token in enumerate(lead)])
        self._decode()
        base = self._row(len(own) - 1)
        rows = {lead: [self._row(i) for i in idx] for lead, idx in zip(group, where, strict=True)}
        for seq in seqs:
            api.llama_memory_seq_rm(self._mem, seq, -1, -1)
        return base, rows

    def _decode(self) -> None:
        code = self._api.llama_decode(self._ctx, self._batch.raw)
        if code != 0:
            self._api.llama_memory_clear(self._mem, True)
            self._held = []
            raise RuntimeError(f"llama_decode failed with code {code}")

    def _row(self, index: int) -> np.ndarray:
        """Log-probabilities of the next token after the batch's ``index``-th token."""
        ptr = self._api.llama_get_logits_ith(self._ctx, index)
        return log_softmax(np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)))
