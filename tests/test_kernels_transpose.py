"""Transposed convolution's compiled kernels (retrograd.kernels.transpose: phase_in,
phase_in_t, phase_fold with the bias, phase_fold_t with its inf/NaN rule) and the NumPy
phase path, each case run under both (`kernels.use`), against PyTorch in float32 and
float64: values and all gradients of conv_transpose1d/2d/3d over strides 1-3, paddings,
output paddings, dilations, groups, bias or none, odd sizes, batch 1 and 0,
non-contiguous inputs, inf and NaN in x, the weight and the cotangent, the samples split
over threads, second derivatives; and the four ops on their own against the NumPy path
(columns that are not zero off the input, the adjoint identity)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
from retrograd import kernels
from retrograd import threads as _threads
from retrograd.api import windows as api_windows
from retrograd.kernels import transpose as ktr
from retrograd.ops import windows

F = rg.nn.functional
MODES = [("numba", 0), ("numpy", None)]  # min_size 0: the kernels take every size
TOL = {"float32": dict(rtol=2e-4, atol=2e-4), "float64": dict(rtol=1e-10, atol=1e-10)}
KERNELS = ("phase_in", "phase_in_t", "phase_fold", "phase_fold_t")

CASES = [  # (x shape, weight shape (C, O/groups, *k), kwargs)
    ((3, 4, 6, 5), (4, 3, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ((1, 3, 7, 5), (3, 2, 3, 2), dict(stride=(3, 2), padding=(2, 0), dilation=(2, 1),
                                      output_padding=(1, 1))),  # batch 1, odd sizes
    ((2, 6, 4, 5), (6, 1, 2, 4), dict(stride=(1, 3), padding=(1, 3), output_padding=(0, 2),
                                      groups=3)),
    ((2, 2, 3, 3), (2, 2, 1, 1), dict(stride=3)),  # phases that no tap reaches
    ((2, 2, 5, 4), (2, 3, 3, 3), dict(stride=1, padding=1)),
    ((2, 3, 3, 4), (3, 2, 5, 3), dict(stride=2, padding=(4, 2), dilation=(1, 2))),
    ((2, 3, 7), (3, 2, 4), dict(stride=3, padding=2, output_padding=2, dilation=2)),
    ((1, 2, 9), (2, 4, 3), dict(stride=2)),
    ((2, 4, 2, 3, 3), (4, 1, 2, 3, 2), dict(stride=(2, 1, 3), padding=(0, 1, 1),
                                            output_padding=(1, 0, 2), groups=2)),
    ((1, 2, 3, 4, 3), (2, 2, 3, 3, 3), dict(stride=2, padding=1, output_padding=1)),
]


@pytest.fixture(params=MODES + [("numba", "phases")],
                ids=[m for m, _ in MODES] + ["numba-phases"])
def mode(request, monkeypatch):
    """Runs the test under one kernel mode; yields the calls of each compiled kernel.
    numba-phases: the compiled kernels inside the phase ops (`phase_in` ...), over the
    whole batch, rather than inside the one op of the per-sample path (`conv_t_unit`)."""
    name, size = request.param
    if size == "phases":
        monkeypatch.setattr(api_windows, "conv_t_fast", lambda *a: False)
        size = 0
    calls = dict.fromkeys(KERNELS, 0)

    def counted(k, fn):
        def spy(*a):
            calls[k] += 1
            return fn(*a)
        return spy

    for k in KERNELS:
        monkeypatch.setattr(ktr, k, counted(k, getattr(ktr, k)))
    with kernels.use(name, min_size=size):
        yield name, calls


def _used(mode):
    name, calls = mode
    if name == "numba":
        assert all(calls[k] > 0 for k in KERNELS), calls
    else:
        assert not any(calls.values()), calls


def _close(a, b, dtype):
    """Equal to rounding (atol relative to the largest finite reference value); NaN and
    inf where the reference has them."""
    b = torch.as_tensor(np.asarray(b))
    tol = dict(TOL[dtype])
    fin = b[torch.isfinite(b)]
    tol["atol"] *= max(1.0, float(fin.abs().max())) if fin.numel() else 1.0
    torch.testing.assert_close(torch.as_tensor(np.asarray(a)), b, equal_nan=True, **tol)


def _run(x, w, b, kw, g, xform=None):
    """Forward and backward in retrograd and torch: ([y, dx, dw, db], torch's). `xform`
    makes each library's x, w and cotangent from the arrays (non-contiguous views)."""
    nd = x.ndim - 2
    out = []
    for m, f in ((rg, getattr(F, f"conv_transpose{nd}d")),
                 (torch, getattr(TF, f"conv_transpose{nd}d"))):
        ts = [None if a is None else m.tensor(a, requires_grad=True) for a in (x, w, b)]
        args = list(ts)
        gg = m.tensor(g)
        if xform is not None:
            args[0], args[1], gg = xform(m, ts[0], ts[1], gg)
        y = f(*args, **kw)
        if xform is not None:
            y = xform(m, None, None, y)[2]
        y.backward(gg)
        out.append([y.detach().numpy()] + [None if t is None else t.grad.numpy() for t in ts])
    return out


def _check(got, ref, dtype):
    for a, t in zip(got, ref, strict=True):
        assert (a is None) == (t is None)
        if a is not None:
            assert a.dtype == t.dtype and a.shape == t.shape
            _close(a, t, dtype)


def _arrays(case, dtype, seed=0):
    xs, ws, kw = CASES[case]
    rng = np.random.default_rng(seed + case)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[1] * kw.get("groups", 1)).astype(dtype)
    nd = len(xs) - 2
    shape = getattr(TF, f"conv_transpose{nd}d")(torch.tensor(x), torch.tensor(w), **kw).shape
    return x, w, b, kw, rng.standard_normal(tuple(shape)).astype(dtype)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_values_and_gradients_match_torch(mode, case, dtype, bias):
    x, w, b, kw, g = _arrays(case, dtype)
    got, ref = _run(x, w, b if bias else None, kw, g)
    _check(got, ref, dtype)
    _used(mode)


