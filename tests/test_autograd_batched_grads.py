"""rg.autograd.grad(..., is_grads_batched=True) against torch's: one gradient per row of the
grad_outputs (Jacobians from an identity), several outputs and inputs, unused inputs,
create_graph, and torch's refusals. (The graph is not freed afterwards: SPEC.md lets
backward run twice without retain_graph.)"""

import numpy as np
import pytest
import torch

import retrograd as rg

RNG = np.random.default_rng(5)


def _both(fn, *arrays):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    rs = [rg.tensor(a, requires_grad=True) for a in arrays]
    return fn(torch, ts), fn(rg, rs)


def _check(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        assert tuple(g.shape) == tuple(w.shape) and g.dtype == w.detach().numpy().dtype
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-12,
                                   atol=1e-12)


def test_jacobian_rows_from_an_identity():
    x = RNG.standard_normal(4)

    def fn(lib, ts):
        (x,) = ts
        y = lib.tanh(x) * x.sum()
        return lib.autograd.grad(y, x, lib.eye(4, dtype=lib.float64), is_grads_batched=True)

    want, got = _both(fn, x)
    _check(got, want)


@pytest.mark.parametrize("flags", [{"allow_unused": True}, {"materialize_grads": True}])
def test_several_outputs_and_inputs_with_an_unused_one(flags):
    a, b, c = RNG.standard_normal((2, 3)), RNG.standard_normal(3), RNG.standard_normal(2)

    def fn(lib, ts):
        a, b, c = ts
        y1 = (a * b).sum(1)                 # shape (2,)
        y2 = (a ** 2).sum() * b             # shape (3,)
        g1 = lib.tensor(np.arange(10.0).reshape(5, 2))
        g2 = lib.tensor(np.ones((5, 3)) * np.arange(5.0)[:, None])
        return lib.autograd.grad([y1, y2], [a, b, c], [g1, g2], is_grads_batched=True,
                                 **flags)

    want, got = _both(fn, a, b, c)
    _check(got, want)


def test_create_graph_gives_differentiable_rows():
    x = RNG.standard_normal(3)
    for lib in (torch, rg):
        xt = lib.tensor(x, requires_grad=True)
        (jac,) = lib.autograd.grad(xt ** 3, xt, lib.eye(3, dtype=lib.float64),
                                   is_grads_batched=True, create_graph=True)
        (jac * lib.tensor(np.arange(9.0).reshape(3, 3))).sum().backward()
        if lib is torch:
            want_jac, want_grad = jac.detach().numpy(), xt.grad.numpy()
        else:
            np.testing.assert_allclose(jac.detach().numpy(), want_jac, rtol=1e-13)
            np.testing.assert_allclose(xt.grad.numpy(), want_grad, rtol=1e-13)


def test_refusals_match_torch():
    for lib in (torch, rg):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x ** 2
        with pytest.raises(RuntimeError, match="implicitly created only for scalar"):
            lib.autograd.grad(y, x, None, is_grads_batched=True, retain_graph=True)
        with pytest.raises(RuntimeError, match="first dimension of each grad_output"):
            lib.autograd.grad(y, x, lib.ones(3), is_grads_batched=True, retain_graph=True)
        with pytest.raises(IndexError):
            lib.autograd.grad(y, x, lib.ones(0, 3), is_grads_batched=True, retain_graph=True)
        z = x.sum()
        with pytest.raises(ValueError):
            lib.autograd.grad([y, z], x, [lib.ones(2, 3), lib.ones(3)], is_grads_batched=True)
