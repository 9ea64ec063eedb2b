"""Reductions: sums, products, extremes and the softmax family.

A reduction's vjp broadcasts the cotangent back over the reduced axes
(`expand_back`); its jvp reduces the tangent times the local derivative over
axes counted from the end, so tangents with leading batch dimensions (jacfwd,
hessian, vmap) pass through.
"""

from __future__ import annotations

import numpy as np

from ..devices import namespace_of as _ns
from ..primitive import NUMPY, defop
from .elementwise import _real_only

_HALF = np.dtype(np.float16)


def _acc(x):
    """The dtype a sum or product of x accumulates in: an integer input's own (PyTorch's
    `dtype=` then holds; NumPy would widen int32 to int64), else NumPy's default (bool
    counts in int64, floats stay)."""
    return x.dtype if x.dtype.kind in "iu" else None


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(a % ndim if ndim else a for a in axis)


def _kept_shape(shape, axis):
    axes = _axes(axis, len(shape))
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def expand_back(m, g, shape, axis, keepdims):
    """Broadcast a reduction's cotangent back over the reduced axes."""
    if m is NUMPY and g.__class__ is np.ndarray:  # the methods cost less than the ops
        if not keepdims:
            g = g.reshape(_kept_shape(shape, axis))
        return np.broadcast_to(g, shape)
    if not keepdims:
        g = m.reshape(g, shape=_kept_shape(shape, axis))
    return m.expand(g, shape=tuple(shape))


def keep(m, y, shape, axis, keepdims):
    """A reduction's output reshaped with the reduced axes kept (size 1)."""
    return y if keepdims else m.reshape(y, shape=_kept_shape(shape, axis))


def _neg_axes(axis, ndim):
    """Reduction axes counted from the end, so leading batch dimensions are left alone."""
    return tuple(a - ndim for a in _axes(axis, ndim))


def _reduce_jvp(local):
    """jvp of a reduction: sum of the tangent times the local derivative over `axis`."""
    def rule(m, t, out, x, *, axis=None, keepdims=False):
        return m.sum(t * local(m, out, x, axis, keepdims), axis=_neg_axes(axis, x.ndim),
                     keepdims=keepdims)
    return rule


def _sum(x, *, axis=None, keepdims=False):
    if x.dtype is _HALF:  # accumulated in float32, as PyTorch's CPU sum of half does
        return np.asarray(np.add.reduce(x, axis=axis, keepdims=keepdims, dtype=np.float32)
                          ).astype(_HALF)
    if x.dtype.kind in "fc":  # np.sum's wrapper costs more than a small sum itself
        return np.add.reduce(x, axis=axis, keepdims=keepdims)
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=_acc(x))  # (NumPy: int32 -> int64)


sum = defop(
    "sum", _sum,
    (lambda m, g, out, x, *, axis=None, keepdims=False: expand_back(m, g, x.shape, axis,
                                                                    keepdims),),
    (lambda m, t, out, x, *, axis=None, keepdims=False: m.sum(
        t, axis=_neg_axes(axis, x.ndim), keepdims=keepdims),),
    reads=())


def _prod_others(x, axis):
    """Product of all other elements along `axis` (correct with zeros)."""
    if x.ndim == 0:  # a 0-d tensor reduced over its dim 0: no other elements
        return np.ones_like(x)
    if axis is None:
        flat = x.reshape(-1)
        return _prod_others(flat, 0).reshape(x.shape)
    axes = _axes(axis, x.ndim)
    if len(axes) > 1:
        moved = np.moveaxis(x, axes, range(-len(axes), 0))
        lead = moved.shape[:-len(axes)]
        flat = moved.reshape(lead + (-1,))
        r = _prod_others(flat, -1).reshape(moved.shape)
        return np.moveaxis(r, range(-len(axes), 0), axes)
    ax = axes[0]
    ones_shape = list(x.shape)
    ones_shape[ax] = 1
    one = _ns(x).ones(ones_shape, dtype=x.dtype)
    head = (slice(None),) * ax + (slice(0, x.shape[ax] - 1),)  # all but the last along ax
    left = np.cumprod(np.concatenate([one, x[head]], ax), axis=ax)
    rev = np.flip(x, ax)
    right = np.cumprod(np.concatenate([one, rev[head]], ax), axis=ax)
    return left * np.flip(right, ax)


