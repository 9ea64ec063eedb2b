"""Unit-stride convolution's compiled column kernels (retrograd.kernels.conv) and the NumPy
per-sample path, each case run under both (`kernels.use`), against PyTorch in float32 and
float64: values and gradients for conv1d/2d/3d, paddings 0-2, dilation, groups, bias or
none, odd sizes, batch 1, non-contiguous inputs, each subset of gradients, a broadcast
cotangent, inf and nan in x and the weight, samples split over threads, double backward;
and the two kernels on their own against a NumPy im2col (padding wider than a row)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
from retrograd import kernels
from retrograd import threads as _threads
from retrograd.kernels import conv as kconv
from retrograd.ops import windows

F = rg.nn.functional
MODES = [("numba", 0), ("numpy", None)]  # min_size 0: the kernels take every size
TOL = {"float32": dict(rtol=2e-4, atol=2e-4), "float64": dict(rtol=1e-10, atol=1e-10)}

CASES = [  # (nd, x shape, weight shape, kwargs): each large enough for the per-sample path
    (1, (2, 8, 6000), (6, 8, 3), dict(padding=0)),
    (1, (1, 5, 11001), (4, 5, 5), dict(padding=2, dilation=3)),  # batch 1, odd length
    (1, (2, 8, 6000), (6, 4, 3), dict(padding=1, groups=2)),
    (2, (2, 8, 48, 48), (6, 8, 3, 3), dict(padding=1)),
    (2, (2, 8, 48, 48), (6, 8, 3, 3), dict(padding=0)),
    (2, (1, 6, 71, 69), (5, 6, 3, 3), dict(padding=2, dilation=2)),  # odd sizes
    (2, (2, 8, 40, 48), (4, 2, 3, 5), dict(padding=(1, 2), groups=4)),
    (2, (2, 4, 70, 72), (4, 4, 2, 4), dict(padding="same")),  # even kernel: uneven pad
    (3, (1, 4, 8, 40, 40), (3, 4, 3, 3, 3), dict(padding=1)),
    (3, (2, 4, 10, 40, 40), (4, 2, 3, 3, 3), dict(padding=(2, 1, 1), dilation=(2, 1, 1),
                                                  groups=2)),
]


@pytest.fixture(params=MODES, ids=[m for m, _ in MODES])
def mode(request, monkeypatch):
    """Runs the test under one kernel mode; yields the calls of each compiled kernel."""
    name, size = request.param
    calls = {"im2col": 0, "col2im": 0}

    def counted(k, fn):
        def spy(*a):
            calls[k] += 1
            return fn(*a)
        return spy

    for k in calls:
        monkeypatch.setattr(kconv, k, counted(k, getattr(kconv, k)))
    with kernels.use(name, min_size=size):
        yield name, calls


def _close(a, b, dtype):
    """Equal to rounding: atol relative to the largest reference value."""
    b = b.detach()
    tol = dict(TOL[dtype])
    tol["atol"] *= max(1.0, float(b.abs().max())) if b.numel() else 1.0
    torch.testing.assert_close(torch.as_tensor(np.asarray(a)), b, **tol)


def _run(nd, x, w, b, kw, g, needs="xwb", unit=True):
    """Forward and backward in retrograd and torch: ([y, dx, dw, db], torch's). `unit`:
    whether retrograd's output comes from the per-sample op (conv_unit[_bias])."""
    out = []
    for m, f in ((rg, getattr(F, f"conv{nd}d")), (torch, getattr(TF, f"conv{nd}d"))):
        arr = (lambda a: a) if m is rg else np.ascontiguousarray  # torch: no negative strides
        ts = [None if a is None else m.tensor(arr(a), requires_grad=k in needs)
              for a, k in zip((x, w, b), "xwb")]
        y = f(*ts, **kw)
        if m is rg:
            name = "conv_unit" if b is None else "conv_unit_bias"
            assert (y.grad_fn.op.name == name) == unit
        y.backward(m.tensor(arr(g)))
        out.append([y.detach().numpy()] + [None if t is None or t.grad is None
                                           else t.grad.numpy() for t in ts])
    return out


def _check(got, ref, dtype):
    for a, t in zip(got, ref, strict=True):
        assert (a is None) == (t is None)
        if a is not None:
            assert a.dtype == t.dtype and a.shape == t.shape
            _close(a, torch.from_numpy(t), dtype)


def _used(mode, backward=True):
    name, calls = mode
    if name == "numba":
        assert calls["im2col"] > 0 and (calls["col2im"] > 0 or not backward)
    else:
        assert calls == {"im2col": 0, "col2im": 0}


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_values_and_gradients_match_torch(mode, case, dtype, bias):
    nd, xs, ws, kw = CASES[case]
    rng = np.random.default_rng(case)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in (xs, ws, ws[:1]))
    shape = getattr(TF, f"conv{nd}d")(torch.tensor(x), torch.tensor(w), **kw).shape
    g = rng.standard_normal(tuple(shape)).astype(dtype)
    got, ref = _run(nd, x, w, b if bias else None, kw, g)
    _check(got, ref, dtype)
    _used(mode)


