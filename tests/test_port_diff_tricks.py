"""Differentiable-programming tricks ported from PyTorch reference code (entmax's custom
Functions, TabNet's GhostBatchNorm, Sinkhorn in log space, VQ with EMA codebooks,
implicit differentiation of a fixed point), run under torch and retrograd with the same
weights and inputs, plus the minimal cases of the gaps the port found."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg

LIBS = (torch, rg)


def _both(fn):
    """`fn(lib)` under torch and retrograd: the (retrograd, torch) results."""
    return fn(rg), fn(torch)


def _close_all(r: dict, t: dict, tol: float = 1e-9) -> None:
    assert list(r) == list(t)
    for k in t:
        close(r[k], t[k], k, tol)


# ------------------------------------------------- ctx.save_for_forward in a Function's jvp

def _sparsemax_fn(torch):
    """entmax-style sparsemax with setup_context, a jvp that reads save_for_forward's
    tensors, and an index output marked non-differentiable."""

    class Sparsemax(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(X, dim):
            srt, _ = torch.sort(X, dim=dim, descending=True)
            cs = srt.cumsum(dim) - 1
            rho = torch.arange(1, X.size(dim) + 1, dtype=X.dtype)
            supp = (rho * srt > cs).sum(dim, keepdim=True)
            tau = cs.gather(dim, supp - 1) / supp.to(X.dtype)
            return torch.clamp(X - tau, min=0), supp

        @staticmethod
        def setup_context(ctx, inputs, output):
            Y, supp = output
            ctx.mark_non_differentiable(supp)
            ctx.save_for_backward(Y, supp)
            ctx.save_for_forward(Y, supp)
            ctx.dim = inputs[1]

        @staticmethod
        def backward(ctx, gY, gS):
            Y, supp = ctx.saved_tensors
            g = torch.where(Y > 0, gY, torch.zeros_like(gY))
            return torch.where(Y > 0, g - g.sum(ctx.dim, keepdim=True) / supp.to(g.dtype), g), None

        @staticmethod
        def jvp(ctx, tX, _):
            Y, supp = ctx.saved_tensors
            t = torch.where(Y > 0, tX, torch.zeros_like(tX))
            return torch.where(Y > 0, t - t.sum(ctx.dim, keepdim=True) / supp.to(t.dtype), t), None

    return Sparsemax


def test_save_for_forward_read_in_jvp():
    x0 = np.random.RandomState(1).randn(3, 4)
    w0 = np.arange(12.0).reshape(3, 4)

    def run(lib):
        S = _sparsemax_fn(lib)
        x, w = lib.tensor(x0), lib.tensor(w0)
        out = {"jvp": lib.func.jvp(lambda v: S.apply(v, -1)[0], (x,), (w,))[1],
               "jacfwd": lib.func.jacfwd(lambda v: S.apply(v, 0)[0])(x[0])}
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            y, _ = S.apply(fw.make_dual(x, w), -1)
            out["fwad"] = fw.unpack_dual(y).tangent
        xr = x.clone().requires_grad_()
        y, s = S.apply(xr, -1)
        (y * w).sum().backward()  # backward still reads save_for_backward's tensors
        out["grad"], out["s"] = xr.grad, s
        return out

    _close_all(*_both(run))


@pytest.mark.parametrize("lib", LIBS)
def test_save_for_forward_rejects_non_tensors(lib):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x, 3)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(AssertionError):
        F.apply(lib.ones(2))


# ------------------------------------------- Function.apply binds keywords and defaults

def test_apply_keyword_arguments_old_style():
    def run(lib):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y=None, k=2.0):
                ctx.k, ctx.nig = k, ctx.needs_input_grad
                return x * y * k

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, g * ctx.k, None

        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        r = Scale.apply(a, y=b, k=3.0)
        r.sum().backward()
        r2 = Scale.apply(a, y=b)
        assert r2.grad_fn is not None
        return {"r": r, "ga": a.grad, "gb": b.grad, "r2": r2}

    _close_all(*_both(run))


@pytest.mark.parametrize("lib", LIBS)
def test_apply_setup_context_inputs_hold_defaults(lib):
    seen = {}

    class Sparse(lib.autograd.Function):
        @staticmethod
        def forward(X, dim=-1, k=None):
            return lib.clamp(X - X.mean(dim, keepdim=True), min=0)

        @staticmethod
        def setup_context(ctx, inputs, output):
            X, dim, k = inputs  # torch fills in forward's defaults
            seen["inputs"] = (dim, k)
            seen["nig"] = ctx.needs_input_grad
            ctx.dim = dim
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * (y > 0), None, None

    x = lib.tensor([[1.0, 3.0, 2.0]], requires_grad=True)
    Sparse.apply(x).sum().backward()
    assert seen["inputs"] == (-1, None) and seen["nig"] == (True, False, False)
    Sparse.apply(x, k=2)
    assert seen["inputs"] == (-1, 2)
    with pytest.raises(TypeError):
        Sparse.apply(x, q=1)
    with pytest.raises(TypeError):
        Sparse.apply(x, X=x)


# ------------------ autograd.functional's hessian/hvp/jvp in reverse mode, as torch

def _cube_fn(torch):
    class Cube(torch.autograd.Function):  # a backward, no jvp: reverse mode only
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g

    return Cube


def test_functional_second_order_through_function_without_jvp():
    def run(lib):
        C, F = _cube_fn(lib), lib.autograd.functional
        x = lib.tensor([1.0, 2.0, -0.5], dtype=lib.float64)
        v = lib.tensor([1.0, -1.0, 0.5], dtype=lib.float64)

        def f(u):
            return (C.apply(u) * u.sin()).sum()

        def f2(u, w):
            return (C.apply(u) * w).sum()

        return {"hess": F.hessian(f, x), "hess_v": F.hessian(f, x, vectorize=True),
                "hess2": F.hessian(f2, (x, v))[0][1], "hvp": F.hvp(f, x, v)[1],
                "vhp": F.vhp(f, x, v)[1], "jvp": F.jvp(lambda u: C.apply(u) * 2, x, v)[1],
                "jvp2": F.jvp(lambda u, w: (C.apply(u), u * w), (x, v), (v, x))[1][1]}

    _close_all(*_both(run))


def test_functional_jvp_create_graph_differentiable():
    def run(lib):
        x = lib.tensor([0.3, -1.2], dtype=lib.float64, requires_grad=True)
        v = lib.tensor([1.0, 2.0], dtype=lib.float64)
        _, jv = lib.autograd.functional.jvp(lambda u: u.exp() * u, x, v, create_graph=True)
        (gx,) = lib.autograd.grad(jv.sum(), x)
        _, hv = lib.autograd.functional.hvp(lambda u: (u.sin() * u).sum(), x, v,
                                            create_graph=True)
        (gh,) = lib.autograd.grad(hv.sum(), x)
        return {"jv": jv, "gx": gx, "hv": hv, "gh": gh}

    _close_all(*_both(run))
