"""The transformer's compiled kernels (retrograd.kernels.activations: GELU, both forms;
retrograd.kernels.attention: scaled dot-product attention's fast path) and their NumPy
paths, each case run under both (`kernels.use`), against PyTorch in float32 and float64:
values and every gradient, NaN and infinity, non-contiguous inputs, edge shapes, and
the generic paths (double backward) still right with the kernels on."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import kernels
from retrograd.nn import functional as F
from retrograd.ops import fused_activations

MODES = [("numba", 0), ("numpy", None)]  # min_size 0: the kernels take every size


@pytest.fixture(params=MODES, ids=[m for m, _ in MODES])
def mode(request):
    name, size = request.param
    with kernels.use(name, min_size=size):
        yield name


def _close(ours, theirs, **tol):
    for a, t in zip(ours, theirs, strict=True):
        assert (a is None) == (t is None)
        if a is not None:
            assert a.dtype == t.dtype and a.shape == t.shape
            torch.testing.assert_close(torch.from_numpy(np.asarray(a)), torch.from_numpy(
                np.asarray(t)), equal_nan=True, **tol)


# ---------------------------------------------------------------- GELU

def _gelu(lib, x, g, approximate):
    t = lib.tensor(x, requires_grad=True)
    fn = F.gelu if lib is rg else torch.nn.functional.gelu
    y = fn(t, approximate=approximate)
    (y * lib.tensor(g)).sum().backward()
    return [y.numpy() if lib is rg else y.detach().numpy(), t.grad.numpy()]


def _gelu_input(rng, shape, dt, special=True):
    x = rng.standard_normal(shape) * 3
    if special and x.size >= 8:
        flat = x.reshape(-1)
        flat[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 40.0, -40.0, -9.5]
    return x.astype(dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("shape", [(33, 47), (1, 5), (5, 1), (0, 4), (), (3, 4, 5)])
def test_gelu_matches_torch(mode, dt, approximate, shape):
    rng = np.random.default_rng(2)
    x = _gelu_input(rng, shape, dt)
    g = rng.standard_normal(shape).astype(dt)
    _close(_gelu(rg, x, g, approximate), _torch_gelu(x, g, approximate))


def _torch_gelu(x, g, approximate):
    """torch's GELU and its gradient; at infinite inputs, torch's float64 values (in x's
    dtype). torch's float32 exact GELU of +inf is inf with its AVX2 kernels but nan with
    its AVX-512 ones (seen on an AMD Zen 5 CPU); float64 gives inf on both, as the
    maths does, and so does retrograd."""
    want = _gelu(torch, x, g, approximate)
    inf = np.isinf(x)
    if x.dtype != np.float64 and inf.any():
        wide = _gelu(torch, x.astype(np.float64), g.astype(np.float64), approximate)
        for w, v in zip(want, wide):
            w[inf] = v[inf].astype(w.dtype)
    return want


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_non_contiguous_input_and_cotangent(mode, dt, approximate):
    rng = np.random.default_rng(3)
    x = _gelu_input(rng, (40, 30), dt).T  # (30, 40), strided
    g = rng.standard_normal((40, 30)).astype(dt).T
    _close(_gelu(rg, x, g, approximate), _gelu(torch, x, g, approximate))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_takes_the_kernel_when_on(mode, dt, approximate):
    """The saving says which path ran: the compiled one exactly when the kernels are on."""
    x = np.linspace(-3, 3, 64, dtype=dt).reshape(8, 8)
    _, saved = fused_activations._gelu_saving(x, approximate=approximate)
    assert (saved.__class__ is fused_activations._Compiled) == (mode == "numba")


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_second_derivative_matches_torch(mode, approximate):
    """create_graph records the generic rule, which differentiates again."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 7)) * 2
    out = []
    for lib in (rg, torch):
        t = lib.tensor(x, requires_grad=True)
        fn = F.gelu if lib is rg else torch.nn.functional.gelu
        y = fn(t, approximate=approximate)
        grad = rg.autograd.grad if lib is rg else torch.autograd.grad
        (d,) = grad(y.sum(), [t], create_graph=True)
        (dd,) = grad((d * d).sum(), [t])
        out.append([d.detach().numpy(), dd.numpy()])
    _close(*out)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_gelu_tanh_kernel_relative_accuracy_in_the_tails(dt):
    """The compiled tanh GELU is accurate relative to its (small) values down the left tail
    (its exp is a polynomial in float32; the tanh form's 1 + tanh cancels there, in torch
    and in the NumPy path): against x sigmoid(2 z) in float64, 0.5 (1 + tanh z) rewritten."""
    x = np.concatenate([np.linspace(-12.0, 6.0, 3001), -np.geomspace(1e-30, 9.0, 200)])
    x = x.astype(dt).astype(np.float64)
    z = np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)
    want = x / (1.0 + np.exp(-2.0 * z))
    with kernels.use("numba", min_size=0):
        got = F.gelu(rg.tensor(x.astype(dt)), approximate="tanh").numpy()
    torch.testing.assert_close(torch.from_numpy(got), torch.from_numpy(want.astype(dt)),
                               rtol=1.5e-7 if dt == np.float32 else 3e-13,  # exp(-2z): cond 2|z|
                               atol=np.finfo(dt).tiny)  # below it, subnormals' few digits


