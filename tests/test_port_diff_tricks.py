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


# ------------------------------------------------------------ whole programs, end to end

def _entmax_bisect(torch):
    """entmax's EntmaxBisectFunction (classmethod forward, alpha gradient when
    needs_input_grad[1])."""

    class EntmaxBisect(torch.autograd.Function):
        @classmethod
        def _p(cls, X, alpha):
            return torch.clamp(X, min=0) ** (1 / (alpha - 1))

        @classmethod
        def forward(cls, ctx, X, alpha=1.5, dim=-1, n_iter=50):
            if not isinstance(alpha, torch.Tensor):
                alpha = torch.tensor(alpha, dtype=X.dtype, device=X.device)
            shape = list(X.shape)
            shape[dim] = 1
            alpha = alpha.expand(*shape)
            ctx.alpha, ctx.dim = alpha, dim
            d = X.shape[dim]
            X = X * (alpha - 1)
            max_val, _ = X.max(dim=dim, keepdim=True)
            tau_lo = max_val - 1 ** (alpha - 1)
            tau_hi = max_val - (1 / d) ** (alpha - 1)
            f_lo = cls._p(X - tau_lo, alpha).sum(dim) - 1
            dm = tau_hi - tau_lo
            for _ in range(n_iter):
                dm /= 2
                tau_m = tau_lo + dm
                p_m = cls._p(X - tau_m, alpha)
                f_m = p_m.sum(dim) - 1
                tau_lo = torch.where((f_m * f_lo >= 0).unsqueeze(dim), tau_m, tau_lo)
            p_m /= p_m.sum(dim=dim).unsqueeze(dim=dim)
            ctx.save_for_backward(p_m)
            return p_m

        @classmethod
        def backward(cls, ctx, dY):
            (Y,) = ctx.saved_tensors
            gppr = torch.where(Y > 0, Y ** (2 - ctx.alpha), Y.new_zeros(1))
            dX = dY * gppr
            q = (dX.sum(ctx.dim) / gppr.sum(ctx.dim)).unsqueeze(ctx.dim)
            dX -= q * gppr
            d_alpha = None
            if ctx.needs_input_grad[1]:
                S = torch.where(Y > 0, Y * torch.log(Y), Y.new_zeros(1))
                ent = S.sum(ctx.dim).unsqueeze(ctx.dim)
                Y_sk = gppr / gppr.sum(ctx.dim).unsqueeze(ctx.dim)
                d_alpha = dY * (Y - Y_sk) / ((ctx.alpha - 1) ** 2)
                d_alpha -= dY * (S - Y_sk * ent) / (ctx.alpha - 1)
                d_alpha = d_alpha.sum(ctx.dim).unsqueeze(ctx.dim)
            return dX, d_alpha, None, None

    return EntmaxBisect


def test_program_entmax_bisect_attention():
    x0 = np.random.RandomState(0).randn(4, 7) * 2
    w0 = np.linspace(-1, 1, 35).reshape(5, 7)

    def run(lib):
        B = _entmax_bisect(lib)
        lib.manual_seed(0)
        lin = lib.nn.Linear(7, 5, dtype=lib.float64)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(w0))
            lin.bias.zero_()
        alpha = lib.nn.Parameter(lib.tensor([[1.2], [1.5], [2.0], [3.0]], dtype=lib.float64))
        opt = lib.optim.Adam([*lin.parameters(), alpha], lr=0.05)
        tgt = lib.tensor([0, 1, 2, 4])
        out = {}
        for i in range(3):
            opt.zero_grad()
            p = B.apply(lin(lib.tensor(x0)), alpha, -1, 30)
            loss = (-lib.log(p.gather(1, tgt[:, None]) + 1e-3).mean()
                    + ((p - lib.nn.functional.one_hot(tgt, 5)) ** 2).sum())
            loss.backward()
            out[f"loss{i}"], out[f"ga{i}"] = loss, alpha.grad.clone()
            opt.step()
        out["W"], out["alpha"] = lin.weight, alpha
        return out

    _close_all(*_both(run), tol=1e-8)


