"""Unit-stride convolution's compiled kernels: one sample's exact im2col columns and their
adjoint (col2im), for the per-sample host path of `ops.windows` (`conv_unit`), which
keeps the three matrix products in BLAS and splits the samples over `retrograd.threads`.

Every shape is seen as three spatial dimensions (D, H, W) (a 1-d or 2-d convolution
has leading sizes 1), so one compiled kernel serves conv1d, conv2d and conv3d. The
columns are exact, (C*K, OD*OH*OW): one row per (channel, kernel offset), one column
per output position, zeros where a window reads the padding. So the forward product
writes a sample's output in place, a contiguous cotangent is a product's operand as
it is, and no column stands for a position past an output row (the NumPy path's junk
columns, and their 0 * inf, do not exist here): each gradient is the true sum, as
PyTorch's is. Each column row is a window of a zero-padded input row; col2im gathers
each input row from the column rows that read it.

Arrays are flat and C-contiguous (a sample starts at `base`): the loops index them
directly, which vectorises better than nested views (0.13 ms against 0.16 for one
(144, 1024) float32 sample).
"""

from __future__ import annotations

import numpy as np

from . import inline, kernel

LONG_ROW = 256
"""Output rows at least this long are copied (im2col) and summed (col2im) straight from
and into the arrays, split where a window reads the padding; shorter ones through a
zero-padded row buffer, which pays per row less than the split does (measured, float32:
rows of 32, 256 and 512 faster through the buffer, rows of 1024 and 4096 straight)."""


PLANE_ROW = 16
"""col2im sums whole planes (`_col2im_planes`) where output rows are as long as the
input's and at least this long (measured, float32 3x3: rows of 16-64 0.6-0.8x the time
of the row buffer's, rows of 8 1.15x)."""


@inline
def _col2im_planes(cols, base, shape, ks, pad, dil, dx):
    """col2im where output rows are as long as input rows (ow == W): a kernel offset's
    column rows for one depth are then one contiguous run, the input's rows shifted by
    the offset, so they are added onto dx in one long loop, after the entries that read
    the padding (a row's first and last few, which would land on the neighbouring rows)
    are zeroed in cols (they are no part of dx). dx's sample is zeroed first; each
    element sums its terms in kernel-offset order, as the row buffer does."""
    c_n, d_n, h_n, w_n = shape
    kd, kh, kw = ks
    od = d_n + 2 * pad[0] - dil[0] * (kd - 1)
    oh = h_n + 2 * pad[1] - dil[1] * (kh - 1)
    ow = w_n
    zero = dx.dtype.type(0)
    plane = od * oh * ow
    slab = oh * ow
    whole = dx[base:base + c_n * d_n * h_n * w_n]
    for k in range(whole.size):
        whole[k] = zero
    for c in range(c_n):
        for a in range(kd):
            for b in range(kh):
                zlo = min(max(pad[1] - b * dil[1], 0), oh)  # the output rows that read x
                zhi = max(min(h_n + pad[1] - b * dil[1], oh), zlo)
                for e in range(kw):
                    shift = e * dil[2] - pad[2]
                    lo = min(max(-shift, 0), ow)
                    hi = max(min(w_n - shift, ow), lo)
                    q = (((c * kd + a) * kh + b) * kw + e) * plane
                    for zd in range(od):
                        sd = zd + a * dil[0] - pad[0]
                        if sd < 0 or sd >= d_n or zlo == zhi:
                            continue
                        src = cols[q + zd * slab:q + (zd + 1) * slab]
                        for zh in range(zlo, zhi):
                            r = src[zh * ow:(zh + 1) * ow]
                            for k in range(lo):
                                r[k] = zero
                            for k in range(hi, ow):
                                r[k] = zero
                        j0 = zlo * ow + lo
                        j1 = (zhi - 1) * ow + hi
                        if j1 > j0:  # within this plane's rows zlo..zhi-1 of dx
                            s0 = base + ((c * d_n + sd) * h_n + zlo + b * dil[1] - pad[1]) \
                                * w_n + shift - zlo * ow
                            dst = dx[s0 + j0:s0 + j1]
                            part = src[j0:j1]
                            for k in range(j1 - j0):
                                dst[k] += part[k]


