"""Sliding windows for convolution and pooling: im2col (`unfold`) and its adjoint (`fold`).

Convolution is `unfold` then a matrix product; average pooling is `unfold` then
a mean. Both are linear, so each is the other's vjp.
"""

from __future__ import annotations

import numpy as np

from ..primitive import defop


def _windows(x, kh, kw, stride, padding, dilation, pad_value):
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    if ph or pw:
        x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=pad_value)
    n, c, h, w = x.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, c, kh, kw, oh, ow),
        (s[0], s[1], s[2] * dh, s[3] * dw, s[2] * sh, s[3] * sw), writeable=False)


def _unfold(x, *, kernel, stride, padding, dilation, pad_value=0.0):
    """Sliding windows (N, C, kh, kw, OH, OW) of an NCHW array (im2col, as a view)."""
    return _windows(x, kernel[0], kernel[1], stride, padding, dilation, pad_value)


def _fold(cols, *, shape, kernel, stride, padding, dilation, pad_value=0.0):
    """Adjoint of unfold: add each window back onto an NCHW array of `shape`."""
    n, c, h, w = shape
    kh, kw = kernel
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    oh, ow = cols.shape[-2:]
    z = np.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=cols.dtype)
    for i in range(kh):  # a loop over kernel offsets, never over pixels
        for j in range(kw):
            z[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
              j * dw:j * dw + sw * (ow - 1) + 1:sw] += cols[:, :, i, j]
    return z[:, :, ph:ph + h, pw:pw + w]


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
