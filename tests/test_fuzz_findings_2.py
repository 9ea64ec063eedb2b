"""More mismatches with PyTorch found by differential fuzzing, each reduced to a small
program and checked against torch (values, dtypes, gradients and errors)."""

from __future__ import annotations

import numpy as np
import torch

import retrograd as rg

NAN = float("nan")
INF = float("inf")


def _both(f):
    return f(torch), f(rg)


def _same(t, r, **kw):
    assert tuple(np.shape(r)) == tuple(np.shape(t))
    np.testing.assert_allclose(np.asarray(r), np.asarray(t), **kw)


def test_maximum_minimum_gradients_at_nan_and_ties():
    def f(m, name):
        a = m.tensor([NAN, 1.0, 2.0, NAN, 3.0, INF, -INF], requires_grad=True)
        b = m.tensor([1.0, NAN, 2.0, NAN, 1.0, INF, 0.0], requires_grad=True)
        g = m.tensor([1.0, 2.0, 3.0, 4.0, INF, 6.0, 7.0])
        getattr(m, name)(a, b).backward(g)
        return np.concatenate([a.grad.numpy(), b.grad.numpy()])
    for name in ("maximum", "minimum"):
        _same(f(torch, name), f(rg, name))
