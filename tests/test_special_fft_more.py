"""rg.special's Bessel functions and orthogonal polynomials, rg.fft's hfft2/hfftn/ihfft2/
ihfftn, and rg.stft/rg.istft, against PyTorch 2.13: values (float32, float64), dtypes,
shapes, gradients (float64; PyTorch has none for the Bessel functions, so those are
checked against their classical closed forms written with torch.special, and against
finite differences), and the exception types of bad input."""

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg

S, TS = rg.special, torch.special

BESSEL = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
          "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
          "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0"]
POLYS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
         "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
         "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
         "laguerre_polynomial_l", "legendre_polynomial_p"]
# PyTorch's float64 j0/j1/y0/y1 drift from the true values beyond |x| ~ 3 (SciPy's do not).
DOMAIN = {"bessel_y0": (0.2, 3.0), "bessel_y1": (0.2, 3.0), "bessel_j0": (-3.0, 3.0),
          "bessel_j1": (-3.0, 3.0),
          "airy_ai": (-1.5, 5.0)}  # torch's airy_ai is off by 3e-5 (relative) at x = -2.3


def _sph_j1(x):
    return torch.sin(x) / x ** 2 - torch.cos(x) / x


DERIV = {  # the closed forms, in torch
    "bessel_j0": lambda x: -TS.bessel_j1(x),
    "bessel_j1": lambda x: TS.bessel_j0(x) - TS.bessel_j1(x) / x,
    "bessel_y0": lambda x: -TS.bessel_y1(x),
    "bessel_y1": lambda x: TS.bessel_y0(x) - TS.bessel_y1(x) / x,
    "modified_bessel_i0": lambda x: TS.modified_bessel_i1(x),
    "modified_bessel_i1": lambda x: TS.modified_bessel_i0(x) - TS.modified_bessel_i1(x) / x,
    "modified_bessel_k0": lambda x: -TS.modified_bessel_k1(x),
    "modified_bessel_k1": lambda x: -TS.modified_bessel_k0(x) - TS.modified_bessel_k1(x) / x,
    "scaled_modified_bessel_k0": lambda x: (TS.scaled_modified_bessel_k0(x)
                                            - TS.scaled_modified_bessel_k1(x)),
    "scaled_modified_bessel_k1": lambda x: (TS.scaled_modified_bessel_k1(x) * (1 - 1 / x)
                                            - TS.scaled_modified_bessel_k0(x)),
    "spherical_bessel_j0": lambda x: -_sph_j1(x),
}


def _domain(name):
    if name in DOMAIN:
        return DOMAIN[name]
    return (0.2, 5.0) if "_k" in name else (-5.0, 5.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", BESSEL + ["airy_ai"])
def test_bessel_values(name, dtype):
    lo, hi = _domain(name)
    x = np.random.default_rng(0).uniform(lo, hi, (3, 5)).astype(dtype)
    ours = getattr(S, name)(rg.tensor(x))
    ref = getattr(TS, name)(torch.tensor(x))
    assert ours.dtype == np.dtype(dtype) and ours.shape == tuple(ref.shape)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), **tol)


@pytest.mark.parametrize("name", BESSEL + ["airy_ai"])
def test_bessel_edges_and_dtypes(name):
    x = np.array([0.0, -1.0, np.inf, -np.inf, np.nan, 1e-3, 30.0])
    ours = getattr(S, name)(rg.tensor(x)).numpy()
    ref = getattr(TS, name)(torch.tensor(x)).numpy()
    if name.startswith("bessel_") or name == "airy_ai":  # torch's far tails drift (see above)
        ours, ref = ours[:-1], ref[:-1]
    np.testing.assert_allclose(ours, ref, rtol=1e-7, atol=1e-300, equal_nan=True)
    ints = getattr(S, name)(rg.tensor([1, 2]))
    assert ints.dtype == np.float32 == getattr(TS, name)(torch.tensor([1, 2])).numpy().dtype
    with pytest.raises(NotImplementedError):
        getattr(TS, name)(torch.tensor([1j]))
    with pytest.raises(NotImplementedError, match="complex"):
        getattr(S, name)(rg.tensor([1j]))


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_gradients(name):
    lo, hi = _domain(name)
    x = np.random.default_rng(1).uniform(lo, hi, 6)
    x = np.where(np.abs(x) < 0.3, 0.3, x)  # the closed forms in torch divide by x
    xr = rg.tensor(x, requires_grad=True)
    getattr(S, name)(xr).sum().backward()
    np.testing.assert_allclose(xr.grad.numpy(), DERIV[name](torch.tensor(x)).numpy(),
                               rtol=1e-9, atol=1e-12)
    f = getattr(S, name)
    assert rg.gradcheck(f, [rg.tensor(x, requires_grad=True)])
    assert rg.gradgradcheck(f, [rg.tensor(x, requires_grad=True)])


