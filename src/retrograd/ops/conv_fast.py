"""Convolution as one op (`conv`, `conv_bias`), cache-blocked on host float arrays.

The whole batch's im2col matrix (C/G*K, N*P) is far larger than a core's cache for
ordinary layers (a 16-channel 32x32 batch of 32 is 19 MB), so one product over it runs
at memory speed. The fast path instead takes the batch a few samples at a time: each
chunk's columns (samples, C*K, P) are made into a buffer that stays in cache, one
(batched) matrix product writes the chunk's output (N, O, *outs) in place, and the bias
is added there. The backward recomputes each chunk's columns (nothing of the forward is
saved) and, while they are in cache, accumulates dweight += g @ cols', dbias, and
dcols = weight' @ g folded back onto the chunk of dx (col2im, one strided add per kernel
offset). Chunks are split over the intra-op threads, each with its own buffers and
partial dweight, summed at the end. The x rule makes all three gradients in that one
pass and leaves the parameters' for their rules (as `layer_norm` does).

Every rule also has a generic path (another namespace than NUMPY: a recorded backward,
rg.jit, rg.sym, or arrays that are not host float arrays) in terms of `unfold`, `fold`
and `matmul`, so the op is differentiable again and its jvps batch.
"""

from __future__ import annotations

import itertools
import math
import weakref

import numpy as np

from .. import threads as _threads
from ..primitive import NUMPY, defop
from .windows import _windows

_CHUNK_BYTES = 1 << 19
"""Bytes of columns one chunk makes: a few hundred KB, to stay in a core's L2 cache."""

_SPLIT = 4
"""A batch worth splitting is cut into at least this many chunks, whatever the number of
threads, so that the chunks (and so every bit of the results) do not depend on it."""


def _fast(*arrays) -> bool:
    """Host float32/float64 arrays of one dtype: the cache-blocked path applies."""
    dt = arrays[0].dtype
    return all(a is None or (a.__class__ is np.ndarray and a.dtype == dt) for a in arrays) \
        and dt in (np.float32, np.float64)


