"""rg.fft against torch.fft (values and gradients of real losses, complex and real inputs,
every norm, n/s/dim, float32 and float64), finite differences to second order, forward mode,
a worked example with a closed form, and bad arguments."""

import numpy as np
import pytest
import torch

import retrograd as rg

RNG = np.random.default_rng(0)


def _real(*shape):
    return RNG.standard_normal(shape)


def _cplx(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


CASES = {
    "fft": (lambda M, x, **k: M.fft.fft(x, **k), _cplx(3, 6), [{}, {"n": 4}, {"n": 9},
                                                             {"dim": 0, "norm": "ortho"}]),
    "fft_real": (lambda M, x, **k: M.fft.fft(x, **k), _real(5), [{}, {"norm": "forward"}]),
    "ifft": (lambda M, x, **k: M.fft.ifft(x, **k), _cplx(2, 5), [{}, {"n": 8, "norm": "ortho"}]),
    "rfft": (lambda M, x, **k: M.fft.rfft(x, **k), _real(3, 7), [{}, {"n": 10}, {"n": 5},
                                                               {"dim": 0, "norm": "forward"}]),
    "irfft": (lambda M, x, **k: M.fft.irfft(x, **k), _cplx(2, 5),
              [{}, {"n": 9}, {"n": 6, "norm": "ortho"}, {"n": 3}, {"dim": 0, "n": 4}]),
    "fft2": (lambda M, x, **k: M.fft.fft2(x, **k), _cplx(2, 3, 4), [{}, {"s": (4, 6)}]),
    "ifft2": (lambda M, x, **k: M.fft.ifft2(x, **k), _cplx(3, 4), [{"norm": "forward"}]),
    "fftn": (lambda M, x, **k: M.fft.fftn(x, **k), _cplx(2, 3, 4), [{}, {"dim": (0, 2)},
                                                                   {"s": (5, 2)}]),
    "ifftn": (lambda M, x, **k: M.fft.ifftn(x, **k), _cplx(2, 3, 4), [{"norm": "ortho"}]),
    "rfftn": (lambda M, x, **k: M.fft.rfftn(x, **k), _real(3, 4, 5), [{}, {"dim": (0, 1)},
                                                                     {"s": (4, 6)}]),
    "irfftn": (lambda M, x, **k: M.fft.irfftn(x, **k), _cplx(3, 4, 3),
               [{}, {"s": (4, 5)}, {"dim": (0, 2), "norm": "forward"}]),
    "rfft2": (lambda M, x, **k: M.fft.rfft2(x, **k), _real(4, 6), [{}]),
    "irfft2": (lambda M, x, **k: M.fft.irfft2(x, **k), _cplx(4, 4), [{"s": (4, 7)}]),
    "hfft": (lambda M, x, **k: M.fft.hfft(x, **k), _cplx(5), [{}, {"n": 7, "norm": "ortho"}]),
    "ihfft": (lambda M, x, **k: M.fft.ihfft(x, **k), _real(6), [{}, {"n": 5}]),
    "fftshift": (lambda M, x, **k: M.fft.fftshift(x, **k), _cplx(4, 5), [{}, {"dim": 1}]),
    "ifftshift": (lambda M, x, **k: M.fft.ifftshift(x, **k), _real(5, 4), [{}, {"dim": (0,)}]),
}


def _loss(M, y, w):
    """A real loss of a real or complex result."""
    if y.is_complex():
        return (M.real(y) * w.real).sum() + (M.imag(y) * w.imag).sum()
    return (y * w.real).sum()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name, dtype):
    fn, x0, kwargs = CASES[name]
    x0 = x0.astype(np.complex64 if dtype == "float32" else np.complex128) \
        if np.iscomplexobj(x0) else x0.astype(dtype)
    tol = dict(rtol=2e-4, atol=2e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    for kw in kwargs:
        x = rg.tensor(x0, requires_grad=True)
        tx = torch.tensor(x0, requires_grad=True)
        y, ty = fn(rg, x, **kw), fn(torch, tx, **kw)
        assert y.shape == tuple(ty.shape) and y.dtype == np.dtype(str(ty.dtype)[6:])
        np.testing.assert_allclose(y.data, ty.detach().resolve_conj().numpy(), **tol)
        w = _cplx(*y.shape)
        _loss(rg, y, rg.tensor(w)).backward()
        _loss(torch, ty, torch.tensor(w)).backward()
        assert x.grad.dtype == x.dtype
        np.testing.assert_allclose(x.grad.data, tx.grad.resolve_conj().numpy(), **tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_to_second_order_through_real_parametrisation(name):
    fn, x0, kwargs = CASES[name]
    w = None
    for kw in kwargs:
        if np.iscomplexobj(x0):
            p = rg.tensor(np.stack([x0.real, x0.imag], -1), requires_grad=True)

            def f(p, kw=kw):
                return fn(rg, rg.view_as_complex(p), **kw)
        else:
            p = rg.tensor(x0, requires_grad=True)

            def f(p, kw=kw):
                return fn(rg, p, **kw)
        assert rg.gradcheck(f, [p])
        y = f(p)
        w = rg.tensor(_cplx(*y.shape))
        assert rg.gradgradcheck(lambda p, f=f, w=w: _loss(rg, f(p), w), [p])


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fftn", "rfftn", "irfftn", "hfft"])
def test_jvp_matches_torch_func(name):
    fn, x0, kwargs = CASES[name]
    t0 = _cplx(*x0.shape) if np.iscomplexobj(x0) else _real(*x0.shape)
    for kw in kwargs:
        _, ours = rg.func.jvp(lambda x, kw=kw: fn(rg, x, **kw), (rg.tensor(x0),), (rg.tensor(t0),))
        _, theirs = torch.func.jvp(lambda x, kw=kw: fn(torch, x, **kw), (torch.tensor(x0),),
                                   (torch.tensor(t0),))
        np.testing.assert_allclose(ours.data, theirs.resolve_conj().numpy(), rtol=1e-10,
                                   atol=1e-12)


def test_batched_jvp_through_fft_equals_jacobian():
    x0 = _real(6)
    J = rg.func.jacfwd(lambda x: rg.real(rg.fft.fft(x)) + rg.fft.irfft(rg.fft.rfft(x)))(
        rg.tensor(x0))
    k = np.arange(6)
    F = np.exp(-2j * np.pi * np.outer(k, k) / 6)
    np.testing.assert_allclose(J.data, F.real + np.eye(6), atol=1e-12)


def test_smoothness_penalty_gradient_equals_its_closed_form():
    """P(x) = sum_k w_k |X_k|^2 with X = rfft(x) and w_k = |1 - e^(-2 pi i k / n)|^2 (doubled
    for the bins that stand for a conjugate pair) is, by Parseval, n sum_j (x_j - x_(j-1))^2,
    the circular first-difference energy; its gradient is 2 n (2 x_j - x_(j-1) - x_(j+1))."""
    n = 8
    x0 = _real(n)
    x = rg.tensor(x0, requires_grad=True)
    X = rg.fft.rfft(x)
    k = np.arange(n // 2 + 1)
    w = np.abs(1 - np.exp(-2j * np.pi * k / n)) ** 2
    w[1:n // 2] *= 2  # bins that stand for a conjugate pair
    P = (rg.tensor(w) * rg.abs(X) ** 2).sum()
    np.testing.assert_allclose(P.item(), n * np.sum((x0 - np.roll(x0, 1)) ** 2), rtol=1e-12)
    P.backward()
    closed = 2 * n * (2 * x0 - np.roll(x0, 1) - np.roll(x0, -1))
    np.testing.assert_allclose(x.grad.data, closed, rtol=1e-10, atol=1e-10)
    # and through irfft: the smoothed signal's energy, gradient in the spectrum = torch's
    spec = rg.tensor(np.fft.rfft(x0), requires_grad=True)
    y = rg.fft.irfft(spec * rg.tensor(np.exp(-k / 2.0)), n=n)
    (y * y).sum().backward()
    tspec = torch.tensor(np.fft.rfft(x0), requires_grad=True)
    ty = torch.fft.irfft(tspec * torch.tensor(np.exp(-k / 2.0)), n=n)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(spec.grad.data, tspec.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_fftfreq_and_rfftfreq_match_torch():
    np.testing.assert_allclose(rg.fft.fftfreq(7, 0.5).data, torch.fft.fftfreq(7, 0.5).numpy())
    np.testing.assert_allclose(rg.fft.rfftfreq(8).data, torch.fft.rfftfreq(8).numpy())
    assert rg.fft.fftfreq(4).dtype == rg.get_default_dtype()


def test_bad_arguments():
    with pytest.raises(ValueError, match="Invalid normalization mode"):
        rg.fft.fft(rg.zeros(4), norm="both")
    with pytest.raises(TypeError, match="real input"):
        rg.fft.rfft(rg.tensor(np.ones(4, complex)))
    with pytest.raises(ValueError, match="number of data points"):
        rg.fft.fft(rg.zeros(4), n=0)
    with pytest.raises(IndexError, match="out of range"):
        rg.fft.fft(rg.zeros(4), dim=2)
    with pytest.raises(ValueError, match="same length"):
        rg.fft.fftn(rg.zeros(4, 4), s=(4,), dim=(0, 1))
