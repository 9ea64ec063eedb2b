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

from ..devices import namespace_of as _ns
from ..primitive import defop


def pool_geometry(size, k, s, p, d, ceil_mode):
    """Output length and the extra right padding ceil mode needs, for one dimension."""
    span = size + 2 * p - d * (k - 1) - 1
    o = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (o - 1) * s >= size + p:
        o -= 1
    extra = max(0, (o - 1) * s + d * (k - 1) + 1 - (size + 2 * p))
    return o, extra


def _padded(x, kernel, stride, padding, dilation, ceil_mode, fill):
    """x padded for pooling (ceil mode's extra windows too), and the output size."""
    nd = len(kernel)
    geo = [pool_geometry(n, k, s, p, d, ceil_mode)
           for n, k, s, p, d in zip(x.shape[-nd:], kernel, stride, padding, dilation)]
    if any(padding) or any(e for _, e in geo):
        x = np.pad(x, ((0, 0),) * (x.ndim - nd)
                   + tuple((p, p + e) for p, (_, e) in zip(padding, geo)), constant_values=fill)
    return x, tuple(o for o, _ in geo)


def _offsets(kernel, stride, dilation, outs):
    """For each kernel offset: its number and the slices of the padded input it reads."""
    for j, off in enumerate(itertools.product(*(range(k) for k in kernel))):
        yield j, tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                       for o, d, s, n in zip(off, dilation, stride, outs))


def _max_pool_saving(x, *, kernel, stride, padding, dilation, ceil_mode=False):
    """The maxima, and the kernel offset of each (the first maximum wins ties, the last NaN
    beats all, as PyTorch's kernel does), by one pass per kernel offset."""
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp, outs = _padded(x, kernel, stride, padding, dilation, ceil_mode, fill)
    kind = np.int8 if np.prod(kernel) <= 127 else np.int32
    best = arg = None
    for j, sl in _offsets(kernel, stride, dilation, outs):
        v = xp[(Ellipsis,) + sl]
        if best is None:
            best = v.copy()
            arg = np.zeros_like(best, dtype=kind)
            step = np.empty_like(best, dtype=kind)
            continue
        # offsets come in increasing order, so where v beats best, j exceeds arg: the
        # update is a maximum (masked writes, np.copyto with where=, are many times slower)
        np.multiply(np.greater(v, best), kind(j), out=step)
        np.maximum(arg, step, out=arg)
        np.maximum(best, v, out=best)
    if xp is not x:
        # a window whose maximum equals the fill (-inf, or an integer dtype's minimum) may
        # have taken a padding position: PyTorch takes the window's first real one
        low = best == fill
        if low.any():
            nd = len(kernel)
            real = np.pad(np.ones(x.shape[-nd:], dtype=bool),
                          tuple((a, b - a - n) for a, b, n in
                                zip(padding, xp.shape[-nd:], x.shape[-nd:])))
            for j, sl in reversed(list(_offsets(kernel, stride, dilation, outs))):
                np.copyto(arg, j, where=low & real[sl])
    nan = np.isnan(best) if x.dtype.kind == "f" else None
    if nan is not None and nan.any():  # rare: the last NaN of a window wins, as in PyTorch
        for j, sl in _offsets(kernel, stride, dilation, outs):
            np.copyto(arg, j, where=np.isnan(xp[(Ellipsis,) + sl]))
    return best, arg


def _max_pool(x, **k):
    return _max_pool_saving(x, **k)[0]


def _max_pool_arg(x, **k):
    return _max_pool_saving(x, **k)[1]


def _max_pool_indices(x, *, kernel, stride, padding, dilation, ceil_mode=False):
    """PyTorch's indices: each maximum's flat position in the input's spatial dimensions."""
    arg = _max_pool_arg(x, kernel=kernel, stride=stride, padding=padding, dilation=dilation,
                        ceil_mode=ceil_mode)
    nd = len(kernel)
    spatial = x.shape[-nd:]
    koff = np.unravel_index(arg, kernel) if nd > 1 else (arg,)
    idx = 0
    unit = 1
    for i in reversed(range(nd)):
        o = _ns(arg).arange(arg.shape[-nd + i]).reshape((-1,) + (1,) * (nd - 1 - i))
        idx = idx + (o * stride[i] - padding[i] + koff[i] * dilation[i]) * unit
        unit *= spatial[i]
    return idx.astype(np.int64, copy=False)