def test_batch_zero(mode):
    x, w, b, kw, g = _arrays(0, "float32")
    x, g = x[:0], g[:0]
    got, ref = _run(x, w, b, kw, g)
    _check(got, ref, "float32")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_non_contiguous_input_weight_and_cotangent(mode, dtype):
    """x and the weight reach the ops as strided views (a transpose, a step), and so does
    the cotangent (through a transpose after the op)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 7, 3, 6)).astype(dtype)  # (N, W, C, H) -> (N, C, H, W)
    w = rng.standard_normal((3, 4, 3, 6)).astype(dtype)  # every other weight column
    b = rng.standard_normal(4).astype(dtype)
    kw = dict(stride=2, padding=1, output_padding=1)

    def xform(m, xt, wt, gt):
        if xt is None:
            return None, None, m.transpose(gt, 1, 3) if m is torch else gt.transpose(1, 3)
        if m is torch:
            return xt.permute(0, 2, 3, 1), wt[..., ::2], gt
        return xt.permute(0, 2, 3, 1), wt[..., ::2], gt

    y = TF.conv_transpose2d(torch.tensor(x).permute(0, 2, 3, 1), torch.tensor(w)[..., ::2],
                            **kw)
    g = rng.standard_normal(tuple(y.transpose(1, 3).shape)).astype(dtype)
    got, ref = _run(x, w, b, kw, g, xform)
    _check(got, ref, dtype)
    _used(mode)


def _poison(a):
    flat = a.reshape(-1)
    flat[0], flat[-1], flat[flat.size // 2] = np.inf, -np.inf, np.nan


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inf_and_nan_in_the_cotangent_spread_as_in_torch(mode, dtype):
    """inf and NaN in the cotangent (edges included): gradients as torch's, no NaN from
    0 * inf at the frame's off-input columns (phase_fold_t's rule)."""
    for case in (0, 1, 3, 6, 8):
        x, w, b, kw, g = _arrays(case, dtype, seed=5)
        _poison(g)
        with np.errstate(invalid="ignore"):
            got, ref = _run(x, w, b, kw, g)
        _check(got, ref, dtype)
    _used(mode)


@pytest.mark.parametrize("where", ["x", "w"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inf_and_nan_in_x_and_weight_as_the_numpy_path(where, dtype):
    """inf and NaN in x or the weight: the kernels give what the NumPy path gives (NaN
    where it has NaN). Both differ from torch in places (the matrix product's 0 * inf at
    off-input positions: an inf weight makes NaN outputs where torch has inf, and torch
    itself differs between float32 and float64), so torch is checked only where it
    agrees with itself: x poisoned, float64."""
    for case in (0, 1, 6, 8):
        x, w, b, kw, g = _arrays(case, dtype, seed=5)
        _poison(x if where == "x" else w)
        res = {}
        for name, size in MODES:
            with kernels.use(name, min_size=size), np.errstate(invalid="ignore"):
                res[name] = _run(x, w, b, kw, g)
        _check(res["numba"][0], res["numpy"][0], dtype)
        if where == "x" and dtype == "float64":
            _check(*res["numba"], dtype)


def test_broadcast_cotangent_with_inf(mode):
    x, w, b, kw, g = _arrays(0, "float64")
    g = np.broadcast_to(np.array([1.0, np.inf, -2.0]).reshape(1, 3, 1, 1), g.shape)
    with np.errstate(invalid="ignore"):
        got, ref = _run(x, w, b, kw, g)
    _check(got, ref, "float64")


@pytest.mark.parametrize("case", [0, 8])
def test_samples_split_over_threads(mode, case, monkeypatch):
    """Two pieces give the same numbers as one (also with an inf in one piece only)."""
    monkeypatch.setattr(_threads, "_MIN_WORK", 1)
    monkeypatch.setattr(windows, "_COPY_WORK", 1)
    pieces = []
    run = _threads.run
    monkeypatch.setattr(_threads, "run", lambda fn, p: pieces.append(len(p)) or run(fn, p))
    x, w, b, kw, g = _arrays(case, "float64", seed=9)
    g[-1, 0].reshape(-1)[-1] = np.inf
    saved = _threads.num_threads()
    results = []
    try:
        for k in (1, 2):
            _threads.set_num_threads(k)
            with np.errstate(invalid="ignore"):
                results.append(_run(x, w, b, kw, g))
    finally:
        _threads.set_num_threads(saved)
    # the four phase ops, or the per-sample op's forward and backward
    unit = mode[0] == "numba" and api_windows.conv_t_fast is windows.conv_t_fast
    assert pieces.count(2) >= (2 if unit else 4)
    for one, two in zip(results[0][0], results[1][0]):
        np.testing.assert_array_equal(one, two)
    _check(results[1][0], results[1][1], "float64")


@pytest.mark.parametrize("case", [0, 2, 8])
def test_second_derivatives_match_torch(mode, case):
    x, w, b, kw, _ = _arrays(case, "float64", seed=2)
    f = getattr(F, f"conv_transpose{x.ndim - 2}d")
    tf = getattr(TF, f"conv_transpose{x.ndim - 2}d")
    ours = [rg.tensor(a, requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    out, ref = f(*ours, **kw), tf(*theirs, **kw)
    v = np.random.default_rng(3).standard_normal(out.shape)
    gs = rg.autograd.grad((out * out).sum() * 0.5 + (out * rg.tensor(v)).sum(), ours,
                          create_graph=True)
    tgs = torch.autograd.grad((ref * ref).sum() * 0.5 + (ref * torch.tensor(v)).sum(), theirs,
                              create_graph=True)
    u = [np.random.default_rng(4 + i).standard_normal(g.shape) for i, g in enumerate(gs)]
    hs = rg.autograd.grad(sum((g * rg.tensor(a)).sum() for g, a in zip(gs, u)), ours)
    ths = torch.autograd.grad(sum((g * torch.tensor(a)).sum() for g, a in zip(tgs, u)), theirs)
    for h, th in zip(hs, ths):
        _close(h.numpy(), th.numpy(), "float64")


def _geo(case):
    xs, ws, kw = CASES[case]
    nd = len(xs) - 2

    def tup(v):
        return tuple(v) if isinstance(v, tuple) else (v,) * nd

    s, p, d, a = (tup(kw.get(k, dv)) for k, dv in (("stride", 1), ("padding", 0),
                                                   ("dilation", 1), ("output_padding", 0)))
    outs = tuple((n - 1) * ss - 2 * pp + dd * (k - 1) + aa + 1
                 for n, k, ss, pp, dd, aa in zip(xs[2:], ws[2:], s, p, d, a))
    return dict(ins=tuple(xs[2:]), outs=outs, kernel=tuple(ws[2:]), stride=s, padding=p,
                dilation=d)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_ops_alone_match_numpy_path(case, dtype):
    """Each op under the kernels equals the NumPy path (columns with values off the input
    too, a cotangent with an inf), and phase_fold_t is phase_fold's adjoint."""
    geo = _geo(case)
    rng = np.random.default_rng(case)
    n, o = CASES[case][0][0], 3
    x = rng.standard_normal((n, 2) + geo["ins"]).astype(dtype)
    kk = int(np.prod(geo["kernel"]))
    size = windows._phases(*geo.values()).size
    cols = rng.standard_normal((o * kk, n * size)).astype(dtype)
    bias = rng.standard_normal(o).astype(dtype)
    y = rng.standard_normal((n, o) + geo["outs"]).astype(dtype)
    bad = y.copy()
    bad.reshape(-1)[-1] = np.inf
    xcols = rng.standard_normal((2, n * size)).astype(dtype)
    res = {}
    for name, size_ in MODES:
        with kernels.use(name, min_size=size_):
            res[name] = [windows._phase_in(x, **geo), windows._phase_in_t(xcols, **geo),
                         windows._phase_fold(cols, **geo), windows._phase_fold(cols, bias, **geo),
                         windows._phase_fold_t(y, **geo), windows._phase_fold_t(bad, **geo)]
    tol = TOL[dtype]
    for a, b in zip(res["numba"], res["numpy"], strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, **tol)
    yk, tk = res["numba"][2], res["numba"][4]
    lhs, rhs = float((yk.astype(np.float64) * y).sum()), float((cols * tk).sum())
    assert abs(lhs - rhs) <= tol["atol"] * 100 * (1 + abs(lhs))
    xin, xt = res["numba"][0], res["numba"][1]
    assert abs(float((xin * xcols).sum()) - float((x * xt).sum())) <= tol["atol"] * 100
