"""The pure parts of local scoring: how a request's tokens are split for re-use, and the normalisation."""

import numpy as np

from pytest_fairness.models.local_scoring import BLOCK, PACK_WIDTH, Job, blocks, log_softmax, packs


def test_a_request_with_a_reply_prefix_shares_its_conversation_and_owns_the_prefix():
    job = Job(tuple(range(70)), (7, 8), ((1,),))
    assert job.split() == (tuple(range(70)), (7, 8))
    assert [len(b) for b in blocks(job.split()[0])] == [BLOCK, BLOCK, 70 - 2 * BLOCK]


def test_a_request_without_one_shares_its_complete_blocks_and_owns_the_rest():
    for n, own in ((5, 5), (BLOCK, BLOCK), (BLOCK + 1, 1), (2 * BLOCK, BLOCK), (100, 100 - 3 * BLOCK)):
        shared, mine = Job(tuple(range(n)), (), ((1,),)).split()
        assert len(mine) == own and shared + mine == tuple(range(n))
        assert all(len(b) == BLOCK for b in blocks(shared))  # only whole blocks are shared


def test_log_softmax_matches_a_float64_reference_at_float32_resolution():
    rng = np.random.default_rng(0)
    for scale in (1.0, 5.0, 30.0):
        row = (rng.standard_normal(49152) * scale).astype(np.float32)
        reference = row.astype(np.float64) - np.logaddexp.reduce(row.astype(np.float64))
        got = log_softmax(row)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, reference, rtol=0, atol=4 * np.spacing(np.float32(abs(reference).max())))
        assert abs(np.exp(got.astype(np.float64)).sum() - 1) < 1e-5


CONVERSATION = tuple(range(100, 150))


def word(prefix: int, *candidates: tuple[int, ...]) -> Job:
    """An implicit-bias-like request: the shared conversation, a two-token reply prefix, its candidates."""
    return Job(CONVERSATION, (prefix, 9), candidates or ((1, 2), (3,)))


def test_requests_that_share_their_conversation_are_packed_in_order_up_to_the_pack_width():
    jobs = [word(i) for i in range(40)]  # 2 own tokens + 1 leading token each: 3 tokens, 2 sequences
    got = packs(jobs, n_ctx=2048)
    assert [job for pack in got for job in pack] == jobs
    assert [len(p) for p in got] == [PACK_WIDTH // 3, 40 - PACK_WIDTH // 3]
    other = Job(tuple(range(200, 250)), (5, 9), ((1, 2),))
    assert [len(p) for p in packs([*jobs[:3], other, *jobs[3:5]], n_ctx=2048)] == [3, 1, 2]


def test_a_request_whose_own_call_takes_another_kernel_is_scored_alone():
    single = Job(CONVERSATION, (7,), ((3,), (4,)))  # one own token, no leading run: a one-token call
    wide = word(1, *((k, k, 1) for k in range(31)))  # 2 + 62 tokens: wider than a pack
    little_room = packs([word(1), word(2)], n_ctx=len(CONVERSATION) + 4)  # 3 cells each, 4 left
    assert packs([word(1), single, word(2), wide, word(3)], n_ctx=4096) == [
        [word(1)],
        [single],
        [word(2)],
        [wide],
        [word(3)],
    ]
    assert little_room == [[word(1)], [word(2)]]