def _prod_others_recorded(m, x, axis):
    """_prod_others with `m`'s ops (create_graph, forward mode): the exclusive products from
    the left and from the right, each a cumprod (whose derivatives are right with zeros),
    so the gradient of prod is itself differentiable, to any order, where x has zeros."""
    if x.ndim == 0:
        return m.ones_like(x)
    if axis is None:
        return m.reshape(_prod_others_recorded(m, m.reshape(x, shape=(-1,)), 0), shape=x.shape)
    axes = _axes(axis, x.ndim)
    if len(axes) > 1:
        return None
    ax = axes[0] - x.ndim  # counted from the end: vmap's batch dims go in front
    n = x.shape[ax]
    if n <= 1:
        return m.ones_like(x)
    post = (slice(None),) * (-ax - 1)
    pads = ((1, 0),) + ((0, 0),) * (-ax - 1)
    back = (Ellipsis, slice(None, None, -1)) + post

    def exclusive(v):  # 1, v0, v0 v1, ... along ax
        c = m.cumprod(m.getitem(v, idx=(Ellipsis, slice(0, n - 1)) + post), axis=ax)
        return m.pad_constant(c, pads=pads, value=1.0)
    return exclusive(x) * m.getitem(exclusive(m.getitem(x, idx=back)), idx=back)


def _prod_vjp(m, g, out, x, *, axis=None, keepdims=False):
    g = expand_back(m, g, x.shape, axis, keepdims)
    if m is not NUMPY:  # recorded: right with or without zeros, in every vmapped sample,
        others = _prod_others_recorded(m, x, axis)  # and differentiable again
        if others is not None:
            return g * others
    xd = x.data if hasattr(x, "grad_fn") else x  # a Tensor's array, or the array
    if bool(np.any(xd == 0)):  # out / x undefined there
        return g * m.prod_others(x, axis=axis)
    return g * keep(m, out, x.shape, axis, keepdims) / x


prod = defop(
    "prod", lambda x, *, axis=None, keepdims=False: np.prod(x, axis=axis, keepdims=keepdims,
                                                           dtype=_acc(x)),
    (_prod_vjp,),
    (_reduce_jvp(lambda m, out, x, axis, keepdims: _prod_vjp(
        m, m.ones_like(out), out, x, axis=axis, keepdims=keepdims)),), save_out=True, tuned=True)
prod_others = defop("prod_others", lambda x, *, axis=None: _prod_others(x, axis))


def _reduce_max(x, *, axis=None, keepdims=False, evenly=False):
    _real_only(x, "max")
    return np.max(x, axis=axis, keepdims=keepdims)


def _reduce_min(x, *, axis=None, keepdims=False, evenly=False):
    _real_only(x, "min")
    return np.min(x, axis=axis, keepdims=keepdims)


def _extreme_mask(m, out, x, axis, keepdims):
    """Where x attains the max/min, each tie weighted 1/count."""
    hit = m.cast(x == keep(m, out, x.shape, axis, keepdims), dtype=x.dtype)
    return hit / m.sum(hit, axis=axis, keepdims=True)


