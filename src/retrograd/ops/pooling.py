"""Max pooling with indices, and the scatter/gather pair its gradient is made of.

`max_pool` takes the maximum over sliding windows of an (N, C, *S) array with
1 to 3 spatial dimensions (stride, padding with -inf, dilation, ceil mode);
`max_pool_indices` says where each maximum sits, as PyTorch does: a flat index
into the input's spatial dimensions, the first maximum of a window winning ties.
The gradient goes only there: `unpool` scatter-adds values onto those indices,
`gather_flat` reads them back, and each is the other's vjp.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..primitive import defop
from .windows import _windows


def pool_geometry(size, k, s, p, d, ceil_mode):
    """Output length and the extra right padding ceil mode needs, for one dimension."""
    span = size + 2 * p - d * (k - 1) - 1
    o = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (o - 1) * s >= size + p:
        o -= 1
    extra = max(0, (o - 1) * s + d * (k - 1) + 1 - (size + 2 * p))
    return o, extra


def _max_pool_saving(x, *, kernel, stride, padding, dilation, ceil_mode=False):
    """The maxima and their flat spatial indices, by one pass per kernel offset."""
    nd = len(kernel)
    spatial = x.shape[-nd:]
    geo = [pool_geometry(n, k, s, p, d, ceil_mode)
           for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)]
    if any(padding) or any(e for _, e in geo):
        fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        x = np.pad(x, ((0, 0),) * (x.ndim - nd)
                   + tuple((p, p + e) for p, (_, e) in zip(padding, geo)), constant_values=fill)
    win = _windows(x, kernel, stride, (0,) * nd, dilation, 0.0)
    lead = (slice(None),) * (win.ndim - 2 * nd)
    offsets = list(itertools.product(*(range(k) for k in kernel)))
    best = win[lead + offsets[0]].copy()
    arg = np.zeros(best.shape, dtype=np.int64)
    for j, off in enumerate(offsets[1:], 1):
        v = win[lead + off]
        better = v > best
        if x.dtype.kind == "f":
            better |= np.isnan(v) & ~np.isnan(best)
        np.copyto(best, v, where=better)
        arg[better] = j
    # window offset -> flat index into the unpadded input
    koff = np.unravel_index(arg, kernel) if nd > 1 else (arg,)
    idx = 0
    unit = 1
    for i in reversed(range(nd)):
        o = np.arange(best.shape[-nd + i]).reshape((-1,) + (1,) * (nd - 1 - i))
        pos = o * stride[i] - padding[i] + koff[i] * dilation[i]
        idx = idx + pos * unit
        unit *= spatial[i]
    return best, np.asarray(idx, dtype=np.int64)


def _max_pool(x, **k):
    return _max_pool_saving(x, **k)[0]


def _max_pool_indices(x, **k):
    return _max_pool_saving(x, **k)[1]


def _indices(m, out, x, k):
    """The saved indices when the forward kept them (an integer array), else recomputed."""
    if out is not None and getattr(out, "dtype", None) is not None and out.dtype.kind in "iu":
        return out
    return m.max_pool_indices(x, **k)


max_pool_indices = defop("max_pool_indices", _max_pool_indices, fresh=True)


def _unpool(g, idx, *, shape):
    """Zeros of `shape` (leading batch dimensions of g kept) with g added at idx, per (n, c)."""
    lead = g.ndim - idx.ndim
    spatial = int(np.prod(shape[2:]))
    out_shape = g.shape[:lead] + tuple(shape)
    rows = int(np.prod(out_shape[:lead + 2]))
    gi = np.broadcast_to(idx, g.shape).reshape(rows, -1)
    base = (np.arange(rows) * spatial)[:, None]
    total = np.bincount((gi + base).ravel(), weights=g.reshape(rows, -1).ravel(),
                        minlength=rows * spatial)
    return total.astype(g.dtype, copy=False).reshape(out_shape)


def _gather_flat(x, idx):
    """x[..., n, c].flat[idx[n, c, ...]]: leading batch dimensions of x kept."""
    lead = x.ndim - idx.ndim
    nd = idx.ndim - 2
    xf = x.reshape(x.shape[:x.ndim - nd] + (-1,))
    ii = idx.reshape((1,) * lead + idx.shape[:2] + (-1,))
    return np.take_along_axis(xf, ii, axis=-1).reshape(x.shape[:lead] + idx.shape)


unpool = defop(
    "unpool", _unpool,
    (lambda m, g, out, x, idx, *, shape: m.gather_flat(g, idx), None),
    (lambda m, t, out, x, idx, *, shape: m.unpool(t, idx, shape=shape), None),
    reads=(1,), fresh=True)
gather_flat = defop(
    "gather_flat", _gather_flat,
    (lambda m, g, out, x, idx: m.unpool(g, idx, shape=x.shape), None),
    (lambda m, t, out, x, idx: m.gather_flat(t, idx), None),
    reads=(1,), fresh=True)
max_pool = defop(
    "max_pool", _max_pool,
    (lambda m, g, out, x, **k: m.unpool(g, _indices(m, out, x, k), shape=x.shape),),
    (lambda m, t, out, x, **k: m.gather_flat(t, m.max_pool_indices(x, **k)),),
    saving=_max_pool_saving, fresh=True)
