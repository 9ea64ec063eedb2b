"""Winograd's F(2x2, 3x3) for float32 3x3 convolutions on host arrays, forward and
backward, one sample at a time on the intra-op threads (`kernels.winograd` holds the
transforms and says why this is faster: 16 products per 2x2 output tile where the
columns' product has 36).

The backward is the exact adjoint of the forward computed: dM = A^T-adjoint of the
cotangent, dU = dM V^T summed over samples (dweight = G^T dU G), dV = U^T dM folded back
by the input transform's adjoint (dx). Where a sample meets a value that is not finite
(an infinity turns into inf - inf = nan in the transforms, where the direct sum keeps
it), the sample is reported for the caller to redo on the exact columns' path, so a
result is the direct sum's wherever the two could differ by more than rounding.
"""

from __future__ import annotations

import numpy as np

from .. import kernels as _kernels
from .. import threads as _threads
from ..kernels import winograd as _kw

_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]],
              dtype=np.float32)
_GG = np.kron(_G, _G)
"""(16, 9): U[(a, b)] = sum over (i, j) of G[a, i] G[b, j] w[i, j], one small product for
every channel pair (einsum's path search alone took 50-70 us a call)."""

MIN_CHANNELS, MAX_CHANNELS, MIN_TILES = 8, 128, 64
"""Where the transforms pay, against the exact columns (measured one thread, float32,
forward and backward time as a fraction of the columns'): 16->32 channels at 32x32
0.78/0.72, 64->64 at 16x16 0.61/0.76, 128->128 at 32x32 0.65/0.74, 8->8 at 32x32
1.08/0.95; but 3->16 at 32x32 1.60/1.58 (the products are too thin), 16->16 at 8x8
(16 tiles) 1.39/1.20, and 256->256 at 16x16 1.22/1.28."""