def test_bessel_derivative_limits_at_zero():
    """j1'(0) = 1/2 and spherical j0''(0) = -1/3, written apart from the quotients."""
    x = rg.tensor([0.0], dtype=rg.float64, requires_grad=True)
    (g,) = rg.autograd.grad(S.bessel_j1(x).sum(), x, create_graph=True)
    assert g.item() == 0.5
    (g,) = rg.autograd.grad(S.spherical_bessel_j0(x).sum(), x, create_graph=True)
    assert g.item() == 0.0
    (g2,) = rg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g2.item(), -1.0 / 3.0, rtol=1e-15)


def test_not_differentiable_as_in_torch():
    x = rg.tensor([0.5, 1.5], requires_grad=True)
    assert not S.airy_ai(x).requires_grad
    assert not TS.airy_ai(torch.tensor([0.5], requires_grad=True)).requires_grad
    for name in POLYS:
        assert not getattr(S, name)(x, 3).requires_grad
        assert not getattr(TS, name)(torch.tensor([0.5], requires_grad=True), 3).requires_grad


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", POLYS)
def test_polynomial_values(name, dtype):
    x = np.concatenate([np.linspace(-1.5, 1.5, 9), [-1.0, 1.0, 0.0, 0.5, np.nan]]).astype(dtype)
    n = np.arange(-2, 14)
    ours = getattr(S, name)(rg.tensor(x[:, None]), rg.tensor(n))
    ref = getattr(TS, name)(torch.tensor(x[:, None]), torch.tensor(n))
    assert ours.dtype == np.dtype(dtype) and ours.shape == tuple(ref.shape)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), equal_nan=True, **tol)


@pytest.mark.parametrize("name", POLYS)
def test_polynomial_scalars_dtypes_errors(name):
    f, tf = getattr(S, name), getattr(TS, name)
    x = np.array([0.25, -0.7, 1.3])
    cases = [(rg.tensor(x), 4, torch.tensor(x), 4),
             (0.3, rg.tensor([1, 2, 5]), 0.3, torch.tensor([1, 2, 5])),
             (rg.tensor(x), 3.7, torch.tensor(x), 3.7),  # the degree is truncated
             (rg.tensor(x, dtype=rg.float32), rg.tensor(3.0), torch.tensor(x).float(),
              torch.tensor(3.0, dtype=torch.float64)),
             (rg.tensor([1, 2]), 2, torch.tensor([1, 2]), 2)]
    for a, n, ta, tn in cases:
        ours, ref = f(a, n), tf(ta, tn)
        assert ours.dtype == ref.numpy().dtype
        np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-6)
    with pytest.raises(TypeError):
        tf(0.5, 2)
    with pytest.raises(TypeError, match="'input' or 'n' must be a tensor"):
        f(0.5, 2)
    with pytest.raises(NotImplementedError):
        tf(torch.tensor([1j]), 2)
    with pytest.raises(NotImplementedError, match="complex"):
        f(rg.tensor([1j]), 2)


# ---------------------------------------------------------------- hfftn and friends

