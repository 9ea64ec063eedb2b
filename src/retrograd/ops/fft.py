"""Discrete Fourier transforms: complex-to-complex, real-to-half-spectrum and back.

Three primitives; the public `rg.fft` functions pad, crop and chain them. Axes
are counted from the end, so tangents with leading batch dimensions pass through.
In the transpose convention of the table (see `ops/complex.py`):

- `fft_c2c` is linear with a symmetric matrix (the DFT matrix, scaled by the
  norm), so its vjp and its jvp are the same transform;
- `fft_r2c` (rfft) keeps the first n//2 + 1 rows of that matrix: its vjp is the
  real part of the same transform of the cotangent zero-padded to n;
- `fft_c2r` (irfft) reads a half spectrum as the Hermitian full one: every bin
  but 0 (and n/2 for even n) counts twice, and the imaginary parts of those two
  are ignored. Its vjp is that weighting times the conjugate of the rfft of the
  cotangent with the dual norm (PyTorch's rule, in its convention a plain rfft
  of the real cotangent with the bins doubled).
"""

from __future__ import annotations

import numpy as np

from ..devices import const_like
from ..primitive import defop

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _c2c(x, *, axes, inverse, norm):
    f = np.fft.ifftn if inverse else np.fft.fftn
    out = f(x, axes=axes, norm=norm)
    return out.astype(_complex(x.dtype), copy=False)


def _complex(dtype):
    return np.result_type(dtype, np.complex64)


fft_c2c = defop(
    "fft_c2c", _c2c,
    (lambda m, g, out, x, *, axes, inverse, norm: m.fft_c2c(g, axes=axes, inverse=inverse,
                                                            norm=norm),),
    (lambda m, t, out, x, *, axes, inverse, norm: m.fft_c2c(t, axes=axes, inverse=inverse,
                                                            norm=norm),),
    reads=(), fresh=True)


def _r2c(x, *, axis, norm):
    return np.fft.rfft(x, axis=axis, norm=norm).astype(_complex(x.dtype), copy=False)


def _pads(axis, before, after):
    """pad_constant's widths for the last -axis dimensions: (before, after) on `axis`."""
    return ((before, after),) + ((0, 0),) * (-axis - 1)


def _r2c_vjp(m, g, out, x, *, axis, norm):
    n = x.shape[axis]
    padded = m.pad_constant(g, pads=_pads(axis, 0, n - g.shape[axis]))
    return m.real(m.fft_c2c(padded, axes=(axis,), inverse=False, norm=norm))


fft_r2c = defop(
    "fft_r2c", _r2c, (_r2c_vjp,),
    (lambda m, t, out, x, *, axis, norm: m.fft_r2c(t, axis=axis, norm=norm),),
    reads=(), fresh=True)


def _c2r(x, *, axis, n, norm):
    return np.fft.irfft(x, n=n, axis=axis, norm=norm).astype(
        np.result_type(np.finfo(x.dtype).dtype, np.float32), copy=False)


def _weights(n, axis, dtype):
    """2 for the bins that stand for a conjugate pair, 1 for bin 0 and (n even) bin n/2."""
    w = np.full(n // 2 + 1, 2.0, dtype=np.result_type(dtype, np.float32))
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    w = w.reshape((-1,) + (1,) * (-axis - 1))
    w.flags.writeable = False
    return w


def _c2r_vjp(m, g, out, x, *, axis, n, norm):
    spec = m.conj(m.fft_r2c(g, axis=axis, norm=_DUAL[norm]))
    return spec * const_like(_weights(n, axis, np.finfo(x.dtype).dtype), spec)


fft_c2r = defop(
    "fft_c2r", _c2r, (_c2r_vjp,),
    (lambda m, t, out, x, *, axis, n, norm: m.fft_c2r(t, axis=axis, n=n, norm=norm),),
    reads=(), fresh=True)
