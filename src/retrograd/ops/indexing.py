"""Indexing by integer tensors: gather and the scatters, index_select/index_add, diagonals.

The index tensors are inputs of these ops (never attributes), so a traced
program (`rg.jit`) reads each call's indices. Each op's `axis` is counted from
the end (negative), so a tangent with leading batch dimensions (jacfwd,
hessian, vmap) goes through the same forward: those dimensions are simply
extra leading axes of the data, with the index broadcast over them.

gather and scatter_add are each other's adjoints, as are index_select and
index_add, and diagonal and diag_scatter.
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from ..devices import namespace_of as _ns
from ..kernels import indexing as _kindex
from ..primitive import defop


def _nonnegative(index):
    """NumPy would read a negative index from the end; PyTorch refuses it, and so do we
    (the public functions check the full range; this guards a replayed `rg.jit` trace)."""
    if index.size and index.min() < 0:
        raise IndexError(f"index {index.min()} is out of bounds: indices must be in [0, size)")
    return index


def _grid(index, axis, lead):
    """The NumPy index that picks `x[..., i, index[i, j, k], k]` along `axis` of `index`'s
    dimensions (counted from the end), after `lead` leading dimensions left alone."""
    _nonnegative(index)
    nd = index.ndim
    ax = axis % nd
    items = [index if d == ax else
             _ns(index).arange(index.shape[d]).reshape((-1,) + (1,) * (nd - 1 - d))
             for d in range(nd)]
    return (slice(None),) * lead + tuple(items)


def _trimmed(src, shape):
    """`src` cut down to `shape` in its trailing dimensions (torch reads only that part)."""
    n = len(shape)
    if src.shape[src.ndim - n:] == tuple(shape):
        return src
    return src[(Ellipsis,) + tuple(slice(0, s) for s in shape)]


def _trim(m, v, shape):
    if v.shape[v.ndim - len(shape):] == tuple(shape):
        return v
    return m.getitem(v, idx=(Ellipsis,) + tuple(slice(0, s) for s in shape))


def _pad(m, v, shape):
    """Adjoint of `_trim`: zeros of `shape` with `v` in its leading corner."""
    if v.shape == tuple(shape):
        return v
    return m.scatter(v, idx=tuple(slice(0, s) for s in v.shape), shape=tuple(shape))


def _mask(m, cond, like):
    """A boolean condition as 0/1 numbers of `like`'s dtype."""
    return m.cast(cond, dtype=like.dtype)


# ----------------------------------------------------------------- gather / scatter

def _gather(x, index, *, axis):
    return x[_grid(index, axis, x.ndim - index.ndim)]


gather = defop(
    "gather", _gather,
    (lambda m, g, out, x, index, *, axis: m.scatter_add_dim(m.zeros_like(x), index, g,
                                                            axis=axis), None),
    (lambda m, t, out, x, index, *, axis: m.gather(t, index, axis=axis), None),
    reads=(1,), fresh=True)


def _scatter_add_dim(x, index, src, *, axis):
    out = x.copy()
    np.add.at(out, _grid(index, axis, out.ndim - index.ndim), _trimmed(src, index.shape))
    return out


def _lead_zeros(m, out, t, like):
    """Zeros shaped like `out`, with the leading batch dimensions `t` has beyond `like`."""
    z = m.zeros_like(out)
    lead = t.ndim - like.ndim
    return m.expand(z, shape=t.shape[:lead] + out.shape) if lead else z


def _gathered_cotangent(m, g, out, x, index, src, *, axis):
    return _pad(m, m.gather(g, index, axis=axis), src.shape)


scatter_add_dim = defop(
    "scatter_add_dim", _scatter_add_dim,
    (lambda m, g, out, x, index, src, *, axis: g, None, _gathered_cotangent),
    (lambda m, t, out, x, index, src, *, axis: t, None,
     lambda m, t, out, x, index, src, *, axis: m.scatter_add_dim(
         _lead_zeros(m, out, t, src), index, t, axis=axis)),
    reads=(1,), fresh=True)


def _scatter_dim(x, index, src, *, axis):
    out = x.copy()
    out[_grid(index, axis, out.ndim - index.ndim)] = _trimmed(src, index.shape)
    return out


