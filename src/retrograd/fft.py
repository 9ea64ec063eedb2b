"""`rg.fft`: PyTorch's `torch.fft` (names, `n`/`s`, `dim`, `norm` in 'backward', 'ortho',
'forward'), differentiable in reverse and forward mode and to higher order. Complex
results carry gradients in PyTorch's convention; the rfft/irfft gradients weight the
half spectrum exactly as PyTorch does (see `ops/fft.py`)."""

from __future__ import annotations

import numpy as np

from . import ops
from .api._args import _t
from .api._errors import ArgumentError, DtypeError
from .dtypes import get_default_dtype
from .engine import apply
from .tensor import Tensor

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfft2", "hfftn", "ihfft2", "ihfftn",
           "fftshift", "ifftshift", "fftfreq", "rfftfreq"]

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _norm(norm) -> str:
    if norm is None:
        return "backward"
    if norm not in ("backward", "ortho", "forward"):
        raise ArgumentError(f'Invalid normalization mode: "{norm}" (expected "backward", "ortho" '
                         'or "forward")')
    return norm


def _input(x, name: str, real: bool = False) -> Tensor:
    x = _t(x)
    if x.dtype.kind in "biu":
        x = x.to(get_default_dtype())
    if x.dtype.kind == "c" and real:
        raise DtypeError(f"fft.{name}: expects a real input tensor, but got {x.dtype}")
    if x.dtype.kind not in "fc":
        raise DtypeError(f"fft.{name}: expected a floating or complex tensor, got {x.dtype}")
    return x


def _complex(x: Tensor) -> Tensor:
    if x.dtype.kind == "c":
        return x
    return apply(ops.cast, x, dtype=np.result_type(x.dtype, np.complex64))


def _axis(dim: int, ndim: int, name: str) -> int:
    """`dim` as a negative axis (so rules see batch dimensions in front)."""
    if not -ndim <= dim < ndim:
        raise IndexError(f"fft.{name}: dim {dim} is out of range for a tensor of {ndim} "
                         "dimensions")
    return dim % ndim - ndim


def _resize(x: Tensor, axis: int, n: int, name: str) -> Tensor:
    """Crop or zero-pad `x` along `axis` (negative) to length `n`."""
    if n < 1:
        raise ArgumentError(f"fft.{name}: invalid number of data points ({n}) specified")
    have = x.shape[axis]
    if have == n:
        return x
    if have > n:
        idx = (Ellipsis, slice(0, n)) + (slice(None),) * (-axis - 1)
        return apply(ops.getitem, x, idx=idx)
    pads = ((0, n - have),) + ((0, 0),) * (-axis - 1)
    return apply(ops.pad_constant, x, pads=pads)


def _dims(x: Tensor, s, dim, name: str):
    """Negative axes and lengths for an n-dimensional transform (PyTorch's defaults: all
    dims, or the last len(s) when only `s` is given)."""
    if dim is None:
        if s is not None and len(s) > x.ndim:
            raise ArgumentError(f"fft.{name}: got shape with {len(s)} values but input tensor "
                                f"only has {x.ndim} dimensions")
        dims = list(range(-len(s), 0)) if s is not None else list(range(-x.ndim, 0))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [_axis(d, x.ndim, name) for d in dims]
        if len(set(dims)) != len(dims):
            raise ArgumentError(f"fft.{name}: dims must be unique, got {dim}")
    if s is not None:
        s = list(s)
        if len(s) != len(dims):
            raise ArgumentError(f"fft.{name}: when given, dim and shape arguments must have the "
                             f"same length, got s={s} and dim={dim}")
    if x.ndim == 0 and dims:
        raise IndexError(f"fft.{name}: expects a tensor with at least one dimension")
    for k, d in enumerate(dims):  # an empty dim transformed at its own length
        if x.shape[d] == 0 and (s is None or s[k] == -1):
            raise ArgumentError(f"fft.{name}: invalid number of data points (0) specified")
    return dims, s


