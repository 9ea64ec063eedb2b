"""In-place ops on batched tensors inside rg.func.vmap, compared with torch.func on the
same functions: the vmapped function's batched arguments written through to the caller's
tensors (in_dims other than 0, nested vmap, out_dims), in-place writes into intermediate
batched tensors and through index assignment, a batched or unbatched other operand, the
gradients of vmap and the vmap of grad through such writes, and torch's refusal of a
batched source written into an unbatched destination."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg

LIBS = (torch, rg)


def _np(t):
    return np.asarray(t.detach().numpy())


def _arr(lib, a):
    return lib.tensor(np.array(a, dtype=np.float32))


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    x, y = _np(a), _np(b)
    assert x.shape == y.shape
    np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)


def _both(run):
    """run(lib) for torch and retrograd, results compared."""
    _same(run(torch), run(rg))


X = np.arange(12, dtype=np.float32).reshape(3, 4) / 4 - 1
Y = np.linspace(-1, 2, 12, dtype=np.float32).reshape(3, 4)


def test_inplace_on_vmap_input_writes_through():
    def run(lib):
        t = _arr(lib, X)
        r = lib.func.vmap(lambda x: x.mul_(2).add_(1) * 3)(t)
        return r, t
    _both(run)


def test_inplace_on_vmap_input_returned_as_is():
    def run(lib):
        t = _arr(lib, X[0])

        def g(x):
            x.mul_(2)
            return x + 1
        r = lib.func.vmap(g)(t)
        return r, t
    _both(run)


@pytest.mark.parametrize("in_dim,out_dim", [(1, 0), (-1, 1), (0, 1)])
def test_inplace_on_vmap_input_other_dims(in_dim, out_dim):
    def run(lib):
        t = _arr(lib, X)

        def g(x):
            x.sub_(0.5)
            x.sin_()
            return x * 2
        r = lib.func.vmap(g, in_dims=in_dim, out_dims=out_dim)(t)
        return r, t
    _both(run)


def test_inplace_on_input_in_nested_vmap():
    def run(lib):
        t = _arr(lib, np.arange(24, dtype=np.float32).reshape(2, 3, 4))

        def g(x):
            x.add_(1)
            return x * 2
        f = lib.func.vmap(lib.func.vmap(g, in_dims=1), in_dims=2, out_dims=1)
        r = f(t)
        return r, t
    _both(run)


def test_inplace_on_intermediate_and_views_of_input():
    def run(lib):
        t = _arr(lib, X)

        def g(x):
            y = x * 2
            y.add_(1)
            x[1].mul_(y[0])
            x.view(2, 2).add_(y.view(2, 2))
            return y
        r = lib.func.vmap(g)(t)
        return r, t
    _both(run)


def test_index_assignment_on_batched_tensors():
    def run(lib):
        t, u = _arr(lib, X), _arr(lib, Y)
        m = lib.tensor([True, False, True, False])

        def g(x, y):
            x[0] = 5.
            x[m] = y[:2]
            x[2:] += y[2:] * 3
            return x.sum()
        r = lib.func.vmap(g)(t, u)
        return r, t, u
    _both(run)


@pytest.mark.parametrize("dims", [(0, 0), (0, None), (1, 0)])
def test_inplace_other_batched_or_not(dims):
    def run(lib):
        t = _arr(lib, X)
        u = _arr(lib, Y[0]) if dims[1] is None else _arr(lib, Y)

        def g(x, y):
            x.mul_(y)
            x.add_(y, alpha=2)
            x.copy_(x.clamp(-1, 1))
            return x
        r = lib.func.vmap(g, in_dims=dims)(t if dims[0] == 0 else t.T.contiguous(), u)
        return r
    _both(run)


def test_unbatched_destination_batched_source_refused_as_torch():
    for lib in LIBS:
        def g(x, y):
            x.mul_(y)
            return x
        t, u = _arr(lib, X[0]), _arr(lib, Y)
        with pytest.raises(RuntimeError, match=r"vmap: in-?place .*is not possible"):
            lib.func.vmap(g, in_dims=(None, 0))(t, u)
        with pytest.raises(RuntimeError):
            lib.func.vmap(lambda x, y: x.add_(y), in_dims=(None, 0))(t, u)
        with pytest.raises(RuntimeError, match=r"vmap: in-?place .*is not possible"):
            lib.func.vmap(lambda x, y: x.copy_(y), in_dims=(None, 0))(t, u)
        np.testing.assert_array_equal(_np(t), X[0])


def test_unbatched_destination_unbatched_source_allowed():
    def run(lib):
        t, u = _arr(lib, X[0]), _arr(lib, Y)

        def g(x, y):
            x.add_(1)  # the same for every batch element: allowed, as torch
            y.mul_(x)
            return x * y
        r = lib.func.vmap(g, in_dims=(None, 0))(t, u)
        return r, t, u
    _both(run)


def test_grad_of_vmap_through_inplace_on_inputs():
    def run(lib):
        def f(x, y):
            def g(a, b):
                a.mul_(b)
                a[0] = a[1] * 3
                a.sin_()
                return a.sum()
            return lib.func.vmap(g)(x * 1, y).sum()
        return lib.func.grad(f, argnums=(0, 1))(_arr(lib, X), _arr(lib, Y))
    _both(run)


def test_grad_of_vmap_inplace_on_leaf_input_refused():
    for lib in LIBS:
        def f(x, lib=lib):
            return lib.func.vmap(lambda v: v.mul_(2))(x).sum()
        with pytest.raises(RuntimeError, match="leaf"):
            lib.func.grad(f)(_arr(lib, X))


def test_backward_after_vmap_wrote_into_input():
    def run(lib):
        a = _arr(lib, X).requires_grad_()
        b = _arr(lib, Y.T.copy()).requires_grad_()
        t = a * 1

        def g(x, y):
            x.mul_(y)
            x.add_(y)
            return x.sum()
        r = lib.func.vmap(g, in_dims=(0, 1))(t, b)
        (r.sum() + (t ** 2).sum()).backward()
        return r, t, a.grad, b.grad
    _both(run)


def test_vmap_of_grad_with_inplace_writes():
    def run(lib):
        def f(x, y):
            x = x.clone()
            x.mul_(y)
            x[1:] += x[:1]
            return (x ** 2).sum()
        def h(x, y):
            x.add_(y)  # a write into the vmap input, then its grad
            return lib.func.grad(f, argnums=(0, 1))(x, y)
        t = _arr(lib, X)
        return lib.func.vmap(h)(t, _arr(lib, Y)), t
    _both(run)


def test_jacrev_and_jacfwd_of_vmap_with_inplace_input():
    def run(lib):
        def f(x):
            def g(v):
                v.mul_(3)
                v.add_(1)
                return v ** 2
            return lib.func.vmap(g)(x * 1)
        x = _arr(lib, X[0])
        return lib.func.jacrev(f)(x), lib.func.jacfwd(f)(x)
    _both(run)


def test_jacfwd_of_vmap_writes_input():
    def run(lib):
        t = _arr(lib, X[0])
        j = lib.func.jacfwd(lambda x: lib.func.vmap(lambda v: v.mul_(2).exp())(x))(t)
        return j, t
    _both(run)


def test_vmap_inplace_integer_input_written():
    def run(lib):
        t = lib.arange(6).reshape(2, 3)
        r = lib.func.vmap(lambda x: x.add_(1) * 2, in_dims=1)(t)
        return r, t
    _both(run)


def test_vmap_of_jvp_and_jacfwd_writing_their_primal():
    """A write into jvp's primal inside vmap reaches the vmapped argument, and the
    caller's tensor."""
    def run(lib):
        t, u = _arr(lib, X), _arr(lib, Y)

        def h(x, tx):
            p, tan = lib.func.jvp(lambda y: y.mul_(2).sin(), (x,), (tx,))
            j = lib.func.jacfwd(lambda y: y.add_(1) * y)(x)
            return p, tan, j, x * 1
        return lib.func.vmap(h)(t, u), t
    _both(run)