JUNKY = [  # unit stride, but many positions past an output row in the NumPy path's columns
    (2, (16, 6, 12, 12), (8, 6, 5, 5), dict()),
    (2, (8, 16, 16, 16), (12, 8, 3, 3), dict(groups=2)),
    (3, (4, 4, 6, 12, 12), (4, 4, 3, 3, 3), dict(padding=(1, 0, 0))),
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(JUNKY)))
def test_junk_heavy_geometry_takes_the_unit_op_with_kernels_only(mode, case, dtype, bias):
    """The compiled columns are exact (no junk positions), so a geometry whose NumPy
    columns would be mostly junk takes the per-sample op with kernels on; with them off it
    keeps the generic path. Both match torch."""
    nd, xs, ws, kw = JUNKY[case]
    rng = np.random.default_rng(10 + case)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in (xs, ws, ws[:1]))
    shape = getattr(TF, f"conv{nd}d")(torch.tensor(x), torch.tensor(w), **kw).shape
    g = rng.standard_normal(tuple(shape)).astype(dtype)
    got, ref = _run(nd, x, w, b if bias else None, kw, g, unit=mode[0] == "numba")
    _check(got, ref, dtype)
    _used(mode)


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1), dict(stride=(1, 2))])
def test_strided_convolution_never_takes_the_unit_op(mode, kw):
    rng = np.random.default_rng(12)
    x, w, b = (rng.standard_normal(s).astype("float32") for s in ((8, 8, 32, 32),
                                                                   (6, 8, 3, 3), (6,)))
    shape = TF.conv2d(torch.tensor(x), torch.tensor(w), **kw).shape
    g = rng.standard_normal(tuple(shape)).astype("float32")
    got, ref = _run(2, x, w, b, kw, g, unit=False)
    _check(got, ref, "float32")
    assert mode[1] == {"im2col": 0, "col2im": 0}


@pytest.mark.parametrize("needs", ["w", "wb", "x", "xb", "b"])
def test_each_subset_of_gradients(mode, needs):
    """The weight's rule alone (x wants no gradient: its columns only), the bias's alone."""
    nd, xs, ws, kw = CASES[6]
    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(s).astype("float32") for s in (xs, ws, ws[:1]))
    g = rng.standard_normal((xs[0], ws[0], 40, 48)).astype("float32")
    got, ref = _run(nd, x, w, b, kw, g, needs)
    _check(got, ref, "float32")
    if "w" in needs:
        assert mode[1]["im2col"] > 0 or mode[0] == "numpy"
    if needs in ("w", "wb", "b"):
        assert mode[1]["col2im"] == 0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_non_contiguous_input_weight_and_cotangent(mode, dtype, monkeypatch):
    """x and the weight reach the op as strided views (a permute, a step), and so does the
    cotangent (through a transpose after it)."""
    rng = np.random.default_rng(2)
    xb, wb, b = (rng.standard_normal(s).astype(dtype) for s in ((2, 50, 8, 94), (3, 3, 8, 6),
                                                                 (6,)))
    gt = rng.standard_normal((2, 47, 50, 6)).astype(dtype)
    seen = []

    def noted(fn):
        def spy(*a, **k):
            seen.append([v.flags.c_contiguous for v in a[:3]])
            return fn(*a, **k)
        return spy

    for name in ("_conv_unit", "_unit_grads"):
        monkeypatch.setattr(windows, name, noted(getattr(windows, name)))
    out = []
    for m, f in ((rg, F.conv2d), (torch, TF.conv2d)):
        ts = [m.tensor(a, requires_grad=True) for a in (xb, wb, b)]
        y = f(ts[0].permute(0, 2, 1, 3)[..., ::2], ts[1].permute(3, 2, 0, 1), ts[2], padding=1)
        (y.transpose(1, 3) * m.tensor(gt)).sum().backward()
        out.append([y.detach().numpy()] + [t.grad.numpy() for t in ts])
    _check(*out, dtype)
    assert seen == [[False, False, True], [False, False, False]]  # forward; g, x, w
    _used(mode)