HFFT_CASES = [(None, None), ((4, 7), (0, 2)), (None, (1,)), ((3,), None), ((5, 6), None)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
def test_hfftn_ihfftn_values(norm, dtype):
    rng = np.random.default_rng(3)
    cdt = np.complex64 if dtype == "float32" else np.complex128
    z = (rng.standard_normal((3, 4, 5)) + 1j * rng.standard_normal((3, 4, 5))).astype(cdt)
    r = rng.standard_normal((3, 4, 6)).astype(dtype)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    for s, dim in HFFT_CASES:
        a, b = rg.fft.hfftn(rg.tensor(z), s, dim, norm), torch.fft.hfftn(torch.tensor(z), s,
                                                                        dim, norm)
        assert a.shape == tuple(b.shape) and a.dtype == b.numpy().dtype
        np.testing.assert_allclose(a.numpy(), b.numpy(), **tol)
        a, b = rg.fft.ihfftn(rg.tensor(r), s, dim, norm), torch.fft.ihfftn(torch.tensor(r), s,
                                                                          dim, norm)
        b = b.resolve_conj()
        assert a.shape == tuple(b.shape) and a.dtype == b.numpy().dtype
        np.testing.assert_allclose(a.numpy(), b.numpy(), **tol)
    np.testing.assert_allclose(rg.fft.hfft2(rg.tensor(z), norm=norm).numpy(),
                               torch.fft.hfft2(torch.tensor(z), norm=norm).numpy(), **tol)
    np.testing.assert_allclose(rg.fft.ihfft2(rg.tensor(r), (3, 4), norm=norm).numpy(),
                               torch.fft.ihfft2(torch.tensor(r), (3, 4), norm=norm)
                               .resolve_conj().numpy(), **tol)


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_hfftn_ihfftn_gradients(norm):
    rng = np.random.default_rng(4)
    z = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    r = rng.standard_normal((3, 5))
    for ours, theirs, x in [(rg.fft.hfftn, torch.fft.hfftn, z), (rg.fft.hfft2, torch.fft.hfft2, z),
                            (rg.fft.ihfftn, torch.fft.ihfftn, r),
                            (rg.fft.ihfft2, torch.fft.ihfft2, r)]:
        for s in (None, (4, 5)):
            xr, xt = rg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
            a, b = ours(xr, s, norm=norm), theirs(xt, s, norm=norm)
            w = rng.standard_normal(tuple(b.shape))
            (rg.real(a * rg.tensor(w + 0.5j * w)).sum() if a.dtype.kind == "c"
             else (a * rg.tensor(w)).sum()).backward()
            (torch.real(b * torch.tensor(w + 0.5j * w)).sum() if b.is_complex()
             else (b * torch.tensor(w)).sum()).backward()
            np.testing.assert_allclose(xr.grad.numpy(), xt.grad.numpy(), rtol=1e-9,
                                       atol=1e-10)
    assert rg.gradcheck(lambda re, im: rg.fft.hfftn(rg.complex(re, im), (3, 4), norm=norm),
                        [rg.tensor(z.real, requires_grad=True),
                         rg.tensor(z.imag, requires_grad=True)])
    assert rg.gradcheck(lambda x: rg.real(rg.fft.ihfft2(x, norm=norm)),
                        [rg.tensor(r, requires_grad=True)])


def test_hfftn_errors():
    z = rg.tensor(np.ones((3, 4), np.complex128))
    with pytest.raises(TypeError, match="real input"):
        rg.fft.ihfftn(z)
    with pytest.raises(IndexError):
        torch.fft.hfftn(torch.ones(3, 4) + 0j, dim=(5,))
    with pytest.raises(IndexError, match="out of range"):
        rg.fft.hfftn(z, dim=(5,))
    with pytest.raises(ValueError, match="same length"):
        rg.fft.hfft2(z, s=(3,))


# ---------------------------------------------------------------- stft / istft

def _hann(n):
    return np.hanning(n + 2)[1:-1]


STFT_CASES = [dict(n_fft=8), dict(n_fft=8, hop_length=3, win_length=6, window=6),
              dict(n_fft=7, center=False), dict(n_fft=8, pad_mode="constant", normalized=True),
              dict(n_fft=8, pad_mode="replicate", onesided=False, window=8),
              dict(n_fft=6, pad_mode="circular", hop_length=2)]


def _kw(kw, lib, dtype):
    kw = dict(kw)
    if "window" in kw:
        w = _hann(kw["window"]).astype(dtype)
        kw["window"] = rg.tensor(w) if lib == "rg" else torch.tensor(w)
    return kw


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(20,), (2, 21)])
@pytest.mark.parametrize("case", range(len(STFT_CASES)))
def test_stft_istft_values(case, shape, dtype):
    kw = STFT_CASES[case]
    x = np.random.default_rng(case).standard_normal(shape).astype(dtype)
    ours = rg.stft(rg.tensor(x), return_complex=True, **_kw(kw, "rg", dtype))
    ref = torch.stft(torch.tensor(x), return_complex=True, **_kw(kw, "torch", dtype))
    assert ours.shape == tuple(ref.shape) and ours.dtype == ref.numpy().dtype
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), **tol)
    assert rg.tensor(x).stft(return_complex=True, **_kw(kw, "rg", dtype)).shape == ours.shape
    ikw = {k: v for k, v in kw.items() if k != "pad_mode"}
    back = rg.istft(ours, length=shape[-1], **_kw(ikw, "rg", dtype))
    tback = torch.istft(ref, length=shape[-1], **_kw(ikw, "torch", dtype))
    assert back.dtype == tback.numpy().dtype and back.shape == tuple(tback.shape)
    np.testing.assert_allclose(back.numpy(), tback.numpy(), **tol)
    np.testing.assert_allclose(back.numpy(), x, **tol)  # the round trip
    back2 = ours.istft(**_kw(ikw, "rg", dtype))  # no length: as torch cuts it
    np.testing.assert_allclose(back2.numpy(),
                               torch.istft(ref, **_kw(ikw, "torch", dtype)).numpy(), **tol)


