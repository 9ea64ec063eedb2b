"""Sliding windows for convolution and pooling: im2col (`unfold`) and its adjoint (`fold`).

An input (N, C, *S) with 1, 2 or 3 spatial dimensions has windows
(N, C, *kernel, *O): a strided view of the (padded) input. Convolution is
`unfold` then a matrix product, transposed convolution a matrix product then
`fold`; average pooling is `unfold` then a sum. Both ops are linear, so each is
the other's vjp.
"""

from __future__ import annotations

import itertools

import numpy as np

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
    return np.lib.stride_tricks.as_strided(
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
    z = np.zeros(tuple(shape[:-nd]) + tuple(n + 2 * p for n, p in zip(spatial, padding)),
                 dtype=cols.dtype)
    lead = (slice(None),) * (len(shape) - nd)
    if nd == 2:  # the common case, unrolled: a loop over kernel offsets, never over pixels
        (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, stride, dilation, outs
        for i in range(kh):
            for j in range(kw):
                z[..., i * dh:i * dh + sh * (oh - 1) + 1:sh,
                  j * dw:j * dw + sw * (ow - 1) + 1:sw] += cols[..., i, j, :, :]
    else:
        for offs in itertools.product(*(range(k) for k in kernel)):
            idx = tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                        for o, d, s, n in zip(offs, dilation, stride, outs))
            z[lead + idx] += cols[lead + offs]
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