def test_a_broadcast_cotangent(mode):
    """y.sum().backward() hands down a cotangent with stride-0 axes."""
    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(s) for s in ((2, 8, 48, 48), (6, 8, 3, 3), (6,)))
    out = []
    for m, f in ((rg, F.conv2d), (torch, TF.conv2d)):
        ts = [m.tensor(a, requires_grad=True) for a in (x, w, b)]
        f(*ts, padding=1).sum().backward()
        out.append([t.grad.numpy() for t in ts])
    _check(*out, "float64")
    _used(mode)


@pytest.mark.parametrize("where", ["x", "w", "b"])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("case", [0, 3, 5, 8])
def test_inf_and_nan_give_torchs_nan_and_inf(mode, case, where, bad):
    """An inf or nan in x, the weight or the bias (x's at a row's end and inside): the
    output and every gradient have nan and inf exactly where torch's have, the rest equal
    to rounding."""
    nd, xs, ws, kw = CASES[case]
    rng = np.random.default_rng(4)
    x, w, b = (rng.standard_normal(s) for s in (xs, ws, ws[:1]))
    if where == "x":
        x[(0, 1) + (0,) * (nd - 1) + (-1,)] = bad  # a row's last element
        x[(-1, 0) + tuple(s // 2 for s in xs[2:])] = bad
    elif where == "w":
        w[(1, 0) + (0,) * (nd - 1) + (-1,)] = bad
    else:  # the bias rides on the forward product with one group
        b[0] = bad
    shape = getattr(TF, f"conv{nd}d")(torch.tensor(x), torch.tensor(w), **kw).shape
    g = rng.standard_normal(tuple(shape))
    with np.errstate(invalid="ignore", over="ignore"):
        got, ref = _run(nd, x, w, b, kw, g)
    for a, t in zip(got, ref):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(t))
        np.testing.assert_array_equal(np.isinf(a), np.isinf(t))
        ok = np.isfinite(t)
        np.testing.assert_allclose(a[ok], t[ok], rtol=1e-9, atol=1e-9)
    _used(mode)


def test_samples_split_over_threads_match_one_piece(mode, monkeypatch):
    monkeypatch.setattr(_threads, "_MIN_WORK", 1 << 20)  # this small input splits too
    rng = np.random.default_rng(5)
    x, w, b = (rng.standard_normal(s) for s in ((5, 8, 48, 48), (6, 8, 3, 3), (6,)))
    g = rng.standard_normal((5, 6, 48, 48))
    res = []
    old = _threads.num_threads()
    try:
        for n in (1, 3):
            rg.set_num_threads(n)
            assert len(_threads.chunks(5, 2.0 * x.size * w.size / 8)) == n
            res.append(_run(2, x, w, b, dict(padding=1), g)[0])
    finally:
        rg.set_num_threads(old)
    for a, t in zip(*res):
        np.testing.assert_allclose(a, t, rtol=1e-12, atol=1e-12)
    _used(mode)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_do_not_depend_on_the_thread_count(mode, dtype, monkeypatch):
    """dweight and dbias are sums over the samples: summed per fixed group of samples and
    the groups in order, they are the same bit for bit with 1, 2 or 3 threads (13 samples:
    groups of uneven size, split unevenly); so are the output and dx."""
    monkeypatch.setattr(_threads, "_MIN_WORK", 1 << 20)  # this small input splits too
    rng = np.random.default_rng(8)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((13, 8, 32, 32), (6, 8, 3, 3),
                                                               (6,)))
    g = rng.standard_normal((13, 6, 32, 32)).astype(dtype)
    res = []
    old = _threads.num_threads()
    try:
        for n in (1, 2, 3):
            rg.set_num_threads(n)
            assert len(_threads.chunks(8, 2.0 * x.size * w.size / 8)) == n
            res.append(_run(2, x, w, b, dict(padding=1), g)[0])
    finally:
        rg.set_num_threads(old)
    for got in res[1:]:
        for a, t in zip(got, res[0]):
            np.testing.assert_array_equal(a, t)
    _used(mode)


