"""Shape and indexing: reshape, permute, expand, indexing, concatenation, casts.

These are linear, so each jvp is the op applied to the tangent. A tangent may
carry leading batch dimensions beyond its primal's shape (jacfwd, jacrev,
hessian and vmap push a whole basis of tangents at once): the jvp rules pass
them through, prefixing shapes and indices with the batch.
"""

from __future__ import annotations

import math

import numpy as np

from ..devices import namespace_of as _ns
from ..primitive import defop, sum_to


def _inverse(axes):
    inv = [0] * len(axes)
    for i, a in enumerate(axes):
        inv[a] = i
    return tuple(inv)


def _reshape_jvp(m, t, out, x, *, shape):
    return m.reshape(t, shape=t.shape[:t.ndim - x.ndim] + tuple(shape))


reshape = defop(
    "reshape", lambda x, *, shape: np.reshape(x, shape),
    (lambda m, g, out, x, *, shape: m.reshape(g, shape=x.shape),),
    (_reshape_jvp,), reads=(), view=True)


def _permute_jvp(m, t, out, x, *, axes):
    lead = t.ndim - x.ndim
    return m.permute(t, axes=tuple(range(lead)) + tuple(a % x.ndim + lead for a in axes))


permute = defop(
    "permute", lambda x, *, axes: np.transpose(x, axes),
    (lambda m, g, out, x, *, axes: m.permute(g, axes=_inverse(axes)),),
    (_permute_jvp,), reads=(), view=True)


def _expand_jvp(m, t, out, x, *, shape):
    lead = t.ndim - x.ndim
    if lead and len(shape) > x.ndim:
        t = m.reshape(t, shape=t.shape[:lead] + (1,) * (len(shape) - x.ndim) + x.shape)
    return m.expand(t, shape=t.shape[:lead] + tuple(shape))


def _expand(x, *, shape):
    if x.__class__ is np.ndarray and math.prod(shape) == x.size and x.size:
        return x.reshape(shape)  # nothing repeats: a writable view, as torch's
    return np.broadcast_to(x, shape)


expand = defop(
    "expand", _expand,
    (lambda m, g, out, x, *, shape: sum_to(m, g, x.shape),),
    (_expand_jvp,), reads=(), view=True)


def _batch_idx(idx, lead):
    """`idx` for an array with `lead` more leading dimensions; None where NumPy would move
    separated advanced indices to the front (the batch then goes last instead)."""
    if lead == 0:
        return idx
    items = idx if isinstance(idx, tuple) else (idx,)
    adv = [k for k, i in enumerate(items)
           if not (i is None or i is Ellipsis or isinstance(i, slice))]
    if any(isinstance(items[k], np.ndarray) for k in adv) and adv[-1] - adv[0] + 1 != len(adv):
        return None
    return (slice(None),) * lead + items


def _no_ellipsis(idx, ndim):
    """`idx` with its Ellipsis spelled out, so extra trailing dimensions are left alone."""
    items = idx if isinstance(idx, tuple) else (idx,)
    if not any(i is Ellipsis for i in items):
        return items
    used = sum(i.ndim if isinstance(i, np.ndarray) and i.dtype == np.bool_ else 1
               for i in items if i is not None and i is not Ellipsis)
    k = next(k for k, i in enumerate(items) if i is Ellipsis)
    return items[:k] + (slice(None),) * (ndim - used) + items[k + 1:]


def _batch_last(m, t, lead):
    return m.permute(t, axes=tuple(range(lead, t.ndim)) + tuple(range(lead)))


def _batch_first(m, r, lead):
    n = r.ndim
    return m.permute(r, axes=tuple(range(n - lead, n)) + tuple(range(n - lead)))


def _getitem_jvp(m, t, out, x, *, idx):
    lead = t.ndim - x.ndim
    b = _batch_idx(idx, lead)
    if b is not None:
        return m.getitem(t, idx=b)
    r = m.getitem(_batch_last(m, t, lead), idx=_no_ellipsis(idx, x.ndim))
    return _batch_first(m, r, lead)