scatter_dim = defop(
    "scatter_dim", _scatter_dim,
    (lambda m, g, out, x, index, src, *, axis: m.scatter_dim(g, index, m.zeros_like(src),
                                                             axis=axis),
     None, _gathered_cotangent),
    (lambda m, t, out, x, index, src, *, axis: m.scatter_dim(t, index, m.zeros_like(src),
                                                             axis=axis),
     None,
     lambda m, t, out, x, index, src, *, axis: m.scatter_dim(
         _lead_zeros(m, out, t, src), index, t, axis=axis)),
    reads=(1,), fresh=True)


# ----------------------------------------------------------------- scatter_reduce

_UFUNCS = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
           "amin": np.minimum, "max": np.maximum, "min": np.minimum}


def _identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    big = np.inf if dtype.kind in "fc" else (np.iinfo(dtype).max if dtype.kind in "iu"
                                             else True)
    small = -np.inf if dtype.kind in "fc" else (np.iinfo(dtype).min if dtype.kind in "iu"
                                                else False)
    return small if reduce in ("amax", "max") else big


def _scatter_reduce(x, index, src, *, axis, reduce, include_self=True):
    out = x.copy()
    where = _grid(index, axis, out.ndim - index.ndim)
    vals = _trimmed(src, index.shape)
    count = None
    if reduce == "mean" or not include_self:
        count = _ns(out).zeros(out.shape, dtype=np.int64)
        np.add.at(count, where, 1)
    if not include_self:
        out[count > 0] = _identity(reduce, out.dtype)
    _UFUNCS[reduce].at(out, where, vals)
    if reduce == "mean":
        n = np.maximum(count + (1 if include_self else 0), 1)
        # an integer mean stays in its dtype (floor division, as torch's)
        out = (out // n).astype(out.dtype) if out.dtype.kind in "iub" else \
            out / n.astype(out.dtype)
    return out


def _hits(m, x, index, src, axis):
    """How many source elements land on each position of `x` (as numbers)."""
    return m.scatter_add_dim(m.zeros_like(x), index, m.ones_like(src), axis=axis)


def _sr_factors(m, out, x, index, src, axis, reduce, include_self, reverse=False):
    """(d out / d x, d out / d src_trimmed up to the gather of a per-position factor):
    returns `fx` (shape of x) and a pair (per-position factor `p`, per-source factor `fs`)
    so that d out[pos(s)] / d src[s] = gather(p)[s] * fs[s]."""
    if reduce in ("max", "min"):  # PyTorch's forward takes these aliases, not its derivatives
        raise RuntimeError(f"Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', "
                           f"'amin' but got {reduce}.")
    hits = _hits(m, x, index, src, axis)
    free = _mask(m, hits == 0, x)            # positions no source reaches
    self_in = 1.0 if include_self else free  # where x takes part in the reduction
    srct = _trim(m, src, index.shape)
    if reduce == "sum":
        return self_in, (None, None)
    if reduce == "mean":
        n = hits + (1.0 if include_self else 0.0)
        d = 1.0 / (n + _mask(m, n == 0, x))
        return self_in * d, (d, None)
    if reduce in ("amax", "amin"):
        # ties share the derivative evenly; in PyTorch's backward (not its forward mode) an
        # excluded self (include_self=False) equal to the result still counts among the
        # ties, though it receives nothing: `reverse` follows that
        tie = _mask(m, x == out, x)
        es = _mask(m, srct == m.gather(out, index, axis=axis), srct)
        count = (tie if reverse else tie * self_in) + m.scatter_add_dim(
            m.zeros_like(x), index, es, axis=axis)
        inv = 1.0 / (count + _mask(m, count == 0, x))
        return tie * self_in * inv, (inv, es)
    # prod: each element's derivative is the product of the others at its position: out / a
    # for a nonzero a; for a zero, the product P of the nonzero participants when it is the
    # only zero, else P times the other zeros (0 in value, but its derivative in the other
    # zero is P where exactly two meet, which second derivatives need; three or more give 0
    # to second order). Written with differentiable pieces, so that double backward is exact.
    xp = x * self_in + (1.0 - self_in)       # a non-participating x counts as 1
    zx = _mask(m, xp == 0, x)
    zs = _mask(m, srct == 0, srct)
    nz = zx + m.scatter_add_dim(m.zeros_like(x), index, zs, axis=axis)
    xm = xp * (1.0 - zx) + zx                  # zeros replaced by 1, cut from the graph
    sm = srct * (1.0 - zs) + zs
    P = m.scatter_reduce(xm, index, sm, axis=axis, reduce="prod", include_self=True)
    two = _mask(m, nz == 2, x)
    p1 = P * _mask(m, nz == 1, x)
    p2 = P * two
    zsum = m.scatter_add_dim(xp * zx, index, srct * zs, axis=axis)  # the zeros, summed
    fx = ((1.0 - zx) * out / xm + zx * (p1 + p2 * (zsum - xp))) * self_in
    fs = (1.0 - zs) * m.gather(out, index, axis=axis) / sm + zs * (
        m.gather(p1 + p2 * zsum, index, axis=axis) - m.gather(p2, index, axis=axis) * srct)
    return fx, (None, fs)


def _sr_vjp_x(m, g, out, x, index, src, *, axis, reduce, include_self=True):
    fx, _ = _sr_factors(m, out, x, index, src, axis, reduce, include_self, True)
    return g * fx


def _sr_vjp_src(m, g, out, x, index, src, *, axis, reduce, include_self=True):
    _, (p, fs) = _sr_factors(m, out, x, index, src, axis, reduce, include_self, True)
    r = m.gather(g if p is None else g * p, index, axis=axis)
    if fs is not None:
        r = r * fs
    return _pad(m, r, src.shape)


def _sr_jvp_x(m, t, out, x, index, src, *, axis, reduce, include_self=True):
    fx, _ = _sr_factors(m, out, x, index, src, axis, reduce, include_self)
    return t * fx


def _sr_jvp_src(m, t, out, x, index, src, *, axis, reduce, include_self=True):
    _, (p, fs) = _sr_factors(m, out, x, index, src, axis, reduce, include_self)
    t = _trim(m, t, index.shape)
    if fs is not None:
        t = t * fs
    r = m.scatter_add_dim(_lead_zeros(m, out, t, src), index, t, axis=axis)
    return r if p is None else r * p


scatter_reduce = defop(
    "scatter_reduce", _scatter_reduce,
    (_sr_vjp_x, None, _sr_vjp_src), (_sr_jvp_x, None, _sr_jvp_src),
    save_out=True, fresh=True)


# ----------------------------------------------------------------- index_select / index_add

def _along(ndim, axis, index):
    return (slice(None),) * (ndim + axis) + (index,)


def _index_add(x, index, src, *, axis):
    out = x.copy()
    where = _along(out.ndim, axis, _nonnegative(index))
    if (out.ndim == 2 and out.ndim + axis == 0 and index.ndim == 1
            and out.dtype in (np.float32, np.float64)  # (the kernel's; float16 is NumPy's)
            and index.dtype.kind in "iu" and out.__class__ is np.ndarray
            and src.__class__ is np.ndarray and src.shape == (len(index), out.shape[1])
            and src.dtype == out.dtype):
        K = _kindex  # rows added in one pass, in index order
        if kernels.enabled(src.size, K.index_add_rows) and (
                not index.size or index.max() < len(out)):
            K.index_add_rows(out, index, src)
            return out
    if index.ndim != 1 or len(index) < 2 or out.dtype.kind not in "fciu":
        np.add.at(out, where, src)
        return out
    # np.add.at is slow (an embedding's backward: ~0.6 ms for 1024 rows of 64). Sorting the
    # index (stably, so each row's terms keep their order) makes every repeated index a
    # run of rows that np.add.reduceat sums in one call; the runs' sums then land on
    # distinct rows, where a plain fancy += is exact.
    ax = out.ndim + axis
    src = np.broadcast_to(src, out.shape[:ax] + index.shape + out.shape[ax + 1:])
    order = np.argsort(index, kind="stable")
    ordered = index[order]
    starts = np.flatnonzero(ordered[1:] != ordered[:-1])
    starts += 1
    starts = np.concatenate((_ns(index).zeros(1, dtype=starts.dtype), starts))
    sums = np.add.reduceat(np.take(src, order, axis=ax), starts, axis=ax)
    out[_along(out.ndim, axis, ordered[starts])] += sums
    return out


index_select = defop(
    "index_select", lambda x, index, *, axis: np.take(x, _nonnegative(index), axis=axis),
    (lambda m, g, out, x, index, *, axis: m.index_add(m.zeros_like(x), index, g, axis=axis),
     None),
    (lambda m, t, out, x, index, *, axis: m.index_select(t, index, axis=axis), None),
    reads=(1,), fresh=True)
index_add = defop(
    "index_add", _index_add,
    (lambda m, g, out, x, index, src, *, axis: g, None,
     lambda m, g, out, x, index, src, *, axis: m.index_select(g, index, axis=axis)),
    (lambda m, t, out, x, index, src, *, axis: t, None,
     lambda m, t, out, x, index, src, *, axis: m.index_add(
         _lead_zeros(m, out, t, src), index, t, axis=axis)),
    reads=(1,), fresh=True)


# ----------------------------------------------------------------- diagonals

def _diag_positions(n1, n2, offset, xp=np):
    """Row and column indices of the `offset` diagonal of an n1 x n2 matrix."""
    length = max(0, min(n1 + min(offset, 0), n2 - max(offset, 0)))
    i = xp.arange(length)
    return i + max(-offset, 0), i + max(offset, 0)


def _diag_scatter(v, *, offset, axis1, axis2, shape):
    """Zeros of `shape` with `v`'s last dimension on the `offset` diagonal of axes
    (axis1, axis2): the adjoint of `diagonal`."""
    lead = v.ndim - (len(shape) - 1)
    shape = v.shape[:lead] + tuple(shape)
    xp = _ns(v)
    z = xp.zeros(shape, dtype=v.dtype)
    nd = len(shape)
    if (axis1 % nd, axis2 % nd) == (nd - 2, nd - 1):  # the last two axes: a strided flat view
        n1, n2 = shape[-2:]
        length = v.shape[-1]
        if length:
            start = offset if offset >= 0 else -offset * n2
            flat = z.reshape(shape[:-2] + (n1 * n2,))
            flat[..., start:start + (length - 1) * (n2 + 1) + 1:n2 + 1] = v
        return z
    rows, cols = _diag_positions(shape[axis1], shape[axis2], offset, xp)
    np.moveaxis(z, (axis1, axis2), (-2, -1))[..., rows, cols] = v
    return z


def _diagonal(x, *, offset, axis1, axis2):
    d = np.diagonal(x, offset, axis1, axis2)
    if d.__class__ is np.ndarray and x.flags.writeable:
        d.flags.writeable = True  # a view to write through, as torch's (NumPy's is read-only)
    return d


diagonal = defop(
    "diagonal", _diagonal,
    (lambda m, g, out, x, *, offset, axis1, axis2: m.diag_scatter(
        g, offset=offset, axis1=axis1, axis2=axis2, shape=x.shape),),
    (lambda m, t, out, x, *, offset, axis1, axis2: m.diagonal(
        t, offset=offset, axis1=axis1, axis2=axis2),),
    reads=(), view=True)
diag_scatter = defop(
    "diag_scatter", _diag_scatter,
    (lambda m, g, out, v, *, offset, axis1, axis2, shape: m.diagonal(
        g, offset=offset, axis1=axis1, axis2=axis2),),
    (lambda m, t, out, v, *, offset, axis1, axis2, shape: m.diag_scatter(
        t, offset=offset, axis1=axis1, axis2=axis2, shape=shape),),
    reads=(), fresh=True)


# ----------------------------------------------------------------- integer results

def _nonzero(x):
    return np.stack(np.nonzero(x), axis=-1) if x.ndim else _ns(x).zeros(
        (int(bool(x)), 0), dtype=np.int64)


nonzero = defop("nonzero", lambda x: _nonzero(x).astype(np.int64))
