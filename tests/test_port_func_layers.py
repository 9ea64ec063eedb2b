"""rg.func and nn layer cases found different from torch by porting: grad of a function
that returns a Python number (a .item() inside f) raises instead of giving zeros, and
MaxUnpool writes a repeated index once (overlapping pooling windows) instead of adding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg


@pytest.mark.parametrize("fn", [lambda x: float((x ** 2).sum()), lambda x: 3.0])
def test_grad_of_a_number_is_refused_as_torch(fn):
    with pytest.raises(RuntimeError, match="Tensor"):
        torch.func.grad(fn)(torch.ones(2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="Tensor"):
        rg.func.grad(fn)(rg.ones(2, dtype=rg.float64))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_writes_a_repeated_index_once(nd):
    x = np.random.default_rng(nd).standard_normal((2, 3) + (6,) * nd)
    out = []
    for L in (torch, rg):
        F = L.nn.functional
        xt = L.tensor(x, requires_grad=True)
        o, i = getattr(F, f"max_pool{nd}d")(xt, 3, 2, 1, return_indices=True)
        u = getattr(F, f"max_unpool{nd}d")(o, i, 3, 2, 1, output_size=(6,) * nd)
        w = L.tensor(np.arange(u.numel(), dtype=np.float64).reshape(tuple(u.shape)))
        (u * w).sum().backward()
        out.append([u.detach().numpy(), xt.grad.numpy()])
    for a, b in zip(*out):
        np.testing.assert_allclose(b, a, rtol=1e-12)


def test_list_outputs_stay_lists_as_torch_func():
    def run(L):
        x = L.tensor([1.0, 2.0], dtype=L.float64)
        f = lambda v: [v * 2, v.sum()]  # noqa: E731
        jr, jf = L.func.jacrev(f)(x), L.func.jacfwd(f)(x)
        out, fn = L.func.vjp(f, x)
        (g,) = fn([L.ones(2, dtype=L.float64), L.tensor(1.0, dtype=L.float64)])
        p, t = L.func.jvp(f, (x,), (L.ones(2, dtype=L.float64),))
        return ([type(v).__name__ for v in (jr, jf, out, p, t)],
                [np.asarray(v.numpy()) for v in (*jr, *jf, g, *t)])

    (tn, tv), (rn, rv) = run(torch), run(rg)
    assert tn == rn
    for a, b in zip(tv, rv):
        np.testing.assert_allclose(b, a, rtol=1e-12)


def test_dict_and_nested_outputs_keep_their_structure_as_torch_func():
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0], dtype=L.float64)
        one = L.ones(3, dtype=L.float64)
        got = [
            L.func.jacrev(lambda v: {"a": v * 2, "b": (v.sum(), [v ** 2])})(x),
            L.func.jacfwd(lambda v: {"a": v * 2})(x),
            L.func.hessian(lambda v: {"a": (v ** 3).sum()})(x),
            L.func.jacrev(lambda v, W: {"y": W @ v}, argnums=(0, 1))(x, L.eye(3, dtype=L.float64)),
            L.func.jvp(lambda v: {"a": v * 2, "s": (v.sum(),)}, (x,), (one,)),
        ]
        out, fn = L.func.vjp(lambda v: {"a": v * 2, "s": v.sum()}, x)
        got += [out, fn({"a": one, "s": L.tensor(2.0, dtype=L.float64)})]
        return got

    def walk(a, b):
        assert type(a).__name__ == type(b).__name__ or (
            isinstance(a, torch.Tensor) and isinstance(b, rg.Tensor))
        if isinstance(a, dict):
            assert list(a) == list(b)
            for k in a:
                walk(a[k], b[k])
        elif isinstance(a, (tuple, list)):
            assert len(a) == len(b)
            for u, v in zip(a, b):
                walk(u, v)
        else:
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12)

    walk(run(torch), run(rg))
