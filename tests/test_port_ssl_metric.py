"""Ports of self-supervised, contrastive and metric-learning code (SimCLR, MoCo, SphereFace,
Barlow Twins, LARS, ...) run with torch and retrograd, compared value for value."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import retrograd as rg


def _np(t):
    return np.asarray(t.detach().numpy())


NAN_INF = [float("nan"), float("inf"), 1.0, -float("inf")]


@pytest.mark.parametrize("op", ["floor", "ceil", "round", "trunc", "sign", "angle"])
def test_piecewise_constant_grad_is_zero_under_nan_upstream(op):
    # SphereFace: k = floor(m * theta / pi) and (-1) ** k; the NaN of pow's log(-1) must not
    # leak through floor's zero derivative (torch: zeros_like(grad), not grad * 0)
    x = np.array([0.3, 1.7, -2.2, 4.0])
    res = []
    for lib in (torch, rg):
        k = lib.tensor(x, requires_grad=True)
        (getattr(lib, op)(k) * lib.tensor(NAN_INF)).sum().backward()
        res.append(_np(k.grad))
    np.testing.assert_array_equal(res[1], res[0])


def test_pow_zero_exponent_grad_is_zero_under_nan_upstream():
    res = []
    for lib in (torch, rg):
        k = lib.tensor([0.3, 1.7, -2.2, 0.0], requires_grad=True)
        (k ** 0 * lib.tensor(NAN_INF)).sum().backward()
        res.append(_np(k.grad))
    np.testing.assert_array_equal(res[1], res[0])


def _sphereface(lib, x, w, y, m=4):
    F = lib.nn.functional
    cos = (F.normalize(x, dim=1) @ F.normalize(w, dim=0)).clamp(-1 + 1e-7, 1 - 1e-7)
    th = lib.acos(cos)
    k = (m * th / math.pi).floor()
    phi = ((-1.0) ** k) * lib.cos(m * th) - 2 * k
    oh = F.one_hot(y, num_classes=w.shape[1]).to(cos.dtype)
    return F.cross_entropy(30 * (oh * phi + (1 - oh) * cos), y)


def test_sphereface_head_grads_match_torch():
    rs = np.random.RandomState(0)
    xn, wn, yn = rs.randn(8, 10), rs.randn(10, 3), rs.randint(0, 3, 8)
    res = []
    for lib in (torch, rg):
        x = lib.tensor(xn, requires_grad=True)
        w = lib.tensor(wn, requires_grad=True)
        loss = _sphereface(lib, x, w, lib.tensor(yn))
        loss.backward()
        res.append([_np(loss), _np(x.grad), _np(w.grad)])
    for a, b in zip(res[0], res[1]):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