def _getitem(x, *, idx):
    r = x[idx]
    if isinstance(r, np.generic):  # ints all the way down: NumPy gives a scalar (a copy);
        r = x[(idx if isinstance(idx, tuple) else (idx,)) + (Ellipsis,)]  # a 0-d view, as torch
    elif r.ndim > 1 and r.__class__ is np.ndarray and not r.flags.c_contiguous \
            and not _is_basic(idx):
        r = r.copy(order="C")  # advanced indexing: a new array, row-major as PyTorch's
    return r


getitem = defop(
    "getitem", _getitem,
    (lambda m, g, out, x, *, idx: m.scatter(g, idx=idx, shape=x.shape),),
    (_getitem_jvp,), reads=(), view=True)


def _is_basic(idx) -> bool:
    items = idx if isinstance(idx, tuple) else (idx,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice, np.integer))
               for i in items)


def _scatter(g, *, idx, shape):
    """Zeros of `shape` with `g` added at `idx` (repeated indices accumulate)."""
    z = _ns(g).zeros(shape, dtype=g.dtype)
    if _is_basic(idx):
        z[idx] = g
    else:
        np.add.at(z, idx, g)
    return z


def _scatter_add_into(base, g, *, idx, shape):
    """base + scatter(g, idx, shape), in base's buffer. A basic index adds g onto its
    slice only (the same sums as base + zeros-with-g, up to the sign of a zero elsewhere:
    -0.0 stays -0.0 where -0.0 + 0.0 gives 0.0); an advanced one adds
    the whole scatter, so repeated indices sum in the same order."""
    if _is_basic(idx):
        base[idx] += g
    else:
        base += _scatter(g, idx=idx, shape=shape)
    return base


def _scatter_jvp(m, t, out, g, *, idx, shape):
    lead = t.ndim - g.ndim
    b = _batch_idx(idx, lead)
    if b is not None:
        return m.scatter(t, idx=b, shape=t.shape[:lead] + tuple(shape))
    r = m.scatter(_batch_last(m, t, lead), idx=_no_ellipsis(idx, len(shape)),
                  shape=tuple(shape) + t.shape[:lead])
    return _batch_first(m, r, lead)


def _scatter_tiles(pieces) -> bool:
    """Whether scatters with these attributes (basic indices, one shape) cover their shape
    exactly once: their sum is then a concatenation (checked once, when rg.jit compiles)."""
    shape = pieces[0]["shape"]
    if any(p["shape"] != shape or not _is_basic(p["idx"]) for p in pieces) \
            or math.prod(shape) > 1 << 24:
        return False
    count = np.zeros(shape, np.int8)
    for p in pieces:
        count[p["idx"]] += 1
    return bool((count == 1).all())


def _scatter_first(g, *, idx, shape):
    """The first piece of a tiling (`_scatter_tiles`): the rest is written by the others."""
    z = _ns(g).empty(shape, dtype=g.dtype)
    z[idx] = g
    return z


def _scatter_set_into(base, g, *, idx, shape):
    """A later piece of a tiling, written into its own region of base."""
    base[idx] = g
    return base


scatter = defop(
    "scatter", _scatter,
    (lambda m, g, out, x, *, idx, shape: m.getitem(g, idx=idx),),
    (_scatter_jvp,), reads=(), fresh=True, add_into=_scatter_add_into,
    tile=(_scatter_tiles, _scatter_first, _scatter_set_into))


def _setitem(x, v, *, idx):
    y = np.array(x) if isinstance(x, np.generic) else x.copy()  # a 0-d cotangent may be a
    # NumPy scalar, which takes no item assignment
    y[idx] = v
    return y


def _setitem_jvp_x(m, t, out, x, v, *, idx):
    lead = t.ndim - x.ndim
    b = _batch_idx(idx, lead)
    if b is not None:
        return m.setitem(t, 0.0, idx=b)
    r = m.setitem(_batch_last(m, t, lead), 0.0, idx=_no_ellipsis(idx, x.ndim))
    return _batch_first(m, r, lead)