def _cc(x, s, dim, norm, inverse: bool, name: str) -> Tensor:
    x = _complex(_input(x, name))
    dims, s = _dims(x, s, dim, name)
    if s is not None:
        for d, n in zip(dims, s):
            if n != -1:
                x = _resize(x, d, n, name)
    if not dims:
        return x
    return apply(ops.fft_c2c, x, axes=tuple(dims), inverse=inverse, norm=_norm(norm))


def fft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """One-dimensional discrete Fourier transform along `dim` (length `n`: crop or zero-pad)."""
    return _cc(input, None if n is None else [n], dim, norm, False, "fft")


def ifft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """Inverse one-dimensional discrete Fourier transform along `dim`. Like `torch.fft.ifft`;
    `ifft(fft(x))` gives `x` back."""
    return _cc(input, None if n is None else [n], dim, norm, True, "ifft")


def fft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """Two-dimensional discrete Fourier transform over the last two dimensions.
    Like `torch.fft.fft2`."""
    return _cc(input, s, dim, norm, False, "fft2")


def ifft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """Inverse two-dimensional discrete Fourier transform. Like `torch.fft.ifft2`."""
    return _cc(input, s, dim, norm, True, "ifft2")


def fftn(input, s=None, dim=None, norm=None) -> Tensor:
    """N-dimensional discrete Fourier transform over `dim` (default all). Like `torch.fft.fftn`."""
    return _cc(input, s, dim, norm, False, "fftn")


def ifftn(input, s=None, dim=None, norm=None) -> Tensor:
    """Inverse N-dimensional discrete Fourier transform. Like `torch.fft.ifftn`."""
    return _cc(input, s, dim, norm, True, "ifftn")


def rfft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """The non-negative frequencies (n // 2 + 1) of the transform of real input."""
    return rfftn(input, None if n is None else [n], [dim], norm, name="rfft")


def irfft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """The real signal (length n, default 2 (m - 1)) whose half spectrum is `input`."""
    return irfftn(input, None if n is None else [n], [dim], norm, name="irfft")


def rfft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """Two-dimensional transform of real input (half spectrum in the last dimension).
    Like `torch.fft.rfft2`."""
    return rfftn(input, s, dim, norm, name="rfft2")


def irfft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """Inverse of `rfft2`: the real signal from its half spectrum. Like `torch.fft.irfft2`."""
    return irfftn(input, s, dim, norm, name="irfft2")


def rfftn(input, s=None, dim=None, norm=None, *, name: str = "rfftn") -> Tensor:
    """rfft along the last of `dim`, then the full transform along the others."""
    x = _input(input, name, real=True)
    dims, s = _dims(x, s, dim, name)
    if not dims:
        raise ArgumentError(f"fft.{name}: must transform at least one axis")
    if s is not None:
        for d, n in zip(dims, s):
            if n != -1:
                x = _resize(x, d, n, name)
    norm = _norm(norm)
    y = apply(ops.fft_r2c, x, axis=dims[-1], norm=norm)
    if len(dims) > 1:
        y = apply(ops.fft_c2c, y, axes=tuple(dims[:-1]), inverse=False, norm=norm)
    return y


