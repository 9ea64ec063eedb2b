"""Known gaps left from earlier porting rounds, each compared with torch computed here:
prelu's derivatives at 0 in each order (and leaky_relu's, eval rrelu's), the 0-norm's
missing gradient, `Tensor._base` / `_is_view()`, `Tensor.as_strided_`, topk's order with
sorted=False, in-place writes into views inside vmap and jvp; and three small programs
(a PReLU MLP trained, a gradient penalty through it, per-sample gradients with in-place
feature writes) that guard them end to end."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg


def _np(t):
    """A tensor of either library (or None) as a NumPy array (or None)."""
    if t is None:
        return None
    return np.asarray(t.detach().numpy())


def _same(a, b, what=""):
    a, b = _np(a), _np(b)
    if a is None or b is None:
        assert a is None and b is None, what
        return
    assert a.dtype == b.dtype and a.shape == b.shape, what
    np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, err_msg=what)


# ------------------------------------------------------------------ prelu at 0

_X0 = np.array([[0.0, -1.0, 2.0], [0.0, 3.0, -0.5]])[:, :, None] * np.ones((1, 1, 2))
_W0 = np.array([0.25, -0.5, 0.1])


def _prelu_derivatives(lib) -> dict:
    F = lib.nn.functional
    x = lib.tensor(_X0, requires_grad=True)
    w = lib.tensor(_W0, requires_grad=True)
    y = F.prelu(x, w) * x
    gx, gw = lib.autograd.grad(y.sum(), [x, w], create_graph=True)
    out = {"y": y, "gx": gx, "gw": gw}
    for name, g in (("gx", gx), ("gw", gw)):
        hx, hw = lib.autograd.grad(g.sum(), [x, w], retain_graph=True, allow_unused=True)
        out[name + "_x"], out[name + "_w"] = hx, hw
    # the gradient of prelu alone: its derivative w.r.t. x is a connected zero in torch
    x2 = lib.tensor(_X0, requires_grad=True)
    g2, = lib.autograd.grad(F.prelu(x2, w).sum(), x2, create_graph=True)
    out["g2_x"], out["g2_w"] = lib.autograd.grad(g2.sum(), [x2, w], allow_unused=True)
    xd, wd = x.detach(), w.detach()
    out["jvp_x"] = lib.func.jvp(lambda v: F.prelu(v, wd), (xd,), (lib.ones_like(xd),))[1]
    out["jvp_w"] = lib.func.jvp(lambda v: F.prelu(xd, v), (wd,), (lib.ones_like(wd),))[1]
    f = lambda a, b: (F.prelu(a, b) * a).sum()  # noqa: E731
    out["fwd_rev"] = lib.func.jacfwd(lib.func.jacrev(f))(xd, wd)
    out["fwd_rev_w"] = lib.func.jacfwd(lib.func.jacrev(f, 1), 1)(xd, wd)
    return out


def test_prelu_derivatives_at_zero_match_torch_in_each_order():
    """torch's first reverse derivative at x == 0 takes the negative side (slope w), its
    forward mode and the derivative of its backward the positive side (slope 1)."""
    t, r = _prelu_derivatives(torch), _prelu_derivatives(rg)
    for k in t:
        _same(t[k], r[k], k)


def test_prelu_module_at_zero_matches_torch():
    res = []
    for lib in (torch, rg):
        m = lib.nn.PReLU(3, init=0.3).double()
        x = lib.tensor(_X0, requires_grad=True)
        g, = lib.autograd.grad(m(x).sum(), x, create_graph=True)
        hw, = lib.autograd.grad(g.sum(), m.weight)
        res.append((g, hw))
    for a, b in zip(*res):
        _same(a, b)


def test_leaky_relu_and_eval_rrelu_at_zero_match_torch():
    xs = np.array([0.0, -1.0, 2.0, -0.0])
    res = []
    for lib in (torch, rg):
        F = lib.nn.functional
        row = []
        for g in (lambda v, F=F: F.leaky_relu(v, 0.2),
                  lambda v, F=F: F.rrelu(v, training=False)):
            x = lib.tensor(xs, requires_grad=True)
            gx, = lib.autograd.grad((g(x) * x).sum(), x, create_graph=True)
            row += [gx, lib.autograd.grad(gx.sum(), x)[0],
                    lib.func.jvp(g, (x.detach(),), (lib.ones_like(x),))[1]]
        res.append(row)
    for a, b in zip(*res):
        _same(a, b)


# ------------------------------------------------------------------ the 0-norm's gradient

def _zero_norm_grads(lib, fn) -> list:
    xs = np.array([[0.0, -1.0, 2.0], [0.5, 0.0, 0.0]])
    x = lib.tensor(xs, requires_grad=True)
    y = fn(lib, x)
    y.sum().backward()
    x2 = lib.tensor(xs, requires_grad=True)
    unused = lib.autograd.grad(fn(lib, x2).sum(), x2, allow_unused=True)[0]
    x3 = lib.tensor(xs, requires_grad=True)
    try:
        lib.autograd.grad(fn(lib, x3).sum(), x3)
        raised = None
    except RuntimeError:
        raised = RuntimeError
    fgrad = lib.func.grad(lambda v: fn(lib, v).sum())(lib.tensor(xs))
    return [y.requires_grad, y.grad_fn is not None, x.grad, unused, raised, fgrad]


def test_zero_norm_backward_gives_no_gradient_as_torch():
    """torch's 0-norm is recorded but its backward is undefined: `.grad` stays None and
    autograd.grad calls the input unused; torch.func.grad gives zeros."""
    for fn in (lambda lib, x: lib.norm(x, 0, 1), lambda lib, x: lib.linalg.vector_norm(x, 0),
               lambda lib, x: x.norm(p=0), lambda lib, x: lib.norm(x, 0) + x.sum()):
        t, r = _zero_norm_grads(torch, fn), _zero_norm_grads(rg, fn)
        assert t[:2] == r[:2] and t[4] == r[4]
        for a, b in zip(t[2:4] + t[5:], r[2:4] + r[5:]):
            _same(a, b)


def test_pdist_and_cdist_at_p0_give_zero_gradients_as_torch():
    """Unlike the 0-norm, torch's pdist and cdist at p = 0 have a backward: zeros, not None."""
    xn = np.random.default_rng(3).standard_normal((4, 3))
    xn[1, 2] = xn[0, 2]
    got = []
    for lib in (torch, rg):
        x, y = lib.tensor(xn, requires_grad=True), lib.tensor(xn[:3] + 1, requires_grad=True)
        d = lib.nn.functional.pdist(x, 0)
        (gx,) = lib.autograd.grad(d.sum(), x)
        c = lib.cdist(x, y, 0)
        cx, cy = lib.autograd.grad(c.sum(), (x, y))
        got.append((d, gx, c, cx, cy))
    for a, b in zip(*got):
        _same(a, b)