def _pool_scatter(g, arg, *, shape, kernel, stride, padding, dilation, ceil_mode=False):
    """Each g onto the input position its window's maximum came from (`arg`: kernel offsets);
    leading batch dimensions of g kept. The adjoint of `pool_gather`."""
    lead = g.shape[:g.ndim - arg.ndim]
    nd = len(kernel)
    z = _ns(g).zeros(lead + tuple(shape), dtype=g.dtype)
    zp, outs = _padded(z, kernel, stride, padding, dilation, ceil_mode, 0)
    disjoint = all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))
    # g times the 0/1 mask is fast; an infinite or NaN g would leak NaN (inf * 0) onto the
    # positions that are not the maximum, where PyTorch's scatter puts nothing
    finite = g.dtype.kind not in "fc" or bool(_ns(g).isfinite(g).all())
    for j, sl in _offsets(kernel, stride, dilation, outs):
        part = g * (arg == j) if finite else _ns(g).where(arg == j, g, 0)
        if disjoint:  # windows do not overlap: each position is written once
            zp[(Ellipsis,) + sl] = part
        else:
            zp[(Ellipsis,) + sl] += part
    if zp is not z:
        zp = zp[(Ellipsis,) + tuple(slice(p, p + n) for p, n in zip(padding, shape[-nd:]))]
    return zp


def _pool_gather(x, arg, *, kernel, stride, padding, dilation, ceil_mode=False):
    """x at each window's kernel offset `arg` (leading batch dimensions of x kept)."""
    xp, outs = _padded(x, kernel, stride, padding, dilation, ceil_mode, 0)
    out = _ns(x).zeros(x.shape[:x.ndim - arg.ndim] + arg.shape, dtype=x.dtype)
    for j, sl in _offsets(kernel, stride, dilation, outs):
        np.copyto(out, xp[(Ellipsis,) + sl], where=arg == j)
    return out


def _arg(m, out, x, k):
    """The saved offsets when the forward kept them (an integer array), else recomputed."""
    if out is not None and getattr(out, "dtype", None) is not None and out.dtype.kind in "iu":
        return out
    return m.max_pool_arg(x, **k)


max_pool_arg = defop("max_pool_arg", _max_pool_arg, fresh=True)
max_pool_indices = defop("max_pool_indices", _max_pool_indices, fresh=True)
pool_scatter = defop(
    "pool_scatter", _pool_scatter,
    (lambda m, g, out, x, arg, *, shape, **k: m.pool_gather(g, arg, **k), None),
    (lambda m, t, out, x, arg, **k: m.pool_scatter(t, arg, **k), None),
    reads=(1,), fresh=True)
pool_gather = defop(
    "pool_gather", _pool_gather,
    (lambda m, g, out, x, arg, **k: m.pool_scatter(g, arg, shape=x.shape, **k), None),
    (lambda m, t, out, x, arg, **k: m.pool_gather(t, arg, **k), None),
    reads=(1,), fresh=True)
max_pool = defop(
    "max_pool", _max_pool,
    (lambda m, g, out, x, **k: m.pool_scatter(g, _arg(m, out, x, k), shape=x.shape, **k),),
    (lambda m, t, out, x, **k: m.pool_gather(t, m.max_pool_arg(x, **k), **k),),
    saving=_max_pool_saving, fresh=True, tuned=True, fresh_vjps=True)


def _unpool(g, idx, *, shape, assign=False):
    """Zeros of `shape` (leading batch dimensions of g kept) with g added at idx, per (n, c)
    (the adjoint of `gather_flat`); with `assign`, written there instead (MaxUnpool, as
    torch: overlapping pooling windows repeat an index, and its value is written once)."""
    lead = g.ndim - idx.ndim
    spatial = int(np.prod(shape[2:]))
    out_shape = g.shape[:lead] + tuple(shape)
    rows = int(np.prod(out_shape[:lead + 2]))
    gi = np.broadcast_to(idx, g.shape).reshape(rows, -1)
    base = (_ns(g).arange(rows) * spatial)[:, None]
    if assign:
        out = _ns(g).zeros(rows * spatial, dtype=g.dtype)
        out[(gi + base).ravel()] = g.reshape(rows, -1).ravel()
        return out.reshape(out_shape)
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
    (lambda m, g, out, x, idx, *, shape, assign=False: m.gather_flat(g, idx), None),
    (lambda m, t, out, x, idx, *, shape, assign=False: m.unpool(t, idx, shape=shape,
                                                                 assign=assign), None),
    reads=(1,), fresh=True)
gather_flat = defop(
    "gather_flat", _gather_flat,
    (lambda m, g, out, x, idx: m.unpool(g, idx, shape=x.shape), None),
    (lambda m, t, out, x, idx: m.gather_flat(t, idx), None),
    reads=(1,), fresh=True)
