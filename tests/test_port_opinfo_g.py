"""Gaps found by running PyTorch's OpInfo sample inputs (ops d..k) against retrograd: each
case rebuilt by hand and compared with torch computed here, in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from port_compare import close

import retrograd as rg


def _pair(shape, seed=0, grad=False):
    """The same random float64 values as a torch and a retrograd tensor."""
    x = np.random.default_rng(seed).standard_normal(shape)
    return (torch.tensor(x, requires_grad=grad), rg.tensor(x.copy(), requires_grad=grad))


# ---------------------------------------------------------------- diff with n = 0

def test_diff_order_zero_ignores_prepend_append():
    """torch.diff(x, 0, 0, prepend, append) returns a copy of x alone (prepend/append are
    only checked), not x with the extra rows concatenated; the gradient flows to x."""
    xt, xr = _pair((5, 5), grad=True)
    pt, pr = _pair((1, 5), 1)
    at, ar = _pair((2, 5), 2)
    yt, yr = torch.diff(xt, 0, 0, pt, at), rg.diff(xr, 0, 0, pr, ar)
    close(yr, yt, "diff n=0")
    c = np.random.default_rng(3).standard_normal((5, 5))
    yt.backward(torch.tensor(c))
    yr.backward(rg.tensor(c))
    close(xr.grad, xt.grad, "diff n=0 grad")


# ---------------------------------------------------------------- gradient(spacing=None)

def test_gradient_accepts_explicit_none_spacing_and_dim():
    """torch.gradient(x, dim=None, spacing=None, edge_order=1): None is the default spelled
    out (unit spacing over every dim)."""
    xt, xr = _pair((4, 5))
    for kw in ({"spacing": None}, {"dim": None, "spacing": None, "edge_order": 1},
               {"dim": 1, "spacing": None, "edge_order": 2}):
        et, er = torch.gradient(xt, **kw), rg.gradient(xr, **kw)
        assert len(et) == len(er)
        for a, b in zip(er, et):
            close(a, b, f"gradient {kw}")
    # torch has no overload taking spacing=None with a list of dims
    _raises_like(lambda: torch.gradient(xt, spacing=None, dim=[0, 1]),
                 lambda: rg.gradient(xr, spacing=None, dim=[0, 1]))


# ---------------------------------------------------------------- fill keeps the graph

@pytest.mark.parametrize("value", [True, 2.5, "tensor"])
def test_fill_output_requires_grad_with_zero_input_gradient(value):
    """torch.fill(x, v) of an x that requires grad is recorded (FillBackward0): the output
    requires grad and x receives a zero gradient (a number v) or v the summed gradient."""
    xt, xr = _pair((3, 4), grad=True)
    xt.data[0, 0] = float("inf")  # the zero gradient must not turn into nan
    xr.data[0, 0] = np.inf
    if value == "tensor":
        vt, vr = torch.tensor(1.5, dtype=torch.float64), rg.tensor(1.5)
    else:
        vt = vr = value
    yt, yr = torch.fill(xt, vt), rg.fill(xr, vr)
    assert yr.requires_grad == yt.requires_grad
    close(yr, yt, "fill")
    c = np.random.default_rng(1).standard_normal((3, 4))
    yt.backward(torch.tensor(c))
    yr.backward(rg.tensor(c))
    close(xr.grad, xt.grad, "fill grad")


# ---------------------------------------------------------------- fractional max pool, N=0

@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_empty_batch(nd):
    """A batch of zero samples pools to an empty output of the right shape, as torch's."""
    shape = (0, 1, 4, 5, 4)[: 2 + nd]
    xt, xr = _pair(shape)
    ft = getattr(F, f"fractional_max_pool{nd}d")
    fr = getattr(rg.nn.functional, f"fractional_max_pool{nd}d")
    k = [2, 2, 1][:nd]
    ot, it = ft(xt, k, output_size=2, return_indices=True)
    orr, ir = fr(xr, k, output_size=2, return_indices=True)
    assert orr.shape == tuple(ot.shape) and ir.shape == tuple(it.shape)
    assert str(orr.dtype) == "float64" and str(ir.dtype) == "int64"


# ---------------------------------------------------------------- istft, complex window

