"""Unit-stride convolution one sample at a time (ops conv_unit / conv_unit_bias, the path of
host float32/float64 inputs large enough for the column path): values and gradients against
PyTorch for 1-3 spatial dimensions, paddings ('same' included), dilation, groups, with and
without bias; double backward; jvp; vmap in one call; rg.jit; thread pieces; inf/nan."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
from retrograd import batching, ops
from retrograd import threads as _threads

F = rg.nn.functional
rng = np.random.default_rng(0)

CASES = [  # (nd, input shape, weight shape, kwargs): each large enough for the column path
    (1, (3, 8, 4096), (6, 8, 3), dict(padding=1)),
    (1, (2, 8, 8192), (6, 4, 3), dict(padding="same", dilation=2, groups=2)),
    (2, (3, 8, 40, 40), (6, 8, 3, 3), dict(padding=1)),
    (2, (2, 8, 40, 48), (4, 2, 3, 5), dict(padding="same", groups=4)),
    (2, (3, 6, 44, 44), (6, 6, 3, 3), dict(padding=(2, 1), dilation=(1, 2))),
    (2, (3, 4, 48, 48), (5, 4, 3, 4), dict(padding="same")),  # uneven 'same': pad first
    (3, (1, 4, 8, 40, 40), (3, 4, 3, 3, 3), dict(padding=(1, 1, 1))),
    (3, (2, 4, 10, 40, 40), (4, 2, 3, 3, 3), dict(padding=(2, 1, 1), dilation=(2, 1, 1),
                                                  groups=2)),
]
TOL = {"float32": dict(rtol=2e-4, atol=2e-4), "float64": dict(rtol=1e-10, atol=1e-10)}


def _fns(nd):
    return getattr(F, f"conv{nd}d"), getattr(TF, f"conv{nd}d")


def _arrays(xs, ws, dtype):
    return [rng.standard_normal(s).astype(dtype) for s in (xs, ws, ws[:1])]


def _op_of(t):
    return t.grad_fn.op.name if hasattr(t.grad_fn, "op") else None


def _close(a, b, dtype):
    """Equal to rounding: atol relative to the largest reference value (sums of many
    products cancel)."""
    b = b.detach()
    tol = dict(TOL[dtype])
    tol["atol"] *= max(1.0, float(b.abs().max())) if b.numel() else 1.0
    torch.testing.assert_close(torch.as_tensor(np.asarray(a)), b, **tol)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_values_and_gradients_match_torch(case, dtype, bias):
    nd, xs, ws, kw = CASES[case]
    f, tf = _fns(nd)
    x, w, b = _arrays(xs, ws, dtype)
    X, W, B = (rg.tensor(a, requires_grad=True) for a in (x, w, b))
    tX, tW, tB = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    y = f(X, W, B if bias else None, **kw)
    ty = tf(tX, tW, tB if bias else None, **kw)
    assert _op_of(y) == ("conv_unit_bias" if bias else "conv_unit")
    _close(y.detach().numpy(), ty, dtype)
    g = rng.standard_normal(ty.shape).astype(dtype)
    y.backward(rg.tensor(g))
    ty.backward(torch.tensor(g))
    _close(X.grad.numpy(), tX.grad, dtype)
    _close(W.grad.numpy(), tW.grad, dtype)
    if bias:
        _close(B.grad.numpy(), tB.grad, dtype)


@pytest.mark.parametrize("needs", ["w", "wb", "x", "xb", "b"])
def test_each_subset_of_gradients_matches_torch(needs):
    """The weight's rule runs alone when x needs no gradient (a network's first layer), and
    the bias's when only it does."""
    nd, xs, ws, kw = CASES[3]
    f, tf = _fns(nd)
    x, w, b = _arrays(xs, ws, "float64")
    ours = [rg.tensor(a, requires_grad=k in needs) for a, k in zip((x, w, b), "xwb")]
    theirs = [torch.tensor(a, requires_grad=k in needs) for a, k in zip((x, w, b), "xwb")]
    y, ty = f(*ours, **kw), tf(*theirs, **kw)
    assert _op_of(y) == "conv_unit_bias"
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    for a, t in zip(ours, theirs):
        assert (a.grad is None) == (t.grad is None)
        if t.grad is not None:
            _close(a.grad.numpy(), t.grad, "float64")