def test_double_backward_matches_torch(mode):
    """create_graph takes the recorded (generic) backward; its forward runs the kernel."""
    rng = np.random.default_rng(6)
    x, w, b = (rng.standard_normal(s) for s in ((2, 8, 48, 48), (3, 8, 3, 3), (3,)))
    out = []
    for m, f in ((rg, F.conv2d), (torch, TF.conv2d)):
        ts = [m.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = f(*ts, padding=1)
        gx, gw = m.autograd.grad((y * y).sum(), ts[:2], create_graph=True)
        ((gx * gx).sum() + (gw * gw).sum()).backward()
        out.append([t.grad.numpy() for t in ts])
    _check(*out, "float64")
    _used(mode, backward=False)


# ---------------------------------------------------------------- the kernels on their own

def _im2col_ref(x, ks, pad, dil):
    """NumPy's exact columns of one sample (C, D, H, W): (C*K, OD*OH*OW)."""
    xp = np.pad(x, ((0, 0),) + tuple((p, p) for p in pad))
    outs = [n + 2 * p - d * (k - 1) for n, p, d, k in zip(x.shape[1:], pad, dil, ks)]
    rows = []
    for c in range(x.shape[0]):
        for off in itertools.product(*(range(k) for k in ks)):
            sl = tuple(slice(o * d, o * d + n) for o, d, n in zip(off, dil, outs))
            rows.append(xp[(c,) + sl].reshape(-1))
    return np.stack(rows)


GEOMETRIES = [  # (C, D, H, W), kernel, padding, dilation
    ((3, 1, 1, 7), (1, 1, 3), (0, 0, 1), (1, 1, 1)),
    ((2, 1, 4, 2), (1, 3, 3), (0, 3, 3), (1, 2, 2)),  # padding wider than a row
    ((2, 3, 5, 6), (2, 3, 2), (1, 0, 2), (2, 1, 3)),
    ((1, 1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1)),
    ((2, 2, 3, 2), (2, 2, 3), (1, 2, 4), (1, 2, 2)),  # dilated row wider than the input's
    ((2, 1, 2, kconv.LONG_ROW + 3), (1, 2, 3), (0, 1, 2), (1, 1, 2)),  # rows past LONG_ROW
    ((2, 1, 5, kconv.PLANE_ROW + 1), (1, 3, 3), (0, 1, 1), (1, 1, 1)),  # col2im by planes
    ((2, 3, 4, kconv.PLANE_ROW + 4), (3, 3, 5), (1, 2, 4), (1, 2, 2)),  # and dilated, 3-d
    ((1, 1, 1, kconv.PLANE_ROW), (1, 3, 3), (0, 3, 1), (1, 1, 1)),  # rows reading no x
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("geo", range(len(GEOMETRIES)))
def test_kernels_against_numpy(geo, dtype):
    """im2col equals NumPy's columns of the second sample (the first and third untouched);
    col2im equals NumPy's fold of the columns (its adjoint), written over old values."""
    shape, ks, pad, dil = GEOMETRIES[geo]
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3,) + shape).astype(dtype)
    ref = _im2col_ref(x[1], ks, pad, dil)
    step = x[0].size
    cols = np.full(ref.size, np.nan, dtype)
    kconv.im2col(x.reshape(-1), step, shape, ks, pad, dil, cols)
    np.testing.assert_array_equal(cols.reshape(ref.shape), ref)
    c = rng.standard_normal(ref.shape).astype(dtype)
    dx = np.full((3,) + shape, 7.0, dtype)
    kconv.col2im(c.copy().reshape(-1), step, shape, ks, pad, dil, dx.reshape(-1))
    assert (dx[0] == 7).all() and (dx[2] == 7).all()
    # the adjoint: <im2col(u), c> = <u, col2im(c)> for every u, so col2im(c) is J^T c
    jac = np.stack([_im2col_ref(e.reshape(shape), ks, pad, dil).reshape(-1)
                    for e in np.eye(x[0].size, dtype=dtype)], axis=1)
    np.testing.assert_allclose(dx[1].reshape(-1), jac.T @ c.reshape(-1),
                               rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5)