@pytest.mark.parametrize("learnt", [False, True])
def test_istft_complex_window_divides_by_window_squared(learnt):
    """With a complex window (return_complex=True) torch divides the overlap-add by the
    overlap-added window**2 (complex), not |window|**2; gradients to the spectrogram and a
    learnt window follow."""
    g = np.random.default_rng(0)
    x = g.standard_normal((10, 6)) + 1j * g.standard_normal((10, 6))
    w = g.standard_normal(8) + 1j * g.standard_normal(8)
    xt, xr = torch.tensor(x, requires_grad=True), rg.tensor(x.copy(), requires_grad=True)
    wt, wr = torch.tensor(w, requires_grad=learnt), rg.tensor(w.copy(), requires_grad=learnt)
    kw = {"n_fft": 10, "win_length": 8, "center": True, "return_complex": True}
    yt, yr = torch.istft(xt, window=wt, **kw), rg.istft(xr, window=wr, **kw)
    close(yr, yt, "istft complex window")
    c = g.standard_normal(tuple(yt.shape)) + 1j * g.standard_normal(tuple(yt.shape))
    yt.backward(torch.tensor(c))
    yr.backward(rg.tensor(c))
    close(xr.grad, xt.grad, "istft grad input")
    if learnt:
        close(wr.grad, wt.grad, "istft grad window")


# ---------------------------------------------------------------- refusals (OpInfo error_inputs)

def _raises_like(ft, fr):
    """torch raises; retrograd must raise an exception of torch's type."""
    with pytest.raises(Exception) as et:
        ft()
    with pytest.raises(type(et.value)):
        fr()


@pytest.mark.parametrize("dim", [[1, 1], [1, -1], (0, 0)])
def test_gradient_repeated_dim_is_refused(dim):
    """torch.gradient(x, dim=[1, 1]): RuntimeError 'dim 1 appears multiple times'."""
    xt, xr = _pair((3, 3))
    _raises_like(lambda: torch.gradient(xt, dim=dim), lambda: rg.gradient(xr, dim=dim))


@pytest.mark.parametrize("args", [(-1,), (-7, 42), (0, -3)])
def test_eye_negative_size_is_runtime_error(args):
    """torch.eye with a negative n or m raises RuntimeError (NumPy's is a ValueError)."""
    _raises_like(lambda: torch.eye(*args), lambda: rg.eye(*args))


@pytest.mark.parametrize("nbins", [5, 7])
def test_histogramdd_bins_list_of_wrong_length_is_refused(nbins):
    """One bin count per column: a short list raised IndexError, a long one silently
    dropped counts; torch raises RuntimeError for both."""
    x = np.random.default_rng(0).random((5, 6)).astype(np.float32)
    _raises_like(lambda: torch.histogramdd(torch.tensor(x), [1] * nbins),
                 lambda: rg.histogramdd(rg.tensor(x), [1] * nbins))


@pytest.mark.parametrize("name", ["gather", "index_select", "index_add", "index_copy",
                                  "index_reduce", "inverse"])
@pytest.mark.filterwarnings("ignore:index_reduce")
def test_same_dtype_out_refuses_other_dtype(name):
    """These kernels write only into an `out=` of the result's dtype: a float64 out for a
    float32 input raises RuntimeError in torch (no silent cast); the right dtype works."""
    x = np.random.default_rng(0).random((3, 3)).astype(np.float32) + 2 * np.eye(3, dtype=np.float32)

    def args(T):
        a, idx = T.tensor(x), T.tensor([0, 1])
        return {"gather": (a, 1, T.tensor([[0, 1, 2], [1, 0, 2], [2, 2, 0]])),
                "index_select": (a, 0, idx), "index_add": (a, 0, idx, a[:2]),
                "index_copy": (a, 0, idx, a[:2]), "index_reduce": (a, 0, idx, a[:2], "prod"),
                "inverse": (a,)}[name]

    ft, fr = getattr(torch, name), getattr(rg, name)
    _raises_like(lambda: ft(*args(torch), out=torch.empty(0, dtype=torch.float64)),
                 lambda: fr(*args(rg), out=rg.empty(0, dtype=rg.float64)))
    ot, orr = torch.empty(0), rg.empty(0)
    ft(*args(torch), out=ot)
    fr(*args(rg), out=orr)
    close(orr, ot, f"{name} out=", tol=1e-5)


# ---------------------------------------------------------------- igamma with a NaN argument

@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_igamma_nan_against_special_values_follows_torch(name):
    """torch's branch order answers igamma(inf, nan) = 0, igamma(nan, 0) = 0 and
    igamma(nan, inf) = 1 (igammac the complements), where SciPy gives NaN."""
    vals = [0.0, 1.0, 2.5, -1.0, np.inf, -np.inf, np.nan]
    a, x = (np.array(v) for v in zip(*[(p, q) for p in vals for q in vals]))
    for dt in (np.float64, np.float32):
        et = getattr(torch, name)(torch.tensor(a.astype(dt)), torch.tensor(x.astype(dt)))
        er = getattr(rg, name)(rg.tensor(a.astype(dt)), rg.tensor(x.astype(dt)))
        close(er, et, name, tol=1e-9 if dt == np.float64 else 1e-6)


# ---------------------------------------------------------------- whole programs