def test_a_repeated_backward_and_a_broadcast_cotangent():
    """Two backwards through one graph (the stash must not hand the second the first's
    parameter gradients) and sum()'s broadcast cotangent."""
    nd, xs, ws, kw = CASES[2]
    f, tf = _fns(nd)
    x, w, b = _arrays(xs, ws, "float64")
    X, W, B = (rg.tensor(a, requires_grad=True) for a in (x, w, b))
    tX, tW, tB = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    y, ty = f(X, W, B, **kw), tf(tX, tW, tB, **kw)
    y.sum().backward(retain_graph=True)
    ty.sum().backward(retain_graph=True)
    (y * 2).sum().backward()
    (ty * 2).sum().backward()
    for a, t in zip((X, W, B), (tX, tW, tB)):
        _close(a.grad.numpy(), t.grad, "float64")


def test_non_contiguous_input_and_weight():
    x = rng.standard_normal((40, 8, 3, 40)).transpose(2, 1, 0, 3)  # (3, 8, 40, 40), strided
    w = rng.standard_normal((3, 3, 8, 6)).transpose(3, 2, 0, 1)
    b = rng.standard_normal(6)
    X, W, B = (rg.tensor(a, requires_grad=True) for a in (x, w, b))
    tX, tW, tB = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    y, ty = F.conv2d(X, W, B, padding=1), TF.conv2d(tX, tW, tB, padding=1)
    assert _op_of(y) == "conv_unit_bias"
    _close(y.detach().numpy(), ty, "float64")
    g = rng.standard_normal(ty.shape)
    y.backward(rg.tensor(g))
    ty.backward(torch.tensor(g))
    for a, t in zip((X, W, B), (tX, tW, tB)):
        _close(a.grad.numpy(), t.grad, "float64")


@pytest.mark.parametrize("case", [0, 3, 6])
def test_double_backward_matches_torch(case):
    nd, xs, ws, kw = CASES[case]
    f, tf = _fns(nd)
    x, w, b = _arrays(xs, ws, "float64")
    X, W, B = (rg.tensor(a, requires_grad=True) for a in (x, w, b))
    tX, tW, tB = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    y, ty = f(X, W, B, **kw), tf(tX, tW, tB, **kw)
    gx, gw, gb = rg.autograd.grad((y * y).sum(), [X, W, B], create_graph=True)
    tgx, tgw, tgb = torch.autograd.grad((ty * ty).sum(), [tX, tW, tB], create_graph=True)
    u, v = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
    s = (gx * rg.tensor(u)).sum() + (gw * rg.tensor(v)).sum() + (gb * gb).sum()
    ts = (tgx * torch.tensor(u)).sum() + (tgw * torch.tensor(v)).sum() + (tgb * tgb).sum()
    for a, t in zip(rg.autograd.grad(s, [X, W, B]), torch.autograd.grad(ts, [tX, tW, tB])):
        _close(a.numpy(), t, "float64")


@pytest.mark.parametrize("case", [1, 3, 7])
def test_jvp_matches_torch_func_jvp(case):
    nd, xs, ws, kw = CASES[case]
    f, tf = _fns(nd)
    prim = _arrays(xs, ws, "float64")
    tang = _arrays(xs, ws, "float64")
    out, tout = rg.func.jvp(lambda a, c, d: f(a, c, d, **kw), tuple(map(rg.tensor, prim)),
                            tuple(map(rg.tensor, tang)))
    ref, tref = torch.func.jvp(lambda a, c, d: tf(a, c, d, **kw),
                               tuple(map(torch.tensor, prim)), tuple(map(torch.tensor, tang)))
    _close(out.numpy(), ref, "float64")
    _close(tout.numpy(), tref, "float64")


@pytest.mark.parametrize("which", ["x", "w", "xw", "b", "xwb"])
def test_vmap_equals_a_loop_in_one_call(which, monkeypatch):
    """vmap over the input, the weight, both or the bias: one batched convolution, never the
    per-element fallback loop."""
    looped = []
    loop = batching._loop
    monkeypatch.setattr(batching, "_loop", lambda m, op, *a: looped.append(op.name) or
                        loop(m, op, *a))
    nd, xs, ws, kw = CASES[3]
    f, _ = _fns(nd)
    n = 3
    x, w, b = _arrays(xs, ws, "float64")
    args = [rng.standard_normal((n,) + a.shape) if k in which else a
            for a, k in zip((x, w, b), "xwb")]
    dims = tuple(0 if k in which else None for k in "xwb")
    got = rg.func.vmap(lambda a, c, d: f(a, c, d, **kw), in_dims=dims)(*map(rg.tensor, args))
    for i in range(n):
        one = [rg.tensor(a[i] if k in which else a) for a, k in zip(args, "xwb")]
        want = f(*one, **kw)
        np.testing.assert_allclose(got.numpy()[i], want.numpy(), rtol=1e-10, atol=1e-10)
    assert not looped


