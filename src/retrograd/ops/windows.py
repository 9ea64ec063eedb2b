"""Sliding windows for convolution and pooling: im2col (`unfold`) and its adjoint (`fold`).

An input (N, C, *S) with 1, 2 or 3 spatial dimensions has windows
(N, C, *kernel, *O): a strided view of the (padded) input. Convolution is
`unfold` then a matrix product, transposed convolution a matrix product then
`fold`; average pooling is `unfold` then a sum. Both ops are linear, so each is
the other's vjp.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import threads as _threads
from ..devices import as_strided
from ..devices import namespace_of as _ns
from ..primitive import defop


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
    return cols.reshape(c * len(shifts), n * chunk)


def _conv_cols_t(cols, *, shape, kernel, dilation, padding):
    """Adjoint of conv_cols: each column added back at its offset; (N, C, *S) of `shape`."""
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