@pytest.mark.parametrize("case", range(len(STFT_CASES)))
def test_stft_istft_gradients(case):
    kw = STFT_CASES[case]
    rng = np.random.default_rng(10 + case)
    x = rng.standard_normal((2, 13))
    xr, xt = rg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    a = rg.stft(xr, return_complex=True, **_kw(kw, "rg", "float64"))
    b = torch.stft(xt, return_complex=True, **_kw(kw, "torch", "float64"))
    w = rng.standard_normal(tuple(b.shape))
    (a.abs() * rg.tensor(w)).sum().backward()
    (b.abs() * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xr.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-11)
    ikw = {k: v for k, v in kw.items() if k != "pad_mode"}
    spec = b.detach().numpy()
    sr, st = rg.tensor(spec, requires_grad=True), torch.tensor(spec, requires_grad=True)
    ya = rg.istft(sr, length=13, **_kw(ikw, "rg", "float64"))
    yb = torch.istft(st, length=13, **_kw(ikw, "torch", "float64"))
    v = rng.standard_normal(tuple(yb.shape))
    (ya * rg.tensor(v)).sum().backward()
    (yb * torch.tensor(v)).sum().backward()
    np.testing.assert_allclose(sr.grad.numpy(), st.grad.numpy(), rtol=1e-9, atol=1e-11)
    assert rg.gradcheck(lambda t: rg.stft(t, return_complex=True, **_kw(kw, "rg", "float64")),
                        [rg.tensor(x[0], requires_grad=True)])


def test_stft_window_gradient_and_return_complex_false():
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal(16), _hann(8)
    wr, wt = rg.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    a = rg.stft(rg.tensor(x), 8, window=wr, return_complex=True)
    b = torch.stft(torch.tensor(x), 8, window=wt, return_complex=True)
    a.abs().sum().backward()
    b.abs().sum().backward()
    np.testing.assert_allclose(wr.grad.numpy(), wt.grad.numpy(), rtol=1e-9, atol=1e-11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = rg.stft(rg.tensor(x), 8, return_complex=False)
        ref = torch.stft(torch.tensor(x), 8, return_complex=False)
    assert ours.shape == tuple(ref.shape)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)


def _same_error(ours, theirs, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as e:
            theirs()
        with pytest.raises(e.type, match=match):
            ours()


def test_stft_istft_errors():
    x, tx = rg.tensor(np.ones(10)), torch.ones(10, dtype=torch.float64)
    spec = torch.stft(tx, 8, window=torch.ones(8, dtype=torch.float64), return_complex=True)
    s = rg.tensor(spec.numpy())
    cases = [
        (lambda: rg.stft(x, 8), lambda: torch.stft(tx, 8), "return_complex"),
        (lambda: rg.stft(x, 32, return_complex=True),
         lambda: torch.stft(tx, 32, return_complex=True), "reflect padding"),
        (lambda: rg.stft(x, 32, center=False, return_complex=True),
         lambda: torch.stft(tx, 32, center=False, return_complex=True), "n_fft"),
        (lambda: rg.stft(x, 8, hop_length=0, return_complex=True),
         lambda: torch.stft(tx, 8, hop_length=0, return_complex=True), "hop_length"),
        (lambda: rg.stft(x, 8, win_length=9, return_complex=True),
         lambda: torch.stft(tx, 8, win_length=9, return_complex=True), "win_length"),
        (lambda: rg.stft(x, 8, window=rg.ones(5), return_complex=True),
         lambda: torch.stft(tx, 8, window=torch.ones(5), return_complex=True), "window"),
        (lambda: rg.stft(rg.ones(2, 2, 10), 8, return_complex=True),
         lambda: torch.stft(torch.ones(2, 2, 10), 8, return_complex=True), "1D or 2D"),
        (lambda: rg.stft(x, 8, pad_mode="bogus", return_complex=True),
         lambda: torch.stft(tx, 8, pad_mode="bogus", return_complex=True), "pad_mode"),
        (lambda: rg.stft(x + 0j, 8, onesided=True, return_complex=True),
         lambda: torch.stft(tx + 0j, 8, onesided=True, return_complex=True), "onesided"),
        (lambda: rg.istft(rg.real(s), 8), lambda: torch.istft(spec.real, 8), "complex"),
        (lambda: rg.istft(s, 8, window=rg.zeros(8)),
         lambda: torch.istft(spec, 8, window=torch.zeros(8)), "overlap add"),
    ]
    for ours, theirs, match in cases:
        _same_error(ours, theirs, match)
