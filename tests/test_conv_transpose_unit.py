"""Transposed convolution as one op (conv_t_unit / conv_t_unit_bias: host float32/float64
with compiled kernels on, a block of samples at a time): values and gradients against
PyTorch for 1-3 spatial dimensions, stride, padding, dilation, output_padding, groups,
with and without bias, kernels on and off; subsets of gradients; double backward; jvp;
vmap; rg.jit; thread pieces; blocks of samples; inf/NaN in the input or the weight."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
from retrograd import kernels, ops
from retrograd import threads as _threads
from retrograd.ops import windows as _windows

F = rg.nn.functional
rng = np.random.default_rng(0)
pytest.importorskip("numba")

CASES = [  # (nd, input shape, weight shape (C, O/groups, *k), kwargs)
    (1, (3, 4, 9), (4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    (1, (2, 4, 7), (4, 2, 4), dict(groups=2, dilation=2)),
    (2, (3, 6, 7, 6), (6, 4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    (2, (2, 4, 5, 6), (4, 3, 3, 2), dict(stride=(2, 3), padding=(1, 0), dilation=(1, 2),
                                         output_padding=(1, 2), groups=2)),
    (2, (2, 3, 4, 4), (3, 2, 2, 2), dict(stride=3, padding=2, dilation=3, output_padding=2)),
    (2, (2, 3, 5, 4), (3, 2, 3, 3), dict(padding=1)),  # unit stride
    (3, (2, 2, 3, 4, 3), (2, 3, 2, 2, 3), dict(stride=(1, 2, 2), padding=(0, 1, 1),
                                               output_padding=(0, 1, 0))),
]
TOL = {"float32": dict(rtol=2e-4, atol=2e-4), "float64": dict(rtol=1e-10, atol=1e-10)}


def _fns(nd):
    return getattr(F, f"conv_transpose{nd}d"), getattr(TF, f"conv_transpose{nd}d")


def _arrays(xs, ws, kw, dtype):
    o = ws[1] * kw.get("groups", 1)
    return [rng.standard_normal(s).astype(dtype) for s in (xs, ws, (o,))]


def _op_of(t):
    return t.grad_fn.op.name if hasattr(t.grad_fn, "op") else None


def _close(a, b, dtype, **kw):
    """Equal to rounding: atol relative to the largest reference value."""
    b = b.detach()
    tol = dict(TOL[dtype])
    finite = b[torch.isfinite(b)]
    tol["atol"] *= max(1.0, float(finite.abs().max())) if finite.numel() else 1.0
    torch.testing.assert_close(torch.as_tensor(np.asarray(a)), b, **tol, **kw)


def _both(f, tf, arrays, bias, kw, g=None, needs="xwb"):
    """(retrograd's output and grads, torch's, the op retrograd's output came from)."""
    ours = [rg.tensor(a, requires_grad=k in needs) for a, k in zip(arrays, "xwb")]
    theirs = [torch.tensor(a, requires_grad=k in needs) for a, k in zip(arrays, "xwb")]
    if not bias:
        ours[2] = theirs[2] = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = f(*ours, **kw)
        ty = tf(*theirs, **kw)
        if g is None:
            g = rng.standard_normal(tuple(ty.shape)).astype(arrays[0].dtype)
        y.backward(rg.tensor(g))
        ty.backward(torch.tensor(g))
    grads = [None if a is None or a.grad is None else a.grad.numpy() for a in ours]
    tgrads = [None if t is None else t.grad for t in theirs]
    return [y.detach().numpy()] + grads, [ty] + tgrads, _op_of(y)


@pytest.mark.parametrize("mode", ["numba", "numpy"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_values_and_gradients_match_torch(case, dtype, bias, mode):
    nd, xs, ws, kw = CASES[case]
    f, tf = _fns(nd)
    arrays = _arrays(xs, ws, kw, dtype)
    with kernels.use(mode, min_size=0):
        got, want, op = _both(f, tf, arrays, bias, kw)
    if mode == "numba":
        assert op == ("conv_t_unit_bias" if bias else "conv_t_unit")
    else:  # the phase ops
        assert op in ("phase_fold_bias", "phase_fold")
    for a, t in zip(got, want):
        if t is not None:
            _close(a, t, dtype)


@pytest.mark.parametrize("needs", ["w", "wb", "x", "xb", "b"])
def test_each_subset_of_gradients_matches_torch(needs):
    """The weight's rule runs alone when x needs no gradient, the bias's alone too."""
    nd, xs, ws, kw = CASES[3]
    f, tf = _fns(nd)
    arrays = _arrays(xs, ws, kw, "float64")
    with kernels.use("numba", min_size=0):
        got, want, op = _both(f, tf, arrays, True, kw, needs=needs)
    assert op == "conv_t_unit_bias"
    for a, t, k in zip(got[1:], want[1:], "xwb"):
        assert (a is None) == (t is None) == (k not in needs)
        if a is not None:
            _close(a, t, "float64")


def test_a_repeated_backward_and_a_broadcast_cotangent():
    """Two backwards through one graph (the stash must not hand the second the first's
    parameter gradients), sum()'s broadcast cotangent."""
    nd, xs, ws, kw = CASES[2]
    f, tf = _fns(nd)
    x, w, b = _arrays(xs, ws, kw, "float64")
    X, W, B = (rg.tensor(a, requires_grad=True) for a in (x, w, b))
    tX, tW, tB = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    with kernels.use("numba", min_size=0):
        y = f(X, W, B, **kw)
        assert _op_of(y) == "conv_t_unit_bias"
        y.sum().backward(retain_graph=True)
        (y * 2).sum().backward()
    ty = tf(tX, tW, tB, **kw)
    ty.sum().backward(retain_graph=True)
    (ty * 2).sum().backward()
    for a, t in zip((X, W, B), (tX, tW, tB)):
        _close(a.grad.numpy(), t.grad, "float64")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_non_contiguous_input_and_weight(dtype):
    x = rng.standard_normal((7, 6, 3, 6)).transpose(2, 1, 0, 3).astype(dtype)  # (3, 6, 7, 6)
    w = rng.standard_normal((3, 3, 6, 4)).transpose(2, 3, 0, 1).astype(dtype)  # (6, 4, 3, 3)
    b = rng.standard_normal(4).astype(dtype)
    assert not x.flags.c_contiguous and not w.flags.c_contiguous
    f, tf = _fns(2)
    kw = dict(stride=2, padding=1, output_padding=1)
    with kernels.use("numba", min_size=0):
        got, want, op = _both(f, tf, [x, w, b], True, kw)
    assert op == "conv_t_unit_bias"
    for a, t in zip(got, want):
        _close(a, t, dtype)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("where", ["x", "w"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", [0, 2, 4, 6])
def test_non_finite_input_or_weight_as_torch(case, dtype, where, bad):
    """An inf or NaN in the input or the weight: output and gradients as PyTorch's (the
    columns at frame positions off the input are dropped when the weight is not finite).
    PyTorch's float32 dx (a non-finite weight) and dweight (a non-finite input) disagree
    with its own float64 ones (its float32 kernels leave out the terms of outputs cut off
    by the padding, its float64 ones multiply them by zero): those are compared with
    PyTorch in float64, and in float32 with the phase ops' path (kernels off)."""
    nd, xs, ws, kw = CASES[case]
    f, tf = _fns(nd)
    arrays = _arrays(xs, ws, kw, dtype)
    a = arrays[0 if where == "x" else 1]
    a.reshape(-1)[[1, a.size // 2]] = bad
    with torch.no_grad():
        shape = tuple(tf(*map(torch.tensor, arrays), **kw).shape)
    g = rng.standard_normal(shape).astype(dtype)
    with kernels.use("numba", min_size=0):
        got, want, op = _both(f, tf, arrays, True, kw, g=g)
    assert op == "conv_t_unit_bias"
    with kernels.use("numpy"):
        old, _, op = _both(f, tf, arrays, True, kw, g=g)
    assert op == "phase_fold_bias"
    skip = {"x": "dw", "w": "dx"}[where] if dtype == "float32" else None
    for name, a, t, o in zip(["y", "dx", "dw", "db"], got, want, old):
        _close(a, torch.as_tensor(o) if name == skip else t, dtype, equal_nan=True)


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_non_finite_cotangent_as_torch(bad):
    nd, xs, ws, kw = CASES[2]
    f, tf = _fns(nd)
    arrays = _arrays(xs, ws, kw, "float64")
    with torch.no_grad():
        shape = tuple(tf(*map(torch.tensor, arrays), **kw).shape)
    g = rng.standard_normal(shape)
    g[0, 1, 0, 0] = g[1, 0, -1, 3] = bad
    with kernels.use("numba", min_size=0):
        got, want, op = _both(f, tf, arrays, True, kw, g=g)
    assert op == "conv_t_unit_bias"
    for a, t in zip(got, want):
        _close(a, t, "float64", equal_nan=True)


def test_blocks_of_samples_and_thread_pieces_match_one_piece(monkeypatch):
    """Samples split over threads, blocks of two samples (the last one short)."""
    nd, xs, ws, kw = CASES[3]
    f, tf = _fns(nd)
    arrays = _arrays((7,) + xs[1:], ws, kw, "float64")
    before = _threads.num_threads()
    monkeypatch.setattr(_threads, "_MIN_WORK", 1.0)
    monkeypatch.setattr(_windows, "_t_block", lambda *a: 2)
    _threads.set_num_threads(2)
    try:
        with kernels.use("numba", min_size=0):
            got, want, op = _both(f, tf, arrays, True, kw)
    finally:
        _threads.set_num_threads(before)
    assert op == "conv_t_unit_bias"
    for a, t in zip(got, want):
        _close(a, t, "float64")


@pytest.mark.parametrize("case", [0, 3, 6])
def test_double_backward_matches_torch(case):
    nd, xs, ws, kw = CASES[case]
    f, tf = _fns(nd)
    x, w, b = _arrays(xs, ws, kw, "float64")
    X, W, B = (rg.tensor(a, requires_grad=True) for a in (x, w, b))
    tX, tW, tB = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    with kernels.use("numba", min_size=0):
        y = f(X, W, B, **kw)
        assert _op_of(y) == "conv_t_unit_bias"
        gx, gw, gb = rg.autograd.grad((y * y).sum(), [X, W, B], create_graph=True)
        u, v = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
        s = (gx * rg.tensor(u)).sum() + (gw * rg.tensor(v)).sum() + (gb * gb).sum()
        got = rg.autograd.grad(s, [X, W, B])
    ty = tf(tX, tW, tB, **kw)
    tgx, tgw, tgb = torch.autograd.grad((ty * ty).sum(), [tX, tW, tB], create_graph=True)
    ts = (tgx * torch.tensor(u)).sum() + (tgw * torch.tensor(v)).sum() + (tgb * tgb).sum()
    for a, t in zip(got, torch.autograd.grad(ts, [tX, tW, tB])):
        _close(a.numpy(), t, "float64")


@pytest.mark.parametrize("case", [1, 3, 6])
def test_jvp_matches_torch_func_jvp(case):
    nd, xs, ws, kw = CASES[case]
    f, tf = _fns(nd)
    prim = _arrays(xs, ws, kw, "float64")
    tang = _arrays(xs, ws, kw, "float64")
    with kernels.use("numba", min_size=0):
        out, tout = rg.func.jvp(lambda a, c, d: f(a, c, d, **kw), tuple(map(rg.tensor, prim)),
                                tuple(map(rg.tensor, tang)))
    ref, tref = torch.func.jvp(lambda a, c, d: tf(a, c, d, **kw),
                               tuple(map(torch.tensor, prim)), tuple(map(torch.tensor, tang)))
    _close(out.numpy(), ref, "float64")
    _close(tout.numpy(), tref, "float64")


@pytest.mark.parametrize("which", ["x", "w", "xwb"])
def test_vmap_matches_torch(which):
    nd, xs, ws, kw = CASES[3]
    f, tf = _fns(nd)
    n = 3
    base = _arrays(xs, ws, kw, "float64")
    args = [rng.standard_normal((n,) + a.shape) if k in which else a
            for a, k in zip(base, "xwb")]
    dims = tuple(0 if k in which else None for k in "xwb")
    with kernels.use("numba", min_size=0):
        got = rg.func.vmap(lambda a, c, d: f(a, c, d, **kw), in_dims=dims)(*map(rg.tensor, args))
    want = torch.func.vmap(lambda a, c, d: tf(a, c, d, **kw), in_dims=dims)(
        *map(torch.tensor, args))
    _close(got.numpy(), want, "float64")


def test_jit_replays_the_op_and_follows_the_weight_becoming_infinite():
    """A traced training step (forward, backward, update) replays as the eager one; a
    traced forward still drops the off-input columns once the weight holds an inf."""
    def train(use_jit):
        rg.manual_seed(0)
        model = rg.nn.Sequential(rg.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1,
                                                       output_padding=1), rg.nn.ReLU(),
                                 rg.nn.ConvTranspose2d(6, 2, 3, padding=1, groups=2))
        opt = rg.optim.SGD(model.parameters(), lr=1e-3)

        def step(x):
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        run = rg.jit(step) if use_jit else step
        r = np.random.default_rng(1)
        losses = [run(rg.tensor(r.standard_normal((3, 4, 6, 6)).astype(np.float32))).item()
                  for _ in range(3)]
        return model, losses

    with kernels.use("numba", min_size=0):
        m_eager, l_eager = train(False)
        m_jit, l_jit = train(True)
        np.testing.assert_allclose(l_jit, l_eager, rtol=1e-5)
        for p, q in zip(m_jit.parameters(), m_eager.parameters(), strict=True):
            np.testing.assert_allclose(p.data, q.data, rtol=1e-5, atol=1e-6)

        x = rng.standard_normal((2, 3, 4, 4))
        w = rng.standard_normal((3, 2, 3, 3))
        jitted = rg.jit(lambda xx, ww: F.conv_transpose2d(xx, ww, stride=2, padding=1))
        jitted(rg.tensor(x), rg.tensor(w))
        w[0, 1, 2, 2] = np.inf
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got = jitted(rg.tensor(x), rg.tensor(w)).numpy()
    want = TF.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w), stride=2, padding=1)
    torch.testing.assert_close(torch.from_numpy(got), want, equal_nan=True)


def test_the_op_table_holds_both_ops():
    assert ops.conv_t_unit.tuned and ops.conv_t_unit_bias.tuned
    assert ops.conv_t_unit.saving is not None