def test_grad_of_vmap_matches_torch():
    nd, xs, ws, kw = CASES[2]
    f, tf = _fns(nd)
    x, w = rng.standard_normal((2,) + xs), rng.standard_normal(ws)
    X, W = rg.tensor(x), rg.tensor(w, requires_grad=True)
    tX, tW = torch.tensor(x), torch.tensor(w, requires_grad=True)
    y = rg.func.vmap(lambda a: f(a, W, **kw))(X)
    ty = torch.func.vmap(lambda a: tf(a, tW, **kw))(tX)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    _close(W.grad.numpy(), tW.grad, "float64")


def test_training_step_under_jit_matches_eager():
    """A first layer (x needs no gradient: the weight's rule alone) and a second (the x rule
    hands the parameters' gradients over), traced and replayed."""
    def train(use_jit):
        rg.manual_seed(0)
        model = rg.nn.Sequential(rg.nn.Conv2d(4, 8, 3, padding=1), rg.nn.ReLU(),
                                 rg.nn.Conv2d(8, 6, 3, padding=1, groups=2))
        opt = rg.optim.SGD(model.parameters(), lr=1e-3)

        def step(x):
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        run = rg.jit(step) if use_jit else step
        r = np.random.default_rng(1)
        losses = [run(rg.tensor(r.standard_normal((3, 4, 40, 40)).astype(np.float32))).item()
                  for _ in range(3)]
        return model, losses

    m_eager, l_eager = train(False)
    m_jit, l_jit = train(True)
    np.testing.assert_allclose(l_jit, l_eager, rtol=1e-5)
    for p, q in zip(m_jit.parameters(), m_eager.parameters(), strict=True):
        np.testing.assert_allclose(p.data, q.data, rtol=1e-5, atol=1e-6)


def test_samples_split_over_threads_match_one_piece(monkeypatch):
    nd, xs, ws, kw = CASES[3]
    x, w, b = _arrays((5,) + xs[1:], ws, "float64")
    X, W, B = (rg.tensor(a, requires_grad=True) for a in (x, w, b))
    tX, tW, tB = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    before = _threads.num_threads()
    monkeypatch.setattr(_threads, "_MIN_WORK", 1.0)
    _threads.set_num_threads(3)
    try:
        y = F.conv2d(X, W, B, **kw)
        (y * y).sum().backward()
    finally:
        _threads.set_num_threads(before)
    ty = TF.conv2d(tX, tW, tB, **kw)
    (ty * ty).sum().backward()
    _close(y.detach().numpy(), ty, "float64")
    for a, t in zip((X, W, B), (tX, tW, tB)):
        _close(a.grad.numpy(), t.grad, "float64")


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("where", ["x", "w"])
@pytest.mark.parametrize("case", [2, 3, 6])
def test_non_finite_input_or_weight_gives_torchs_gradients(case, where, bad):
    """Junk columns past each row's end meet zero cotangents: an inf there must not make a
    nan (0 * inf) in dweight (inf in x) or dx (inf in the weight) where torch has none."""
    nd, xs, ws, kw = CASES[case]
    f, tf = _fns(nd)
    x, w, b = _arrays(xs, ws, "float64")
    a = x if where == "x" else w
    a.reshape(-1)[[5, a.size // 2]] = bad
    if where == "x":  # also at the last position of a row (read by the junk columns)
        x[0, 0, ..., -1] = bad
    X, W, B = (rg.tensor(v, requires_grad=True) for v in (x, w, b))
    tX, tW, tB = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    y, ty = f(X, W, B, **kw), tf(tX, tW, tB, **kw)
    g = rng.standard_normal(ty.shape)
    y.backward(rg.tensor(g))
    ty.backward(torch.tensor(g))
    torch.testing.assert_close(torch.as_tensor(y.detach().numpy()), ty.detach(), equal_nan=True)
    for v, t in zip((X, W, B), (tX, tW, tB)):
        torch.testing.assert_close(torch.as_tensor(v.grad.numpy()), t.grad, equal_nan=True)


def test_the_op_table_holds_both_ops():
    assert ops.conv_unit.tuned and ops.conv_unit_bias.tuned
