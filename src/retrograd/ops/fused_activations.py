"""GELU as a tuned op: its tanh form saves the tanh for the backward (a fused file: its
rules may ask `m is NUMPY`).

The forward and the derivative are `ops/activations.py`'s `_gelu` and `_gelu_d`
(read them there). For tanh-GELU on float32/float64 host arrays the forward also
keeps t = tanh(sqrt(2/pi) (x + 0.044715 x^3)), and the backward is

    g * 0.5 (1 + t) (1 + x (1 - t) sqrt(2/pi) (1 + 3 * 0.044715 x^2))

in ten in-place passes, with no tanh (the generic rule records some twenty ops,
the tanh among them, which a traced backward replays). Everything else (the exact
form, create_graph, forward mode, devices) runs the generic rule.
"""

from __future__ import annotations

import numpy as np

from ..primitive import NUMPY, defop
from .activations import _TANH_BETA, _TANH_KAPPA, _gelu, _gelu_d


def _fast(x, approximate) -> bool:
    return approximate == "tanh" and x.__class__ is np.ndarray and x.ndim and x.dtype in (
        np.float32, np.float64)  # (0-d: NumPy's arithmetic gives scalars, not buffers)


def _gelu_saving(x, *, approximate="none"):
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
    # `out` is the forward's saved tanh when it took the fast path, else None
    if m is NUMPY and out is not None and _fast(x, approximate) and g.dtype == x.dtype:
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
