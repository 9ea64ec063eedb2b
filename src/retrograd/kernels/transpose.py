"""Transposed convolution's compiled kernels: the four data moves of the phase path in
`ops.windows` (`phase_in`, `phase_in_t`, `phase_fold`, `phase_fold_t`), one pass over
memory each, for the host float arrays; the matrix products stay in BLAS and the caller
splits the samples over `retrograd.threads` (each kernel takes the samples a..e).

Every shape is seen as three spatial dimensions (D, H, W) (leading sizes 1 for 1-d and
2-d), so one compiled kernel serves conv_transpose1d/2d/3d. The geometry comes from
`ops.windows._Phases` as small int arrays: the frame (fd, fh, fw), where the input sits
in it (lo, ins), and per phase (phase p = (rd * sh + rh) * sw + rw) its output counts
and taps: tap ids, flat shifts and per-dimension shifts (`ptr[p]:ptr[p + 1]` index
them). Output a of phase r of sample n reads column position n * size + flat(a) + shift
of each of its taps: a contiguous run along W, which the output takes every sw-th
element.

Rows are sliced into views first and indexed from 0 (an index written as a runtime
offset plus the loop counter gets a wraparound check that keeps Numba's loop scalar).
"""

from __future__ import annotations

import numpy as np

from . import kernel


@kernel
def phase_in(x, a, e, fr, lo, ins, buf):
    """Samples a..e of x (N, C, D*H*W) placed in their frames of buf (C, N*size): the
    input box at lo, zeros around it."""
    fd, fh, fw = fr[0], fr[1], fr[2]
    ld, lh, lw = lo[0], lo[1], lo[2]
    nd, nh, nw = ins[0], ins[1], ins[2]
    size = fd * fh * fw
    zero = buf.dtype.type(0)
    for n in range(a, e):
        for c in range(x.shape[1]):
            src = x[n, c]
            dst = buf[c, n * size:(n + 1) * size]
            for k in range(size):  # the frame zeroed, then the input's rows in its box
                dst[k] = zero
            for zd in range(nd):
                for zh in range(nh):
                    q = ((zd + ld) * fh + zh + lh) * fw + lw
                    d = dst[q:q + nw]
                    s = src[(zd * nh + zh) * nw:(zd * nh + zh + 1) * nw]
                    for k in range(nw):
                        d[k] = s[k]


@kernel
def phase_in_t(cols, a, e, fr, lo, ins, out):
    """Adjoint of phase_in: the input boxes of cols (C, N*size) for samples a..e, into
    out (N, C, D*H*W)."""
    fd, fh, fw = fr[0], fr[1], fr[2]
    ld, lh, lw = lo[0], lo[1], lo[2]
    nd, nh, nw = ins[0], ins[1], ins[2]
    size = fd * fh * fw
    for n in range(a, e):
        for c in range(out.shape[1]):
            src = cols[c, n * size:(n + 1) * size]
            dst = out[n, c]
            for zd in range(nd):
                for zh in range(nh):
                    q = ((zd + ld) * fh + zh + lh) * fw + lw
                    s = src[q:q + nw]
                    d = dst[(zd * nh + zh) * nw:(zd * nh + zh + 1) * nw]
                    for k in range(nw):
                        d[k] = s[k]


