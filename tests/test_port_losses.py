"""Loss values and gradients found different from torch by porting training code: masked
(-inf) logits and zero probabilities in nll_loss/cross_entropy, infinite differences in
huber/smooth_l1, and binary_cross_entropy at probabilities of exactly 0 and 1."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg

INF, NAN = float("inf"), float("nan")


def _both(fn, x, y, grad_y=False):
    out = []
    for L, F in ((torch, torch.nn.functional), (rg, rg.nn.functional)):
        xt = L.tensor(np.asarray(x, dtype=np.float64), requires_grad=True)
        yt = L.tensor(np.asarray(y), requires_grad=grad_y) if grad_y else L.tensor(np.asarray(y))
        loss = fn(L, F, xt, yt)
        loss.sum().backward()
        out.append([loss.detach().numpy(), xt.grad.numpy()]
                   + ([yt.grad.numpy()] if grad_y else []))
    return out


def _same(t, r):
    for a, b in zip(t, r, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=0, equal_nan=True)
        np.testing.assert_array_equal(np.signbit(b), np.signbit(a))


with np.errstate(divide="ignore"):
    ZERO_PROB = np.log([[0.5, 0.5, 0.0], [0.2, 0.8, 0.0]])

CLASS_CASES = [
    ("nll, a zero probability", lambda L, F, x, y: F.nll_loss(x, y), ZERO_PROB, [0, 1]),
    ("nll, nan in an ignored row", lambda L, F, x, y: F.nll_loss(x, y),
     [[NAN, NAN], [-1.0, -2.0]], [-100, 0]),
    ("nll none, ignored", lambda L, F, x, y: F.nll_loss(x, y, reduction="none",
                                                         ignore_index=2), ZERO_PROB, [2, 1]),
    ("ce weighted, masked logits",
     lambda L, F, x, y: F.cross_entropy(x, y, weight=L.tensor([1.0, 2.0, 3.0],
                                                               dtype=L.float64)),
     [[1.0, -INF, 0.5], [0.2, 0.3, -INF]], [0, 1]),
    ("ce K-dim, masked logits", lambda L, F, x, y: F.cross_entropy(x, y),
     [[[1.0, -INF], [-INF, 0.5], [0.2, 0.3]]], [[0, 1]]),
]


@pytest.mark.parametrize("name,fn,x,y", CLASS_CASES, ids=[c[0] for c in CLASS_CASES])
def test_other_classes_minus_inf_or_nan_do_not_reach_the_loss(name, fn, x, y):
    _same(*_both(fn, x, np.asarray(y, dtype=np.int64)))


@pytest.mark.parametrize("fn", [
    lambda L, F, x, y: F.huber_loss(x, y, reduction="none", delta=0.5),
    lambda L, F, x, y: F.smooth_l1_loss(x, y, reduction="none", beta=2.0),
    lambda L, F, x, y: F.smooth_l1_loss(x, y, reduction="sum"),
])
def test_huber_and_smooth_l1_gradients_at_infinite_differences(fn):
    _same(*_both(fn, [1.0, -INF, 0.3, 5.0], [INF, 1.0, 0.0, 0.0]))


def test_binary_cross_entropy_gradients_at_zero_and_one_are_torchs():
    """(x - t) / max(x (1 - x), 1e-12) for x, log(1 - x) - log(x) for the target."""
    fn = lambda L, F, x, y: F.binary_cross_entropy(x, y, reduction="none")  # noqa: E731
    _same(*_both(fn, [0.0, 1.0, 0.0, 1.0, 0.3], [0.0, 1.0, 1.0, 0.0, 0.6], grad_y=True))


def test_binary_cross_entropy_weighted_double_backward_matches_torch():
    out = []
    for L, F in ((torch, torch.nn.functional), (rg, rg.nn.functional)):
        x = L.tensor([0.2, 0.7, 0.5], dtype=L.float64, requires_grad=True)
        y = L.tensor([0.0, 1.0, 0.3], dtype=L.float64)
        w = L.tensor([2.0, 3.0, 0.5], dtype=L.float64)
        (g,) = L.autograd.grad(F.binary_cross_entropy(x, y, weight=w), x, create_graph=True)
        (g * g).sum().backward()
        out.append([g.detach().numpy(), x.grad.numpy()])
    for a, b in zip(*out):
        np.testing.assert_allclose(b, a, rtol=1e-9)  # torch arranges its formula otherwise


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, INF])
def test_cdist_without_features_is_all_zeros(p):
    t = torch.cdist(torch.zeros(2, 0), torch.zeros(3, 0), p=p)
    r = rg.cdist(rg.zeros(2, 0), rg.zeros(3, 0), p=p)
    assert tuple(r.shape) == tuple(t.shape)
    np.testing.assert_array_equal(r.numpy(), t.numpy())


@pytest.mark.parametrize("order", [INF, -INF])
def test_inf_norm_over_an_empty_dim_is_refused_as_torch(order):
    with pytest.raises(RuntimeError, match="empty"):
        torch.linalg.vector_norm(torch.zeros(2, 0), order, dim=1)
    with pytest.raises(RuntimeError, match="empty"):
        rg.linalg.vector_norm(rg.zeros(2, 0), order, dim=1)


@pytest.mark.parametrize("call", [
    lambda L, F: F.binary_cross_entropy(L.rand(3), L.tensor([0, 1, 1])),
    lambda L, F: F.binary_cross_entropy(L.rand(3), L.rand(3).double()),
    lambda L, F: F.cross_entropy(L.randn(2, 3).double(), L.tensor([0, 1]), weight=L.ones(3)),
    lambda L, F: F.nll_loss(L.randn(2, 3), L.tensor([0, 1]), weight=L.ones(3).double()),
])
def test_mixed_dtype_targets_and_weights_are_refused_as_torch(call):
    with pytest.raises(RuntimeError):
        call(torch, torch.nn.functional)
    with pytest.raises(RuntimeError):
        call(rg, rg.nn.functional)
