"""Gaps found by porting real-style PyTorch programs (NeRF, style transfer, capsules,
CTC speech, detection, metrics, training utilities, distributions) to retrograd: each
case runs under torch and retrograd with the same numbers and compares."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg

LIBS = (torch, rg)


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _close(a, b, tol=1e-12):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape
    assert str(a.dtype) == str(b.dtype)
    np.testing.assert_allclose(b, a, rtol=tol, atol=tol)


def _set(L, module, seed=0):
    g = np.random.default_rng(seed)
    with L.no_grad():
        for _, p in module.named_parameters():
            p.copy_(L.tensor(g.standard_normal(tuple(p.shape)) * 0.3, dtype=p.dtype))


# --- torch._foreach_*: EMA of weights (timm's ModelEmaV3), fused optimizers ---------

def _lists(L):
    g = np.random.default_rng(0)
    a = [L.tensor(g.standard_normal((2, 3))), L.tensor(g.standard_normal(4))]
    b = [L.tensor(g.standard_normal((2, 3))), L.tensor(g.standard_normal(4))]
    c = [L.tensor(g.random((2, 3)) + 0.5), L.tensor(g.random(4) + 0.5)]
    return a, b, c


FOREACH_CASES = {
    "mul_scalar": lambda L, a, b, c: L._foreach_mul(a, 0.9),
    "mul_list": lambda L, a, b, c: L._foreach_mul(a, b),
    "mul_scalars": lambda L, a, b, c: L._foreach_mul(a, [2.0, -3.0]),
    "mul_tensor": lambda L, a, b, c: L._foreach_mul(a, L.tensor(3.0, dtype=L.float64)),
    "add_alpha": lambda L, a, b, c: L._foreach_add(a, b, alpha=0.5),
    "sub_alpha": lambda L, a, b, c: L._foreach_sub(a, b, alpha=2),
    "div": lambda L, a, b, c: L._foreach_div(a, c),
    "pow": lambda L, a, b, c: L._foreach_pow(c, 2.5),
    "pow_scalar_base": lambda L, a, b, c: L._foreach_pow(2.0, a),
    "maximum": lambda L, a, b, c: L._foreach_maximum(a, b),
    "clamp_min": lambda L, a, b, c: L._foreach_clamp_min(a, 0.1),
    "lerp": lambda L, a, b, c: L._foreach_lerp(a, b, 0.25),
    "lerp_scalars": lambda L, a, b, c: L._foreach_lerp(a, b, [0.25, 0.75]),
    "lerp_tensors": lambda L, a, b, c: L._foreach_lerp(a, b, c),
    "addcmul": lambda L, a, b, c: L._foreach_addcmul(a, b, c, 0.5),
    "addcdiv_scalars": lambda L, a, b, c: L._foreach_addcdiv(a, b, c, [0.5, 2.0]),
    "sqrt": lambda L, a, b, c: L._foreach_sqrt(c),
    "exp": lambda L, a, b, c: L._foreach_exp(a),
    "neg": lambda L, a, b, c: L._foreach_neg(a),
    "norm": lambda L, a, b, c: L._foreach_norm(a),
    "norm1": lambda L, a, b, c: L._foreach_norm(a, 1),
    "max": lambda L, a, b, c: L._foreach_max(a),
}


@pytest.mark.parametrize("case", sorted(FOREACH_CASES))
def test_foreach_out_of_place(case):
    res = []
    for L in LIBS:
        a, b, c = _lists(L)
        out = FOREACH_CASES[case](L, a, b, c)
        assert isinstance(out, tuple)
        res.append(out)
    assert len(res[0]) == len(res[1])
    for x, y in zip(*res):
        _close(x, y)


def test_foreach_inplace_ema():
    res = []
    for L in LIBS:
        a, b, c = _lists(L)
        ema = [t.clone() for t in a]
        ema2 = [t.clone() for t in a]
        for _ in range(3):
            r = L._foreach_mul_(ema, 0.9)
            assert r is ema
            L._foreach_add_(ema, b, alpha=0.1)
            L._foreach_lerp_(ema2, b, 0.1)
            L._foreach_addcmul_(ema2, a, c, value=0.01)
            L._foreach_maximum_(ema2, a)
            L._foreach_sqrt_(c)
        L._foreach_copy_(a, ema)
        L._foreach_zero_(b)
        res.append(ema + ema2 + a + b + c)
    for x, y in zip(*res):
        _close(x, y)


def test_foreach_gradients():
    res = []
    for L in LIBS:
        a, b, _ = _lists(L)
        for t in a + b:
            t.requires_grad_()
        out = L._foreach_lerp(L._foreach_mul(a, b), b, 0.3)
        sum(o.sum() for o in L._foreach_tanh(out)).backward()
        res.append([t.grad for t in a + b])
    for x, y in zip(*res):
        _close(x, y)


@pytest.mark.parametrize("bad", ["empty", "lengths", "leaf", "int_target"])
def test_foreach_errors(bad):
    for L in LIBS:
        a, b, _ = _lists(L)
        with pytest.raises(RuntimeError):
            if bad == "empty":
                L._foreach_mul_([], 2.0)
            elif bad == "lengths":
                L._foreach_add(a, b[:1])
            elif bad == "leaf":
                L._foreach_mul_([a[0].requires_grad_()], 2.0)
            else:
                L._foreach_add_([L.ones(2, dtype=L.int64)], 0.5)


# --- a parametrization runs once per forward (spectral_norm's power iteration) ------

def test_linear_reads_parametrized_weight_once():
    counts = []
    for L in LIBS:
        n = [0]

        class Count(L.nn.Module):
            def forward(self, w, n=n):
                n[0] += 1
                return w * 2

        lin = L.nn.Linear(3, 2)
        L.nn.utils.parametrize.register_parametrization(lin, "weight", Count())
        L.nn.utils.parametrize.register_parametrization(lin, "bias", Count())
        n[0] = 0  # (registering runs it once)
        lin(L.ones(4, 3))
        counts.append(n[0])
    assert counts[0] == counts[1] == 2


def test_spectral_norm_linear_in_model():
    res = []
    g = np.random.default_rng(3)
    x, u, v = g.standard_normal((5, 6)), g.standard_normal(6), g.standard_normal(6)
    for L in LIBS:
        lin = L.nn.utils.parametrizations.spectral_norm(L.nn.Linear(6, 6).double(),
                                                        n_power_iterations=1)
        _set(L, lin)
        with L.no_grad():
            lin.parametrizations.weight[0]._u.copy_(L.tensor(u))
            lin.parametrizations.weight[0]._v.copy_(L.tensor(v))
        out = [lin(L.tensor(x)) for _ in range(3)]
        res.append(out + [lin.parametrizations.weight[0]._u])
    for a, b in zip(*res):
        _close(a, b)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_parametrized_rnn_weights(kind):
    g = np.random.default_rng(4)
    x = g.standard_normal((5, 2, 3))
    res = []
    for L in LIBS:
        m = getattr(L.nn, kind)(3, 4, num_layers=2, bidirectional=True).double()
        _set(L, m)
        L.nn.utils.parametrizations.weight_norm(m, "weight_hh_l0")
        L.nn.utils.parametrizations.weight_norm(m, "weight_ih_l1_reverse")
        L.nn.utils.parametrize.register_parametrization(m, "bias_ih_l0", L.nn.Tanh())
        out, h = m(L.tensor(x))
        h = h[0] if kind == "LSTM" else h
        (out.sum() + (h ** 2).sum()).backward()
        res.append([out, h] + [p.grad for p in m.parameters()])
    for a, b in zip(*res):
        _close(a, b)


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell", "RNNCell"])
def test_spectral_norm_rnn_cell(kind):
    g = np.random.default_rng(5)
    x = g.standard_normal((2, 3))
    res = []
    for L in LIBS:
        c = getattr(L.nn, kind)(3, 4).double()
        _set(L, c)
        L.nn.utils.parametrizations.spectral_norm(c, "weight_ih")
        pm = c.parametrizations.weight_ih[0]
        with L.no_grad():
            pm._u.copy_(L.tensor(np.random.default_rng(6).standard_normal(pm._u.shape[0])))
            pm._v.copy_(L.tensor(np.random.default_rng(7).standard_normal(pm._v.shape[0])))
        r = c(L.tensor(x))
        r = list(r) if isinstance(r, tuple) else [r]
        res.append(r + [pm._u])
    for a, b in zip(*res):
        _close(a, b)


# --- in-place writes into a tensor that does not require grad, of one that does ------
# (GAT's message passing: torch.zeros(N, F).index_reduce_(0, dst, msg, "mean"))

INPLACE_FROM_GRAD = {
    "scatter_reduce_amax": lambda L, x, y: x.scatter_reduce_(
        1, L.tensor([[0, 0], [2, 3], [1, 0]]), y[:, :2], "amax", include_self=False),
    "scatter_reduce_prod": lambda L, x, y: x.scatter_reduce_(
        1, L.tensor([[0, 0], [2, 3], [1, 0]]), y[:, :2], "prod"),
    "scatter_reduce_mean": lambda L, x, y: x.scatter_reduce_(
        1, L.tensor([[0, 0], [2, 3], [1, 0]]), y[:, :2], "mean"),
    "index_reduce_mean": lambda L, x, y: x.index_reduce_(
        1, L.tensor([0, 2, 0, 1]), y, "mean", include_self=False),
    "index_reduce_amin": lambda L, x, y: x.index_reduce_(1, L.tensor([0, 2, 0, 1]), y, "amin"),
    "index_reduce_prod": lambda L, x, y: x.index_reduce_(1, L.tensor([0, 2, 0, 1]), y, "prod"),
    "float_power_": lambda L, x, y: x.float_power_(y),
}


@pytest.mark.parametrize("case", sorted(INPLACE_FROM_GRAD))
def test_inplace_write_of_a_tensor_requiring_grad(case):
    g = np.random.default_rng(8)
    a, b = g.random((3, 4)) + 0.5, g.random((3, 4)) + 0.5
    res = []
    for L in LIBS:
        x, y = L.tensor(a), L.tensor(b, requires_grad=True)
        out = INPLACE_FROM_GRAD[case](L, x, y)
        assert out is x
        (x * L.tensor(np.arange(12.0).reshape(3, 4))).sum().backward()
        res.append([x, y.grad])
    for u, v in zip(*res):
        _close(u, v)


def test_gat_style_aggregation():
    g = np.random.default_rng(9)
    edges = np.concatenate([g.integers(0, 6, (2, 15)), np.stack([np.arange(6)] * 2)], 1)
    xa, wa = g.standard_normal((6, 4)), g.standard_normal((4, 3))
    res = []
    for L in LIBS:
        src, dst = L.tensor(edges[0]), L.tensor(edges[1])
        w = L.tensor(wa, requires_grad=True)
        h = L.tensor(xa) @ w
        score = (h[src] * h[dst]).sum(-1)
        amax = L.full((6,), float("-inf"), dtype=L.float64).scatter_reduce_(
            0, dst, score, "amax")
        ex = (score - amax[dst]).exp()
        att = ex / L.zeros(6, dtype=L.float64).index_add_(0, dst, ex)[dst]
        agg = L.zeros(6, 3, dtype=L.float64).index_reduce_(
            0, dst, h[src] * att[:, None], "mean", include_self=False)
        (agg ** 2).sum().backward()
        res.append([agg, w.grad])
    for u, v in zip(*res):
        _close(u, v)


# --- error classes: PyTorch's RuntimeError for a bad index in gather/scatter/index_* -

BAD_INDEX = {
    "gather_oob": lambda L: L.gather(L.ones(2, 3), 1, L.full((2, 2), 5)),
    "gather_negative": lambda L: L.gather(L.ones(2, 3), 1, L.full((2, 2), -1)),
    "scatter_oob": lambda L: L.zeros(2, 3).scatter(1, L.full((2, 2), 5), L.ones(2, 2)),
    "scatter_add_oob": lambda L: L.zeros(2, 3).scatter_add_(1, L.full((2, 2), 5), L.ones(2, 2)),
    "scatter_reduce_oob": lambda L: L.zeros(2, 3).scatter_reduce(
        1, L.full((2, 2), 5), L.ones(2, 2), "sum"),
    "index_select_oob": lambda L: L.index_select(L.ones(2, 3), 1, L.tensor([5])),
    "index_add_oob": lambda L: L.zeros(2, 3).index_add(1, L.tensor([5]), L.ones(2, 1)),
    "gather_float_index": lambda L: L.gather(L.ones(2, 3), 1, L.zeros(2, 2)),
    "scatter_float_index": lambda L: L.zeros(2, 3).scatter(1, L.zeros(2, 2), L.ones(2, 2)),
    "index_select_float_index": lambda L: L.index_select(L.ones(2, 3), 1, L.tensor([0.0])),
    "index_add_float_index": lambda L: L.zeros(2, 3).index_add(1, L.tensor([0.0]),
                                                               L.ones(2, 1)),
    "take_along_dim_float_index": lambda L: L.take_along_dim(L.ones(2, 3), L.zeros(2, 2), 1),
    "lerp_int": lambda L: L.lerp(L.ones(2, dtype=L.int64), L.zeros(2, dtype=L.int64), 0.5),
    "lerp_mixed": lambda L: L.lerp(L.ones(2), L.zeros(2, dtype=L.float64), 0.5),
    "lerp_weight_1d": lambda L: L.lerp(L.ones(2), L.zeros(2), L.tensor([0.5, 0.2],
                                                                      dtype=L.float64)),
}


@pytest.mark.parametrize("case", sorted(BAD_INDEX))
def test_bad_index_error_class_is_torchs(case):
    with pytest.raises(Exception) as want:
        BAD_INDEX[case](torch)
    with pytest.raises(want.type):
        BAD_INDEX[case](rg)


def test_lerp_zero_d_weight_of_another_dtype():
    res = []
    for L in LIBS:
        a = L.tensor([1.0, 2.0], requires_grad=True)
        w = L.tensor(0.3, dtype=L.float64, requires_grad=True)
        r = L.lerp(a, L.zeros(2), w)
        r.sum().backward()
        x = L.ones(3)
        x.lerp_(L.zeros(3), L.tensor(1))
        res.append([r, a.grad, w.grad, x])
    for u, v in zip(*res):
        _close(u, v, 1e-7)


# --- autograd.Function: ctx.mark_dirty (an in-place custom op: relu_, add_) ----------

def _dirty_fns(L):
    class Relu_(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.clamp_(min=0)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * (x > 0).to(g.dtype)

    class AddW(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            x.add_(w * 2)
            ctx.mark_dirty(x)
            return x, w * 3

        @staticmethod
        def backward(ctx, gx, gw):
            return gx, gx * 2 + gw * 3

    class NotReturned(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    return Relu_, AddW, NotReturned


def test_function_mark_dirty():
    res = []
    for L in LIBS:
        Relu_, AddW, _ = _dirty_fns(L)
        y = L.tensor([1.0, -1.0, 2.0], requires_grad=True)
        z = y * 2
        r = Relu_.apply(z)
        assert r is z
        (r * L.tensor([1.0, 2.0, 3.0])).sum().backward()
        x, w = L.tensor([1.0, -2.0, 3.0]), L.tensor([0.5, 0.5, -0.5], requires_grad=True)
        v0 = x._version
        a, b = AddW.apply(x, w)
        assert a is x and a.requires_grad
        ((a * a).sum() + b.sum()).backward()
        with L.no_grad():
            q = L.tensor([1.0, -1.0])
            assert Relu_.apply(q) is q
        res.append([y.grad, x, w.grad, q, x._version - v0])
    for u, v in zip(*res):
        _close(u, v)


@pytest.mark.parametrize("case", ["leaf", "not_returned"])
def test_function_mark_dirty_errors(case):
    for L in LIBS:
        Relu_, _, NotReturned = _dirty_fns(L)
        with pytest.raises(RuntimeError):
            if case == "leaf":
                Relu_.apply(L.tensor([1.0, -1.0], requires_grad=True))
            else:
                NotReturned.apply(L.tensor([1.0, -1.0], requires_grad=True) * 1)


# --- complex parameters (Fourier neural operators): Module.double() keeps them complex;
# Adam, RMSprop, Adagrad, ... and LBFGS update them as (re, im) pairs, as PyTorch ------

def test_module_double_float_keep_complex_parameters():
    for L in LIBS:
        m = L.nn.Module()
        m.w = L.nn.Parameter(L.tensor([1 + 2j], dtype=L.complex64))
        m.lin = L.nn.Linear(2, 2)
        m.double()
        assert str(m.w.dtype).endswith("complex64") and str(m.lin.weight.dtype).endswith("64")
        m.float()
        assert str(m.w.dtype).endswith("complex64") and str(m.lin.weight.dtype).endswith("32")
        m.half()
        assert str(m.w.dtype).endswith("complex64") and str(m.lin.weight.dtype).endswith("16")
        assert m.w.detach().numpy()[0] == 1 + 2j


COMPLEX_OPT = [("Adam", dict(lr=0.1)), ("Adam", dict(lr=0.1, amsgrad=True, weight_decay=0.1,
                                                      maximize=True)),
               ("AdamW", dict(lr=0.1)), ("NAdam", dict(lr=0.1)), ("RAdam", dict(lr=0.1)),
               ("Adamax", dict(lr=0.1)), ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5)),
               ("Adadelta", dict(lr=1.0)), ("RMSprop", dict(lr=0.01, centered=True,
                                                            momentum=0.5)),
               ("Rprop", dict(lr=0.01)), ("ASGD", dict(lr=0.01, t0=1)),
               ("SGD", dict(lr=0.1, momentum=0.9))]


@pytest.mark.parametrize("name,kw", COMPLEX_OPT, ids=[f"{n}{i}" for i, (n, _) in
                                                      enumerate(COMPLEX_OPT)])
def test_optimizer_on_complex_parameters(name, kw):
    res = []
    for L in LIBS:
        w = L.tensor(np.array([[1 + 2j, -0.5 + 0.3j], [0.2 - 1j, 2.0 + 0.5j]]),
                     requires_grad=True)
        r = L.tensor([0.5, -1.0], dtype=L.float64, requires_grad=True)
        opt = getattr(L.optim, name)([w, r], **kw)
        for _ in range(4):
            opt.zero_grad()
            ((w.abs() ** 2).sum() + (w * (1.3 + 3j)).real.sum()
             + (w[:, 0] * r).abs().sum()).backward()
            opt.step()
        st = opt.state_dict()["state"][0]
        res.append([L.view_as_real(w.detach()), r] + [
            L.view_as_real(v) if v.is_complex() else v
            for k, v in sorted(st.items()) if k != "step" and hasattr(v, "dtype")])
    assert len(res[0]) == len(res[1])
    for u, v in zip(*res):
        _close(u, v, 1e-10)


def test_lbfgs_on_complex_parameters():
    res = []
    for L in LIBS:
        w = L.tensor(np.array([1 + 2j, -0.5 + 0.3j]), requires_grad=True)
        r = L.tensor([0.3], dtype=L.float64, requires_grad=True)
        opt = L.optim.LBFGS([w, r], lr=0.5, max_iter=5)

        def closure(w=w, r=r, opt=opt, L=L):
            opt.zero_grad()
            loss = ((w - (1 - 1j)).abs() ** 2).sum() + (w ** 2).real.sum() * 0.1 \
                + ((w[0] * r) ** 2).real.sum() + r.pow(2).sum()
            loss.backward()
            return loss

        for _ in range(2):
            opt.step(closure)
        res.append([L.view_as_real(w.detach()), r])
    for u, v in zip(*res):
        _close(u, v, 1e-9)


@pytest.mark.parametrize("name", ["Adafactor", "SparseAdam", "Muon"])
def test_optimizers_refusing_complex_parameters(name):
    for L in LIBS:
        w = L.tensor(np.array([[1 + 2j, -0.5 + 0.3j]]), requires_grad=True)
        with pytest.raises((RuntimeError, ValueError)):
            opt = getattr(L.optim, name)([w], lr=0.1)
            (w.abs() ** 2).sum().backward()
            opt.step()


# --- complex tensors have no order: refused with PyTorch's error class ---------------

COMPLEX_ORDER = {
    "gt": lambda L, x: x > 0,
    "lt_tensors": lambda L, x: x < x,
    "ge": lambda L, x: L.ge(x, 1),
    "le_real_left": lambda L, x: L.ones(2) <= x,
    "cummax": lambda L, x: L.cummax(x, 0),
    "cummin": lambda L, x: L.cummin(x, 0),
    "sort": lambda L, x: L.sort(x),
    "topk": lambda L, x: x.topk(1),
    "median": lambda L, x: x.median(),
    "clamp": lambda L, x: L.clamp(x, 0),
    "relu": lambda L, x: L.relu(x),
    "maximum": lambda L, x: L.maximum(x, x),
    "floor": lambda L, x: L.floor(x),
    "ceil": lambda L, x: L.ceil(x),
}


@pytest.mark.parametrize("case", sorted(COMPLEX_ORDER))
def test_complex_order_refused_as_torch(case):
    with pytest.raises(Exception) as want:
        COMPLEX_ORDER[case](torch, torch.tensor([1 + 1j, 2 - 1j]))
    with pytest.raises(want.type):
        COMPLEX_ORDER[case](rg, rg.tensor([1 + 1j, 2 - 1j]))


def test_complex_equality_still_works():
    for L in LIBS:
        x = L.tensor([1 + 1j, 2 - 1j])
        assert (x == x).all() and not (x != x).any()


# --- an infinite upstream gradient (sqrt'(0)) through clamp and max pooling: 0 where the
# input does not reach the output, as PyTorch's, not NaN (batch-hard triplet distances:
# (a2 + b2 - 2ab).clamp(min=0).sqrt()) ---------------------------------------------------

INF_UPSTREAM = {
    "clamp_min": lambda L, x: x.clamp(min=0.0),
    "clamp_both": lambda L, x: x.clamp(0.0, 2.0) * (2.0 - x.clamp(0.0, 2.0)),
    "clamp_": lambda L, x: x.clone().clamp_(min=0.0),
    "clip": lambda L, x: L.clip(x, 0.0, None),
    "clamp_max_of_neg": lambda L, x: -(-x).clamp(max=0.0),
    "max_pool1d": lambda L, x: L.nn.functional.max_pool1d(
        L.stack([x, L.zeros_like(x)], -1).view(1, 5, 2), 2).view(5),
    "max_pool1d_overlap": lambda L, x: L.nn.functional.max_pool1d(x.view(1, 1, 5), 2, 1),
    "max_pool2d": lambda L, x: L.nn.functional.max_pool2d(
        L.cat([x, L.zeros(1, dtype=L.float64)]).view(1, 1, 2, 3), (2, 1)),
    "MaxPool2d_square": lambda L, x: L.nn.MaxPool2d(2)(
        L.cat([x[:4], x[:4] - 1]).view(1, 1, 2, 4)),
}


@pytest.mark.parametrize("case", sorted(INF_UPSTREAM))
def test_infinite_upstream_gradient_is_masked_not_nan(case):
    res = []
    for L in LIBS:
        x = L.tensor([-1.0, 0.0, 1.0, 2.0, 3.0], requires_grad=True)
        L.sqrt(INF_UPSTREAM[case](L, x)).sum().backward()
        res.append([x.grad])
    np.testing.assert_array_equal(_np(res[1][0]), _np(res[0][0]))


def test_clamp_keeps_the_sign_of_zero():
    res = []
    for L in LIBS:
        x = L.tensor([-0.0, 0.0, float("nan"), 1.0, -1.0])
        res.append([np.signbit(_np(v)) for v in (x.clamp(min=0.0), x.clamp(max=-0.0),
                                                 x.clamp(-0.5, 0.5))])
    for u, v in zip(*res):
        np.testing.assert_array_equal(u, v)


WHOLE_MAX = {
    "max_inf_upstream": lambda L, x: L.sqrt(L.stack([x[:1], L.zeros(1, dtype=L.float64)]).max()),
    "min_inf_upstream": lambda L, x: L.sqrt(-L.stack([-x[1:2], L.zeros(1, dtype=L.float64)]).min()),
    "max_with_nan": lambda L, x: L.cat([x, L.tensor([float("nan")], dtype=L.float64)]).max(),
    "amax_with_nan": lambda L, x: L.cat([x, L.tensor([float("nan")], dtype=L.float64)]).amax(),
    "amax_dim_inf_upstream": lambda L, x: L.sqrt(L.stack([x, L.zeros_like(x)]).amax(0)).sum(),
    "max_ties": lambda L, x: L.cat([x, x]).max(),
}


@pytest.mark.parametrize("case", sorted(WHOLE_MAX))
def test_whole_tensor_max_gradient_as_torch(case):
    res = []
    for L in LIBS:
        x = L.tensor([-1.0, 0.0, 1.0, 3.0, 3.0], requires_grad=True)
        WHOLE_MAX[case](L, x).backward()
        res.append(x.grad)
    np.testing.assert_array_equal(_np(res[1]), _np(res[0]))
