"""Fused layers: one node where the generic ops would make three or more, with
NumPy fast paths in their rules (the only file where a rule asks `m is NUMPY`).

Each is also correct through the generic ops (`m` other than NUMPY), which is
what a recorded backward (`create_graph=True`) and `rg.sym` use. These ops are
`tuned`: `rg.jit` traces each vjp rule as one op running its NumPy path.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..devices import namespace_of as _ns
from ..primitive import NUMPY, defop
from .elementwise import _real_only
from .shape import _expand_jvp


@functools.lru_cache(maxsize=64)
def _ones(n: int, dtype: np.dtype) -> np.ndarray:
    one = np.ones(n, dtype=dtype)
    one.flags.writeable = False
    return one


@functools.lru_cache(maxsize=64)
def _arange(n: int) -> np.ndarray:
    r = np.arange(n)
    r.flags.writeable = False
    return r


def _ones_as(a, n: int):
    """Ones of length n in a's dtype, on a's device (cached on the host)."""
    return _ones(n, a.dtype) if a.__class__ is np.ndarray else _ns(a).ones(n, dtype=a.dtype)


def _arange_as(a, n: int):
    """0 .. n-1 on a's device (cached on the host)."""
    return _arange(n) if a.__class__ is np.ndarray else _ns(a).arange(n)


def _sum_axis(a, axis):
    """Sum of a 1-D or 2-D array over `axis` (0, or 1 for 2-D): for floats a BLAS product
    with ones, several times faster than a ufunc reduction over a short axis, and no
    less exact (both add in order along the axis)."""
    if a.dtype.kind == "f" and a.ndim <= 2:
        return _ones_as(a, a.shape[0]) @ a if axis == 0 else a @ _ones_as(a, a.shape[-1])
    return np.add.reduce(a, axis=axis)


# ---------------------------------------------------------------- linear: x @ w.T + b

def _linear(x, w, b):
    if x.ndim > 2:  # one BLAS product over all rows, not one per leading index
        out = np.matmul(x.reshape(-1, x.shape[-1]), w.T).reshape(x.shape[:-1] + w.shape[:1])
    else:
        out = np.matmul(x, w.T)
    if b is not None:
        if b.dtype == out.dtype or out.dtype == np.result_type(out, b):
            out += b
        else:
            out = out + b
    return out


def _as_rows(m, a):
    """An (..., k) operand as (rows, k); a 1-D one as one row."""
    return a if a.ndim == 2 else m.reshape(a, shape=(-1, a.shape[-1]))


def _linear_vjp_x(m, g, out, x, w, b):
    if m is NUMPY and g.ndim > 2 and g.flags.c_contiguous:  # one BLAS product over all rows
        return np.matmul(g.reshape(-1, g.shape[-1]), w).reshape(g.shape[:-1] + w.shape[1:])
    return m.matmul(g, w)


def _linear_vjp_w(m, g, out, x, w, b):
    if m is NUMPY and g.ndim == 2 and x.ndim == 2:
        return np.matmul(g.T, x)  # the hot path, without the namespace's wrappers
    if m is NUMPY and g.ndim == x.ndim > 2 and g.flags.c_contiguous and x.flags.c_contiguous:
        return np.matmul(g.reshape(-1, g.shape[-1]).T, x.reshape(-1, x.shape[-1]))
    return m.matmul(m.permute(_as_rows(m, g), axes=(1, 0)), _as_rows(m, x))


def _linear_vjp_b(m, g, out, x, w, b):
    if g.ndim == 1:
        return g
    if m is NUMPY and g.ndim == 2:
        return _sum_axis(g, 0)  # the hot path
    if m is NUMPY and g.flags.c_contiguous:  # (..., k) as rows: one product with ones
        return _sum_axis(g.reshape(-1, g.shape[-1]), 0)
    return m.sum(g, axis=tuple(range(g.ndim - 1)))


def _linear_jvp_w(m, t, out, x, w, b):
    lead = t.ndim - 2
    tT = m.permute(t, axes=tuple(range(lead)) + (lead + 1, lead))
    if lead and x.ndim > 2:  # keep x's own leading dimensions apart from the batch
        tT = m.reshape(tT, shape=t.shape[:lead] + (1,) * (x.ndim - 2) + tT.shape[lead:])
    return m.matmul(x, tT)


linear = defop(
    "linear", _linear,
    (_linear_vjp_x, _linear_vjp_w, _linear_vjp_b),
    (lambda m, t, out, x, w, b: m.matmul(t, m.permute(w, axes=(1, 0))), _linear_jvp_w,
     lambda m, t, out, x, w, b: _expand_jvp(m, t, out, b, shape=out.shape)),
    reads={0: (1,), 1: (0,), 2: ()}, tuned=True, fresh=True, fresh_vjps=True)


# ---------------------------------------------------------------- cross-entropy on labels

def _labels(y):
    return y.data if hasattr(y, "grad_fn") else y  # a Tensor's array, or the array


class LabelError(IndexError):
    """A class label outside [0, classes)."""