# ------------------------------------------------------------------ Tensor._base, _is_view

def _base_facts(lib) -> dict:
    a = lib.arange(12.0)
    v = a.view(3, 4)
    p = lib.ones(3, requires_grad=True)
    y = p * 2
    b = a.view(lib.int32)
    c = lib.ones(2, 3)
    c.t_()  # an in-place view op: c is a view of its former self, which _base never names
    return {
        "t_": (c._base, c._is_view(), c[0]._base is c, c.t()._base is c),
        "a": (a._base, a._is_view()), "v": (v._base is a, v._is_view()),
        "view_of_view": (v[1]._base is a, v.t()[0]._base is a),
        "reshape": a.reshape(2, 6)._base is a, "strided_reshape": v.t().reshape(12)._base,
        "flatten_1d": (a.flatten() is a, v.flatten()._base is a, v.t().flatten()._base),
        "copies": (a.clone()._base, (a + 1)._base, a[[0, 1]]._base, a[a > 3]._base,
                   a.detach()._base, v.detach()._is_view()),
        "pieces": (a.split(4)[0]._base is a, a.unbind(0)[0]._base is a,
                   v.diagonal()._base is a, a[:1].expand(3)._base is a,
                   a.as_strided((2, 2), (1, 2))._base is a, a.unfold(0, 3, 2)._base is a),
        "inplace": v.mul_(1)._base is a,
        "leaf": (p.view(3)._base is p, p._is_view(), y[:2]._base is y),
        "dtype_view": (b._base, b._is_view()),
    }


def test_base_and_is_view_match_torch():
    t, r = _base_facts(torch), _base_facts(rg)
    assert t == r


# ------------------------------------------------------------------ Tensor.as_strided_

