"""linear's bias gradient over (..., k) cotangents: a contiguous one is summed as rows by
one product with ones, a strided one by a reduction; both match torch."""

import numpy as np
import pytest
import torch

import retrograd as rg


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("strided", [False, True])
def test_bias_grad_over_leading_dims(dtype, strided):
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((4, 6, 5)).astype(dtype)
    wv = rng.standard_normal((3, 5)).astype(dtype)
    bv = rng.standard_normal(3).astype(dtype)
    gv = rng.standard_normal((6, 4, 3)).astype(dtype)
    g = gv.transpose(1, 0, 2) if strided else np.ascontiguousarray(gv.transpose(1, 0, 2))
    x, w, b = (rg.tensor(a, requires_grad=True) for a in (xv, wv, bv))
    rg.nn.functional.linear(x, w, b).backward(rg.tensor(g))
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (xv, wv, bv))
    torch.nn.functional.linear(xt, wt, bt).backward(torch.from_numpy(np.ascontiguousarray(g)))
    for r, t in ((x, xt), (w, wt), (b, bt)):
        torch.testing.assert_close(torch.from_numpy(r.grad.numpy()), t.grad)
