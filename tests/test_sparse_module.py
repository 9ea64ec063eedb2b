"""`rg.sparse` (torch.sparse's mm, addmm, sum on sparse COO tensors, stored dense here):
values and gradients to the sparse tensor's `values` and the dense operand as torch's; the
sparse softmaxes, whose meaning needs the sparsity pattern, refused."""

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg

IDX = [[0, 1, 1, 2, 0], [1, 0, 1, 2, 1]]  # (0, 1) twice: coalesced, the values add


def _run(lib):
    rng = np.random.default_rng(4)
    vals, dense = rng.standard_normal(5), rng.standard_normal((3, 4))
    v = lib.tensor(vals, requires_grad=True)
    b = lib.tensor(dense, requires_grad=True)
    s = lib.sparse_coo_tensor(lib.tensor(IDX), v, (3, 3))
    y = lib.sparse.mm(s, b) * 2 + lib.sparse.addmm(b[:, :3], s, b[:, :3], beta=0.5, alpha=2.0).sum()
    y = y + lib.sparse.sum(s)
    w = rng.standard_normal(tuple(y.shape))
    (y * lib.tensor(w)).sum().backward()
    col = lib.sparse.sum(s.detach(), 0)  # torch's result is sparse: compare its dense form
    col = col.to_dense() if col.is_sparse else col
    return [a.detach().numpy().copy() for a in (y, v.grad, b.grad, col)]


def test_mm_addmm_sum_values_and_gradients_match_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _run(torch)
    for g, t in zip(_run(rg), want):
        np.testing.assert_allclose(g, t, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_sparse_softmaxes_refused(name):
    s = rg.sparse_coo_tensor(rg.tensor(IDX), rg.ones(5), (3, 3))
    with pytest.raises(NotImplementedError, match="-inf"):
        getattr(rg.sparse, name)(s, 1)
