"""Convolutions on inputs with inf and nan, where the unit-stride fast path (columns with
junk positions past each row's end) must give exactly torch's gradients: a junk column
reads x past its row and meets a zero cotangent, and 0 * inf is nan."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg
import retrograd.nn.functional as F

CASES = [  # sizes large enough for the fast path (x.size * kernel size >= 2**18)
    ("conv1d", (4, 16, 4096), (3, 16, 3), 1, 1),
    ("conv2d", (4, 16, 48, 48), (3, 16, 3, 3), 1, 1),
    ("conv2d", (4, 16, 48, 48), (3, 16, 3, 3), 0, 2),
    ("conv3d", (2, 8, 20, 20, 20), (2, 8, 3, 3, 3), 1, 1),
]


def _grads(lib, fn, x, w, g, padding, dilation):
    m, fmod = (rg, F) if lib == "rg" else (torch, torch.nn.functional)
    xt, wt = m.tensor(x, requires_grad=True), m.tensor(w, requires_grad=True)
    y = getattr(fmod, fn)(xt, wt, padding=padding, dilation=dilation)
    y.backward(m.tensor(g))
    return y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()


def _same_as_torch(fn, x, w, padding, dilation, rng):
    """Output and both gradients equal torch's: nan and inf in the same places, the rest
    close."""
    with np.errstate(invalid="ignore"):
        shape = getattr(torch.nn.functional, fn)(torch.tensor(x), torch.tensor(w),
                                                 padding=padding, dilation=dilation).shape
        g = rng.standard_normal(tuple(shape))
        ref = _grads("torch", fn, x, w, g, padding, dilation)
        got = _grads("rg", fn, x, w, g, padding, dilation)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(np.isinf(a), np.isinf(b))
        ok = np.isfinite(b)
        np.testing.assert_allclose(a[ok], b[ok], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("fn,xs,ws,padding,dilation", CASES)
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_a_non_finite_input_at_a_row_end_gives_torchs_gradients(fn, xs, ws, padding, dilation,
                                                                 bad):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    x[(0, 1) + (slice(None),) * (len(xs) - 3) + (xs[-1] - 1,)] = bad  # a last column
    x[(1, 2) + (3,) * (len(xs) - 3) + (0,)] = bad  # and a first one
    _same_as_torch(fn, x, w, padding, dilation, rng)


@pytest.mark.parametrize("fn,xs,ws,padding,dilation", CASES)
@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_a_non_finite_weight_gives_torchs_input_gradient(fn, xs, ws, padding, dilation, bad):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    w[(1, 2) + (1,) * (len(ws) - 2)] = bad
    _same_as_torch(fn, x, w, padding, dilation, rng)