def _check_labels(y, classes, name):
    if y.size and (np.minimum.reduce(y, axis=None) < 0
                   or np.maximum.reduce(y, axis=None) >= classes):
        v = int(y[(y < 0) | (y >= classes)][0])
        raise LabelError(f"{name}: target {v} is out of bounds: the input has {classes} "
                         f"classes, so targets must be in [0, {classes - 1}]")


def _cross_entropy(z, y, *, reduction, smoothing, ignore=None):
    return _cross_entropy_saving(z, y, reduction=reduction, smoothing=smoothing,
                                 ignore=ignore)[0]


def _ignored(y, ignore):
    """The rows whose label is `ignore` (a bool array), or None when there are none."""
    if ignore is None:
        return None
    hit = y == ignore
    return hit if hit.any() else None


def _cross_entropy_saving(z, y, *, reduction, smoothing, ignore=None):
    """The loss, and softmax(z) for the backward (recomputing it costs as much as the
    forward: per-row reductions over few classes are slow in NumPy). Rows labelled
    `ignore` add nothing, and 'mean' divides by the rows kept (nan if none, as PyTorch)."""
    hit = _ignored(y, ignore)
    if hit is not None:
        y = np.where(hit, 0, y)  # any class: the row's loss and gradient are dropped
    _check_labels(y, z.shape[1], "cross_entropy")
    # ufunc reductions directly: np.sum/np.mean wrappers cost more than the maths here
    e = None
    if z.dtype.kind == "f" and z.size:
        # One shift for all rows (one max over the array costs far less than one per
        # row). Exact unless a row's exponentials all but vanish: then shift per row.
        shift = z - np.maximum.reduce(z, axis=None)
        e = np.exp(shift)
        total = _sum_axis(e, 1)
        if not np.minimum.reduce(total) >= 2e-9:  # also catches inf and nan
            e = None
    if e is None:
        shift = z - np.maximum.reduce(z.real, axis=1, keepdims=True)
        e = np.exp(shift)
        total = _sum_axis(e, 1)
    loss = np.log(total)
    total = total[:, None]
    picked = shift[_arange_as(y, len(y)), y]
    if smoothing:
        loss -= (1.0 - smoothing) * picked + (smoothing / z.shape[1]) * np.add.reduce(shift, 1)
    else:
        loss -= picked
    e /= total
    if hit is not None:
        loss[hit] = 0
    if reduction != "none":
        loss = _sum_axis(loss, 0)
        if reduction == "mean":
            kept = len(y) if hit is None else len(y) - int(np.count_nonzero(hit))
            loss = loss / kept if kept else loss * np.nan
    return loss, e


def _xent_residual(m, z, y, smoothing, softmax=None, ignore=None):
    """softmax(z) - q, q the (smoothed) one-hot targets: d(loss_n)/d(z_n); rows labelled
    `ignore` zero. Also the number of rows kept (an int on arrays, else a tensor)."""
    if m is NUMPY:
        y = _labels(y)
        hit = _ignored(y, ignore)
        rows = _arange_as(y, len(y))
        if softmax is not None:
            r = softmax.copy()  # the node keeps its own for a second backward
        else:
            r = np.exp(z - np.maximum.reduce(z.real, axis=1, keepdims=True))
            r /= _sum_axis(r, 1)[:, None]
        if hit is None:
            r[rows, y] -= 1.0 - smoothing
        else:
            r[rows, np.where(hit, 0, y)] -= 1.0 - smoothing
        if smoothing:
            r -= smoothing / z.shape[1]
        if hit is None:
            return r, len(y)
        r[hit] = 0
        return r, len(y) - int(np.count_nonzero(hit))
    # the targets as an op on `y`, not an array made from y's values: a traced
    # (rg.jit) backward must read the labels of each call, not the first call's
    if ignore is None:
        q = m.one_hot(y, classes=z.shape[1], dtype=z.dtype)
        keep = None
    else:
        valid = y != ignore
        q = m.one_hot(y * m.cast(valid, dtype=y.dtype), classes=z.shape[1], dtype=z.dtype)
        keep = m.cast(valid, dtype=z.dtype)
    if smoothing:
        q = q * (1.0 - smoothing) + smoothing / z.shape[1]
    r = m.softmax(z, axis=1) - q
    if keep is None:
        return r, z.shape[0]
    return r * m.reshape(keep, shape=(z.shape[0], 1)), m.sum(keep)


def _xent_vjp(m, g, out, z, y, *, reduction, smoothing, ignore=None):
    # `out` is what the forward saved (softmax(z)) when it ran with NUMPY, else None
    r, kept = _xent_residual(m, z, y, smoothing, out if m is NUMPY else None, ignore)
    if reduction == "none":
        return r * m.reshape(g, shape=(z.shape[0], 1))
    if reduction == "mean":
        g = g / _nonzero_count(m, kept, z.dtype)  # all rows ignored: r is 0, and so is this
    if m is NUMPY:
        r *= g
        return r
    return r * g