def _as_strided_inplace(lib) -> list:
    out = []
    a = lib.arange(12.0)
    r = a.as_strided_((3, 3), (3, 1), 1)
    out += [r is a, tuple(a.shape), a.tolist(), a._base, a[1]._base is a]
    b = lib.arange(12.0)
    v = b.view(3, 4)
    v.as_strided_((2, 2), (4, 1), 2)
    v.mul_(10)  # writes through to b
    out += [v.tolist(), v._base is b, b.tolist()]
    x = lib.arange(6.0, dtype=lib.float64, requires_grad=True)
    y = x * 1
    z = y.as_strided_((2, 2), (1, 2), 1)
    (z * lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64)).sum().backward()
    out += [z is y, z.grad_fn is not None, z.tolist(), x.grad.tolist()]
    x = lib.arange(6.0, dtype=lib.float64, requires_grad=True)
    y = x * 1
    w = y.view(2, 3)
    w.as_strided_((2, 2), (1, 2), 1)
    w.mul_(2)  # through the strided view into y
    (y * lib.arange(6.0, dtype=lib.float64)).sum().backward()
    out += [w.tolist(), y.tolist(), x.grad.tolist()]
    return out


def test_as_strided_inplace_matches_torch():
    assert _as_strided_inplace(torch) == _as_strided_inplace(rg)


def test_as_strided_inplace_refusals_match_torch():
    for lib in (torch, rg):
        with pytest.raises(RuntimeError):
            lib.arange(6.0, requires_grad=True).as_strided_((2,), (1,))
        for size, stride, offset in (((3, 3), (3, 1), 4), ((2,), (1, 1), 0), ((2,), (-1,), 0),
                                     ((2,), (1,), -1)):
            with pytest.raises(RuntimeError):
                lib.arange(12.0).as_strided_(size, stride, offset)


# ------------------------------------------------------------------ topk(sorted=False)

def test_topk_unsorted_order_matches_torch_cpu():
    """torch's CPU order with sorted=False: a partial sort (sorted) where k * 64 <= n, else
    the order libstdc++'s nth_element leaves; values, indices and the values' gradient."""
    rng = np.random.default_rng(0)
    cases = [((10,), 3, -1), ((100,), 50, -1), ((1000,), 10, -1), ((1000,), 300, -1),
             ((20, 7), 5, 0), ((3, 40), 40, 1), ((4, 30), 7, -1)]
    for shape, k, dim in cases:
        for largest in (True, False):
            x = rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float64)
            if shape == (4, 30):
                x = rng.integers(0, 4, shape).astype(np.float64)  # ties
                x[0, 3] = np.nan
            got = []
            for lib in (torch, rg):
                xt = lib.tensor(x, requires_grad=True)
                v, i = xt.topk(k, dim, largest=largest, sorted=False)
                (v * lib.arange(float(v.numel()), dtype=lib.float64).reshape(v.shape)).sum() \
                    .backward()
                got.append((v, i, xt.grad))
            for a, b in zip(*got):
                _same(a, b, f"{shape} {k} {dim} {largest}")


# ------------------------------------------------------- in-place writes into views in vmap

def _vmap_view_writes(lib) -> list:
    def mul_col(x):
        y = x.clone()
        y[..., 0].mul_(2)
        return y

    def add_flat(x):
        y = x.clone()
        y.view(-1).add_(1)
        return y

    def view_of_view(x):
        y = x.clone()
        y.view(-1)[2:5].sin_()
        return y

    def root_with_view(x):
        y = x.clone()
        v = y[1]
        y.mul_(3)
        return v * 1 + y.sum()

    def augmented(x):
        y = x.clone()
        y[:, 1] += x[:, 0]
        d = y.diagonal()
        d.add_(x[0])
        return y.exp()

    xs = lib.tensor(np.arange(18.0).reshape(2, 3, 3) / 7)
    out = []
    for f in (mul_col, add_flat, view_of_view, root_with_view, augmented):
        out.append(lib.func.vmap(f)(xs))
        out.append(lib.func.vmap(lib.func.grad(lambda v, f=f: f(v).sum()))(xs))
        out.append(lib.func.jvp(f, (xs[0],), (lib.ones_like(xs[0]),))[1])
        out.append(lib.func.vmap(lib.func.vmap(f))(xs[None].expand(2, 2, 3, 3).clone()))
        xg = xs.clone().requires_grad_(True)
        lib.func.vmap(f)(xg).pow(2).sum().backward()
        out.append(xg.grad)
    return out


