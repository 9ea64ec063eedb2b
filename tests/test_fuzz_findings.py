"""Mismatches with PyTorch found by differential fuzzing of random op chains (values,
dtypes and gradients), each reduced to its smallest program and checked against torch."""

from __future__ import annotations

import numpy as np
import torch

import retrograd as rg


def _both(f):
    return f(torch), f(rg)


def _same(t, r, **kw):
    assert tuple(np.shape(r)) == tuple(np.shape(t))
    np.testing.assert_allclose(np.asarray(r), np.asarray(t), **kw)


def test_inplace_on_a_0d_non_leaf_then_used():
    def f(m):
        x = m.tensor(0.5, requires_grad=True)
        y = x * 1
        y.neg_()
        (y * 2.0).backward()
        return x.grad.numpy()
    _same(*_both(f))


def test_power_true_is_a_copy():
    def f(m):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        h = x * 1
        y = h ** True
        assert y is not h
        y.mul_(3)
        (h * 1).sum().backward()
        return np.concatenate([h.detach().numpy(), x.grad.numpy()])
    _same(*_both(f))


def test_inplace_add_with_alpha_in_the_result_dtype():
    def f(m):
        a = m.tensor([-4], dtype=m.int32).add_(m.tensor([1], dtype=m.uint8), alpha=-128)
        b = m.tensor([0.0], dtype=m.float64).add_(m.tensor([0.1], dtype=m.float16),
                                                  alpha=1.5)
        c = m.tensor([5.0], dtype=m.float64).sub_(m.tensor([0.1], dtype=m.float16), alpha=3)
        return [a.item(), b.item(), c.item()]
    t, r = _both(f)
    assert r == t


def test_nansum_to_an_integer_dtype_drops_nans_first():
    t, r = _both(lambda m: m.nansum(m.tensor([1.0, float("nan"), 2.0]), 0,
                                    dtype=m.int64).item())
    assert r == t == 3


def test_angle_of_real_zeros_and_nan():
    t, r = _both(lambda m: m.angle(m.tensor([-0.0, 0.0, -1.0, 2.0, float("nan")])).numpy())
    _same(t, r)


def test_std_past_float32_range_of_the_variance():
    def f(m):
        x = m.tensor([1.0, 1e30, 1.0], requires_grad=True)
        s = m.std(x)
        s.backward()
        return np.concatenate([[s.item()], x.grad.numpy()])
    _same(*_both(f), rtol=1e-6)
    big = np.full(2000, 1e18, np.float32)
    big[::2] = -1e18
    t, r = _both(lambda m: [m.var(m.tensor(big)).item(), m.std(m.tensor(big)).item()])
    _same(t, r, rtol=1e-5)


def test_softmax_of_empty_tensors():
    for dims in [((0,), 0), ((0, 3), 0), ((2, 0), 1), ((2, 0), 0)]:
        t, r = _both(lambda m, dims=dims: (m.softmax(m.zeros(*dims[0]), dims[1]),
                                           m.log_softmax(m.zeros(*dims[0]), dims[1])))
        for a, b in zip(t, r):
            assert b.shape == tuple(a.shape) and b.dtype == rg.float32


def test_dims_0_and_minus_1_of_a_0d_tensor():
    for f in (lambda m, t: t.transpose(0, -1), lambda m, t: m.movedim(t, 0, -1),
              lambda m, t: t.swapaxes(0, -1), lambda m, t: t.transpose(-1, -1)):
        t, r = _both(lambda m, f=f: f(m, m.tensor(1.5)).item())
        assert r == t


def test_a_base_written_after_a_write_through_its_view():
    def f(m):
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = x * 1
        h[::2].add_(1)
        h.mul_(2)
        (h * h).sum().backward()
        return x.grad.numpy()
    _same(*_both(f))
