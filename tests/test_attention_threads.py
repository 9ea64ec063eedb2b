"""Attention's compiled float32 path split over threads along the leading axis: the
same numbers bit for bit as one thread, torch's values and gradients, and the split
path taken only where its conditions hold (one batch shape for q, k, v, float32)."""

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import kernels, threads
from retrograd.ops import fused_attention as FA

F = torch.nn.functional


def _views(B, H, L, S, E, Ev, seed):
    """q, k, v as a model makes them: heads split from (B, T, H * E) and transposed."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, L, H, E)).astype(np.float32).transpose(0, 2, 1, 3)
    k = rng.standard_normal((B, S, H, E)).astype(np.float32).transpose(0, 2, 1, 3)
    v = rng.standard_normal((B, S, H, Ev)).astype(np.float32).transpose(0, 2, 1, 3)
    g = rng.standard_normal((B, H, L, Ev)).astype(np.float32)
    return q, k, v, g


def _step(q, k, v, g, causal):
    rs = [rg.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = F_rg.scaled_dot_product_attention(*rs, is_causal=causal, scale=0.3)
    out.backward(rg.tensor(g))
    return [out.numpy()] + [t.grad.numpy() for t in rs]


F_rg = rg.nn.functional


@pytest.fixture
def split(monkeypatch):
    """Two threads, and small inputs split anyway; records the pieces each split ran."""
    monkeypatch.setattr(threads, "_MIN_WORK", 1 << 8)
    seen = []
    run = threads.run

    def spy(fn, pieces):
        seen.append(list(pieces))
        return run(fn, pieces)

    monkeypatch.setattr(FA._threads, "run", spy)
    old = threads.num_threads()
    rg.set_num_threads(2)
    yield seen
    rg.set_num_threads(old)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("L,S", [(16, 16), (5, 9), (9, 4)])
def test_split_equals_one_thread_bit_for_bit_and_matches_torch(split, causal, L, S):
    q, k, v, g = _views(6, 2, L, S, 8, 5, L * 100 + S)
    with kernels.use("numba", min_size=0):
        got = _step(q, k, v, g, causal)
        assert len(split) == 2 and all(len(p) == 2 for p in split)  # forward, backward
        rg.set_num_threads(1)
        one = _step(q, k, v, g, causal)
    for a, b in zip(got, one):
        np.testing.assert_array_equal(a, b)
    ts = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    want = F.scaled_dot_product_attention(*ts, is_causal=causal, scale=0.3)
    want.backward(torch.from_numpy(g))
    for w, r in zip([want] + [t.grad for t in ts], got):
        torch.testing.assert_close(torch.from_numpy(r), w.detach(), rtol=2e-5, atol=2e-6)


def test_no_split_for_broadcast_batches_float64_or_numpy_mode(split):
    q, k, v, g = _views(4, 2, 6, 6, 4, 4, 1)
    with kernels.use("numba", min_size=0):
        _step(q, k[:1], v[:1], g, True)  # keys shared over the batch: one batch shape only
        _step(*(a.astype(np.float64) for a in (q, k, v, g)), True)
    with kernels.use("numpy"):
        _step(q, k, v, g, True)
    assert split == []