def irfftn(input, s=None, dim=None, norm=None, *, name: str = "irfftn") -> Tensor:
    """The inverse of `rfftn`: the full inverse along all of `dim` but the last, then irfft
    along the last (length s[-1], default 2 (m - 1))."""
    x = _complex(_input(input, name))
    dims, s = _dims(x, s, dim, name)
    if not dims:
        raise ArgumentError(f"fft.{name}: must transform at least one axis")
    norm = _norm(norm)
    last = dims[-1]
    if s is not None:
        for d, n in zip(dims[:-1], s[:-1]):
            if n != -1:
                x = _resize(x, d, n, name)
    n = s[-1] if s is not None and s[-1] != -1 else 2 * (x.shape[last] - 1)
    if n < 1:
        raise ArgumentError(f"fft.{name}: invalid number of data points ({n}) specified")
    if len(dims) > 1:
        x = apply(ops.fft_c2c, x, axes=tuple(dims[:-1]), inverse=True, norm=norm)
    x = _resize(x, last, n // 2 + 1, name)
    return apply(ops.fft_c2r, x, axis=last, n=int(n), norm=norm)


def hfft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """The real transform of a Hermitian-symmetric signal given by its first half."""
    from .api.complex import conj
    x = _complex(_input(input, "hfft"))
    return irfft(conj(x), n, dim, _DUAL[_norm(norm)])


def ihfft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """The inverse of `hfft`: the first half of the inverse transform of real input."""
    from .api.complex import conj
    return conj(rfft(_input(input, "ihfft", real=True), n, dim, _DUAL[_norm(norm)]))


def hfftn(input, s=None, dim=None, norm=None, *, name: str = "hfftn") -> Tensor:
    """The real N-dimensional transform of a signal Hermitian-symmetric in the last of
    `dim`, given by its first half there: `irfftn` of the conjugate with the dual norm (the
    last output length s[-1], default 2 (m - 1))."""
    from .api.complex import conj
    x = _complex(_input(input, name))
    return irfftn(conj(x), s, dim, _DUAL[_norm(norm)], name=name)


def hfft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """`hfftn` over the last two dimensions. Like `torch.fft.hfft2`."""
    return hfftn(input, s, dim, norm, name="hfft2")


def ihfftn(input, s=None, dim=None, norm=None, *, name: str = "ihfftn") -> Tensor:
    """The inverse of `hfftn`: the half spectrum (last of `dim`) of the inverse N-dimensional
    transform of real input, the conjugate of `rfftn` with the dual norm."""
    from .api.complex import conj
    return conj(rfftn(_input(input, name, real=True), s, dim, _DUAL[_norm(norm)], name=name))


def ihfft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """`ihfftn` over the last two dimensions. Like `torch.fft.ihfft2`."""
    return ihfftn(input, s, dim, norm, name="ihfft2")


def _shift(input, dim, sign: int) -> Tensor:
    from .api.indexing import roll
    x = _t(input)
    dims = list(range(x.ndim)) if dim is None else ([dim] if isinstance(dim, int)
                                                    else list(dim))
    if not dims:
        return x
    shifts = [sign * (x.shape[d] // 2) if sign > 0 else -(x.shape[d] // 2) for d in dims]
    return roll(x, shifts, dims)


def fftshift(input, dim=None) -> Tensor:
    """Move the zero frequency to the centre (a roll by n // 2 along each of `dim`)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None) -> Tensor:
    """The inverse of `fftshift` (a roll by -(n // 2))."""
    return _shift(input, dim, -1)


def _freq_dtype(n: int, dtype, name: str) -> np.dtype:
    """`dtype` (the default float when None), floating, for a length n >= 0, as torch."""
    dt = np.dtype(dtype) if dtype is not None else get_default_dtype()
    if dt.kind != "f":  # (torch names complex too, but its arange refuses it)
        raise DtypeError(f"{name} requires a floating point dtype, got {dt}")
    if int(n) < 0:
        raise ArgumentError(f"{name}: trying to create tensor with negative dimension {n}")
    return dt


def fftfreq(n: int, d: float = 1.0, *, dtype=None, requires_grad: bool = False) -> Tensor:
    """Sample frequencies of an n-point transform with sample spacing d."""
    dt = _freq_dtype(n, dtype, "fftfreq")
    f = np.fft.fftfreq(int(n), d) if int(n) else np.zeros(0)  # n = 0: empty, as torch
    return Tensor(f.astype(dt), requires_grad=requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, dtype=None, requires_grad: bool = False) -> Tensor:
    """Sample frequencies of `rfft` (the non-negative ones)."""
    dt = _freq_dtype(n, dtype, "rfftfreq")
    f = np.fft.rfftfreq(int(n), d) if int(n) else np.full(1, np.nan)  # n = 0: 0 / 0, as torch
    return Tensor(f.astype(dt), requires_grad=requires_grad)