def test_write_into_detached_batched_tensor_reaches_its_source():
    def run(lib):
        t = _arr(lib, X)

        def h(x):
            x.detach().add_(1)  # the vmapped argument, so the caller's tensor
            y = x * 2
            y.detach().mul_(3)
            return x * 1, y
        return lib.func.vmap(h)(t), t
    _both(run)


def test_derivatives_of_nested_vmap_writing_views_of_its_arguments():
    A = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)

    def run(lib):
        F = lib.func

        def g(v):
            v[0] = v[1] * 2
            v.sin_()
            return v.sum() * v

        def f(x):
            y = x * 1
            r = F.vmap(F.vmap(g), in_dims=1)(y)
            return (r ** 2).sum() + (y ** 3).sum()  # y: written by the vmaps

        x = lib.tensor(A)
        one = lambda x: F.vmap(g, in_dims=2)(x * 1)  # noqa: E731
        return F.grad(f)(x), F.jacrev(one)(x), F.jacfwd(one)(x)
    _both(run)


def test_grad_of_nested_vmap_with_an_other_operand():
    A = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)

    def run(lib):
        F = lib.func

        def g(v, w):
            v.mul_(w)
            return v

        def f(x, w):
            y = x * 1
            F.vmap(F.vmap(g, in_dims=(0, None)), in_dims=(2, 0))(y, w)
            return (y ** 2).sum()
        return F.grad(f, argnums=(0, 1))(lib.tensor(A), lib.tensor(A[0].T.copy()))
    _both(run)