def _ulps(got, want):
    """|got - want| in float32 ulps of want rounded to float32 (subnormal spacing at least);
    0 where both are NaN or equal (infinities)."""
    got = np.asarray(got, np.float64)
    u = np.maximum(np.spacing(np.abs(want.astype(np.float32))).astype(np.float64), 2.0 ** -149)
    with np.errstate(invalid="ignore"):
        e = np.abs(got - want) / u
    e[(np.isnan(got) & np.isnan(want)) | (got == want)] = 0.0
    return e


def _tanh_gelu_exact(x32):
    """x sigmoid(2 z) and sigmoid(2 z) in float64 from float32 x (the tanh form rewritten)."""
    x = x32.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        s = 1.0 / (1.0 + np.exp(-2.0 * np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
        return x * s, s


def test_gelu_tanh_f32_kernel_within_two_ulps_of_float64():
    """The float32 tanh kernel's out and s (its float32 exp, the float64 pass below -9.5)
    against the float64 formula over a dense sweep of [-20, 20], random float32 bit
    patterns in that range, and a length that is no multiple of the kernel's block."""
    from retrograd.kernels import activations as kact
    rng = np.random.default_rng(5)
    bits = rng.integers(0, np.float32(20).view(np.uint32), 100_000, dtype=np.uint32)
    x = np.concatenate([np.linspace(-20, 20, 300_001, dtype=np.float32),
                        bits.view(np.float32) * rng.choice(np.float32([-1, 1]), bits.size)])
    out, s = np.empty_like(x), np.empty_like(x)
    kact.tanh_forward_f32(x, out, s)
    want_out, want_s = _tanh_gelu_exact(x)
    assert _ulps(out, want_out).max() <= 2.0
    assert _ulps(s, want_s).max() <= 2.0


def test_gelu_tanh_f32_kernel_special_values_and_a_late_tail():
    """inf, nan, signed zeros, the switch to float64 at -9.5, values that round s to 1 or
    0, huge inputs; left-tail values only in the last block still get the float64 pass,
    both when a block holds a few (out -0 far left, nan at -inf as x * 0) and many."""
    from retrograd.kernels import activations as kact
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1e-30, -1e-30,
                   -9.5, np.nextafter(-9.5, 0), np.nextafter(-9.5, -20), -10.3, -12.0, -40.0,
                   9.999999, 10.0, 10.000001, 40.0, 3.4e38, -3.4e38], np.float32)
    for x in (np.concatenate([np.linspace(-3, 3, 5000, dtype=np.float32), sp]),  # few x < -9.5
              np.concatenate([np.linspace(-11, -9, 1500, dtype=np.float32), sp])):  # many
        out, s = np.empty_like(x), np.empty_like(x)
        kact.tanh_forward_f32(x, out, s)
        want_out, want_s = _tanh_gelu_exact(x)
        want_out[np.isneginf(x)] = np.nan  # -inf * sigmoid(-inf) = -inf * 0
        assert _ulps(out, want_out).max() <= 2.0 and _ulps(s, want_s).max() <= 2.0
        np.testing.assert_array_equal(np.signbit(out[~np.isnan(out)]),
                                      np.signbit(want_out[~np.isnan(out)].astype(np.float32)))
        assert np.isnan(out[np.isnan(x) | np.isneginf(x)]).all()
        tg = torch.nn.functional.gelu(torch.from_numpy(x), approximate="tanh")
        torch.testing.assert_close(torch.from_numpy(out), tg, equal_nan=True)


def test_gelu_tanh_backward_float32_within_ulps_of_double():
    """The float32 backward runs in float32 lanes: over a dense sweep it stays within 4
    ulps (of max(|dx|, 0.1): gelu' crosses 0 near x = -0.75) of the same formula in
    float64 from the same saved s, and within torch's own float32 error (plus 1e-7) of
    the exact derivative wherever the saved s is not what limits both (|x| < 1)."""
    import math

    from retrograd.kernels import activations as A

    x = np.linspace(-20, 20, 200001).astype(np.float32)
    out, s = np.empty_like(x), np.empty_like(x)
    A.tanh_forward_f32(x, out, s)
    dx = np.empty_like(x)
    with kernels.use("numba", min_size=0):
        A.tanh_backward(np.ones_like(x), x, s, dx)
    xd, q = x.astype(np.float64), s.astype(np.float64)
    b, k = math.sqrt(2 / math.pi), 0.044715
    same_s = q + (q * (1 - q)) * (xd * 2 * (b + 3 * b * k * xd * xd))
    tol = 4 * np.finfo(np.float32).eps * np.maximum(np.abs(same_s), 0.1)
    assert np.all(np.abs(dx - same_s) <= tol)
    t = np.tanh(b * (xd + k * xd ** 3))
    exact = 0.5 * (1 + t) + 0.5 * xd * (1 - t * t) * b * (1 + 3 * k * xd * xd)
    tx = torch.from_numpy(x).requires_grad_()
    torch.nn.functional.gelu(tx, approximate="tanh").sum().backward()
    m = np.abs(x) < 1
    assert (np.abs(dx[m] - exact[m]).max()
            <= np.abs(tx.grad.numpy()[m] - exact[m]).max() + 1e-7)