@kernel
def phase_fold(cols, bias, has_bias, a, e, kk, fr, outs, stride, counts, ptr, tap_t, tap_st,
               y):
    """Samples a..e of y (N, O, OD*OH*OW) from cols (O*kk, N*size): each output the sum of
    its taps' columns (in tap order), plus bias[o] if has_bias; outputs that no tap
    reaches get the bias (or zero). Per sample, channel and phase the taps' shifted
    frames are summed in one buffer (long contiguous runs), then its real outputs are
    written to their places in y (every sw-th element of a row)."""
    fh, fw = fr[1], fr[2]
    size = fr[0] * fh * fw
    total = cols.shape[1]
    oh_n, ow_n = outs[1], outs[2]
    sd, sh, sw = stride[0], stride[1], stride[2]
    zero = y.dtype.type(0)
    acc = np.empty(size, dtype=y.dtype)
    for n in range(a, e):
        for o in range(y.shape[1]):
            bv = bias[o] if has_bias else zero
            yo = y[n, o]
            for p in range(ptr.shape[0] - 1):
                rw = p % sw
                rh = (p // sw) % sh
                rd = p // (sw * sh)
                cd, ch, cw = counts[p, 0], counts[p, 1], counts[p, 2]
                t0, t1 = ptr[p], ptr[p + 1]
                if t0 == t1:
                    for ad in range(cd):
                        for ah in range(ch):
                            start = ((rd + sd * ad) * oh_n + rh + sh * ah) * ow_n + rw
                            dst = yo[start:]
                            for k in range(cw):
                                dst[k * sw] = bv
                    continue
                for t in range(t0, t1):
                    q = n * size + tap_st[t]
                    m = min(size, total - q)  # past m: positions no real output reads
                    src = cols[o * kk + tap_t[t], q:q + m]
                    if t > t0:
                        for k in range(m):
                            acc[k] += src[k]
                    elif has_bias:
                        for k in range(m):
                            acc[k] = src[k] + bv
                    else:
                        for k in range(m):
                            acc[k] = src[k]
                for ad in range(cd):
                    for ah in range(ch):
                        start = ((rd + sd * ad) * oh_n + rh + sh * ah) * ow_n + rw
                        dst = yo[start:]
                        row = acc[(ad * fh + ah) * fw:]
                        if sw == 1:
                            for k in range(cw):
                                dst[k] = row[k]
                        elif sw == 2:
                            for k in range(cw):
                                dst[2 * k] = row[k]
                        else:
                            for k in range(cw):
                                dst[k * sw] = row[k]


@kernel
def phase_fold_t(y, a, e, kk, fr, lo, ins, outs, stride, counts, ptr, tap_t, tap_st, cols):
    """Adjoint of phase_fold for samples a..e: cols (O*kk, N*size), each tap's row of a
    sample's frame holding the outputs of its phase shifted by the tap's shift (zeros
    where no output lands). Per sample, channel and phase the outputs are placed once in
    a zeroed frame (after a frame of zeros, so every shift reads inside), then each tap's
    row is one contiguous copy from it. If any of the samples' y is not finite, their
    columns off the input box are zeroed (so 0 * inf puts no NaN into the weight
    gradient). Returns whether that happened."""
    fd, fh, fw = fr[0], fr[1], fr[2]
    size = fd * fh * fw
    oh_n, ow_n = outs[1], outs[2]
    sd, sh, sw = stride[0], stride[1], stride[2]
    zero = y.dtype.type(0)
    buf = np.zeros(2 * size, dtype=y.dtype)
    img = buf[size:]
    check = zero
    for n in range(a, e):
        for o in range(y.shape[1]):
            yo = y[n, o]
            for k in range(yo.size):
                check += yo[k] * zero  # NaN once any inf or NaN is met
            for p in range(ptr.shape[0] - 1):
                t0, t1 = ptr[p], ptr[p + 1]
                if t0 == t1:
                    continue
                rw = p % sw
                rh = (p // sw) % sh
                rd = p // (sw * sh)
                cd, ch, cw = counts[p, 0], counts[p, 1], counts[p, 2]
                for k in range(size):
                    img[k] = zero
                for ad in range(cd):
                    for ah in range(ch):
                        start = ((rd + sd * ad) * oh_n + rh + sh * ah) * ow_n + rw
                        src = yo[start:]
                        row = img[(ad * fh + ah) * fw:]
                        if sw == 1:
                            for k in range(cw):
                                row[k] = src[k]
                        elif sw == 2:
                            for k in range(cw):
                                row[k] = src[2 * k]
                        else:
                            for k in range(cw):
                                row[k] = src[k * sw]
                for t in range(t0, t1):
                    src = buf[size - tap_st[t]:]
                    dst = cols[o * kk + tap_t[t], n * size:(n + 1) * size]
                    for k in range(size):
                        dst[k] = src[k]
    if check == zero:
        return False
    ld, lh, lw = lo[0], lo[1], lo[2]
    nd, nh, nw = ins[0], ins[1], ins[2]
    for r in range(cols.shape[0]):
        for n in range(a, e):
            dst = cols[r, n * size:(n + 1) * size]
            for qd in range(fd):
                for qh in range(fh):
                    row = dst[(qd * fh + qh) * fw:(qd * fh + qh + 1) * fw]
                    if qd < ld or qd >= ld + nd or qh < lh or qh >= lh + nh:
                        for k in range(fw):
                            row[k] = zero
                        continue
                    for k in range(lw):
                        row[k] = zero
                    for k in range(lw + nw, fw):
                        row[k] = zero
    return True