def fits(x, w, b, dilation, padding, groups) -> bool:
    """A float32 2-d convolution with a 3x3 kernel, unit dilation, one group, host arrays
    of one dtype, compiled kernels on, and sizes where the transforms pay."""
    if not (x.__class__ is np.ndarray and w.__class__ is np.ndarray and x.ndim == 4
            and x.dtype == np.float32 and w.dtype == np.float32
            and (b is None or (b.__class__ is np.ndarray and b.dtype == np.float32))
            and w.shape[2:] == (3, 3) and groups == 1 and tuple(dilation) == (1, 1)
            and MIN_CHANNELS <= min(x.shape[1], w.shape[0])
            and max(x.shape[1], w.shape[0]) <= MAX_CHANNELS):
        return False
    ho, wo = (s + 2 * p - 2 for s, p in zip(x.shape[2:], padding))
    return ho >= 1 and wo >= 1 and ((ho + 1) // 2) * ((wo + 1) // 2) >= MIN_TILES \
        and _kernels.enabled(x.size)


def _geo(x, padding):
    """(Ho, Wo, tile rows, tile columns)."""
    ho, wo = (s + 2 * p - 2 for s, p in zip(x.shape[2:], padding))
    return ho, wo, (ho + 1) // 2, (wo + 1) // 2


def _block(rows: int, tiles: int) -> tuple:
    """(full, view): a C-contiguous float32 (16, R, P) array for the transforms and its
    (16, rows, tiles) view for the products, R >= rows and P >= tiles chosen so that its
    16 blocks do not start a multiple of 2 KiB apart: the transforms touch all 16 at once,
    and blocks 4 KiB apart share a cache set (the transforms ran 10x slower so)."""
    p = tiles if tiles * 4 % 2048 else tiles + 16
    r = rows
    while r * p * 4 % 2048 == 0:
        r += 1
    full = np.empty((16, r, p), dtype=np.float32)
    return full, full[:, :rows, :tiles]


def _weight(w):
    """U = G w G^T per (output, input) channel, as (16, O, C)."""
    o, c = w.shape[:2]
    u = _GG @ np.ascontiguousarray(w).reshape(o * c, 9).T
    return np.ascontiguousarray(u.reshape(16, o, c), dtype=np.float32)


class _Scratch:
    """One thread's buffers for samples of one geometry."""

    def __init__(self, th, tw):
        self.plane = np.empty((2 * th + 2, 2 * tw + 2), dtype=np.float32)
        self.tmp = np.empty((4, 2 * tw + 2), dtype=np.float32)
        self.stage = np.empty((16, th * tw), dtype=np.float32)


def forward(x, w, b, padding) -> tuple:
    """(y, redo): the convolution of x (N, C, H, W) with w (O, C, 3, 3) [+ b], symmetric
    `padding`; redo lists the samples whose output was not finite, for the caller to
    compute again exactly."""
    n, c = x.shape[:2]
    o = w.shape[0]
    ph, pw = padding
    ho, wo, th, tw = _geo(x, padding)
    u = _weight(w)
    bias = np.zeros(o, dtype=np.float32) if b is None else np.ascontiguousarray(b)
    xc = np.ascontiguousarray(x)
    y = np.empty((n, o, ho, wo), dtype=np.float32)
    redo = []

    def piece(a, e):
        s = _Scratch(th, tw)
        (vf, v), (mf, m) = _block(c, th * tw), _block(o, th * tw)
        for i in range(a, e):
            _kw.transform_input(xc[i], ph, pw, s.plane, s.tmp, s.stage, vf)
            np.matmul(u, v, out=m)
            if _kw.transform_output(mf, bias, y[i], s.stage) != 0:
                redo.append(i)

    _threads.run(piece, _threads.chunks(n, 2.0 * x.size * w.size / c))
    return y, sorted(redo)


def grads(g, x, w, padding, want_x, want_w, sets, skip=()) -> tuple:
    """(dx, dweight, dbias, redo) of `forward` for the cotangent g: dx only if `want_x`,
    dweight only if `want_w` (else None). dweight and dbias are summed per group of
    samples (`sets`, (start, stop) pairs), then over the groups in order, so the sums do
    not depend on the thread count. The samples in `skip`, and those meeting a value that
    is not finite, are left out of every result (their dx is not written) and returned
    in redo, for the caller to add exactly."""
    n, c = x.shape[:2]
    o = w.shape[0]
    ph, pw = padding
    ho, wo, th, tw = _geo(x, padding)
    u = _weight(w)
    ut = u.transpose(0, 2, 1)  # a transposed view: BLAS reads it as it is
    gc = np.ascontiguousarray(g, dtype=np.float32)
    xc = np.ascontiguousarray(x) if want_w else None
    dx = np.empty(x.shape, dtype=np.float32) if want_x else None
    skip = frozenset(skip)

    def piece(a, e):
        s = _Scratch(th, tw)
        dm = _block(o, th * tw)
        v = _block(c, th * tw) if want_w else (None, None)
        dv = _block(c, th * tw) if want_x else (None, None)
        tdu = np.empty((16, o, c), dtype=np.float32) if want_w else None
        tb = np.empty(o, dtype=np.float32)
        return [group(lo, hi, s, dm, v, dv, tdu, tb) for lo, hi in sets[a:e]]

    def group(lo, hi, s, dm, v, dv, tdu, tb):
        du = np.zeros((16, o, c), dtype=np.float32) if want_w else None
        db = np.zeros(o, dtype=np.float32)
        redo = []
        for i in range(lo, hi):
            if i in skip:
                redo.append(i)
                continue
            tb[:] = 0
            ok = _kw.transform_output_t(gc[i], dm[0], s.stage, tb) == 0
            if ok and want_w:
                _kw.transform_input(xc[i], ph, pw, s.plane, s.tmp, s.stage, v[0])
                np.matmul(dm[1], v[1].transpose(0, 2, 1), out=tdu)
            if ok and want_x:
                np.matmul(ut, dm[1], out=dv[1])
                ok = _kw.transform_input_t(dv[0], ph, pw, s.plane, s.tmp, s.stage, dx[i]) == 0
            if not ok:
                redo.append(i)
                continue
            db += tb
            if want_w:
                du += tdu
        if want_w and not np.isfinite(du).all():  # checked once a group: redo it all
            du[...] = 0
            db[...] = 0
            redo = list(range(lo, hi))
        return du, db, redo

    work = 2.0 * x.size * w.size / c * (want_x + want_w)
    parts = [p for chunk in _threads.run(piece, _threads.chunks(len(sets), work))
             for p in chunk]
    du, db, redo = parts[0]
    for pu, pb, pr in parts[1:]:  # in the groups' order, however the threads took them
        db += pb
        redo = redo + pr
        if want_w:
            du += pu
    dw = None
    if want_w:
        dw = (_GG.T @ du.reshape(16, o * c)).T  # G^T dU G per channel pair
        dw = np.ascontiguousarray(dw.reshape(o, c, 3, 3), dtype=np.float32)
    return dx, dw, db, redo
