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
PyTorch's is. Each column row is a run of zeros, a contiguous copy of an input row, a
run of zeros; col2im adds each row back onto its input row.

Arrays are flat and C-contiguous (a sample starts at `base`): the loops index them
directly, which vectorises better than nested views (0.13 ms against 0.16 for one
(144, 1024) float32 sample).
"""

from __future__ import annotations

from . import inline, kernel


@inline
def _row_span(ow, w_n, shift):
    """Output columns [lo, hi) of a kernel column at `shift` that read inside the row."""
    lo = min(max(-shift, 0), ow)
    return lo, max(min(w_n - shift, ow), lo)


@kernel
def im2col(x, base, shape, ks, pad, dil, cols):
    """Columns of the sample at x[base:] (C, D, H, W of `shape`, flat) into cols (flat
    C*K * OD*OH*OW): row (c, a, b, e) for kernel offset (a, b, e) of sizes ks, with
    padding pad and dilation dil."""
    c_n, d_n, h_n, w_n = shape
    kd, kh, kw = ks
    od = d_n + 2 * pad[0] - dil[0] * (kd - 1)
    oh = h_n + 2 * pad[1] - dil[1] * (kh - 1)
    ow = w_n + 2 * pad[2] - dil[2] * (kw - 1)
    zero = cols.dtype.type(0)
    q = 0
    for c in range(c_n):
        for a in range(kd):
            for b in range(kh):
                for e in range(kw):
                    shift = e * dil[2] - pad[2]
                    lo, hi = _row_span(ow, w_n, shift)
                    for zd in range(od):
                        sd = zd + a * dil[0] - pad[0]
                        for zh in range(oh):
                            sh = zh + b * dil[1] - pad[1]
                            dst = cols[q:q + ow]
                            q += ow
                            if sd < 0 or sd >= d_n or sh < 0 or sh >= h_n:
                                for k in range(ow):
                                    dst[k] = zero
                                continue
                            s0 = base + ((c * d_n + sd) * h_n + sh) * w_n + shift
                            src = x[s0 + lo:s0 + hi]
                            for k in range(lo):
                                dst[k] = zero
                            mid = dst[lo:hi]
                            for k in range(hi - lo):
                                mid[k] = src[k]
                            for k in range(hi, ow):
                                dst[k] = zero


@kernel
def col2im(cols, base, shape, ks, pad, dil, dx):
    """Adjoint of im2col: the sample at dx[base:] (flat, C, D, H, W of `shape`) set to the
    sum of cols' rows added back at their windows (the padding's entries dropped)."""
    c_n, d_n, h_n, w_n = shape
    kd, kh, kw = ks
    od = d_n + 2 * pad[0] - dil[0] * (kd - 1)
    oh = h_n + 2 * pad[1] - dil[1] * (kh - 1)
    ow = w_n + 2 * pad[2] - dil[2] * (kw - 1)
    zero = dx.dtype.type(0)
    whole = dx[base:base + c_n * d_n * h_n * w_n]
    for k in range(whole.size):
        whole[k] = zero
    q = 0
    for c in range(c_n):
        for a in range(kd):
            for b in range(kh):
                for e in range(kw):
                    shift = e * dil[2] - pad[2]
                    lo, hi = _row_span(ow, w_n, shift)
                    for zd in range(od):
                        sd = zd + a * dil[0] - pad[0]
                        for zh in range(oh):
                            sh = zh + b * dil[1] - pad[1]
                            if sd >= 0 and sd < d_n and sh >= 0 and sh < h_n:
                                s0 = base + ((c * d_n + sd) * h_n + sh) * w_n + shift
                                dst = dx[s0 + lo:s0 + hi]
                                src = cols[q + lo:q + hi]
                                for k in range(hi - lo):
                                    dst[k] += src[k]
                            q += ow