def _nonzero_count(m, kept, dtype):
    """The count of rows kept, 1 where it is 0 (then no row passes a gradient on)."""
    if isinstance(kept, int):
        return kept or 1
    return kept + m.cast(kept == 0, dtype=dtype)


def _xent_jvp(m, t, out, z, y, *, reduction, smoothing, ignore=None):
    r, kept = _xent_residual(m, z, y, smoothing, None, ignore)
    d = m.sum(r * t, axis=-1)  # axes from the end: batchable
    if reduction == "none":
        return d
    total = m.sum(d, axis=-1)
    if reduction != "mean":
        return total
    return total * math.nan if isinstance(kept, int) and not kept else total / kept


def _one_hot(y, *, classes, dtype):
    _check_labels(y, classes, "one_hot")
    q = _ns(y).zeros(y.shape + (classes,), dtype=dtype)
    np.put_along_axis(q, y[..., None], 1, axis=-1)
    return q


one_hot = defop("one_hot", _one_hot, fresh=True)
cross_entropy = defop("cross_entropy", _cross_entropy, (_xent_vjp, None), (_xent_jvp, None),
                      saving=_cross_entropy_saving, tuned=True, fresh_vjps=True)


# ---------------------------------------------------------------- max pooling, 2-d

def _pool_view(x, kernel):
    """Non-overlapping windows of an NCHW array as (N, C, OH, kh, OW, kw); a view, any strides."""
    n, c, h, w = x.shape[-4:]
    kh, kw = kernel
    oh, ow = h // kh, w // kw
    if oh * kh != h or ow * kw != w:  # PyTorch's floor mode: the remainder is dropped
        x = x[..., :oh * kh, :ow * kw]
    return x.reshape(x.shape[:-4] + (n, c, oh, kh, ow, kw))


def _max_pool2d(x, *, kernel):
    _real_only(x, "max_pool2d")
    win = _pool_view(x, kernel)
    out = win[..., 0, :, 0].copy()
    for i in range(kernel[0]):  # one maximum per window offset: multi-axis reductions over
        for j in range(kernel[1]):  # strided middle axes are far slower in NumPy
            if i or j:
                np.maximum(out, win[..., i, :, j], out=out)
    return out


def _pool_share(m, x, out, kernel):
    """Where each window attains its max, ties weighted 1/count: (N, C, OH, kh, OW, kw)."""
    n, c, oh, ow = out.shape
    win = _pool_view(x, kernel) if m is NUMPY else m.reshape(
        _pool_trim(m, x, kernel, oh, ow), shape=(n, c, oh, kernel[0], ow, kernel[1]))
    hit = m.cast(m.eq(win, m.reshape(out, shape=(n, c, oh, 1, ow, 1))), dtype=x.dtype)
    return hit / m.sum(hit, axis=(3, 5), keepdims=True)


def _pool_trim(m, a, kernel, oh, ow):
    h, w = oh * kernel[0], ow * kernel[1]
    if a.shape[-2:] == (h, w):
        return a
    return m.getitem(a, idx=(Ellipsis, slice(0, h), slice(0, w)))


def _max_pool2d_vjp(m, g, out, x, *, kernel):
    kh, kw = kernel
    if m is NUMPY:  # per-offset loops again; same result as the general rule below
        win = _pool_view(x, kernel)
        hits = [win[..., i, :, j] == out for i in range(kh) for j in range(kw)]
        count = hits[0].astype(g.dtype)
        for hit in hits[1:]:
            count += hit
        share = g / count
        gx = _ns(x).zeros(x.shape, dtype=share.dtype)
        gwin = _pool_view(gx, kernel)
        finite = bool(_ns(share).isfinite(share).all())  # else inf * 0 would leak NaN
        for k, hit in enumerate(hits):
            if finite:
                np.multiply(hit, share, out=gwin[..., k // kw, :, k % kw])
            else:
                gwin[..., k // kw, :, k % kw] = _ns(share).where(hit, share, 0)
        return gx
    n, c, oh, ow = out.shape
    r = _pool_share(m, x, out, kernel) * m.reshape(g, shape=(n, c, oh, 1, ow, 1))
    r = m.reshape(r, shape=(n, c, oh * kh, ow * kw))
    if r.shape != x.shape:
        r = m.scatter(r, idx=(Ellipsis, slice(0, oh * kh), slice(0, ow * kw)), shape=x.shape)
    return r


def _max_pool2d_jvp(m, t, out, x, *, kernel):
    n, c, oh, ow = out.shape[-4:]
    tw = _pool_trim(m, t, kernel, oh, ow)
    tw = m.reshape(tw, shape=tw.shape[:-4] + (n, c, oh, kernel[0], ow, kernel[1]))
    return m.sum(_pool_share(m, x, out, kernel) * tw, axis=(-3, -1))


max_pool2d = defop("max_pool2d", _max_pool2d, (_max_pool2d_vjp,), (_max_pool2d_jvp,),
                   save_out=True, smooth=False, tuned=True, fresh_vjps=True)
