"""Winograd's F(2x2, 3x3) path for float32 3x3 convolutions (retrograd.ops.winograd and
its transforms in retrograd.kernels.winograd): values and every gradient against PyTorch
over odd sizes, paddings 0-2, bias or none and each subset of gradients; the transforms
are each other's adjoints; inf and nan anywhere give the exact path's results (the
samples are redone on the columns); the sums do not depend on the thread count; double
backward; and the path is taken only where it fits."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
from retrograd import kernels
from retrograd.kernels import conv as kconv
from retrograd.kernels import winograd as kw
from retrograd.ops import winograd

F = rg.nn.functional


@pytest.fixture
def calls(monkeypatch):
    """Compiled kernels on at every size, the size thresholds off (each small case takes
    Winograd's path), and a count of the transforms' and the columns' calls."""
    counts = {"transform_output": 0, "transform_input_t": 0, "im2col": 0}

    def counted(mod, k):
        fn = getattr(mod, k)

        def spy(*a):
            counts[k] += 1
            return fn(*a)
        monkeypatch.setattr(mod, k, spy)

    counted(kw, "transform_output")
    counted(kw, "transform_input_t")
    counted(kconv, "im2col")
    monkeypatch.setattr(winograd, "MIN_CHANNELS", 1)
    monkeypatch.setattr(winograd, "MIN_TILES", 1)
    with kernels.use("numba", min_size=0):
        yield counts


def _run(x, w, b, g, padding, needs="xwb"):
    """Forward and backward in retrograd and torch: [y, dx, dw, db] for each."""
    out = []
    for m, f in ((rg, F.conv2d), (torch, TF.conv2d)):
        ts = [None if a is None else m.tensor(a, requires_grad=k in needs)
              for a, k in zip((x, w, b), "xwb")]
        y = f(*ts, padding=padding)
        y.backward(m.tensor(g))
        out.append([y.detach().numpy()] + [None if t is None or t.grad is None
                                           else t.grad.numpy() for t in ts])
    return out


def _close(got, ref, rtol=2e-4):
    for a, t in zip(got, ref, strict=True):
        assert (a is None) == (t is None)
        if a is not None:
            assert a.dtype == t.dtype and a.shape == t.shape
            np.testing.assert_allclose(a, t, rtol=rtol, atol=rtol * max(1.0, np.abs(t).max()))


def _data(seed, xs, o, padding):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal((o, xs[1], 3, 3)) * 0.3).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    outs = tuple(s + 2 * padding - 2 for s in xs[2:])
    g = rng.standard_normal((xs[0], o) + outs).astype(np.float32)
    return x, w, b, g


