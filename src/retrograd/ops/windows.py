"""Sliding windows for convolution and pooling: im2col (`unfold`) and its adjoint (`fold`).

An input (N, C, *S) with 1, 2 or 3 spatial dimensions has windows
(N, C, *kernel, *O): a strided view of the (padded) input. Convolution is
`unfold` then a matrix product, transposed convolution a matrix product then
`phase_fold` (below); average pooling is `unfold` then a sum. Both ops are linear,
so each is the other's vjp. Unit-stride convolution of host float arrays is one op of its
own (`conv_unit`, `conv_unit_bias`): a sample's columns at a time, so they stay in cache;
with compiled kernels on (`retrograd.kernels.conv`) the columns are exact (no junk
positions) and made, and folded back, by one compiled loop each. The four data moves of
transposed convolution's phase path (`phase_in`, `phase_fold` and their adjoints) are one
compiled pass each too (`retrograd.kernels.transpose`), on host float arrays; with those
kernels on, the whole phase path is one op (`conv_t_unit`, `conv_t_unit_bias`) taking a
block of samples at a time, forward and backward.
"""

from __future__ import annotations

import itertools
import math
import weakref

import numpy as np

from .. import kernels as _kernels
from .. import threads as _threads
from ..devices import as_strided
from ..devices import namespace_of as _ns
from ..kernels import conv as _kconv
from ..kernels import transpose as _ktr
from ..primitive import NUMPY, defop
from . import winograd as _wino


def out_size(size: int, k: int, s: int, p: int, d: int) -> int:
    """Number of windows along one dimension (floor mode)."""
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _windows(x, kernel, stride, padding, dilation, pad_value):
    nd = len(kernel)
    if any(padding):
        x = np.pad(x, ((0, 0),) * (x.ndim - nd) + tuple((p, p) for p in padding),
                   constant_values=pad_value)
    lead = x.shape[:-nd]
    spatial = x.shape[-nd:]
    outs = tuple((n - d * (k - 1) - 1) // s + 1
                 for n, k, s, d in zip(spatial, kernel, stride, dilation))
    st = x.strides
    lst, sst = st[:-nd], st[-nd:]
    return as_strided(
        x, lead + tuple(kernel) + outs,
        lst + tuple(a * d for a, d in zip(sst, dilation))
        + tuple(a * s for a, s in zip(sst, stride)), writeable=False)


def _unfold(x, *, kernel, stride, padding, dilation, pad_value=0.0):
    """Sliding windows (N, C, *kernel, *O) of an (N, C, *S) array (im2col, as a view)."""
    return _windows(x, kernel, stride, padding, dilation, pad_value)


def _fold(cols, *, shape, kernel, stride, padding, dilation, pad_value=0.0):
    """Adjoint of unfold: add each window back onto an (N, C, *S) array of `shape`."""
    nd = len(kernel)
    outs = cols.shape[-nd:]
    spatial = shape[-nd:]
    z = _ns(cols).zeros(tuple(shape[:-nd]) + tuple(n + 2 * p for n, p in zip(spatial, padding)),
                        dtype=cols.dtype)
    lead = (slice(None),) * (len(shape) - nd)

    def add(a, b):  # samples a..b (a host array's batch is split over the intra-op threads)
        zb, cb = (z[a:b], cols[a:b]) if lead else (z, cols)
        if nd == 2:  # the common case, unrolled: a loop over kernel offsets, never pixels
            (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, stride, dilation, outs
            for i in range(kh):
                for j in range(kw):
                    zb[..., i * dh:i * dh + sh * (oh - 1) + 1:sh,
                       j * dw:j * dw + sw * (ow - 1) + 1:sw] += cb[..., i, j, :, :]
            return
        for offs in itertools.product(*(range(k) for k in kernel)):
            idx = tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                        for o, d, s, n in zip(offs, dilation, stride, outs))
            zb[lead + idx] += cb[lead + offs]

    n = shape[0] if lead else 1
    if lead and z.__class__ is np.ndarray:
        _threads.run(add, _threads.chunks(n, 2.0 * cols.size))
    else:
        add(0, n)
    if any(padding):
        z = z[lead + tuple(slice(p, p + n) for p, n in zip(padding, spatial))]
    return z


def _unfold_jvp(m, t, out, x, *, pad_value=0.0, **k):
    # the padding holds a constant (-inf for max pooling): its tangent is 0
    lead = t.ndim - x.ndim
    if not lead:
        return m.unfold(t, pad_value=0.0, **k)
    batch = t.shape[:lead]
    t = m.reshape(t, shape=(int(np.prod(batch)) * x.shape[0],) + x.shape[1:])
    return m.reshape(m.unfold(t, pad_value=0.0, **k), shape=batch + out.shape)


def _fold_jvp(m, t, out, cols, *, shape, **k):
    lead = t.ndim - cols.ndim
    if not lead:
        return m.fold(t, shape=shape, **k)
    batch = t.shape[:lead]
    n = int(np.prod(batch)) * shape[0]
    r = m.fold(m.reshape(t, shape=(n,) + cols.shape[1:]), shape=(n,) + tuple(shape[1:]), **k)
    return m.reshape(r, shape=batch + tuple(shape))


unfold = defop(
    "unfold", _unfold,
    (lambda m, g, out, x, **k: m.fold(g, shape=x.shape, **k),),
    (_unfold_jvp,), reads=())
fold = defop(
    "fold", _fold,
    (lambda m, g, out, x, *, shape, pad_value=0.0, **k: m.unfold(g, **k),),  # pad: zeros
    (_fold_jvp,), reads=())


# ---------------------------------------------------------------- Tensor.unfold

def _unfold_view(x, *, axis, size, step):
    """Tensor.unfold's windows as torch makes them, a strided view of x: `size` entries
    `step` apart along `axis` (negative, so leading batch dimensions pass through), the
    windows in that axis's place and their entries along a new last axis."""
    ax = axis % x.ndim
    count = (x.shape[ax] - size) // step + 1
    st = x.strides
    return as_strided(x, x.shape[:ax] + (count,) + x.shape[ax + 1:] + (size,),
                      st[:ax] + (st[ax] * step,) + st[ax + 1:] + (st[ax],))


def _unfold_view_vjp(m, g, out, x, *, axis, size, step):
    """Each window's gradient added back onto its entries: `fold` in one dimension, with a
    leading 1 so that fold always has a batch dimension."""
    nd = x.ndim
    ax = axis % nd
    rest = tuple(i for i in range(nd) if i != ax)
    cols = m.permute(g, axes=rest + (nd, ax))  # (..., size, count)
    cols = m.reshape(cols, shape=(1,) + cols.shape)
    shape = (1,) + tuple(x.shape[i] for i in rest) + (x.shape[ax],)
    z = m.fold(cols, shape=shape, kernel=(size,), stride=(step,), padding=(0,), dilation=(1,))
    z = m.reshape(z, shape=shape[1:])
    back = list(range(nd - 1))
    back.insert(ax, nd - 1)
    return m.permute(z, axes=tuple(back))


unfold_view = defop(
    "unfold_view", _unfold_view,
    (_unfold_view_vjp,),
    (lambda m, t, out, x, **k: m.unfold_view(t, **k),), reads=(), view=True)


# ---------------------------------------------------------------- Tensor.as_strided

def strided_positions(size, stride, offset, xp=np):
    """The row-major positions (within a tensor's elements) that `as_strided(size, stride,
    offset)` reads, shaped `size`."""
    pos = xp.full(tuple(size), offset, dtype=np.int64)
    for k, (n, st) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        pos = pos + (xp.arange(n, dtype=np.int64) * st).reshape(shape)
    return pos


def _as_strided_view(x, *, size, stride, offset):
    """The elements at `offset + sum(i_k * stride_k)` of x's row-major order, as a strided
    view of x where x is row-major (of a row-major copy otherwise: the same values)."""
    flat = _ns(x).ascontiguousarray(x).reshape(-1)
    it = flat.itemsize
    return as_strided(flat[offset:], tuple(size), tuple(st * it for st in stride))


def _as_strided_add(v, *, size, stride, offset, shape):
    """Zeros of `shape` with v added at the positions `as_strided` reads (summed where they
    repeat): the adjoint of `as_strided_view`."""
    xp = _ns(v)
    flat = xp.zeros(math.prod(shape), dtype=v.dtype)
    xp.add.at(flat, strided_positions(size, stride, offset, xp).reshape(-1), v.reshape(-1))
    return flat.reshape(shape)


def _batched_strides(lead: tuple, size, stride, shape) -> dict:
    """`as_strided`'s attributes for a batch of tensors of `shape` stacked on leading dims
    `lead` (a batch of tangents or cotangents): each batch element's window in its own
    block of the stacked elements."""
    n = math.prod(shape)
    outer = tuple(math.prod(lead[k + 1:]) * n for k in range(len(lead)))
    return dict(size=lead + tuple(size), stride=outer + tuple(stride))


