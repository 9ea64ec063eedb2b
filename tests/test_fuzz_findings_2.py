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


def test_logcumsumexp_gradient_with_infinite_inputs():
    def f(m, x):
        a = m.tensor(x, dtype=m.float64, requires_grad=True)
        m.logcumsumexp(a, 0).backward(m.tensor([1.0, -2.0, 3.0, 0.5], dtype=m.float64))
        return a.grad.numpy()
    for x in ([1.0, INF, 2.0, 3.0], [-INF, 1.0, INF, 0.0], [1000.0, -1000.0, 3.0, -INF]):
        _same(f(torch, x), f(rg, x), rtol=1e-12)


def test_complex_logcumsumexp_of_large_magnitudes_and_its_gradient():
    def f(m):
        a = m.tensor([1000 + 1j, 1001 + 2j, -5 + 0j, -1000 + 3j], requires_grad=True)
        y = m.logcumsumexp(a, 0)
        y.backward(m.tensor([1 + 1j, -2.0, 0.5j, 1.0], dtype=y.dtype))
        return np.concatenate([y.detach().resolve_conj().numpy(), a.grad.resolve_conj().numpy()])
    _same(*_both(f), rtol=1e-5)
