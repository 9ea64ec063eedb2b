"""Padding and resampling along axes: constant padding and weighted gathers.

`pad_constant` pads (or, with negative widths, crops) the trailing dimensions
with a constant; its adjoint is the same op with the widths negated. `resample`
gathers along one axis with a few weighted taps per output position: reflect,
replicate and circular padding and nearest interpolation are one tap of weight
1, linear interpolation two taps, cubic four. Its adjoint `resample_t`
scatter-adds the weighted values back, and each is the other's vjp. Axes are
counted from the end, so tangents with leading batch dimensions pass through.
"""

from __future__ import annotations

import numpy as np

from ..devices import namespace_of as _ns
from ..primitive import defop


def _pad_constant(x, *, pads, value=0.0):
    """Pad the last len(pads) dimensions by (before, after) widths; negative widths crop."""
    lead = x.ndim - len(pads)
    if any(b < 0 or a < 0 for b, a in pads):
        x = x[(slice(None),) * lead + tuple(
            slice(max(-b, 0), x.shape[lead + i] - max(-a, 0)) for i, (b, a) in enumerate(pads))]
    if any(b > 0 or a > 0 for b, a in pads):
        widths = ((0, 0),) * lead + tuple((max(b, 0), max(a, 0)) for b, a in pads)
        if value == 0.0:  # zeros and a copy into the middle: faster than np.pad
            z = _ns(x).zeros(tuple(n + b + a for n, (b, a) in zip(x.shape, widths)), x.dtype)
            z[tuple(slice(b, b + n) for n, (b, _) in zip(x.shape, widths))] = x
            return z
        return np.pad(x, widths, constant_values=value)
    return x.copy()


def _negated(pads):
    return tuple((-b, -a) for b, a in pads)


pad_constant = defop(
    "pad_constant", _pad_constant,
    (lambda m, g, out, x, *, pads, value=0.0: m.pad_constant(g, pads=_negated(pads)),),
    (lambda m, t, out, x, *, pads, value=0.0: m.pad_constant(t, pads=pads),),
    reads=(), fresh=True)


def _shaped(w, axis, ndim, dtype):
    """Per-position weights (n,) shaped to broadcast along `axis` of an ndim-array."""
    return w.astype(dtype, copy=False).reshape((-1,) + (1,) * (-axis - 1))


def _resample(x, *, axis, index, weight=None, size=None):
    """out[..., i, ...] = sum_j weight[i, j] * x[..., index[i, j], ...] along `axis` (< 0)."""
    if weight is None:
        return np.take(x, index[:, 0], axis=axis)
    out = None
    for j in range(index.shape[1]):
        part = np.take(x, index[:, j], axis=axis)
        part *= _shaped(weight[:, j], axis, x.ndim, part.dtype)
        if out is None:
            out = part
        else:
            out += part
    return out


def _resample_t(g, *, axis, index, weight=None, size):
    """The adjoint of resample: each weighted value added back at its source (`size` long)."""
    gm = np.moveaxis(g, axis, 0)
    taps = index.shape[1]
    if weight is None:
        parts = gm
    else:
        parts = np.concatenate([gm * _shaped(weight[:, j], -gm.ndim, gm.ndim, g.dtype)
                                for j in range(taps)]) if taps > 1 else \
            gm * _shaped(weight[:, 0], -gm.ndim, gm.ndim, g.dtype)
    src = index.T.reshape(-1)
    xp = _ns(g)
    out = xp.zeros((size,) + gm.shape[1:], dtype=g.dtype)
    order = np.argsort(src, kind="stable")
    s = src[order]
    if len(s):
        starts = np.flatnonzero(np.concatenate((xp.ones(1, dtype=bool), s[1:] != s[:-1])))
        out[s[starts]] = np.add.reduceat(parts[order], starts, axis=0)
    return np.moveaxis(out, 0, axis)


resample = defop(
    "resample", _resample,
    (lambda m, g, out, x, *, axis, index, weight=None, size=None: m.resample_t(
        g, axis=axis, index=index, weight=weight, size=x.shape[axis]),),
    (lambda m, t, out, x, **k: m.resample(t, **k),),
    reads=(), fresh=True)
resample_t = defop(
    "resample_t", _resample_t,
    (lambda m, g, out, x, *, axis, index, weight=None, size: m.resample(
        g, axis=axis, index=index, weight=weight),),
    (lambda m, t, out, x, **k: m.resample_t(t, **k),),
    reads=(), fresh=True)