def _setitem_jvp_v(m, t, out, x, v, *, idx):
    lead = t.ndim - np.ndim(v)
    zeros = m.zeros_like(out)
    if not lead:
        return m.setitem(zeros, t, idx=idx)
    batch = t.shape[:lead]
    region = np.empty(out.shape, dtype=np.bool_)[idx].shape
    t = m.reshape(t, shape=batch + (1,) * (len(region) - np.ndim(v)) + t.shape[lead:])
    t = m.expand(t, shape=batch + region)
    zeros = m.expand(zeros, shape=batch + out.shape)
    b = _batch_idx(idx, lead)
    if b is not None:
        return m.setitem(zeros, t, idx=b)
    r = m.setitem(_batch_last(m, zeros, lead), _batch_last(m, t, lead),
                  idx=_no_ellipsis(idx, out.ndim))
    return _batch_first(m, r, lead)


setitem = defop(
    "setitem", _setitem,
    (lambda m, g, out, x, v, *, idx: m.setitem(g, 0.0, idx=idx),
     lambda m, g, out, x, v, *, idx: sum_to(m, m.getitem(g, idx=idx), v.shape)),
    (_setitem_jvp_x, _setitem_jvp_v),
    reads=())


def _cat(*xs, axis):
    r = np.concatenate(xs, axis=axis)
    if r.ndim > 1 and r.__class__ is np.ndarray and not r.flags.c_contiguous:
        return r.copy(order="C")  # NumPy keeps permuted inputs' order; PyTorch's is row-major
    return r


def _cat_vjp(m, g, out, *xs, axis, argnum):
    start = sum(x.shape[axis] for x in xs[:argnum])
    idx = (slice(None),) * (axis % g.ndim) + (slice(start, start + xs[argnum].shape[axis]),)
    return m.getitem(g, idx=idx)


def _cat_jvp(m, t, out, *xs, axis, argnum):
    x = xs[argnum]
    lead = t.ndim - x.ndim
    ax = axis % x.ndim
    start = sum(y.shape[ax] for y in xs[:argnum])
    idx = (slice(None),) * (lead + ax) + (slice(start, start + x.shape[ax]),)
    return m.scatter(t, idx=idx, shape=t.shape[:lead] + out.shape)


cat = defop("cat", _cat, (_cat_vjp,), (_cat_jvp,), reads=(), variadic=True)


def _dense_order(shape, strides) -> list[int]:
    """The dims outermost first, in the order PyTorch lays out a copy of a tensor with
    these strides (`infer_dense_strides`: an insertion sort by stride in which a 0 stride
    compares as a tie, so broadcast dims keep the row-major place they had)."""
    perm = list(range(len(shape)))[::-1]  # innermost first
    for i in range(1, len(perm)):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            s0, s1 = strides[perm[d0]], strides[perm[d1]]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                break
            if s0 > s1 or shape[perm[d0]] > shape[perm[d1]]:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
    return perm[::-1]


def _astype(x, dtype):
    """x.astype(dtype), laid out as torch's copy: NumPy's order "K" puts a broadcast (0
    stride) dim innermost, which torch never does, and a later view() would then be
    refused where torch's succeeds (StyleGAN's const.repeat(b, 1, 1, 1).view(1, -1, h, w))."""
    strides = getattr(x, "strides", None)
    if strides and any(s == 0 and n > 1 for s, n in zip(strides, x.shape)):
        order = _dense_order(x.shape, strides)
        return x.transpose(order).astype(dtype, order="C").transpose(_inverse(order))
    return x.astype(dtype)


def _cast(x, *, dtype):
    if x.dtype.kind == "c" and np.dtype(dtype).kind != "c":  # the real part, as in PyTorch,
        if np.dtype(dtype).kind == "b":                    # but to bool: nonzero either part
            return x != 0
        return _astype(x.real, dtype)
    return _astype(x, dtype)


cast = defop("cast", _cast,
             (lambda m, g, out, x, *, dtype: m.cast(g, dtype=x.dtype),),
             (lambda m, t, out, x, *, dtype: m.cast(t, dtype=dtype),), reads=())
contiguous = defop("contiguous", lambda x: x.copy(order="C"),
                   (lambda m, g, out, x: g,), (lambda m, t, out, x: t,), reads=(), fresh=True)
"""A row-major copy of the values (PyTorch's `contiguous()` of a tensor in another order)."""
zeros_like = defop("zeros_like", np.zeros_like, (None,), (None,), reads=())
ones_like = defop("ones_like", np.ones_like, (None,), (None,), reads=())
