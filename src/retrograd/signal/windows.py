"""Window functions, as `torch.signal.windows` (and SciPy's `scipy.signal.windows`).

Each takes the length `M`, `sym=True` for a symmetric window (filter design) or False for
a periodic one (spectral analysis: the symmetric window of length M + 1, less its last
point), and float32 or float64 `dtype=` (the default dtype when None). Each is computed
from a `linspace` of the window's arguments, as PyTorch's, so the float32 values agree.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ..creation import empty, linspace, ones, tensor
from ..dtypes import get_default_dtype
from ..layouts import strided
from ..primitive import ArgumentError
from ..tensor import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _dtype(name: str, M: int, dtype, layout) -> np.dtype:
    dt = np.dtype(get_default_dtype() if dtype is None else dtype)
    if M < 0:
        raise ArgumentError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not strided \
            and str(layout) not in ("strided", "torch.strided"):
        raise ArgumentError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dt not in (np.float32, np.float64):
        raise ArgumentError(f"{name} expects float32 or float64 dtypes, got: {dt}")
    return dt


def _done(t: Tensor, requires_grad: bool) -> Tensor:
    return t.requires_grad_(True) if requires_grad else t


def _span(M: int, sym: bool) -> int:
    """The denominator of the sample spacing: M - 1 points apart, M for a periodic window."""
    return M - 1 if sym or M <= 1 else M


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """exp(-|n - center| / tau) (the Poisson window); center defaults to the middle."""
    dt = _dtype("exponential", M, dtype, layout)
    if tau <= 0:
        raise ArgumentError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ArgumentError("Center must be None for symmetric windows")
    if M == 0:
        return _done(empty(0, dtype=dt), requires_grad)
    c = _span(M, sym) / 2.0 if center is None else center
    k = linspace(-c / tau, (M - 1 - c) / tau, M, dtype=dt)
    return _done((-k.abs()).exp(), requires_grad)


def cosine(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """sin(pi (n + 1/2) / M) (the sine window, as SciPy's)."""
    dt = _dtype("cosine", M, dtype, layout)
    if M == 0:
        return _done(empty(0, dtype=dt), requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return _done(linspace(0.5 * step, (M - 0.5) * step, M, dtype=dt).sin(), requires_grad)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=None,
             device=None, requires_grad: bool = False) -> Tensor:
    """exp(-((n - middle) / std)^2 / 2)."""
    dt = _dtype("gaussian", M, dtype, layout)
    if std <= 0:
        raise ArgumentError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _done(empty(0, dtype=dt), requires_grad)
    first = -_span(M, sym) / 2.0
    scale = 1 / (std * math.sqrt(2))
    k = linspace(first * scale, (first + M - 1) * scale, M, dtype=dt)
    return _done((-(k ** 2)).exp(), requires_grad)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=None,
           device=None, requires_grad: bool = False) -> Tensor:
    """I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)."""
    from ..special import i0

    dt = _dtype("kaiser", M, dtype, layout)
    if beta < 0:
        raise ArgumentError(f"beta must be non-negative, got: {beta} instead.")
    if M == 0:
        return _done(empty(0, dtype=dt), requires_grad)
    if M == 1:
        return _done(ones(1, dtype=dt), requires_grad)
    b = tensor(beta, dtype=dt)
    step = 2.0 * b / (M if not sym else M - 1)
    k = linspace(-b, (-b + (M - 1) * step).clamp(max=b), M, dtype=dt)
    return _done(i0((b * b - k ** 2).sqrt()) / i0(b), requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """1 - |2n / (M - 1) - 1| (the triangular window with zero ends)."""
    dt = _dtype("bartlett", M, dtype, layout)
    if M == 0:
        return _done(empty(0, dtype=dt), requires_grad)
    if M == 1:
        return _done(ones(1, dtype=dt), requires_grad)
    step = 2 / (M if not sym else M - 1)
    return _done(1 - linspace(-1, -1 + (M - 1) * step, M, dtype=dt).abs(), requires_grad)


def general_cosine(M, *, a: Iterable, sym: bool = True, dtype=None, layout=None,
                   device=None, requires_grad: bool = False) -> Tensor:
    """sum_i (-1)^i a[i] cos(2 pi i n / (M - 1)): the family of Hann, Hamming, Blackman
    and Nuttall."""
    dt = _dtype("general_cosine", M, dtype, layout)
    if M == 0:
        return _done(empty(0, dtype=dt), requires_grad)
    if M == 1:
        return _done(ones(1, dtype=dt), requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    coeffs = list(a)
    if not coeffs:
        raise ArgumentError("Coefficients cannot be empty")
    step = 2 * math.pi / (M if not sym else M - 1)
    k = linspace(0, (M - 1) * step, M, dtype=dt)
    signed = tensor([(-1) ** i * w for i, w in enumerate(coeffs)], dtype=dt)
    order = tensor(np.arange(len(coeffs)), dtype=dt)
    return _done((signed[:, None] * (order[:, None] * k).cos()).sum(0), requires_grad)


def general_hamming(M, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=None,
                    device=None, requires_grad: bool = False) -> Tensor:
    """alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """The Hamming window: general_hamming with alpha 0.54."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
         requires_grad: bool = False) -> Tensor:
    """The Hann window: general_hamming with alpha 0.5."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """The Blackman window: general_cosine with a = (0.42, 0.5, 0.08)."""
    _dtype("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """The minimum 4-term Blackman-Harris window (Nuttall's)."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, requires_grad=requires_grad)