def _extreme_vjp(m, g, out, x, *, axis=None, keepdims=False, evenly=False):
    """g shared among the ties of the max/min. As PyTorch: amax/amin (and reductions over
    some dims) multiply g by the tie mask over its count; a whole tensor's max()/min()
    (`evenly`, its evenly_distribute_backward) writes g/count where x is the result, or is
    NaN where the result is NaN, and 0 elsewhere (an infinite g gives 0 there, not NaN)."""
    ge = expand_back(m, g, x.shape, axis, keepdims)
    if not evenly:
        return ge * _extreme_mask(m, out, x, axis, keepdims)
    res = keep(m, out, x.shape, axis, keepdims)
    hit = m.logical_or(x == res, m.logical_and(m.isnan(x), m.isnan(res)))
    count = m.sum(m.cast(hit, dtype=x.dtype), axis=axis, keepdims=True)
    return m.where(hit, ge / count, 0.0)


def _extreme_jvp(m, t, out, x, *, axis=None, keepdims=False, evenly=False):
    return _reduce_jvp(_extreme_mask)(m, t, out, x, axis=axis, keepdims=keepdims)


max = defop(
    "max", _reduce_max,
    (_extreme_vjp,),
    (_extreme_jvp,),
    save_out=True, smooth=False)
min = defop("min", _reduce_min, max.vjps, max.jvps, save_out=True, smooth=False)
argmax = defop("argmax", lambda x, *, axis=None, keepdims=False: np.argmax(
    x, axis=axis, keepdims=keepdims))
argmin = defop("argmin", lambda x, *, axis=None, keepdims=False: np.argmin(
    x, axis=axis, keepdims=keepdims))


def _logsumexp(x, *, axis=None, keepdims=False):
    if x.size == 0:
        return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))
    shift = np.max(x.real, axis=axis, keepdims=True)
    shift = np.where(np.isfinite(shift), shift, 0)
    s = np.log(np.sum(np.exp(x - shift), axis=axis, keepdims=True)) + shift
    return s if keepdims else np.squeeze(s, axis=axis)


logsumexp = defop(
    "logsumexp", _logsumexp,
    (lambda m, g, out, x, *, axis=None, keepdims=False: expand_back(
        m, g, x.shape, axis, keepdims) * m.exp(x - keep(m, out, x.shape, axis, keepdims)),),
    (_reduce_jvp(lambda m, out, x, axis, keepdims: m.exp(
        x - keep(m, out, x.shape, axis, keepdims))),),
    save_out=True)


def _softmax(x, *, axis):
    if x.size == 0:  # nothing to normalise (NumPy's max of an empty axis raises)
        return x.copy()
    if x.ndim == 0:
        e = np.exp(x - x.real)
        return e / e
    e = x - np.maximum.reduce(x.real if x.dtype.kind == "c" else x, axis=axis, keepdims=True)
    np.exp(e, out=e)  # the ufuncs themselves: NumPy's np.max/np.sum wrappers cost more here
    e /= np.add.reduce(e, axis=axis, keepdims=True)
    return e


softmax = defop(
    "softmax", _softmax,
    (lambda m, g, out, x, *, axis: out * (g - m.sum(g * out, axis=axis, keepdims=True)),),
    (lambda m, t, out, x, *, axis: out * (t - m.sum(t * out, axis=_neg_axes(axis, x.ndim),
                                                    keepdims=True)),),
    save_out=True, reads=(), fresh=True)


def _log_softmax(x, *, axis):
    if x.size == 0:
        return x.copy()
    if x.ndim == 0:
        s = x - x.real
        return s - np.log(np.exp(s))
    s = x - np.maximum.reduce(x.real if x.dtype.kind == "c" else x, axis=axis, keepdims=True)
    s -= np.log(np.add.reduce(np.exp(s), axis=axis, keepdims=True))
    return s


log_softmax = defop(
    "log_softmax", _log_softmax,
    (lambda m, g, out, x, *, axis: g - m.exp(out) * m.sum(g, axis=axis, keepdims=True),),
    (lambda m, t, out, x, *, axis: t - m.sum(m.exp(out) * t, axis=_neg_axes(axis, x.ndim),
                                                keepdims=True),),
    save_out=True, reads=(), fresh=True)