def test_program_learnt_complex_window_istft_sgd():
    """Fit a complex synthesis window so that istft of a fixed spectrogram matches a target
    signal: losses and the window after three SGD steps match torch's."""
    g = np.random.default_rng(5)
    spec = g.standard_normal((2, 10, 7)) + 1j * g.standard_normal((2, 10, 7))
    w0 = 1.0 + 0.1 * (g.standard_normal(10) + 1j * g.standard_normal(10))
    kw = {"n_fft": 10, "hop_length": 3, "center": True, "return_complex": True}
    runs = {}
    for T in (torch, rg):
        w = T.tensor(w0.copy(), requires_grad=True)
        s = T.tensor(spec.copy())
        opt = (torch.optim if T is torch else rg.optim).SGD([w], lr=0.05)
        losses = []
        for _ in range(3):
            y = T.istft(s, window=w, **kw)
            istft_len = y.shape[-1]
            target = np.sin(np.arange(istft_len) / 3.0)
            loss = ((y - T.tensor(target)).abs() ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs[T.__name__] = (losses, w.detach())
    np.testing.assert_allclose(runs["retrograd"][0], runs["torch"][0], rtol=1e-9)
    close(runs["retrograd"][1], runs["torch"][1], "window after SGD")


def test_program_finite_difference_features_adam():
    """Finite-difference features of a small field (gradient with explicit None spacing,
    diff with prepend at order 1 and 0, a constant fill that keeps the graph) through a
    linear head, trained three Adam steps: losses and weights match torch's."""
    g = np.random.default_rng(6)
    field = g.standard_normal((4, 6, 5))
    w0, b0 = g.standard_normal((3, 5)) * 0.3, g.standard_normal(3) * 0.1
    runs = {}
    for T in (torch, rg):
        nn = torch.nn if T is torch else rg.nn
        lin = nn.Linear(5, 3).double()
        with T.no_grad():
            lin.weight.copy_(T.tensor(w0))
            lin.bias.copy_(T.tensor(b0))
        x = T.tensor(field.copy(), requires_grad=True)
        opt = (torch.optim if T is torch else rg.optim).Adam(list(lin.parameters()) + [x],
                                                              lr=0.01)
        losses = []
        for _ in range(3):
            gx, gy, gz = T.gradient(x, spacing=None, dim=None, edge_order=2)
            d1 = T.diff(x, 1, 1, prepend=x[:, :1])
            d0 = T.diff(x, 0, 1, prepend=x[:, :1])
            feat = gx + gy + gz + d1 + 0.5 * d0 + T.fill(x, 0.25)
            loss = lin(feat).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs[T.__name__] = (losses, lin.weight.detach(), x.detach())
    np.testing.assert_allclose(runs["retrograd"][0], runs["torch"][0], rtol=1e-9)
    close(runs["retrograd"][1], runs["torch"][1], "weight")
    close(runs["retrograd"][2], runs["torch"][2], "field")


@pytest.mark.parametrize("name", ["gather", "index_select", "take", "take_along_dim",
                                  "index_add", "masked_select", "cat"])
def test_out_overlapping_an_input_is_refused(name):
    """These kernels refuse an `out=` that shares memory with an input (torch's
    RuntimeError 'unsupported operation: ... refer to a single memory location') rather
    than writing a result computed from a copy; an unrelated out still works (`take`
    gains its out= too). Elementwise ops keep accepting out=input."""
    base = np.arange(6.0).reshape(2, 3)

    def call(T, x, out):
        return {"gather": lambda: T.gather(x, 1, T.tensor([[1, 0, 2], [0, 1, 2]]), out=out),
                "index_select": lambda: T.index_select(x, 0, T.tensor([1, 0]), out=out),
                "take": lambda: T.take(x, T.tensor([[1, 0, 2], [3, 4, 5]]), out=out),
                "take_along_dim": lambda: T.take_along_dim(
                    x, T.tensor([[1, 0, 2], [0, 1, 2]]), 1, out=out),
                "index_add": lambda: T.index_add(x, 0, T.tensor([0]), x[:1], out=out),
                "masked_select": lambda: T.masked_select(x, x > -1, out=out.reshape(-1)),
                "cat": lambda: T.cat([x[:1], x[1:]], out=out)}[name]()

    xt, xr = torch.tensor(base), rg.tensor(base.copy())
    _raises_like(lambda: call(torch, xt, xt), lambda: call(rg, xr, xr))
    ot, orr = torch.empty(2, 3, dtype=torch.float64), rg.empty(2, 3, dtype=rg.float64)
    close(call(rg, xr, orr), call(torch, xt, ot), f"{name} out=")
    close(orr, ot, f"{name} out")
    yt, yr = torch.add(xt, 1, out=xt), rg.add(xr, 1, out=xr)
    close(yr, yt, "add out=input")