def test_inplace_writes_into_views_inside_vmap_and_jvp_match_torch():
    for a, b in zip(_vmap_view_writes(torch), _vmap_view_writes(rg)):
        _same(a, b)


def test_inplace_write_into_a_view_of_an_unbatched_tensor_is_refused_as_torch():
    def f(lib):
        def g(x):
            y = lib.zeros(3, 3, dtype=x.dtype)
            y[0].add_(x[0])
            return y
        return g
    for lib in (torch, rg):
        with pytest.raises(RuntimeError):
            lib.func.vmap(f(lib))(lib.ones(2, 3, 3, dtype=lib.float64))


# ------------------------------------------------------------------ whole programs

def _copy_weights(src, dst) -> None:
    dst.load_state_dict({k: rg.tensor(v.detach().numpy()) for k, v in src.state_dict().items()})


def _prelu_mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.PReLU(6, init=0.2), nn.Linear(6, 3),
                         nn.PReLU()).double()


def _prelu_twins():
    """The PReLU MLP in torch and in retrograd, with the same (torch-drawn) weights."""
    torch.manual_seed(0)
    tm, rm = _prelu_mlp(torch), _prelu_mlp(rg)
    _copy_weights(tm, rm)
    return tm, rm


def test_prelu_mlp_training_steps_match_torch():
    """ReLU feeds PReLU exact zeros: the gradients there are torch's (negative side)."""
    tm, rm = _prelu_twins()
    x = np.random.default_rng(1).standard_normal((8, 4))
    y = np.random.default_rng(2).standard_normal((8, 3))
    losses = []
    for lib, m in ((torch, tm), (rg, rm)):
        opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        row = []
        for _ in range(3):
            opt.zero_grad()
            loss = lib.nn.functional.mse_loss(m(lib.tensor(x)), lib.tensor(y))
            loss.backward()
            opt.step()
            row.append(loss.item())
        losses.append((row, [p.detach() for p in m.parameters()]))
    np.testing.assert_allclose(losses[1][0], losses[0][0], rtol=1e-12)
    for a, b in zip(losses[0][1], losses[1][1]):
        _same(a, b)


def test_prelu_gradient_penalty_matches_torch():
    """A WGAN-GP style penalty (a gradient of the input gradient) through PReLU at 0."""
    tm, rm = _prelu_twins()
    x = np.random.default_rng(3).standard_normal((5, 4))
    grads = []
    for lib, m in ((torch, tm), (rg, rm)):
        xi = lib.tensor(x, requires_grad=True)
        g, = lib.autograd.grad(m(xi).sum(), xi, create_graph=True)
        ((g.norm(2, dim=1) - 1) ** 2).mean().backward()
        grads.append([p.grad for p in m.parameters()])
    for a, b in zip(*grads):
        _same(a, b)


def test_per_sample_grads_with_inplace_positional_encoding_match_torch():
    """vmap(grad) of a loss whose features are written in place into views of a clone."""
    rng = np.random.default_rng(4)
    xs, ws = rng.standard_normal((6, 5, 4)), rng.standard_normal((4, 2))
    res = []
    for lib in (torch, rg):
        pos = lib.arange(5.0, dtype=lib.float64)[:, None]

        def loss(w, x, lib=lib, pos=pos):
            h = x.clone()
            h[:, 0::2] += lib.sin(pos)
            h[:, 1::2].mul_(lib.cos(pos))
            return lib.tanh(h @ w).pow(2).mean()

        res.append(lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0))(lib.tensor(ws),
                                                                            lib.tensor(xs)))
    _same(res[0], res[1])


def test_as_strided_offset_of_a_view_counts_from_its_base_as_torch():
    """torch's storage_offset is the storage's (the base's), not the view's: an explicit one
    counts from the base's first element, None keeps the view's own."""
    got = []
    for lib in (torch, rg):
        y = lib.arange(12.0)
        w, v = y[2:], y.view(3, 4)[1:]
        z = lib.arange(12.0)[4:]
        z.as_strided_((2, 2), (1, 2), 5)
        got.append([w.as_strided((2,), (1,)).tolist(), w.as_strided((2,), (1,), 3).tolist(),
                    v.as_strided((2, 2), (4, 1), 5).tolist(), z.tolist()])
    assert got[0] == got[1]