def _as_strided_vjp(m, g, out, x, *, size, stride, offset):
    lead = g.shape[:g.ndim - len(size)]
    k = _batched_strides(lead, size, stride, x.shape) if lead else dict(size=size,
                                                                         stride=stride)
    return m.as_strided_add(g, offset=offset, shape=lead + tuple(x.shape), **k)


def _as_strided_jvp(m, t, out, x, *, size, stride, offset):
    lead = t.shape[:t.ndim - x.ndim]
    k = _batched_strides(lead, size, stride, x.shape) if lead else dict(size=size,
                                                                         stride=stride)
    return m.as_strided_view(t, offset=offset, **k)


def _as_strided_add_vjp(m, g, out, v, *, size, stride, offset, shape):
    lead = g.shape[:g.ndim - len(shape)]
    k = _batched_strides(lead, size, stride, shape) if lead else dict(size=size,
                                                                      stride=stride)
    return m.as_strided_view(g, offset=offset, **k)


def _as_strided_add_jvp(m, t, out, v, *, size, stride, offset, shape):
    lead = t.shape[:t.ndim - len(size)]
    k = _batched_strides(lead, size, stride, shape) if lead else dict(size=size,
                                                                      stride=stride)
    return m.as_strided_add(t, offset=offset, shape=lead + tuple(shape), **k)


as_strided_view = defop("as_strided_view", _as_strided_view, (_as_strided_vjp,),
                        (_as_strided_jvp,), reads=(), view=True)
as_strided_add = defop("as_strided_add", _as_strided_add, (_as_strided_add_vjp,),
                       (_as_strided_add_jvp,), reads=(), fresh=True)


# ---------------------------------------------------------------- unit-stride columns

def _geometry(shape, kernel, dilation, padding):
    """For unit stride: padded sizes, the chunk of flat padded positions each column block
    covers, the flat shift of every kernel offset, and the tail a row needs past the end."""
    nd = len(kernel)
    padded = tuple(n + 2 * p for n, p in zip(shape[-nd:], padding))
    inner = [1] * nd
    for i in reversed(range(nd - 1)):
        inner[i] = inner[i + 1] * padded[i + 1]
    first = padded[0] - dilation[0] * (kernel[0] - 1)
    chunk = first * inner[0]
    shifts = [sum(o * d * s for o, d, s in zip(off, dilation, inner))
              for off in itertools.product(*(range(k) for k in kernel))]
    tail = sum(d * (k - 1) * s for k, d, s in zip(kernel[1:], dilation[1:], inner[1:]))
    return padded, chunk, shifts, tail


def _conv_cols(x, *, kernel, dilation, padding):
    """Convolution columns for unit stride, (C*K, N*chunk): row (c, offset), column (n, flat
    padded position). Positions past an output row's end are junk the caller drops; every
    offset is one contiguous copy, so this is much cheaper than a strided im2col."""
    n, c = x.shape[:2]
    padded, chunk, shifts, tail = _geometry(x.shape, kernel, dilation, padding)
    size = math.prod(padded)
    buf = _ns(x).zeros((c, n, size + tail), dtype=x.dtype)
    inside = buf[:, :, :size].reshape((c, n) + padded)
    inside[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in
                                              zip(padding, x.shape[2:]))] = x.swapaxes(0, 1)
    cols = _ns(x).empty((c, len(shifts), n, chunk), dtype=x.dtype)
    for j, s in enumerate(shifts):
        cols[:, j] = buf[:, :, s:s + chunk]
    if x.dtype.kind in "fc" and not _ns(x).isfinite(x.sum()):
        # a junk column reads x past its row's end, and meets a zero gradient in the
        # weight's vjp: an inf there would make 0 * inf = nan where the true sum has none
        _zero_junk(cols, padded, kernel, dilation)
    return cols.reshape(c * len(shifts), n * chunk)