@kernel
def im2col(x, base, shape, ks, pad, dil, cols):
    """Columns of the sample at x[base:] (C, D, H, W of `shape`, flat) into cols (flat
    C*K * OD*OH*OW): row (c, a, b, e) for kernel offset (a, b, e) of sizes ks, with
    padding pad and dilation dil. Below LONG_ROW, each input row is copied once into a
    zero-padded row buffer, then each of its kw column rows is one fixed-length copy out
    of that buffer (no per-row split into zeros, copy, zeros: 0.59 ms against 0.91 for
    32 (144, 1024) float32 samples)."""
    c_n, d_n, h_n, w_n = shape
    kd, kh, kw = ks
    od = d_n + 2 * pad[0] - dil[0] * (kd - 1)
    oh = h_n + 2 * pad[1] - dil[1] * (kh - 1)
    ow = w_n + 2 * pad[2] - dil[2] * (kw - 1)
    zero = cols.dtype.type(0)
    plane = od * oh * ow
    long = ow >= LONG_ROW
    prow = np.zeros(w_n + 2 * pad[2], dtype=cols.dtype)
    mid = prow[pad[2]:pad[2] + w_n]
    for c in range(c_n):
        for a in range(kd):
            for b in range(kh):
                q0 = ((c * kd + a) * kh + b) * kw * plane
                for zd in range(od):
                    sd = zd + a * dil[0] - pad[0]
                    for zh in range(oh):
                        sh = zh + b * dil[1] - pad[1]
                        q = q0 + (zd * oh + zh) * ow
                        if sd < 0 or sd >= d_n or sh < 0 or sh >= h_n:
                            for e in range(kw):
                                dst = cols[q + e * plane:q + e * plane + ow]
                                for k in range(ow):
                                    dst[k] = zero
                            continue
                        s0 = base + ((c * d_n + sd) * h_n + sh) * w_n
                        if long:
                            for e in range(kw):
                                dst = cols[q + e * plane:q + e * plane + ow]
                                shift = e * dil[2] - pad[2]
                                lo = min(max(-shift, 0), ow)
                                hi = max(min(w_n - shift, ow), lo)
                                for k in range(lo):
                                    dst[k] = zero
                                part = dst[lo:hi]
                                src = x[s0 + shift + lo:s0 + shift + hi]
                                for k in range(hi - lo):
                                    part[k] = src[k]
                                for k in range(hi, ow):
                                    dst[k] = zero
                            continue
                        src = x[s0:s0 + w_n]
                        for k in range(w_n):
                            mid[k] = src[k]
                        for e in range(kw):
                            dst = cols[q + e * plane:q + e * plane + ow]
                            sp = prow[e * dil[2]:e * dil[2] + ow]
                            for k in range(ow):
                                dst[k] = sp[k]


@kernel
def col2im(cols, base, shape, ks, pad, dil, dx):
    """Adjoint of im2col: the sample at dx[base:] (flat, C, D, H, W of `shape`) set to the
    sum of cols' rows added back at their windows (the padding's entries dropped). Each
    input row is gathered in a zero-padded row buffer from the column rows that read it,
    in kernel-offset order, then copied out (fixed-length adds: 0.86 ms against 3.6 for
    scattering the rows onto dx, 32 float32 samples as above); from LONG_ROW on, summed
    in place in dx's row, in the same order. Output rows as long as the input's (a
    'same' padding along W) of at least PLANE_ROW: `_col2im_planes` (which zeroes the
    columns' entries that read the padding)."""
    c_n, d_n, h_n, w_n = shape
    kd, kh, kw = ks
    od = d_n + 2 * pad[0] - dil[0] * (kd - 1)
    oh = h_n + 2 * pad[1] - dil[1] * (kh - 1)
    ow = w_n + 2 * pad[2] - dil[2] * (kw - 1)
    if ow == w_n and w_n >= PLANE_ROW:
        _col2im_planes(cols, base, shape, ks, pad, dil, dx)
        return
    zero = dx.dtype.type(0)
    plane = od * oh * ow
    long = ow >= LONG_ROW
    acc = np.empty(w_n + 2 * pad[2], dtype=dx.dtype)
    inner = acc[pad[2]:pad[2] + w_n]
    for c in range(c_n):
        for sd in range(d_n):
            for sh in range(h_n):
                s0 = base + ((c * d_n + sd) * h_n + sh) * w_n
                row = dx[s0:s0 + w_n]
                out = row if long else acc
                for k in range(out.size):
                    out[k] = zero
                for a in range(kd):
                    zd = sd + pad[0] - a * dil[0]
                    if zd < 0 or zd >= od:
                        continue
                    for b in range(kh):
                        zh = sh + pad[1] - b * dil[1]
                        if zh < 0 or zh >= oh:
                            continue
                        q0 = ((c * kd + a) * kh + b) * kw * plane + (zd * oh + zh) * ow
                        for e in range(kw):
                            if long:
                                shift = e * dil[2] - pad[2]
                                lo = min(max(-shift, 0), ow)
                                hi = max(min(w_n - shift, ow), lo)
                                src = cols[q0 + e * plane + lo:q0 + e * plane + hi]
                                dst = row[lo + shift:hi + shift]
                                for k in range(hi - lo):
                                    dst[k] += src[k]
                                continue
                            src = cols[q0 + e * plane:q0 + e * plane + ow]
                            dst = acc[e * dil[2]:e * dil[2] + ow]
                            for k in range(ow):
                                dst[k] += src[k]
                if not long:
                    for k in range(w_n):
                        row[k] = inner[k]
