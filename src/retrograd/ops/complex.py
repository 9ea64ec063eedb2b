"""Complex numbers: parts, conjugate, modulus and argument, and the real views.

The convention of the rules. Inside the backward walk a cotangent `c` of a
complex value `z` means the real linear form `dz -> Re(c dz)`, so the rule of
a holomorphic op is `g * f'(z)` with no conjugate, exactly as for real data
(every rule in the table serves complex data unchanged). PyTorch's gradient
of a real loss is the conjugate of that cotangent, `dL/dx + i dL/dy` for
`z = x + iy`; the engine conjugates where gradients enter and leave the walk
(seeds, `.grad`, hooks, `autograd.grad`'s results), so users see PyTorch's
convention. Only the rules of the non-holomorphic ops below see the
difference, and each is derived from `dL = Re(c dz)`:

- `real`:  dL = g Re(dz)          so c = g
- `imag`:  dL = g Im(dz)          so c = -i g
- `conj`:  dL = Re(c' conj(dz))   so c = conj(c')
- `cabs`:  d|z| = Re(conj(z) dz) / |z|,  so c = g conj(z) / |z|   (0 at z = 0)
- `angle`: d arg z = Im(dz / z),  so c = -i g / z                  (0 at z = 0)

A real input's cotangent is the real part of whatever reaches it (`Op.backward`
takes it), so a real leaf's gradient is always real. Forward mode needs no
convention: a tangent is pushed through the R-linear derivative as it is.
"""

from __future__ import annotations

import numpy as np

from ..devices import as_strided, namespace_for
from ..primitive import defop
from .elementwise import zero_grad


def _complex_dtype(dtype) -> np.dtype:
    return np.result_type(dtype, np.complex64)


def _real(x):
    # a view of x's memory, as PyTorch's (`z.real.mul_(2)`, `z.imag.zero_()` write into z)
    return x.real if x.dtype.kind == "c" else x.copy()


def _imag(x):
    return x.imag if x.dtype.kind == "c" else np.zeros_like(x)


def _as_complex(m, g, like):
    """A real cotangent `g` as a complex one of `like`'s dtype."""
    return m.cast(g, dtype=_complex_dtype(like.dtype))


def _safe(m, z, mask):
    """`z` with 1 where `mask` holds: a denominator that never divides by zero."""
    return m.where(mask, 1.0, z)


real = defop("real", _real,
             (lambda m, g, out, x: _as_complex(m, g, x) if x.dtype.kind == "c" else g,),
             (lambda m, t, out, x: m.real(t) if t.dtype.kind == "c" else t,), reads=(),
             view=True)
imag = defop("imag", _imag,
             (lambda m, g, out, x: _as_complex(m, -g, x) * 1j if x.dtype.kind == "c"
              else g * 0.0,),
             (lambda m, t, out, x: m.imag(t) if t.dtype.kind == "c" else t * 0.0,), reads=(),
             view=True)
conj = defop("conj", np.conj, (lambda m, g, out, x: m.conj(g),),
             (lambda m, t, out, x: m.conj(t),), reads=(), fresh=True)


def _cabs_vjp(m, g, out, z):
    return g * m.conj(z) / _safe(m, out, out == 0)


def _cabs_jvp(m, t, out, z):
    return m.real(m.conj(z) * t) / _safe(m, out, out == 0)


cabs = defop("cabs", np.abs, (_cabs_vjp,), (_cabs_jvp,), save_out=True, fresh=True)
"""|z| of complex data (a real result); PyTorch's gradient g * z / |z|, 0 at z = 0."""


def _angle(x):
    if x.dtype.kind == "f":  # PyTorch: pi where x < 0, else 0 (-0.0 too), NaN kept
        return np.where(x < 0, np.pi, np.where(x == x, 0.0, x)).astype(x.dtype)
    return np.angle(x)


def _angle_vjp(m, g, out, z):
    if z.dtype.kind != "c":  # a real input's angle is piecewise constant (0 or pi)
        return zero_grad(m, g)
    zero = z == 0
    return m.where(zero, 0.0, _as_complex(m, -g, z) * 1j / _safe(m, z, zero))


def _angle_jvp(m, t, out, z):
    if z.dtype.kind != "c":
        return t * 0.0
    zero = z == 0
    return m.where(zero, 0.0, m.imag(t / _safe(m, z, zero)))


angle = defop("angle", _angle, (_angle_vjp,), (_angle_jvp,), fresh=True)


def _view_as_real(x):
    """x's memory seen as (real, imaginary) pairs, as PyTorch's view: writes go into x."""
    if x.dtype.kind != "c":  # a real tangent or cotangent: zero imaginary parts
        return namespace_for(x).stack([x, namespace_for(x).zeros_like(x)], axis=-1)
    if isinstance(x, np.generic):  # a NumPy scalar's .real is a new scalar, not a view
        x = np.asarray(x)
    r = x.real
    return as_strided(r, x.shape + (2,), r.strides + (r.itemsize,))


def _view_as_complex(x):
    """Pairs along the last axis seen as complex numbers: a view of x's memory where its
    strides allow one (the last axis unit-stride, the others whole pairs), else a copy."""
    n = x.itemsize
    if x.strides[-1] == n and all(s % (2 * n) == 0 for s in x.strides[:-1]):
        try:
            return x.view(_complex_dtype(x.dtype))[..., 0]
        except (ValueError, TypeError):
            pass
    return x[..., 0] + 1j * x[..., 1] if x.dtype == np.float64 else \
        (x[..., 0] + np.complex64(1j) * x[..., 1]).astype(_complex_dtype(x.dtype))


view_as_real = defop(
    "view_as_real", _view_as_real,
    (lambda m, g, out, z: m.conj(m.view_as_complex(g)),),
    (lambda m, t, out, z: m.view_as_real(t),), reads=(), view=True)
view_as_complex = defop(
    "view_as_complex", _view_as_complex,
    (lambda m, g, out, x: m.view_as_real(m.conj(g)),),
    (lambda m, t, out, x: m.view_as_complex(t),), reads=(), view=True)


def _complex(re, im):
    dt = _complex_dtype(np.result_type(re, im))
    out = namespace_for(re, im).empty(np.broadcast_shapes(np.shape(re), np.shape(im)), dt)
    out.real = re
    out.imag = im
    return out


def _complex_jvp_im(m, t, out, re, im):
    return _as_complex(m, t, out) * 1j


complex = defop(  # noqa: A001 - PyTorch's name
    "complex", _complex,
    (lambda m, g, out, re, im: m.real(g), lambda m, g, out, re, im: -m.imag(g)),
    (lambda m, t, out, re, im: _as_complex(m, t, out), _complex_jvp_im),
    broadcast=True, reads=(), fresh=True)