def _zero_junk(cols, padded, kernel, dilation) -> None:
    """Zero, in place, the junk columns of conv_cols' (..., chunk) layout: the positions
    past each output row's end along every dimension but the first."""
    inner = math.prod(padded[1:])
    rows = cols.reshape(cols.shape[:-1] + (cols.shape[-1] // inner,) + tuple(padded[1:]))
    nd = len(kernel)
    for i in range(1, nd):
        keep = padded[i] - dilation[i] * (kernel[i] - 1)
        rows[(Ellipsis, slice(keep, None)) + (slice(None),) * (nd - 1 - i)] = 0


def _conv_cols_t(cols, *, shape, kernel, dilation, padding):
    """Adjoint of conv_cols: each column added back at its offset; (N, C, *S) of `shape`.
    Junk columns (past a row's end) are zero in a gradient, unless an inf or nan made them
    nan (a weight's inf times zero): a non-finite result is made again without them."""
    out = _fold_cols(cols, shape, kernel, dilation, padding)
    if len(kernel) > 1 and out.dtype.kind in "fc" and not _ns(out).isfinite(out.sum()):
        cols = cols.copy()
        _zero_junk(cols, _geometry(shape, kernel, dilation, padding)[0], kernel, dilation)
        out = _fold_cols(cols, shape, kernel, dilation, padding)
    return out


def _fold_cols(cols, shape, kernel, dilation, padding):
    n, c = shape[:2]
    padded, chunk, shifts, tail = _geometry(shape, kernel, dilation, padding)
    size = math.prod(padded)
    cols = cols.reshape(c, len(shifts), n, chunk)
    buf = _ns(cols).empty((c, n, size + tail), dtype=cols.dtype)
    buf[:, :, :chunk] = cols[:, 0]  # offset 0 is shift 0: written, not added onto zeros
    buf[:, :, chunk:] = 0
    for j, s in enumerate(shifts[1:], 1):
        buf[:, :, s:s + chunk] += cols[:, j]
    inside = buf[:, :, :size].reshape((c, n) + padded)
    inside = inside[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in
                                                       zip(padding, shape[2:]))]
    return inside.swapaxes(0, 1).copy()


def _cols_jvp(m, t, out, x, **k):
    lead = t.ndim - x.ndim
    if not lead:
        return m.conv_cols(t, **k)
    b = int(np.prod(t.shape[:lead]))
    r = m.conv_cols(m.reshape(t, shape=(b * x.shape[0],) + x.shape[1:]), **k)
    r = m.reshape(r, shape=(out.shape[0], b, out.shape[1]))
    return m.reshape(m.permute(r, axes=(1, 0, 2)), shape=t.shape[:lead] + out.shape)


def _cols_t_jvp(m, t, out, cols, *, shape, **k):
    lead = t.ndim - cols.ndim
    if not lead:
        return m.conv_cols_t(t, shape=shape, **k)
    batch = t.shape[:lead]
    b = int(np.prod(batch))
    r = m.reshape(t, shape=(b,) + cols.shape)
    r = m.reshape(m.permute(r, axes=(1, 0, 2)), shape=(cols.shape[0], b * cols.shape[1]))
    r = m.conv_cols_t(r, shape=(b * shape[0],) + tuple(shape[1:]), **k)
    return m.reshape(r, shape=batch + tuple(shape))


conv_cols = defop(
    "conv_cols", _conv_cols,
    (lambda m, g, out, x, **k: m.conv_cols_t(g, shape=x.shape, **k),),
    (_cols_jvp,), reads=(), fresh=True)
conv_cols_t = defop(
    "conv_cols_t", _conv_cols_t,
    (lambda m, g, out, cols, *, shape, **k: m.conv_cols(g, **k),),
    (_cols_t_jvp,), reads=(), fresh=True)


# ---------------------------------------------------------------- unit-stride conv by samples

_UNIT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def unit_fast(x, w, b=None) -> bool:
    """Host float32/float64 arrays of one dtype: the per-sample path applies."""
    return (x.__class__ is np.ndarray and w.__class__ is np.ndarray
            and x.dtype in _UNIT_DTYPES and w.dtype == x.dtype
            and (b is None or (b.__class__ is np.ndarray and b.dtype == x.dtype)))


def _unit_geo(xshape, wshape, dilation, padding):
    """(kernel, padded, chunk, shifts, tail, outs) of a unit-stride convolution."""
    kernel = tuple(wshape[2:])
    padded, chunk, shifts, tail = _geometry(xshape, kernel, dilation, padding)
    outs = tuple(a - d * (k - 1) for a, d, k in zip(padded, dilation, kernel))
    return kernel, padded, chunk, shifts, tail, outs


class _SampleCols:
    """One sample's columns (C, K, chunk), made in reused buffers: the sample placed in a
    zero-padded flat buffer, then one contiguous copy per kernel offset. About the size of
    the cache, where the whole batch's column matrix is not."""

    __slots__ = ("buf", "inside", "cols", "shifts", "chunk")

    def __init__(self, c, dtype, padded, chunk, shifts, tail, padding, spatial):
        size = math.prod(padded)
        self.buf = np.zeros((c, size + tail), dtype=dtype)
        self.inside = self.buf[:, :size].reshape((c,) + padded)[
            (slice(None),) + tuple(slice(p, p + s) for p, s in zip(padding, spatial))]
        self.cols = np.empty((c, len(shifts), chunk), dtype=dtype)
        self.shifts, self.chunk = shifts, chunk

    def fill(self, xi):
        self.inside[...] = xi
        buf, cols, chunk = self.buf, self.cols, self.chunk
        for j, s in enumerate(self.shifts):
            cols[:, j] = buf[:, s:s + chunk]
        return cols


def _unit_work(x, w, groups) -> float:
    """Multiply-adds of the forward, for `threads.chunks`."""
    return 2.0 * x.size * w.size / x.shape[1]


def _kernel_geo(x, w, dilation, padding):
    """The compiled kernels' view of a convolution: three spatial dimensions (leading
    sizes 1 for conv1d and conv2d): (shape (C, D, H, W), kernel, padding, dilation,
    outs, output positions L, kernel offsets K)."""
    nd = x.ndim - 2
    lead = 3 - nd
    shape = (x.shape[1],) + (1,) * lead + tuple(x.shape[2:])
    ks = (1,) * lead + tuple(w.shape[2:])
    pad = (0,) * lead + tuple(padding)
    dil = (1,) * lead + tuple(dilation)
    outs = tuple(a + 2 * p - d * (k - 1) for a, p, d, k in zip(x.shape[2:], padding, dilation,
                                                             w.shape[2:]))
    return shape, ks, pad, dil, outs, math.prod(outs), math.prod(ks)


def _conv_unit_compiled(x, w, b, dilation, padding, groups):
    """_conv_unit's host path with compiled columns (`kernels.conv`): a sample's exact
    columns, then one product per group written straight into its output. With one group
    the bias is the product's last column, against a row of ones under the columns (no
    pass of its own)."""
    shape, ks, pad, dil, outs, L, kk = _kernel_geo(x, w, dilation, padding)
    n, c = x.shape[:2]
    o = w.shape[0]
    xf = np.ascontiguousarray(x).reshape(-1)
    step = math.prod(x.shape[1:])
    ones = b is not None and groups == 1
    w3 = np.ascontiguousarray(w).reshape(groups, o // groups, -1)
    if ones:
        w3 = np.concatenate([w3, b.reshape(1, o, 1)], axis=2)
    y = np.empty((n, o) + outs, dtype=x.dtype)
    y3 = y.reshape(n, groups, o // groups, L)
    bb = None if b is None or ones else b.reshape(groups, o // groups, 1)

    def piece(a, e):
        cols = np.empty((c * kk + ones) * L, dtype=x.dtype)
        cols[c * kk * L:] = 1
        c3 = cols.reshape(groups, -1, L)
        for i in range(a, e):
            _kconv.im2col(xf, i * step, shape, ks, pad, dil, cols)
            np.matmul(w3, c3, out=y3[i])
            if bb is not None:
                y3[i] += bb

    _threads.run(piece, _threads.chunks(n, _unit_work(x, w, groups)))
    return y


def unit_compiled(x, w, b=None) -> bool:
    """Whether the per-sample path runs with the compiled column kernels."""
    return unit_fast(x, w, b) and _kernels.enabled(x.size)


def _conv_unit(x, w, b=None, *, dilation, padding, groups):
    """Unit-stride convolution (N, C, *S) * (O, C/groups, *k) [+ bias] -> (N, O, *outs),
    symmetric `padding`. On host float arrays one sample at a time (its columns stay in
    cache; samples split over the intra-op threads): the columns, one matrix product per
    group, the junk positions past each output row dropped as the bias is added. With
    compiled kernels on: `_conv_unit_compiled`."""
    kernel, padded, chunk, shifts, tail, outs = _unit_geo(x.shape, w.shape, dilation, padding)
    n, c = x.shape[:2]
    o = w.shape[0]
    nd = len(kernel)
    w3 = w.reshape(groups, o // groups, -1)
    crop = (slice(None),) * 2 + tuple(slice(0, a) for a in outs[1:])
    if not unit_fast(x, w, b):
        cols = _conv_cols(x, kernel=kernel, dilation=dilation, padding=padding)
        y = (w3 @ cols.reshape(groups, -1, cols.shape[1])).reshape((o, n, outs[0]) + padded[1:])
        y = y[(slice(None),) + crop].swapaxes(0, 1)
        return (y + b.reshape((o,) + (1,) * nd)) if b is not None else y.copy()
    if unit_compiled(x, w, b):
        if _wino.fits(x, w, b, dilation, padding, groups):
            return _conv_wino(x, w, b, dilation, padding, groups)[0]
        return _conv_unit_compiled(x, w, b, dilation, padding, groups)
    w3 = np.ascontiguousarray(w3)
    y = np.empty((n, o) + outs, dtype=x.dtype)
    bb = None if b is None else b.reshape((o,) + (1,) * nd)

    def piece(a, e):
        sc = _SampleCols(c, x.dtype, padded, chunk, shifts, tail, padding, x.shape[2:])
        c3 = sc.cols.reshape(groups, -1, chunk)
        res = np.empty((groups, o // groups, chunk), dtype=x.dtype)
        real = res.reshape((o, outs[0]) + padded[1:])[crop]
        for i in range(a, e):
            sc.fill(x[i])
            np.matmul(w3, c3, out=res)
            if bb is None:
                y[i] = real
            else:
                np.add(real, bb, out=y[i])

    _threads.run(piece, _threads.chunks(n, _unit_work(x, w, groups)))
    return y


def _conv_wino(x, w, b, dilation, padding, groups):
    """(y, redo): `ops.winograd`'s forward, the samples it could not give exactly (redo)
    computed again on the exact columns."""
    y, redo = _wino.forward(x, w, b, padding)
    if redo:
        y[redo] = _conv_unit_compiled(x[redo], w, b, dilation, padding, groups)
    return y, redo


def _conv_unit_saving(x, w, b=None, **k):
    # the stash marks the compiled path (and Winograd's, with the samples it redid), so
    # the backward takes the forward's path
    if not unit_fast(x, w, b):
        return _conv_unit(x, w, b, **k), None
    if not unit_compiled(x, w, b):
        return _conv_unit(x, w, b, **k), {}
    if _wino.fits(x, w, b, k["dilation"], k["padding"], k["groups"]):
        y, redo = _conv_wino(x, w, b, **k)
        return y, {"kernel": True, "wino": redo}
    return _conv_unit(x, w, b, **k), {"kernel": True}


def _unit_groups(n) -> list:
    """The samples of a batch of n as at most _T_GROUPS contiguous (start, stop) groups:
    each group sums its samples' weight and bias gradients, the groups' sums are added in
    order, and threads take whole groups, so the sums do not depend on the thread count."""
    k = max(1, min(n, _T_GROUPS))
    return [(j * n // k, (j + 1) * n // k) for j in range(k)]


def _unit_grads_compiled(g, x, w, dilation, padding, groups, want_x, want_w):
    """_unit_grads with compiled columns: per sample, the exact columns made again for
    dweight, the cotangent's sample as the products' operand, dx by col2im. dbias is
    summed per sample while it is in cache: with one group, as dweight's last column (a
    row of ones under the columns), else by a product with ones. dweight and dbias are
    summed per group of samples (`_unit_groups`), then over the groups in order."""
    shape, ks, pad, dil, outs, L, kk = _kernel_geo(x, w, dilation, padding)
    n, c = x.shape[:2]
    o = w.shape[0]
    og = o // groups
    dt = x.dtype
    step = math.prod(x.shape[1:])
    xf = np.ascontiguousarray(x).reshape(-1) if want_w else None
    g4 = np.ascontiguousarray(g).reshape(n, groups, og, L)
    w3 = w.reshape(groups, og, -1)
    wt = w3.transpose(0, 2, 1)  # a transposed view: BLAS reads it as it is
    dx = np.empty(x.shape, dtype=dt) if want_x else None
    dxf = None if dx is None else dx.reshape(-1)
    ones = want_w and groups == 1  # the bias's sum rides on dweight's product
    vec = None if ones else np.ones(L, dtype=dt)
    ck = c * kk // groups
    sets = _unit_groups(n)

    def piece(a, e):
        cols = np.empty((c * kk + ones) * L, dtype=dt)
        cols[c * kk * L:] = 1
        c3 = cols.reshape(groups, -1, L)
        tb = np.empty((groups, og), dtype=dt)
        tw = np.empty((groups, ck + ones, og), dtype=dt) if want_w else None
        return [group(lo, hi, cols, c3, tb, tw) for lo, hi in sets[a:e]]

    def group(lo, hi, cols, c3, tb, tw):
        d3 = c3[:, :ck]  # dx's columns: not the row of ones
        db = np.zeros((groups, og), dtype=dt)
        dw = np.zeros((groups, ck + ones, og), dtype=dt) if want_w else None  # transposed
        for i in range(lo, hi):
            if not ones:
                np.matmul(g4[i], vec, out=tb)
                db += tb
            if want_w:
                _kconv.im2col(xf, i * step, shape, ks, pad, dil, cols)
                # columns @ g^T: 8% faster than g @ columns^T with OpenBLAS's sgemm here
                np.matmul(c3, g4[i].transpose(0, 2, 1), out=tw)
                dw += tw
            if want_x:
                np.matmul(wt, g4[i], out=d3)
                _kconv.col2im(cols, i * step, shape, ks, pad, dil, dxf)
        if ones:
            return dw[:, :ck], dw[:, ck]
        return dw, db

    work = _unit_work(x, w, groups) * (want_x + want_w)
    parts = list(itertools.chain.from_iterable(
        _threads.run(piece, _threads.chunks(len(sets), work))))
    dw, db = parts[0]
    for pw, pb in parts[1:]:  # in the groups' order, however the threads took them
        db += pb
        if want_w:
            dw += pw
    return dx, None if dw is None else dw.transpose(0, 2, 1).reshape(w.shape), db.reshape(o)


def _wino_grads(g, x, w, dilation, padding, groups, want_x, want_w, skip):
    """_unit_grads after a Winograd forward (`ops.winograd`); the samples it cannot give
    exactly (those the forward redid, and any meeting a value that is not finite) on the
    exact columns' path."""
    dx, dw, db, redo = _wino.grads(g, x, w, padding, want_x, want_w, _unit_groups(x.shape[0]),
                                   skip)
    if redo:
        rdx, rdw, rdb = _unit_grads_compiled(g[redo], x[redo], w, dilation, padding, groups,
                                             want_x, want_w)
        if want_x:
            dx[redo] = rdx
        db += rdb
        if want_w:
            dw += rdw
    return dx, None if dw is None else dw.reshape(w.shape), db.reshape(w.shape[0])


def _unit_grads(g, x, w, *, dilation, padding, groups, want_x, want_w, compiled=False,
                wino=None):
    """(dx, dweight, dbias) of the per-sample path, each sample's columns made again: dx
    only if `want_x`, dweight only if `want_w`. Junk columns meet zero cotangents: where x
    (for dweight) or the weight (for dx) is not finite they are zeroed, so that 0 * inf
    puts no nan into a gradient where the true sum (and PyTorch's) has none. `compiled`:
    the forward took the compiled columns (its stash says so), the backward does too;
    `wino`: the forward took Winograd's path, redoing these samples exactly."""
    if wino is not None:
        return _wino_grads(g, x, w, dilation, padding, groups, want_x, want_w, wino)
    if compiled:
        return _unit_grads_compiled(g, x, w, dilation, padding, groups, want_x, want_w)
    kernel, padded, chunk, shifts, tail, outs = _unit_geo(x.shape, w.shape, dilation, padding)
    n, c = x.shape[:2]
    o = w.shape[0]
    og = o // groups
    nd = len(kernel)
    dt = x.dtype
    size = math.prod(padded)
    junk = outs[1:] != padded[1:]
    x_bad = want_w and junk and not _finite(x)
    w_bad = want_x and junk and not _finite(w)
    w3 = w.reshape(groups, og, -1)
    wt = w3.transpose(0, 2, 1)  # a transposed view: BLAS reads it as it is
    dx = np.empty(x.shape, dtype=dt) if want_x else None
    crop = (slice(None),) * 2 + tuple(slice(0, a) for a in outs[1:])
    interior = (slice(None),) + tuple(slice(p, p + s) for p, s in zip(padding, x.shape[2:]))

    def piece(a, e):
        gz = np.zeros((o, outs[0]) + padded[1:], dtype=dt)  # junk positions stay zero
        greal = gz[crop]
        g3 = gz.reshape(groups, og, chunk)
        dw = None
        if want_w:
            sc = _SampleCols(c, dt, padded, chunk, shifts, tail, padding, x.shape[2:])
            ct = sc.cols.reshape(groups, -1, chunk).transpose(0, 2, 1)
            dw = np.zeros(w3.shape, dtype=dt)
            tw = np.empty(w3.shape, dtype=dt)
        if want_x:
            dcols = np.empty((groups, wt.shape[1], chunk), dtype=dt)
            d3 = dcols.reshape(c, len(shifts), chunk)
            dbuf = np.empty((c, size + tail), dtype=dt)
            dinside = dbuf[:, :size].reshape((c,) + padded)[interior]
        for i in range(a, e):
            greal[...] = g[i]
            if want_w:
                cols = sc.fill(x[i])
                if x_bad:
                    _zero_junk(cols, padded, kernel, dilation)
                np.matmul(g3, ct, out=tw)
                dw += tw
            if want_x:
                np.matmul(wt, g3, out=dcols)
                if w_bad:
                    _zero_junk(d3, padded, kernel, dilation)
                dbuf[:, :chunk] = d3[:, 0]  # offset 0 is shift 0: written, not added
                dbuf[:, chunk:] = 0
                for j, s in enumerate(shifts[1:], 1):
                    dbuf[:, s:s + chunk] += d3[:, j]
                dx[i] = dinside
        return dw

    work = _unit_work(x, w, groups) * (want_x + want_w)
    sets = _unit_groups(n)  # dweight summed per group, the groups in order (as compiled)
    parts = list(itertools.chain.from_iterable(_threads.run(
        lambda a, e: [piece(lo, hi) for lo, hi in sets[a:e]],
        _threads.chunks(len(sets), work))))
    dw = None
    if want_w:
        dw = parts[0]
        for p in parts[1:]:
            dw += p
        dw = dw.reshape(w.shape)
    db = g.sum(axis=(0,) + tuple(range(2, 2 + nd)))
    return dx, dw, db


def _g_wide(m, g, x, w, dilation, padding, groups):
    """The cotangent (N, O, *outs) as (G, O/G, N*chunk), zeros at the junk positions."""
    kernel, padded, chunk, shifts, tail, outs = _unit_geo(x.shape, w.shape, dilation, padding)
    nd = len(kernel)
    o, n = w.shape[0], x.shape[0]
    r = m.permute(g, axes=(1, 0) + tuple(range(2, 2 + nd)))
    if outs[1:] != padded[1:]:
        r = m.pad_constant(r, pads=tuple((0, p - a) for p, a in zip(padded[1:], outs[1:])))
    return m.reshape(r, shape=(groups, o // groups, n * chunk))


def _unit_stash(m, out, x, w, b):
    """The saving's dict (where the x rule leaves the parameters' gradients), on the
    per-sample path; None elsewhere (a generic or recorded backward)."""
    if m is NUMPY and out.__class__ is dict and unit_fast(x, w, b):
        return out
    return None


def _unit_vjp_x(m, g, out, x, w, b=None, *, dilation, padding, groups):
    stash = _unit_stash(m, out, x, w, b)
    if stash is not None:
        dx, dw, db = _unit_grads(g, x, w, dilation=dilation, padding=padding, groups=groups,
                                 want_x=True, want_w=True, compiled="kernel" in stash,
                                 wino=stash.get("wino"))
        ref = weakref.ref(g)  # for the weight's and bias's rules, with this g
        stash["w"], stash["b"] = (ref, dw), (ref, db)
        return dx
    g3 = _g_wide(m, g, x, w, dilation, padding, groups)
    wt = m.permute(m.reshape(w, shape=(groups, w.shape[0] // groups, math.prod(w.shape[1:]))),
                   axes=(0, 2, 1))
    dcols = m.matmul(wt, g3)
    dcols = m.reshape(dcols, shape=(dcols.shape[0] * dcols.shape[1], dcols.shape[2]))
    return m.conv_cols_t(dcols, shape=x.shape, kernel=tuple(w.shape[2:]), dilation=dilation,
                         padding=padding)


def _unit_vjp_w(m, g, out, x, w, b=None, *, dilation, padding, groups):
    stash = _unit_stash(m, out, x, w, b)
    if stash is not None:
        hit = stash.pop("w", None)
        if hit is not None and hit[0]() is g:
            return hit[1]
        _, dw, db = _unit_grads(g, x, w, dilation=dilation, padding=padding, groups=groups,
                                want_x=False, want_w=True, compiled="kernel" in stash,
                                wino=stash.get("wino"))
        stash["b"] = (weakref.ref(g), db)
        return dw
    g3 = _g_wide(m, g, x, w, dilation, padding, groups)
    cols = m.conv_cols(x, kernel=tuple(w.shape[2:]), dilation=dilation, padding=padding)
    cols = m.reshape(cols, shape=(groups, cols.shape[0] // groups, cols.shape[1]))
    dw = m.matmul(g3, m.permute(cols, axes=(0, 2, 1)))
    return m.reshape(dw, shape=tuple(w.shape))


def _unit_vjp_b(m, g, out, x, w, b, *, dilation, padding, groups):
    stash = _unit_stash(m, out, x, w, b)
    if stash is not None:
        hit = stash.pop("b", None)
        if hit is not None and hit[0]() is g:
            return hit[1]
    return m.sum(g, axis=(0,) + tuple(range(2, g.ndim)))


def _unit_jvp_x(m, t, out, x, w, b=None, *, dilation, padding, groups):
    # linear in x: a tangent's leading batch dimensions folded into the samples (one call)
    lead = t.ndim - x.ndim
    k = dict(dilation=dilation, padding=padding, groups=groups)
    if not lead:
        return m.conv_unit(t, w, **k)
    batch = t.shape[:lead]
    r = m.conv_unit(m.reshape(t, shape=(math.prod(batch) * x.shape[0],) + x.shape[1:]), w, **k)
    return m.reshape(r, shape=batch + (x.shape[0],) + r.shape[1:])


def _unit_jvp_w(m, t, out, x, w, b=None, *, dilation, padding, groups):
    # linear in w: a batch of weights stacked as more output channels, group by group
    lead = t.ndim - w.ndim
    k = dict(dilation=dilation, padding=padding)
    if not lead:
        return m.conv_unit(x, t, groups=groups, **k)
    batch = t.shape[:lead]
    nb = math.prod(batch)
    o = w.shape[0]
    og = o // groups
    nd = w.ndim - 2
    tail = tuple(w.shape[1:])
    r = m.reshape(t, shape=(nb, groups, og) + tail)
    r = m.permute(r, axes=(1, 0) + tuple(range(2, 4 + nd)))  # (G, B, O/G, C/G, *k)
    r = m.conv_unit(x, m.reshape(r, shape=(groups * nb * og,) + tail), groups=groups, **k)
    n, outs = r.shape[0], tuple(r.shape[2:])
    r = m.reshape(r, shape=(n, groups, nb, og) + outs)
    r = m.permute(r, axes=(2, 0, 1) + tuple(range(3, 4 + nd)))  # (B, N, G, O/G, *outs)
    return m.reshape(r, shape=batch + (n, o) + outs)


def _unit_jvp_b(m, t, out, x, w, b, *, dilation, padding, groups):
    lead = t.ndim - 1
    nd = w.ndim - 2
    outs = _unit_geo(x.shape, w.shape, dilation, padding)[5]
    r = m.reshape(t, shape=t.shape[:lead] + (1, t.shape[-1]) + (1,) * nd)
    return m.expand(r, shape=t.shape[:lead] + (x.shape[0], w.shape[0]) + outs)


_UNIT_FLAGS = dict(saving=_conv_unit_saving, reads=(0, 1), fresh=True, tuned=True,
                   fresh_vjps=True)
conv_unit = defop("conv_unit", _conv_unit, (_unit_vjp_x, _unit_vjp_w),
                  (_unit_jvp_x, _unit_jvp_w), **_UNIT_FLAGS)
conv_unit_bias = defop("conv_unit_bias", _conv_unit, (_unit_vjp_x, _unit_vjp_w, _unit_vjp_b),
                       (_unit_jvp_x, _unit_jvp_w, _unit_jvp_b), **_UNIT_FLAGS)


# ---------------------------------------------------------------- transposed convolution by phases

class _Phases:
    """Where the taps of a transposed convolution land, phase by phase.

    Output position o = s*i - p + k*d along a dimension, so the outputs o = s*a + r
    (phase r) take input i = a + delta from the taps k with k*d = r + p (mod s), and no
    other. Inputs and outputs share one frame per sample, `frame` positions (the input
    placed at `lo`, zeros around it; output a of every phase at a): the matrix product's
    columns for tap k, shifted by `lo + delta` flat positions, line up with phase r's
    outputs, so every phase is a sum of contiguous shifted slices (no scatter, no stride).
    A real position never reads past its own sample's frame; the frame's spare rows and
    columns absorb the shifts of the junk ones.
    """

    __slots__ = ("frame", "size", "lo", "ins", "phases", "packed")

    def __init__(self, ins, outs, kernel, stride, padding, dilation):
        nd = len(kernel)
        per_dim, lo, frame = [], [], []
        for n, o, k, s, p, d in zip(ins, outs, kernel, stride, padding, dilation):
            taps = [((j * d - p) % s, ((j * d - p) % s + p - j * d) // s) for j in range(k)]
            deltas = [t[1] for t in taps]
            low = max(0, -min(deltas))
            a = -(-o // s)
            per_dim.append(taps)
            lo.append(low)
            frame.append(max(low + n, a + max(deltas) + low))
        inner = [math.prod(frame[i + 1:]) for i in range(nd)]
        by_phase: dict = {}
        for t, off in enumerate(itertools.product(*(range(k) for k in kernel))):
            r = tuple(per_dim[i][j][0] for i, j in enumerate(off))
            st = sum((per_dim[i][j][1] + lo[i]) * inner[i] for i, j in enumerate(off))
            by_phase.setdefault(r, []).append((t, st))
        self.phases = [(r, tuple(len(range(a, o, s)) for a, o, s in zip(r, outs, stride)),
                        by_phase.get(r, []))
                       for r in itertools.product(*(range(s) for s in stride))]
        self.frame, self.size, self.lo, self.ins = tuple(frame), math.prod(frame), tuple(lo), \
            tuple(ins)
        self.packed = None

    def box(self):
        """The input's place in the frame."""
        return tuple(slice(a, a + n) for a, n in zip(self.lo, self.ins))

    def junk(self):
        """Index tuples (over the frame's dimensions) covering every position off the input."""
        out = []
        for i, (a, n, f) in enumerate(zip(self.lo, self.ins, self.frame)):
            for sl in (slice(0, a), slice(a + n, f)):
                if sl.stop > sl.start:
                    out.append((slice(None),) * i + (sl,))
        return out


class _Packed:
    """A _Phases as the compiled kernels' int64 arrays (`kernels.transpose`), over three
    dimensions (leading sizes 1): frame, lo, ins, outs, stride; per phase its counts
    (P, 3) and taps ptr[p]:ptr[p + 1] with ids tap_t, flat shifts tap_st and per-dimension
    shifts tap_sh (T, 3)."""

    __slots__ = ("fr", "lo", "ins", "outs", "stride", "counts", "ptr", "tap_t", "tap_st",
                 "tap_sh")

    def __init__(self, g, outs, stride):
        lead = (1,) * (3 - len(g.frame))
        zero = (0,) * len(lead)

        def arr(a, shape=None):
            return np.array(a, dtype=np.int64).reshape(shape if shape else -1)

        self.fr, self.lo, self.ins = arr(lead + g.frame), arr(zero + g.lo), arr(lead + g.ins)
        self.outs, self.stride = arr(lead + tuple(outs)), arr(lead + tuple(stride))
        counts, ptr, tap_t, tap_st, tap_sh = [], [0], [], [], []
        for _, cnt, taps in g.phases:
            counts.append(lead + tuple(cnt))
            for t, st in taps:
                sh, rem = [], st
                for f in reversed(g.frame):
                    rem, r = divmod(rem, f)
                    sh.append(r)
                tap_t.append(t)
                tap_st.append(st)
                tap_sh.append(zero + tuple(reversed(sh)))
            ptr.append(len(tap_t))
        self.counts, self.ptr = arr(counts, (-1, 3)), arr(ptr)
        self.tap_t, self.tap_st, self.tap_sh = arr(tap_t), arr(tap_st), arr(tap_sh, (-1, 3))


def _packed(g, outs, stride) -> _Packed:
    if g.packed is None:
        g.packed = _Packed(g, outs, stride)
    return g.packed


def _compiled(a, b=None) -> bool:
    """Whether a phase op on host float array a (and b, if given) runs its compiled
    kernel."""
    return (a.__class__ is np.ndarray and a.dtype in _FLOATS
            and (b is None or (b.__class__ is np.ndarray and b.dtype == a.dtype))
            and _kernels.enabled(a.size))


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_PHASES: dict = {}
_COPY_WORK = 1 << 18


def _phases(ins, outs, kernel, stride, padding, dilation) -> _Phases:
    key = (ins, outs, kernel, stride, padding, dilation)
    g = _PHASES.get(key)
    if g is None:
        if len(_PHASES) > 256:
            _PHASES.clear()
        g = _PHASES[key] = _Phases(*key)
    return g


def _split(n, work, fn, arr, min_work=None):
    """fn(a, b) over samples a..b: a host array's batch split over the intra-op threads."""
    if arr.__class__ is np.ndarray:
        _threads.run(fn, _threads.chunks(n, work, min_work))
    else:
        fn(0, n)


def _phase_in(x, *, ins, outs, kernel, stride, padding, dilation):
    """x (N, C, *S) placed in the phase frames: (C, N*frame), zeros off the input."""
    g = _phases(ins, outs, kernel, stride, padding, dilation)
    n, c = x.shape[:2]
    if _compiled(x):
        pk = _packed(g, outs, stride)
        xc = np.ascontiguousarray(x).reshape(n, c, math.prod(g.ins))
        out = np.empty((c, n * g.size), dtype=x.dtype)
        _split(n, n * c * g.size, lambda a, b: _ktr.phase_in(xc, a, b, pk.fr, pk.lo, pk.ins, out),
               x, _COPY_WORK)
        return out
    buf = _ns(x).empty((c, n) + g.frame, dtype=x.dtype)
    box = (slice(None), slice(None)) + g.box()
    junk = [(slice(None), slice(None)) + j for j in g.junk()]

    def fill(a, b):
        part = buf[:, a:b]
        for j in junk:
            part[j] = 0
        part[box] = x[a:b].swapaxes(0, 1)

    # a transposing copy costs several ns an element: 2^18 of them are worth a thread
    _split(n, n * c * g.size, fill, x, _COPY_WORK)
    return buf.reshape(c, n * g.size)


def _phase_in_t(cols, *, ins, outs, kernel, stride, padding, dilation):
    """Adjoint of phase_in: the input positions of (C, N*frame) as (N, C, *S)."""
    g = _phases(ins, outs, kernel, stride, padding, dilation)
    c = cols.shape[0]
    n = cols.shape[1] // g.size
    if _compiled(cols):
        pk = _packed(g, outs, stride)
        cc = np.ascontiguousarray(cols)
        res = np.empty((n, c) + g.ins, dtype=cols.dtype)
        r3 = res.reshape(n, c, math.prod(g.ins))
        _split(n, res.size, lambda a, b: _ktr.phase_in_t(cc, a, b, pk.fr, pk.lo, pk.ins, r3),
               cols, _COPY_WORK)
        return res
    src = cols.reshape((c, n) + g.frame)[(slice(None), slice(None)) + g.box()]
    out = _ns(cols).empty((n, c) + g.ins, dtype=cols.dtype)

    def copy(a, b):
        out[a:b] = src[:, a:b].swapaxes(0, 1)

    _split(n, out.size, copy, cols, _COPY_WORK)
    return out


def _phase_fold(cols, bias=None, *, ins, outs, kernel, stride, padding, dilation):
    """Transposed convolution's col2im: cols (O*K, N*frame), row (o, tap), to (N, O, *outs),
    each output phase one sum of shifted contiguous slices written once (plus the bias).
    Columns at frame positions off the input are read as they are (the caller's, from
    phase_in, are zero)."""
    g = _phases(ins, outs, kernel, stride, padding, dilation)
    kk = math.prod(kernel)
    o = cols.shape[0] // kk
    size = g.size
    total = cols.shape[1]
    n = total // size
    nd = len(kernel)
    if _compiled(cols, bias):
        pk = _packed(g, outs, stride)
        cc = np.ascontiguousarray(cols)
        y = np.empty((n, o) + tuple(outs), dtype=cols.dtype)
        y3 = y.reshape(n, o, math.prod(outs))
        bb = np.zeros(1, dtype=cols.dtype) if bias is None else np.ascontiguousarray(bias)

        def fold(a, e):
            _ktr.phase_fold(cc, bb, bias is not None, a, e, kk, pk.fr, pk.outs, pk.stride,
                            pk.counts, pk.ptr, pk.tap_t, pk.tap_st, y3)

        _split(n, 2.0 * cols.size, fold, cols)
        return y
    c3 = cols.reshape(o, kk, total)
    y = _ns(cols).empty((n, o) + tuple(outs), dtype=cols.dtype)
    yo = y.swapaxes(0, 1)  # written channel-major, the order the columns hold
    b = None if bias is None else bias.reshape(o, 1)

    def run(a, e):
        m = e - a
        start, span = a * size, m * size
        acc = None
        for r, counts, taps in g.phases:
            dst = yo[(slice(None), slice(a, e)) + tuple(slice(ri, None, s)
                                                        for ri, s in zip(r, stride))]
            real = (slice(None), slice(None)) + tuple(slice(0, k) for k in counts)
            if not taps:
                dst[...] = 0 if b is None else b.reshape((o,) + (1,) * (nd + 1))
                continue
            if acc is None:
                acc = _ns(cols).empty((o, span), dtype=cols.dtype)
            # the taps summed (and the bias added) in contiguous runs, then written once
            for i, (t, st) in enumerate(taps):
                k = min(span, total - start - st)  # past k: junk positions only
                part = c3[:, t, start + st:start + st + k]
                if i:
                    acc[:, :k] += part
                    continue
                if b is None:
                    acc[:, :k] = part
                elif acc.__class__ is np.ndarray:
                    np.add(part, b, out=acc[:, :k])
                else:
                    acc[:, :k] = part + b
                acc[:, k:] = 0
            dst[...] = acc.reshape((o, m) + g.frame)[real]

    _split(n, 2.0 * cols.size, run, cols)
    return y


def _phase_fold_t(y, *, ins, outs, kernel, stride, padding, dilation):
    """Adjoint of phase_fold: (N, O, *outs) to columns (O*K, N*frame).

    A column off the input gets the outputs its shifts reach, as the adjoint must; the
    caller multiplies them by the input's zeros there. Where y holds an inf or a NaN,
    those columns are zeroed instead, so that 0 * inf does not put a NaN into the weight
    gradient where PyTorch has none."""
    g = _phases(ins, outs, kernel, stride, padding, dilation)
    kk = math.prod(kernel)
    n, o = y.shape[:2]
    size = g.size
    if _compiled(y):
        pk = _packed(g, outs, stride)
        yc = np.ascontiguousarray(y).reshape(n, o, math.prod(outs))
        res = np.empty((o * kk, n * size), dtype=y.dtype)

        def unfold(a, e):
            _ktr.phase_fold_t(yc, a, e, kk, pk.fr, pk.lo, pk.ins, pk.outs, pk.stride,
                              pk.counts, pk.ptr, pk.tap_t, pk.tap_st, res)

        _split(n, 2.0 * kk * y.size, unfold, y)
        return res
    cols = _ns(y).empty((o, kk, n * size), dtype=y.dtype)
    junk = [(slice(None), slice(None), slice(None)) + j for j in g.junk()]

    def run(a, e):
        m = e - a
        span = m * size
        # one phase's outputs in frames 1..m, zeros around them and in frame 0 (which
        # holds the reads before the first sample: every shift is under one frame)
        buf = _ns(y).empty((o, m + 1) + g.frame, dtype=y.dtype)
        flat = buf.reshape(o, (m + 1) * size)
        last = None
        for r, counts, taps in g.phases:
            if not taps:
                continue
            if counts != last:  # the same real box overwrites all a phase before wrote
                buf[...] = 0
                last = counts
            real = (slice(None), slice(1, None)) + tuple(slice(0, k) for k in counts)
            buf[real] = y[(slice(a, e), slice(None)) + tuple(
                slice(ri, None, s) for ri, s in zip(r, stride))].swapaxes(0, 1)
            for t, st in taps:
                cols[:, t, a * size:e * size] = flat[:, size - st:size - st + span]
        if y.dtype.kind == "f" and not _finite(y[a:e]):
            part = cols.reshape((o, kk, n) + g.frame)[:, :, a:e]
            for j in junk:
                part[j] = 0

    _split(n, 2.0 * kk * y.size, run, y)
    return cols.reshape(o * kk, n * size)


def _finite(a) -> bool:
    """Whether every element of a is finite; a broadcast axis (stride 0) read once."""
    a = a[tuple(slice(None) if st else slice(0, 1) for st in a.strides)]
    return bool(_ns(a).isfinite(a).all())


def _lead_in(m, t, x, fn, **k):
    """A tangent with leading batch dimensions through an op from (N, ...) to (R, N*frame):
    the batch folded into N, then moved to the front."""
    lead = t.ndim - x.ndim
    if not lead:
        return fn(t, **k)
    b = int(np.prod(t.shape[:lead]))
    r = fn(m.reshape(t, shape=(b * x.shape[0],) + x.shape[1:]), **k)
    r = m.reshape(r, shape=(r.shape[0], b, r.shape[1] // b))
    return m.reshape(m.permute(r, axes=(1, 0, 2)), shape=t.shape[:lead] + r.shape[:1]
                     + r.shape[2:])


def _lead_out(m, t, cols, fn, out, **k):
    """A tangent with leading batch dimensions through an op from (R, N*frame) to (N, ...)."""
    lead = t.ndim - cols.ndim
    if not lead:
        return fn(t, **k)
    batch = t.shape[:lead]
    b = int(np.prod(batch))
    r = m.reshape(t, shape=(b,) + cols.shape)
    r = m.reshape(m.permute(r, axes=(1, 0, 2)), shape=(cols.shape[0], b * cols.shape[1]))
    r = fn(r, **k)
    return m.reshape(r, shape=batch + out.shape)


def _bias_vjp(m, g, out, cols, bias, **k):
    return m.sum(g, axis=(0,) + tuple(range(2, g.ndim)))


def _bias_jvp(m, t, out, cols, bias, **k):
    lead = t.ndim - 1
    return m.reshape(t, shape=t.shape[:lead] + (1, t.shape[-1]) + (1,) * (out.ndim - 2))


def _phase_keep(cols, w, *, ins, outs, kernel, stride, padding, dilation):
    """cols (..., R, N*frame) as they are, unless the weight w holds an inf or a NaN: then
    a copy with the columns at frame positions off the input zeroed. Those columns are the
    weight times the input's zeros there (0 * inf is NaN) and edge outputs read them; the
    true sum has no such term, as in PyTorch."""
    if _finite(w):
        return cols
    g = _phases(ins, outs, kernel, stride, padding, dilation)
    out = cols.copy()
    framed = out.reshape(cols.shape[:-1] + (cols.shape[-1] // g.size,) + g.frame)
    nd = len(g.frame)
    for j in g.junk():
        framed[(Ellipsis,) + j + (slice(None),) * (nd - len(j))] = 0
    return out


phase_keep = defop(
    "phase_keep", _phase_keep,
    (lambda m, g, out, cols, w, **k: m.phase_keep(g, w, **k), None),
    (lambda m, t, out, cols, w, **k: m.phase_keep(t, w, **k), None), view=True)


phase_in = defop(
    "phase_in", _phase_in,
    (lambda m, g, out, x, **k: m.phase_in_t(g, **k),),
    (lambda m, t, out, x, **k: _lead_in(m, t, x, m.phase_in, **k),), reads=(), fresh=True)
phase_in_t = defop(
    "phase_in_t", _phase_in_t,
    (lambda m, g, out, cols, **k: m.phase_in(g, **k),),
    (lambda m, t, out, cols, **k: _lead_out(m, t, cols, m.phase_in_t, out, **k),), reads=(),
    fresh=True)
phase_fold = defop(
    "phase_fold", _phase_fold,
    (lambda m, g, out, cols, **k: m.phase_fold_t(g, **k),),
    (lambda m, t, out, cols, **k: _lead_out(m, t, cols, m.phase_fold, out, **k),), reads=(),
    fresh=True)
phase_fold_bias = defop(
    "phase_fold_bias", _phase_fold,
    (lambda m, g, out, cols, bias, **k: m.phase_fold_t(g, **k), _bias_vjp),
    (lambda m, t, out, cols, bias, **k: _lead_out(m, t, cols, m.phase_fold, out, **k),
     _bias_jvp), reads=(), fresh=True)
phase_fold_t = defop(
    "phase_fold_t", _phase_fold_t,
    (lambda m, g, out, y, **k: m.phase_fold(g, **k),),
    (lambda m, t, out, y, **k: _lead_in(m, t, y, m.phase_fold_t, **k),), reads=(), fresh=True)


# ---------------------------------------------------------------- transposed convolution by samples

def conv_t_fast(x, w, b=None) -> bool:
    """Host float32/float64 arrays of one dtype, not empty, compiled kernels on for x's
    size: the per-sample path of `conv_t_unit` applies."""
    return unit_fast(x, w, b) and x.size > 0 and w.size > 0 and _kernels.enabled(x.size)


def _t_geo(x, w, groups, **geo):
    """(phases, packed phases, O, C/G, O/G, K) of a transposed convolution."""
    g = _phases(geo["ins"], geo["outs"], geo["kernel"], geo["stride"], geo["padding"],
                geo["dilation"])
    kk = math.prod(geo["kernel"])
    og = w.shape[1]
    return g, _packed(g, geo["outs"], geo["stride"]), og * groups, w.shape[0] // groups, og, kk


_T_GROUPS = 8
"""Groups of blocks the per-sample path splits a batch into (the threads take whole
groups; each group sums its own weight gradient, the groups' are added in order): a
fixed number, so that the result does not depend on the number of threads."""


def _t_block(n, rows, g, itemsize) -> int:
    """Samples per block: the block's columns (rows, block * frame) up to about 1 MB, so
    that they stay in cache between the product that writes them and the fold (or the
    products) that read them, while each call (product, kernel) has enough samples that
    its fixed cost is small (measured: 1 MB blocks beat one sample, 166 KB here, by
    ~20%, and the whole batch by ~10%); at most n / _T_GROUPS, so that the groups of
    blocks can be split over the threads."""
    return max(1, min(-(-n // _T_GROUPS), (1 << 20) // max(1, rows * g.size * itemsize)))


def _t_groups(n, step) -> list:
    """The blocks (start, samples) of a batch of n in at most _T_GROUPS groups."""
    blocks = [(i, min(step, n - i)) for i in range(0, n, step)]
    k = min(len(blocks), _T_GROUPS)
    return [blocks[j * len(blocks) // k:(j + 1) * len(blocks) // k] for j in range(k)]


def _lead_view(buf, rows, cols):
    """The first rows * cols elements of a flat buffer as a contiguous (rows, cols) array
    (a product's `out=` must be one: a reshaped strided slice would be a copy)."""
    return buf[:rows * cols].reshape(rows, cols)


def _t_work(x, w, g) -> float:
    """Multiply-adds of the forward's products, for `threads.chunks`."""
    return 2.0 * x.shape[0] * g.size * w.size


def _conv_t_unit(x, w, b=None, *, ins, outs, kernel, stride, padding, dilation, groups):
    """Transposed convolution (N, C, *ins) with weight (C, O/groups, *kernel) [+ bias] ->
    (N, O, *outs): the phase path (`phase_in`, the product, `phase_keep`, `phase_fold`) as
    one op. On host float arrays with compiled kernels on, a block of samples at a time
    (samples split over the intra-op threads): its frames, the product into a column
    buffer of about 256 KB, the fold into its outputs, so the columns never leave the
    cache; elsewhere the phase ops' forwards over the whole batch. Columns at frame
    positions off the input are dropped when the weight is not finite (as `phase_keep`)."""
    geo = dict(ins=ins, outs=outs, kernel=kernel, stride=stride, padding=padding,
               dilation=dilation)
    g, pk, o, cg, og, kk = _t_geo(x, w, groups, **geo)
    n, c = x.shape[:2]
    wt = w.reshape(groups, cg, og * kk).swapaxes(1, 2)
    if not conv_t_fast(x, w, b):
        xs = _phase_in(x, **geo)
        cols = (wt @ xs.reshape(groups, cg, xs.shape[1])).reshape(o * kk, xs.shape[1])
        return _phase_fold(_phase_keep(cols, w, **geo), b, **geo)
    wt = np.ascontiguousarray(wt)
    xc = np.ascontiguousarray(x).reshape(n, c, math.prod(ins))
    y = np.empty((n, o) + tuple(outs), dtype=x.dtype)
    y3 = y.reshape(n, o, math.prod(outs))
    bb = np.zeros(1, dtype=x.dtype) if b is None else np.ascontiguousarray(b)
    junk = None if _finite(w) else g.junk()
    size = g.size
    step = _t_block(n, o * kk, g, x.dtype.itemsize)
    sets = _t_groups(n, step)

    def piece(a, e):
        xs = np.empty(c * step * size, dtype=x.dtype)
        cols = np.empty(o * kk * step * size, dtype=x.dtype)
        for i, m in itertools.chain.from_iterable(sets[a:e]):
            xv, cv = _lead_view(xs, c, m * size), _lead_view(cols, o * kk, m * size)
            _ktr.phase_in(xc[i:i + m], 0, m, pk.fr, pk.lo, pk.ins, xv)
            np.matmul(wt, xv.reshape(groups, cg, m * size), out=cv.reshape(groups, og * kk, -1))
            if junk is not None:  # no 0 * inf from the frames' zeros (see phase_keep)
                framed = cv.reshape((o * kk, m) + g.frame)
                for j in junk:
                    framed[(slice(None), slice(None)) + j] = 0
            _ktr.phase_fold(cv, bb, b is not None, 0, m, kk, pk.fr, pk.outs, pk.stride,
                            pk.counts, pk.ptr, pk.tap_t, pk.tap_st, y3[i:i + m])

    _threads.run(piece, _threads.chunks(len(sets), _t_work(x, w, g)))
    return y


def _conv_t_unit_saving(x, w, b=None, **k):
    # a dict (where the x rule leaves the parameters' gradients) on the per-sample path
    return _conv_t_unit(x, w, b, **k), ({} if conv_t_fast(x, w, b) else None)


def _t_grads(g_, x, w, geo, groups, want_x, want_w):
    """(dx, dweight, dbias) of the per-sample path: per block of samples, the cotangent's
    columns (`phase_fold_t`, the columns off the input zeroed where it is not finite),
    dweight += frames @ columns^T, dx = the input positions of weight @ columns; dbias
    summed per block while the cotangent is in cache. dweight and dbias are summed per
    group of blocks (`_t_groups`), then over the groups in order."""
    g, pk, o, cg, og, kk = _t_geo(x, w, groups, **geo)
    n, c = x.shape[:2]
    dt = x.dtype
    size = g.size
    w3 = np.ascontiguousarray(w).reshape(groups, cg, og * kk)
    xc = np.ascontiguousarray(x).reshape(n, c, -1) if want_w else None
    gc = np.ascontiguousarray(g_).reshape(n, o, -1)
    dx = np.empty(x.shape, dtype=dt) if want_x else None
    dx3 = None if dx is None else dx.reshape(n, c, -1)
    ones = np.ones(gc.shape[2], dtype=dt)
    step = _t_block(n, o * kk, g, dt.itemsize)
    sets = _t_groups(n, step)

    def piece(a, e):
        cols = np.empty(o * kk * step * size, dtype=dt)
        xs = np.empty(c * step * size, dtype=dt) if want_w else None
        dxs = np.empty(c * step * size, dtype=dt) if want_x else None
        tw = np.empty((groups, cg, og * kk), dtype=dt) if want_w else None
        tb = np.empty((step, o), dtype=dt)
        return [group(blocks, cols, xs, dxs, tw, tb) for blocks in sets[a:e]]

    def group(blocks, cols, xs, dxs, tw, tb):
        dw = np.zeros((groups, cg, og * kk), dtype=dt) if want_w else None
        db = np.zeros(o, dtype=dt)
        for i, m in blocks:
            cv = _lead_view(cols, o * kk, m * size)
            _ktr.phase_fold_t(gc[i:i + m], 0, m, kk, pk.fr, pk.lo, pk.ins, pk.outs, pk.stride,
                              pk.counts, pk.ptr, pk.tap_t, pk.tap_st, cv)
            c3 = cv.reshape(groups, og * kk, m * size)
            np.matmul(gc[i:i + m], ones, out=tb[:m])
            db += tb[:m].sum(axis=0)
            if want_w:
                xv = _lead_view(xs, c, m * size)
                _ktr.phase_in(xc[i:i + m], 0, m, pk.fr, pk.lo, pk.ins, xv)
                np.matmul(xv.reshape(groups, cg, m * size), c3.swapaxes(1, 2), out=tw)
                dw += tw
            if want_x:
                dv = _lead_view(dxs, c, m * size)
                np.matmul(w3, c3, out=dv.reshape(groups, cg, m * size))
                _ktr.phase_in_t(dv, 0, m, pk.fr, pk.lo, pk.ins, dx3[i:i + m])
        return dw, db

    work = _t_work(x, w, g) * (1 + want_x + want_w)
    parts = list(itertools.chain.from_iterable(
        _threads.run(piece, _threads.chunks(len(sets), work))))
    dw, db = parts[0]
    for pw, pb in parts[1:]:  # in the groups' order, however the threads took them
        db += pb
        if want_w:
            dw += pw
    return dx, None if dw is None else dw.reshape(w.shape), db


def _t_stash(m, out, g, x, w, b):
    """The saving's dict, on the per-sample path with a host cotangent of x's dtype; None
    elsewhere (a generic or recorded backward)."""
    if m is NUMPY and out.__class__ is dict and g.__class__ is np.ndarray \
            and g.dtype == x.dtype and unit_fast(x, w, b):
        return out
    return None


def _t_dcols(m, g, w, groups, geo):
    """The cotangent's columns (G, O/G*K, N*frame), through the phase ops (differentiable)."""
    dc = m.phase_keep(m.phase_fold_t(g, **geo), w, **geo)
    return m.reshape(dc, shape=(groups, dc.shape[0] // groups, dc.shape[1]))


def _t_vjp_x(m, g, out, x, w, b=None, *, groups, **geo):
    stash = _t_stash(m, out, g, x, w, b)
    if stash is not None:
        dx, dw, db = _t_grads(g, x, w, geo, groups, want_x=True, want_w=True)
        ref = weakref.ref(g)  # for the weight's and bias's rules, with this g
        stash["w"], stash["b"] = (ref, dw), (ref, db)
        return dx
    dc = _t_dcols(m, g, w, groups, geo)
    w3 = m.reshape(w, shape=(groups, w.shape[0] // groups, dc.shape[1]))
    dxs = m.matmul(w3, dc)
    return m.phase_in_t(m.reshape(dxs, shape=(x.shape[1], dxs.shape[2])), **geo)


def _t_vjp_w(m, g, out, x, w, b=None, *, groups, **geo):
    stash = _t_stash(m, out, g, x, w, b)
    if stash is not None:
        hit = stash.pop("w", None)
        if hit is not None and hit[0]() is g:
            return hit[1]
        _, dw, db = _t_grads(g, x, w, geo, groups, want_x=False, want_w=True)
        stash["b"] = (weakref.ref(g), db)
        return dw
    dc = _t_dcols(m, g, w, groups, geo)
    xs = m.phase_in(x, **geo)
    xs = m.reshape(xs, shape=(groups, x.shape[1] // groups, xs.shape[1]))
    dw = m.matmul(xs, m.permute(dc, axes=(0, 2, 1)))
    return m.reshape(dw, shape=tuple(w.shape))


def _t_vjp_b(m, g, out, x, w, b, *, groups, **geo):
    stash = _t_stash(m, out, g, x, w, b)
    if stash is not None:
        hit = stash.pop("b", None)
        if hit is not None and hit[0]() is g:
            return hit[1]
    return m.sum(g, axis=(0,) + tuple(range(2, g.ndim)))


def _t_jvp_x(m, t, out, x, w, b=None, **k):
    # linear in x: a tangent's leading batch dimensions folded into the samples (one call)
    lead = t.ndim - x.ndim
    if not lead:
        return m.conv_t_unit(t, w, **k)
    batch = t.shape[:lead]
    r = m.conv_t_unit(m.reshape(t, shape=(math.prod(batch) * x.shape[0],) + x.shape[1:]), w,
                      **k)
    return m.reshape(r, shape=batch + (x.shape[0],) + r.shape[1:])


def _t_jvp_w(m, t, out, x, w, b=None, *, groups, **geo):
    # linear in w: a batch of weights stacked as more output channels, group by group
    lead = t.ndim - w.ndim
    if not lead:
        return m.conv_t_unit(x, t, groups=groups, **geo)
    batch = t.shape[:lead]
    nb = math.prod(batch)
    c, og = w.shape[:2]
    cg = c // groups
    nd = w.ndim - 2
    ks = tuple(w.shape[2:])
    r = m.reshape(t, shape=(nb, groups, cg, og) + ks)
    r = m.permute(r, axes=(1, 2, 0) + tuple(range(3, 4 + nd)))  # (G, C/G, B, O/G, *k)
    r = m.conv_t_unit(x, m.reshape(r, shape=(c, nb * og) + ks), groups=groups, **geo)
    n, outs = r.shape[0], tuple(r.shape[2:])
    r = m.reshape(r, shape=(n, groups, nb, og) + outs)
    r = m.permute(r, axes=(2, 0, 1) + tuple(range(3, 4 + nd)))  # (B, N, G, O/G, *outs)
    return m.reshape(r, shape=batch + (n, groups * og) + outs)


def _t_jvp_b(m, t, out, x, w, b, *, groups, outs, **geo):
    lead = t.ndim - 1
    r = m.reshape(t, shape=t.shape[:lead] + (1, t.shape[-1]) + (1,) * len(outs))
    return m.expand(r, shape=t.shape[:lead] + (x.shape[0], t.shape[-1]) + tuple(outs))


_T_FLAGS = dict(saving=_conv_t_unit_saving, reads=(0, 1), fresh=True, tuned=True,
                fresh_vjps=True)
conv_t_unit = defop("conv_t_unit", _conv_t_unit, (_t_vjp_x, _t_vjp_w), (_t_jvp_x, _t_jvp_w),
                    **_T_FLAGS)
conv_t_unit_bias = defop("conv_t_unit_bias", _conv_t_unit, (_t_vjp_x, _t_vjp_w, _t_vjp_b),
                         (_t_jvp_x, _t_jvp_w, _t_jvp_b), **_T_FLAGS)
