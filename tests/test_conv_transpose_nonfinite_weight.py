"""Transposed convolution with an inf or NaN in the weight: the output and every gradient
as PyTorch's (the matrix product's columns at frame positions off the input are the
weight times zeros, 0 * inf = NaN; they are dropped, since the true sum has no such
term). PyTorch's float32 input gradient disagrees with its own float64 one there, so
the input gradient is compared in float64."""

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg

CASES = [  # (dims, stride, padding, output_padding, dilation)
    (1, 2, 1, 1, 1),
    (2, 2, 1, 1, 1),
    (2, 3, 0, 2, 1),
    (2, 1, 1, 0, 2),
    (3, 2, 1, 1, 1),
]


def _run(lib, x, w, b, g, nd, s, p, op, d):
    fn = getattr(lib.nn.functional, f"conv_transpose{nd}d")
    ts = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
    y = fn(*ts, stride=s, padding=p, output_padding=op, dilation=d)
    (y * lib.tensor(g)).sum().backward()
    return [y.detach().numpy()] + [t.grad.numpy() for t in ts]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("case", CASES)
def test_nonfinite_weight_as_torch(case, bad, dtype):
    nd, s, p, op, d = case
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3) + (4, 5, 3)[:nd]).astype(dtype)
    w = rng.standard_normal((3, 2) + (3,) * nd).astype(dtype)
    w[(1, 0) + (0,) * (nd - 1) + (2,)] = bad
    b = rng.standard_normal(2).astype(dtype)
    with torch.no_grad():
        shape = torch.nn.functional.__dict__[f"conv_transpose{nd}d"](
            torch.from_numpy(x), torch.from_numpy(w), stride=s, padding=p, output_padding=op,
            dilation=d).shape
    g = rng.standard_normal(tuple(shape)).astype(dtype)
    want = _run(torch, x, w, b, g, nd, s, p, op, d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = _run(rg, x, w, b, g, nd, s, p, op, d)
    names = ["output", "dx", "dweight", "dbias"]
    for name, a, t in zip(names, got, want):
        if name == "dx" and dtype == np.float32:
            continue
        torch.testing.assert_close(torch.from_numpy(a), torch.from_numpy(t), equal_nan=True,
                                   msg=f"{name} differs")


def test_jit_follows_the_weight_becoming_infinite():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 4, 4))
    w = rng.standard_normal((3, 2, 3, 3))

    def f(xx, ww):
        return rg.nn.functional.conv_transpose2d(xx, ww, stride=2, padding=1)

    jitted = rg.jit(f)
    jitted(rg.tensor(x), rg.tensor(w))
    w[0, 1, 2, 2] = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = jitted(rg.tensor(x), rg.tensor(w)).numpy()
    want = torch.nn.functional.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w),
                                                stride=2, padding=1).numpy()
    torch.testing.assert_close(torch.from_numpy(got), torch.from_numpy(want), equal_nan=True)
