"""The pure parts of local scoring: how a request's tokens are split for re-use, and the normalisation."""

import numpy as np

from pytest_fairness.models.local_scoring import BLOCK, Job, blocks, log_softmax


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