class _Plan:
    """Shapes of one convolution and the chunking of its batch."""

    def __init__(self, xshape, wshape, stride, padding, dilation, groups, itemsize):
        nd = len(wshape) - 2
        self.n, self.c = xshape[:2]
        self.o, self.cg = wshape[:2]
        self.kernel = tuple(wshape[2:])
        self.nd, self.groups = nd, groups
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.padded = tuple(a + 2 * p for a, p in zip(xshape[2:], padding))
        self.outs = tuple((a - d * (k - 1) - 1) // s + 1
                          for a, k, s, d in zip(self.padded, self.kernel, stride, dilation))
        self.p = math.prod(self.outs)
        self.ck = self.cg * math.prod(self.kernel)
        per = self.c * math.prod(self.kernel) * self.p * itemsize
        self.per = max(1, min(self.n, _CHUNK_BYTES // max(per, 1)))
        self.work = 2.0 * self.n * groups * self.ck * self.p * (self.o // groups + 2)
        if self.work >= 2 * _threads._MIN_WORK:
            self.per = min(self.per, -(-self.n // _SPLIT))
        self.pad = any(padding)
        self.inner = tuple(slice(p, p + a) for p, a in zip(padding, xshape[2:]))

        self.blocks = [(s, min(self.n, s + self.per)) for s in range(0, self.n, self.per)]

    def pieces(self):
        """The blocks split over the threads: (first, stop) block indices."""
        return _threads.chunks(len(self.blocks), self.work)


class _Scratch:
    """One thread's buffers: the padded input chunk and its columns."""

    def __init__(self, pl: _Plan, dt):
        self.pl = pl
        self.xp = np.zeros((pl.per, pl.c) + pl.padded, dt) if pl.pad else None
        self.cols = np.empty((pl.per, pl.c) + pl.kernel + pl.outs, dt)

    def columns(self, x, s, t):
        """Samples s..t's columns as (m, G, C/G*K, P) (a view of the buffer)."""
        pl, m = self.pl, t - s
        src = x[s:t]
        if self.xp is not None:
            xp = self.xp[:m]
            xp[(slice(None), slice(None)) + pl.inner] = src
            src = xp
        cols = self.cols[:m]
        cols[...] = _windows(src, pl.kernel, pl.stride, (0,) * pl.nd, pl.dilation, 0.0)
        return cols.reshape(m, pl.groups, pl.ck, pl.p)


def _forward_fast(x, w, b, pl: _Plan):
    y = np.empty((pl.n, pl.o) + pl.outs, x.dtype)
    y4 = y.reshape(pl.n, pl.groups, pl.o // pl.groups, pl.p)
    w3 = w.reshape(pl.groups, pl.o // pl.groups, pl.ck)
    b3 = None if b is None else b.reshape(pl.groups, pl.o // pl.groups, 1)

    def run(a, e):
        sc = _Scratch(pl, x.dtype)
        for s, t in pl.blocks[a:e]:
            out = y4[s:t]
            np.matmul(w3, sc.columns(x, s, t), out=out)
            if b3 is not None:
                out += b3

    _threads.run(run, pl.pieces())
    return y


def _grads_fast(g, x, w, pl: _Plan, want_x: bool):
    """(dx or None, dweight, dbias) in one pass over the chunks."""
    dt = x.dtype
    og = pl.o // pl.groups
    w3 = w.reshape(pl.groups, og, pl.ck)
    wt = w3.swapaxes(1, 2)
    ones = np.ones(pl.p, dt)
    dx = np.empty(x.shape, dt) if want_x else None
    offsets = list(itertools.product(*(range(k) for k in pl.kernel)))
    lead = (slice(None), slice(None))
    targets = [lead + tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                            for o, d, s, n in zip(off, pl.dilation, pl.stride, pl.outs))
               for off in offsets]

    # each block's share of dweight and dbias, summed in block order at the end: the same
    # bits however the blocks are split over threads
    gw = np.empty((len(pl.blocks), pl.groups, og, pl.ck), dt)
    gb = np.empty((len(pl.blocks), pl.groups, og), dt)

    def run(a, e):
        sc = _Scratch(pl, dt)
        if want_x:
            dcols = np.empty((pl.per, pl.groups, pl.ck, pl.p), dt)
            acc = np.empty((pl.per, pl.c) + pl.padded, dt) if pl.pad else None
        for i in range(a, e):
            s, t = pl.blocks[i]
            m = t - s
            gm = g[s:t].reshape(m, pl.groups, og, pl.p)
            cols = sc.columns(x, s, t)
            if m == 1:
                np.matmul(gm[0], cols[0].swapaxes(1, 2), out=gw[i])
                np.matmul(gm[0], ones, out=gb[i])
            else:
                np.matmul(gm, cols.swapaxes(2, 3)).sum(axis=0, out=gw[i])
                np.matmul(gm, ones).sum(axis=0, out=gb[i])
            if not want_x:
                continue
            dc = np.matmul(wt, gm, out=dcols[:m])
            dc = dc.reshape((m, pl.c) + pl.kernel + pl.outs)
            z = acc[:m] if acc is not None else dx[s:t]
            z[...] = 0
            for off, tgt in zip(offsets, targets):
                z[tgt] += dc[lead + off]
            if acc is not None:
                dx[s:t] = z[lead + pl.inner]

    _threads.run(run, pl.pieces())
    gw = gw[0] if len(gw) == 1 else gw.sum(axis=0)
    gb = gb[0] if len(gb) == 1 else gb.sum(axis=0)
    return dx, gw.reshape(w.shape), gb.reshape(pl.o)


# ---------------------------------------------------------------- forward

def _conv(x, w, b=None, *, stride, padding, dilation, groups):
    """Convolution (N, C, *S) by (O, C/G, *k) to (N, O, *outs), plus an optional bias."""
    if _fast(x, w, b) and x.size and w.size:
        pl = _Plan(x.shape, w.shape, stride, padding, dilation, groups, x.itemsize)
        return _forward_fast(x, w, b, pl)
    # any other array (another device, dtype): unfold and one product per group, by the
    # ops' own forwards (which work in the arrays' namespace)
    m = NUMPY
    nd = w.ndim - 2
    n, o = x.shape[0], w.shape[0]
    cols, outs = _cols_groups(m, x, w, groups, stride=stride, padding=padding,
                              dilation=dilation)
    y = m.matmul(m.reshape(w, shape=(groups, o // groups, cols.shape[1])), cols)
    y = m.permute(m.reshape(y, shape=(o, n) + outs), axes=(1, 0) + tuple(range(2, 2 + nd)))
    if b is not None:
        y = m.add(y, m.reshape(b, shape=(1, o) + (1,) * nd))
    return y


def _conv_saving(x, w, b=None, **k):
    return _conv(x, w, b, **k), {}


# ---------------------------------------------------------------- generic rules

def _geo(k):
    return dict(stride=k["stride"], padding=k["padding"], dilation=k["dilation"])


def _g_groups(m, g, groups):
    """g (N, O, *outs) as (G, O/G, N*P)."""
    n, o = g.shape[:2]
    p = math.prod(g.shape[2:])
    r = m.reshape(g, shape=(n, groups, o // groups, p))
    return m.reshape(m.permute(r, axes=(1, 2, 0, 3)), shape=(groups, o // groups, n * p))


def _cols_groups(m, x, w, groups, **geo):
    """x's columns as (G, C/G*K, N*P), and outs."""
    nd = w.ndim - 2
    cols = m.unfold(x, kernel=tuple(w.shape[2:]), **geo)
    outs = tuple(cols.shape[2 + nd:])
    n = x.shape[0]
    cols = m.permute(cols, axes=(1,) + tuple(range(2, 2 + nd)) + (0,)
                     + tuple(range(2 + nd, 2 + 2 * nd)))
    return m.reshape(cols, shape=(groups, -1, n * math.prod(outs))), outs


def _vjp_x_generic(m, g, x, w, groups, **geo):
    nd = w.ndim - 2
    n, c = x.shape[:2]
    o = w.shape[0]
    wt = m.permute(m.reshape(w, shape=(groups, o // groups, -1)), axes=(0, 2, 1))
    cols = m.matmul(wt, _g_groups(m, g, groups))  # (G, C/G*K, N*P)
    outs = tuple(g.shape[2:])
    cols = m.reshape(cols, shape=(c,) + tuple(w.shape[2:]) + (n,) + outs)
    cols = m.permute(cols, axes=(1 + nd, 0) + tuple(range(1, 1 + nd))
                     + tuple(range(2 + nd, 2 + 2 * nd)))
    return m.fold(cols, shape=tuple(x.shape), kernel=tuple(w.shape[2:]), **geo)


def _vjp_w_generic(m, g, x, w, groups, **geo):
    cols, _ = _cols_groups(m, x, w, groups, **geo)
    gw = m.matmul(_g_groups(m, g, groups), m.permute(cols, axes=(0, 2, 1)))
    return m.reshape(gw, shape=tuple(w.shape))


def _bias_sum(m, g):
    return m.sum(g, axis=(0,) + tuple(range(2, g.ndim)))


# ---------------------------------------------------------------- vjps

def _stash(out, g, vals) -> None:
    if out.__class__ is dict:
        out["g"] = (weakref.ref(g), vals)


def _stashed(out, g, i):
    if out.__class__ is dict:
        hit = out.get("g")
        if hit is not None and hit[0]() is g and hit[1][i] is not None:
            vals = list(hit[1])
            r, vals[i] = vals[i], None
            out["g"] = (hit[0], tuple(vals))
            return r
    return None


def _on_host(m, g, x, w, b=None) -> bool:
    return m is NUMPY and _fast(x, w, b) and g.__class__ is np.ndarray and g.dtype == x.dtype \
        and x.size and w.size


def _vjp_x(m, g, out, x, w, b=None, *, groups, **k):
    if _on_host(m, g, x, w, b):
        pl = _Plan(x.shape, w.shape, k["stride"], k["padding"], k["dilation"], groups,
                   x.itemsize)
        dx, gw, gb = _grads_fast(g, x, w, pl, True)
        _stash(out, g, (None, gw, gb))
        return dx
    return _vjp_x_generic(m, g, x, w, groups, **_geo(k))


def _vjp_w(m, g, out, x, w, b=None, *, groups, **k):
    if _on_host(m, g, x, w, b):
        r = _stashed(out, g, 1)
        if r is not None:
            return r
        pl = _Plan(x.shape, w.shape, k["stride"], k["padding"], k["dilation"], groups,
                   x.itemsize)
        _, gw, gb = _grads_fast(g, x, w, pl, False)
        _stash(out, g, (None, None, gb))
        return gw
    return _vjp_w_generic(m, g, x, w, groups, **_geo(k))


def _vjp_b(m, g, out, x, w, b, **k):
    if _on_host(m, g, x, w, b):
        r = _stashed(out, g, 2)
        if r is not None:
            return r
    return _bias_sum(m, g)


# ---------------------------------------------------------------- jvps

def _jvp_x(m, t, out, x, w, b=None, **k):
    lead = t.ndim - x.ndim
    if not lead:
        return m.conv(t, w, **k)
    batch = tuple(t.shape[:lead])
    r = m.conv(m.reshape(t, shape=(math.prod(batch) * x.shape[0],) + tuple(x.shape[1:])), w,
               **k)
    return m.reshape(r, shape=batch + tuple(out.shape))


def _jvp_w(m, t, out, x, w, b=None, *, groups, **k):
    nd = w.ndim - 2
    lead = t.ndim - w.ndim
    batch = tuple(t.shape[:lead])
    cols, outs = _cols_groups(m, x, w, groups, **_geo(k))
    o, n = w.shape[0], x.shape[0]
    tw = m.reshape(t, shape=batch + (groups, o // groups, cols.shape[1]))
    r = m.matmul(tw, cols)  # (*batch, G, O/G, N*P)
    r = m.reshape(r, shape=batch + (o, n) + outs)
    axes = tuple(range(lead)) + (lead + 1, lead) + tuple(range(lead + 2, lead + 2 + nd))
    return m.permute(r, axes=axes)


def _jvp_b(m, t, out, x, w, b, **k):
    lead = t.ndim - 1
    batch = tuple(t.shape[:lead])
    r = m.reshape(t, shape=batch + (1, t.shape[-1]) + (1,) * (out.ndim - 2))
    return m.expand(r, shape=batch + tuple(out.shape))


conv = defop(
    "conv", _conv, (_vjp_x, _vjp_w), (_jvp_x, _jvp_w),
    saving=_conv_saving, reads=(0, 1), fresh=True, tuned=True, fresh_vjps=True)
conv_bias = defop(
    "conv_bias", _conv, (_vjp_x, _vjp_w, _vjp_b), (_jvp_x, _jvp_w, _jvp_b),
    saving=_conv_saving, reads=(0, 1), fresh=True, tuned=True, fresh_vjps=True)