def test_program_vq_ema_codebook():
    x0 = np.random.RandomState(5).randn(2, 2, 4, 4)
    emb0 = np.linspace(-1, 1, 24).reshape(8, 3)[np.random.RandomState(3).permutation(8)]
    conv0 = np.random.RandomState(6).randn(3, 2, 3, 3) * 0.3

    def run(lib):
        F = lib.nn.functional
        enc = lib.nn.Conv2d(2, 3, 3, padding=1, bias=False, dtype=lib.float64)
        dec = lib.nn.Conv2d(3, 2, 1, bias=False, dtype=lib.float64)
        with lib.no_grad():
            enc.weight.copy_(lib.tensor(conv0))
            dec.weight.copy_(lib.tensor(conv0[:, :, 1, 1].T[:, :, None, None].copy()))
        emb, avg = lib.tensor(emb0), lib.tensor(emb0)
        size = lib.zeros(8, dtype=lib.float64)
        opt = lib.optim.SGD([*enc.parameters(), *dec.parameters()], lr=0.1, momentum=0.9)
        x, out = lib.tensor(x0), {}
        for i in range(3):
            opt.zero_grad()
            z = enc(x)
            flat = z.permute(0, 2, 3, 1).reshape(-1, 3)
            idx = lib.cdist(flat, emb).argmin(-1)
            enc1 = F.one_hot(idx, 8).type(flat.dtype)
            q = F.embedding(idx, emb).view(2, 4, 4, 3).permute(0, 3, 1, 2)
            with lib.no_grad():
                size.mul_(0.9).add_(enc1.sum(0), alpha=0.1)
                s = lib.zeros_like(avg).index_add_(0, idx, flat)
                s2 = lib.zeros_like(avg).scatter_add_(0, idx[:, None].expand(-1, 3), flat)
                avg.mul_(0.9).add_(s2, alpha=0.1)
                n = size.sum()
                emb.copy_(avg / ((size + 1e-5) / (n + 8e-5) * n).unsqueeze(1))
            commit = F.mse_loss(z, q.detach())
            q = z + (q - z).detach()
            loss = F.mse_loss(dec(q), x) + 0.25 * commit
            loss.backward()
            opt.step()
            out.update({f"loss{i}": loss, f"idx{i}": idx, f"s{i}": s})
        out.update({"emb": emb, "size": size, "w": enc.weight, "gw": enc.weight.grad})
        return out

    _close_all(*_both(run), tol=1e-8)


def test_program_ghost_batchnorm_sinkhorn():
    x0 = np.random.RandomState(1).randn(12, 4)
    y0 = np.random.RandomState(2).randn(5, 4) + 1

    def run(lib):
        bn = lib.nn.BatchNorm1d(4, momentum=0.02, dtype=lib.float64)
        x = lib.tensor(x0, requires_grad=True)
        h = lib.cat([bn(c) for c in x.chunk(3, 0)], dim=0)  # GhostBatchNorm
        a, b = lib.full((12,), 1 / 12, dtype=lib.float64), lib.full((5,), 0.2, dtype=lib.float64)
        C = lib.cdist(h, lib.tensor(y0)) ** 2 / 2
        f, g = lib.zeros_like(a), lib.zeros_like(b)
        for eps in (1.0, 0.5, 0.25, 0.1):  # epsilon scaling, log-domain iterations
            for _ in range(5):
                f = -eps * lib.logsumexp((g[None, :] - C) / eps + b.log()[None, :], dim=1)
                g = -eps * lib.logsumexp((f[:, None] - C) / eps + a.log()[:, None], dim=0)
        P = lib.exp((f[:, None] + g[None, :] - C) / eps + a.log()[:, None] + b.log()[None, :])
        cost = (P * C).sum()
        cost.backward()
        return {"h": h, "P": P, "cost": cost, "gx": x.grad, "rm": bn.running_mean,
                "rv": bn.running_var, "gw": bn.weight.grad}

    _close_all(*_both(run), tol=1e-8)


@pytest.mark.parametrize("lib", LIBS)
def test_forward_mode_through_function_without_jvp_not_implemented(lib):
    C = _cube_fn(lib)
    x = lib.tensor([1.0, 2.0], dtype=lib.float64)
    fw = lib.autograd.forward_ad
    with pytest.raises(NotImplementedError), fw.dual_level():
        C.apply(fw.make_dual(x, lib.ones_like(x)))