SHAPES = [  # (x shape, out channels, padding): even and odd outputs, a row of one; each
    # large enough (x.size * 9 >= 2**18) for conv2d's per-sample op
    ((2, 8, 48, 40), 8, 1),
    ((3, 5, 47, 43), 7, 0),
    ((2, 4, 63, 61), 6, 2),
    ((40, 3, 1, 250), 4, 1),
    ((20, 6, 84, 3), 5, 1),
    ((2, 16, 33, 31), 12, 1),
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", range(len(SHAPES)))
def test_values_and_gradients_match_torch(calls, case, bias):
    xs, o, p = SHAPES[case]
    x, w, b, g = _data(case, xs, o, p)
    got, ref = _run(x, w, b if bias else None, g, p)
    _close(got, ref)
    assert calls["transform_output"] == xs[0] and calls["transform_input_t"] == xs[0]
    assert calls["im2col"] == 0  # no sample redone, no columns made


@pytest.mark.parametrize("needs", ["x", "w", "wb", "b", "xb"])
def test_each_subset_of_gradients(calls, needs):
    x, w, b, g = _data(7, (3, 8, 36, 34), 6, 1)
    got, ref = _run(x, w, b, g, 1, needs)
    _close(got, ref)


def test_as_accurate_as_the_columns_against_float64():
    """Winograd's rounding error, against a float64 reference, stays within twice the
    exact columns' (both float32), for the output and each gradient."""
    x, w, b, g = _data(8, (8, 16, 32, 32), 32, 1)
    ref = _run(*(a.astype(np.float64) for a in (x, w, b, g)), 1)[1]
    errs = []
    for channels in (1, 10 ** 9):  # Winograd's path, then the columns'
        with kernels.use("numba", min_size=0):
            old = winograd.MIN_CHANNELS
            winograd.MIN_CHANNELS = channels
            try:
                got = _run(x, w, b, g, 1)[0]
            finally:
                winograd.MIN_CHANNELS = old
        errs.append([np.abs(a - r).max() for a, r in zip(got, ref)])
    for wino, cols in zip(*errs):
        assert wino <= 2 * cols + 1e-6


def _dot(a, b):
    return float(np.sum(a.astype(np.float64) * b.astype(np.float64)))


@pytest.mark.parametrize("shape", [(3, 8, 8), (2, 7, 9), (1, 3, 4)])
@pytest.mark.parametrize("pad", [0, 1, 2])
def test_the_transforms_are_each_others_adjoints(shape, pad):
    """<T x, v> = <x, T^t v> for the input transform, <T m, g> = <m, T^t g> for the output
    transform (which also sums g into the bias's gradient)."""
    rng = np.random.default_rng(9)
    c, h, wd = shape
    ho, wo = h + 2 * pad - 2, wd + 2 * pad - 2
    th, tw = (ho + 1) // 2, (wo + 1) // 2
    s = winograd._Scratch(th, tw)
    x = rng.standard_normal(shape).astype(np.float32)
    vf, v = winograd._block(c, th * tw)
    kw.transform_input(x, pad, pad, s.plane, s.tmp, s.stage, vf)
    dvf, dv = winograd._block(c, th * tw)
    dv[...] = rng.standard_normal(dv.shape)
    dx = np.empty_like(x)
    assert kw.transform_input_t(dvf, pad, pad, s.plane, s.tmp, s.stage, dx) == 0
    assert _dot(v, dv) == pytest.approx(_dot(x, dx), rel=1e-5, abs=1e-4)

    o = 3
    mf, m = winograd._block(o, th * tw)
    m[...] = rng.standard_normal(m.shape)
    y = np.empty((o, ho, wo), np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    assert kw.transform_output(mf, bias, y, s.stage) == 0
    gy = rng.standard_normal(y.shape).astype(np.float32)
    dmf, dm = winograd._block(o, th * tw)
    db = np.zeros(o, np.float32)
    assert kw.transform_output_t(gy, dmf, s.stage, db) == 0
    lhs = _dot(y, gy)
    rhs = _dot(m, dm) + _dot(bias, db)
    assert lhs == pytest.approx(rhs, rel=1e-5, abs=1e-4)
    np.testing.assert_allclose(db, gy.sum(axis=(1, 2)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("where", ["x", "w", "b", "g"])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_inf_and_nan_give_the_exact_paths_results(calls, where, bad):
    """A value that is not finite would turn into inf - inf = nan in the transforms where
    the direct sum keeps an inf: the samples meeting one are redone on the columns, so the
    output and every gradient have nan and inf exactly where torch's have."""
    x, w, b, g = _data(11, (3, 8, 34, 36), 6, 1)
    if where == "x":
        x[1, 2, 4, 5] = bad
    elif where == "w":
        w[2, 3, 1, 1] = bad
    elif where == "b":
        b[4] = bad
    else:
        g[2, 1, 3, 3] = bad
    got, ref = _run(x, w, b, g, 1)
    for a, t in zip(got, ref, strict=True):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(t))
        np.testing.assert_array_equal(np.isposinf(a), np.isposinf(t))
        np.testing.assert_array_equal(np.isneginf(a), np.isneginf(t))
        ok = np.isfinite(t)
        np.testing.assert_allclose(a[ok], t[ok], rtol=2e-4, atol=2e-4 * np.abs(t[ok]).max())
    assert calls["im2col"] > 0  # some sample was redone exactly


def test_sums_do_not_depend_on_the_thread_count(calls):
    x, w, b, g = _data(12, (12, 8, 20, 20), 8, 1)
    runs = []
    for n in (1, 2, 3):
        old = rg.get_num_threads()
        rg.set_num_threads(n)
        try:
            runs.append(_run(x, w, b, g, 1)[0])
        finally:
            rg.set_num_threads(old)
    for other in runs[1:]:
        for a, c in zip(runs[0], other):
            np.testing.assert_array_equal(a, c)


def test_double_backward_matches_torch(calls):
    """create_graph: the recorded backward (products and folds, not the transforms) gives
    torch's second derivatives through a Winograd forward."""
    x, w, b, _ = _data(13, (2, 8, 44, 44), 6, 1)
    out = []
    for m, f in ((rg, F.conv2d), (torch, TF.conv2d)):
        tx, tw = m.tensor(x, requires_grad=True), m.tensor(w, requires_grad=True)
        y = f(tx, tw, m.tensor(b), padding=1)
        (gx,) = m.autograd.grad((y * y).sum(), tx, create_graph=True)
        (gx * gx).sum().backward()
        out.append([gx.detach().numpy(), tx.grad.numpy(), tw.grad.numpy()])
    _close(*out, rtol=1e-3)


@pytest.mark.parametrize("change", [
    dict(dtype=np.float64), dict(kernel=5), dict(dilation=2), dict(groups=2),
    dict(channels=4), dict(channels=256), dict(size=8)])
def test_taken_only_where_it_fits(change):
    """Defaults: float32, 3x3, unit dilation, one group, 8 to 128 channels, at least 64
    tiles of 2x2 outputs; anything else takes the columns (and still matches torch)."""
    dtype = change.get("dtype", np.float32)
    c = change.get("channels", 16)
    k = change.get("kernel", 3)
    size = change.get("size", 32)
    groups = change.get("groups", 1)
    x = np.ones((2, c, size, size), dtype)
    w = np.ones((16, c // groups, k, k), dtype)
    dil = change.get("dilation", 1)
    with kernels.use("numba"):
        assert winograd.fits(np.ones((2, 16, 32, 32), np.float32),
                             np.ones((16, 16, 3, 3), np.float32), None, (1, 1), (1, 1), 1)
        assert not winograd.fits(x, w, None, (dil, dil), (1, 1), groups)
    with kernels.use("numpy"):
        assert not winograd.fits(np.ones((2, 16, 32, 32), np.float32),
                                 np.ones((16, 16, 3, 3), np.float32), None, (1, 1), (1, 1), 1)


def test_the_default_thresholds_take_a_realistic_layer():
    """A 16 -> 32 channel 3x3 layer on 32x32 images takes Winograd's path as installed
    (no threshold changed) and matches torch."""
    x, w, b, g = _data(14, (4, 16, 32, 32), 32, 1)
    seen = []
    orig = winograd.forward

    def spy(*a):
        seen.append(1)
        return orig(*a)

    winograd.forward = spy
    try:
        with kernels.use("numba"):
            got, ref = _run(x, w, b, g, 1)
    finally:
        winograd.forward = orig
    assert seen
    _close(got, ref)
