"""GELU as a tuned op: its tanh form saves the tanh for the backward (a fused file: its
rules may ask `m is NUMPY`).

The forward and the derivative are `ops/activations.py`'s `_gelu` and `_gelu_d`
(read them there). For tanh-GELU on float32/float64 host arrays the forward also
keeps t = tanh(sqrt(2/pi) (x + 0.044715 x^3)), and the backward is

    g * 0.5 (1 + t) (1 + x (1 - t) sqrt(2/pi) (1 + 3 * 0.044715 x^2))

in ten in-place passes, with no tanh (the generic rule records some twenty ops,
the tanh among them, which a traced backward replays). Everything else (the exact
form, create_graph, forward mode, devices) runs the generic rule.

With compiled kernels on (`retrograd.kernels`, float32/float64 host inputs of at least
its size), both forms take one loop forward (saving sigmoid(2 z) for tanh, Phi(x) for
the exact form; see `kernels/activations.py`) and one loop backward, split over the
intra-op threads; the saving is then a `_Compiled`, so the vjp knows which it has.
"""

from __future__ import annotations

import numpy as np

from .. import kernels as _kernels
from .. import threads as _threads
from ..kernels import activations as _kact
from ..primitive import NUMPY, defop
from .activations import _TANH_BETA, _TANH_KAPPA, _gelu, _gelu_d


def _fast(x, approximate) -> bool:
    return approximate == "tanh" and x.__class__ is np.ndarray and x.ndim and x.dtype in (
        np.float32, np.float64)  # (0-d: NumPy's arithmetic gives scalars, not buffers)


_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_WORK = 30
"""Element-operations per element of the compiled loops (for the thread split)."""


class _Compiled:
    """The compiled forward's saving: sigmoid(2 z) (tanh form) or Phi(x) (exact)."""

    __slots__ = ("s",)

    def __init__(self, s):
        self.s = s


def _split(fn, n: int) -> None:
    """fn(start, stop) over range(n) in the intra-op threads' pieces."""
    _threads.run(fn, _threads.chunks(n, _WORK * n))


def _gelu_compiled(x, approximate):
    xf = np.ascontiguousarray(x).reshape(-1)
    out, s = np.empty(x.shape, x.dtype), np.empty(x.shape, x.dtype)
    of, sf = out.reshape(-1), s.reshape(-1)
    if approximate == "tanh":
        k = _kact.tanh_forward_f32 if x.dtype == np.float32 else _kact.tanh_forward_f64
    else:
        k = _kact.exact_forward
    _split(lambda a, b: k(xf[a:b], of[a:b], sf[a:b]), xf.size)
    return out, _Compiled(s)


def _gelu_vjp_compiled(g, x, s, approximate):
    gf = np.ascontiguousarray(g).reshape(-1)
    xf = np.ascontiguousarray(x).reshape(-1)
    sf = s.reshape(-1)
    dx = np.empty(x.shape, x.dtype)
    df = dx.reshape(-1)
    k = _kact.tanh_backward if approximate == "tanh" else _kact.exact_backward
    _split(lambda a, b: k(gf[a:b], xf[a:b], sf[a:b], df[a:b]), xf.size)
    return dx


def _gelu_saving(x, *, approximate="none"):
    if x.__class__ is np.ndarray and x.dtype in _KERNEL_DTYPES and _kernels.enabled(x.size):
        return _gelu_compiled(x, approximate)
    if not _fast(x, approximate):
        return _gelu(x, approximate=approximate), None
    t = x * x
    t *= _TANH_BETA * _TANH_KAPPA
    t += _TANH_BETA
    t *= x
    np.tanh(t, out=t)
    out = t + 1.0
    out *= 0.5
    out *= x
    return out, t


def _gelu_vjp(m, g, out, x, *, approximate="none"):
    # `out` is the forward's saved tanh when it took the fast path, its `_Compiled`
    # when it took the kernel, else None
    if m is NUMPY and out.__class__ is _Compiled and g.__class__ is np.ndarray and (
            g.dtype == x.dtype and g.shape == x.shape):
        return _gelu_vjp_compiled(g, x, out.s, approximate)
    if m is NUMPY and out.__class__ is np.ndarray and _fast(x, approximate) and (
            g.dtype == x.dtype):
        t = out
        d = x * x
        d *= 3.0 * _TANH_KAPPA * _TANH_BETA
        d += _TANH_BETA
        d *= x
        r = 1.0 - t
        d *= r
        d += 1.0
        np.multiply(t, 0.5, out=r)
        r += 0.5
        d *= r
        d *= g
        return d
    return _gelu_d(m, g, None, x, approximate=approximate)


def _gelu_forward(x, *, approximate="none"):
    """The same arithmetic with or without a recorded node (eval equals training)."""
    return _gelu_saving(x, approximate=approximate)[0]


gelu = defop("gelu", _gelu_forward, (_gelu_vjp,), (_gelu_d,), saving=_gelu_saving, tuned=True,
             fresh=True, fresh_vjps=True)
