"""Fused normalisation layers: `layer_norm`, (x - mean) / sqrt(var + eps) * weight + bias
over the trailing axes, as one node with NumPy fast paths (the other file, besides
`fused.py`, where a rule asks `m is NUMPY`).

The fast forward works on rows of the trailing size n: the row means are BLAS
products with ones, and the per-row scale times the weight is one rank-2 matrix
product (an outer product rstd w', which NumPy's broadcasting would make as a
slow per-row loop). It hands its backward the centred rows and rstd (`saving`),
from which the three vjps are a few passes each:

    dx = rstd (gw - mean(gw) - xhat mean(gw xhat)),   gw = g * weight
    dweight = sum over rows of g xhat,   dbias = sum over rows of g

Every rule also has a generic path (`m` other than NUMPY, or no saved rows) in
terms of `standardize`, so a recorded backward (create_graph, rg.jit) and the jvps
are differentiable again.
"""

from __future__ import annotations

import numpy as np

from .. import threads as _threads
from ..primitive import NUMPY, defop
from .fused import _ones
from .norms import _count, _standardize_rule


def _fast(x, *params) -> bool:
    """A host float array (and parameters of its dtype): the NumPy fast path applies."""
    if x.__class__ is not np.ndarray or x.dtype.kind != "f":
        return False
    return all(p is None or (p.__class__ is np.ndarray and p.dtype == x.dtype) for p in params)


def _rank2(a0, a1, b0, b1, shape=None, out=None):
    """a0[:, None] * b0 + a1[:, None] * b1 as one BLAS product of rank 2 (NumPy's rank-1
    matmul and its broadcasting both run a slow loop per row), made as an array of `shape`
    (not a view: a gradient that is a view would be copied), or written into `out`."""
    r, n = a0.shape[0], b0.shape[0]
    u = np.empty((r, 2), dtype=a0.dtype)
    u[:, 0] = a0
    u[:, 1] = a1
    v = np.empty((2, n), dtype=a0.dtype)
    v[0] = b0
    v[1] = b1
    if out is None:
        out = np.empty(shape, dtype=a0.dtype)
    np.matmul(u, v, out=out.reshape(r, n))
    return out


_WORK = 10.0
"""Work per element for `threads.chunks`, the same for the forward and every vjp, so that
one layer's kernels all split or all run whole (alternating makes the BLAS library's
threads start and stop between them)."""

_SPREAD = 16.0
"""Rows whose mean^2 is at most this times their variance take the one-pass statistics
(E[x^2] - mean^2 loses about log2 of (1 + this) bits); otherwise the rows are centred
first."""


def _ln_rows(x, w, b, axes, eps):
    """(y, (base, shift, rstd)): the output; the rows (r, n) of x, or of x - mean when the
    rows' means are large against their spread; the mean taken off `base` in the output
    (the mean, or zeros); each row's 1/std. Rows are split over the intra-op threads."""
    n = _count(x.shape, axes)
    base = np.ascontiguousarray(x).reshape(-1, n)
    r, dt = base.shape[0], x.dtype
    pieces = _threads.chunks(r, _WORK * base.size)
    mu, var = np.empty(r, dt), np.empty(r, dt)

    def stats(a, z):
        rows = base[a:z]
        np.matmul(rows, _ones(n, dt), out=mu[a:z])
        mu[a:z] /= n
        np.einsum("ij,ij->i", rows, rows, out=var[a:z])
        var[a:z] /= n
        var[a:z] -= mu[a:z] * mu[a:z]
        np.maximum(var[a:z], 0.0, out=var[a:z])
        return bool((mu[a:z] * mu[a:z] > _SPREAD * var[a:z]).any())

    centre = any(_threads.run(stats, pieces))  # E[x^2] - mean^2 would cancel: centre first
    rows_in = base
    if centre:
        base = np.empty_like(base)
    wv = _ones(n, dt) if w is None else w.reshape(-1)
    bv = None if b is None else b.reshape(-1)
    y = np.empty(x.shape, dt)
    y2 = y.reshape(base.shape)
    rstd = np.empty(r, dt)

    def output(a, z):
        if centre:
            np.subtract(rows_in[a:z], mu[a:z, None], out=base[a:z])
            np.einsum("ij,ij->i", base[a:z], base[a:z], out=var[a:z])
            var[a:z] /= n
            mu[a:z] = 0.0
        s = rstd[a:z]
        np.add(var[a:z], eps, out=s)
        np.sqrt(s, out=s)
        np.divide(1.0, s, out=s)
        # y = (base - shift) * rstd * w + b = base * (rstd w') + (-shift rstd w' + 1 b')
        _rank2(s, np.zeros_like(s), wv, wv, out=y2[a:z])
        y2[a:z] *= base[a:z]
        shift = -mu[a:z] * s
        if bv is not None or shift.any():
            y2[a:z] += _rank2(shift, _ones(z - a, dt), wv,
                              np.zeros(n, dt) if bv is None else bv, (z - a, n))

    _threads.run(output, pieces)
    return y, (base, mu, rstd)


def _layer_norm(x, w, b, *, axes, eps):
    if _fast(x, w, b) and x.size:
        return _ln_rows(x, w, b, axes, eps)[0]
    y = NUMPY.standardize(x, axes=axes, eps=eps)
    if w is not None:
        y = y * w
    return y if b is None else y + b


def _layer_norm_saving(x, w, b, *, axes, eps):
    if _fast(x, w, b) and x.size:
        return _ln_rows(x, w, b, axes, eps)
    return _layer_norm(x, w, b, axes=axes, eps=eps), None


def _lead(x, axes) -> tuple:
    """The axes in front of the normalised ones (the rows)."""
    return tuple(range(x.ndim - len(axes)))


def _ln_vjp_x(m, g, out, x, w, b, *, axes, eps):
    if m is NUMPY and out.__class__ is tuple:
        # with xc = base - shift: dx = G - mean(G) - xc rstd^2 mean(G xc), G = rstd g w
        base, shift, rstd = out
        r, n = base.shape
        wv = _ones(n, x.dtype) if w is None else w.reshape(-1)
        gx = np.empty(x.shape, x.dtype)
        G2, g2 = gx.reshape(base.shape), g.reshape(base.shape)

        def rows(a, z):
            G, s, sh = G2[a:z], rstd[a:z], shift[a:z]
            _rank2(s, np.zeros_like(s), wv, wv, out=G)
            G *= g2[a:z]
            u = G @ _ones(n, G.dtype)
            c = np.einsum("ij,ij->i", G, base[a:z])
            c -= sh * u
            c *= s
            c *= s
            c /= n
            u /= n
            d = sh * c
            d -= u
            t = base[a:z] * c[:, None]
            t -= d[:, None]
            G -= t

        _threads.run(rows, _threads.chunks(r, _WORK * base.size))
        return gx
    return _standardize_rule(m, g if w is None else g * w, None, x, axes=axes, eps=eps)


def _ln_vjp_w(m, g, out, x, w, b, *, axes, eps):
    if m is NUMPY and out.__class__ is tuple:
        base, shift, rstd = out
        g2 = g.reshape(base.shape)
        shifted = bool(shift.any())

        def rows(a, z):  # this block of rows' part of the sum over rows
            part = rstd[a:z] @ (g2[a:z] * base[a:z])
            if shifted:
                part -= (shift[a:z] * rstd[a:z]) @ np.ascontiguousarray(g2[a:z])
            return part

        gw = sum(_threads.run(rows, _threads.chunks(base.shape[0], _WORK * base.size)))
        return gw if gw.shape == w.shape else gw.reshape(w.shape)
    xhat = m.standardize(x, axes=axes, eps=eps)
    return m.sum(g * xhat, axis=_lead(x, axes))


def _ln_vjp_b(m, g, out, x, w, b, *, axes, eps):
    if m is NUMPY and out.__class__ is tuple:
        g2 = g.reshape(out[0].shape)
        if g2.flags.c_contiguous:
            def rows(a, z):
                return _ones(z - a, g.dtype) @ g2[a:z]
            gb = sum(_threads.run(rows, _threads.chunks(g2.shape[0], _WORK * g2.size)))
        else:  # a broadcast g: BLAS would copy it first
            gb = np.add.reduce(g2, axis=0)
        return gb if gb.shape == b.shape else gb.reshape(b.shape)
    return m.sum(g, axis=_lead(x, axes))


def _param_tangent(m, t, x, p):
    """A weight's or bias's tangent (maybe with leading batch dimensions) lined up with x."""
    lead = t.ndim - p.ndim
    if lead and x.ndim > p.ndim:
        t = m.reshape(t, shape=t.shape[:lead] + (1,) * (x.ndim - p.ndim) + p.shape)
    return t


def _ln_jvp_x(m, t, out, x, w, b, *, axes, eps):
    t = _standardize_rule(m, t, None, x, axes=axes, eps=eps)
    return t if w is None else t * w


def _ln_jvp_w(m, t, out, x, w, b, *, axes, eps):
    return _param_tangent(m, t, x, w) * m.standardize(x, axes=axes, eps=eps)


def _ln_jvp_b(m, t, out, x, w, b, *, axes, eps):
    batch = t.shape[:t.ndim - b.ndim]
    return m.expand(_param_tangent(m, t, x, b), shape=batch + x.shape)


layer_norm = defop(
    "layer_norm", _layer_norm, (_ln_vjp_x, _ln_vjp_w, _ln_vjp_b),
    (_ln_jvp_x, _ln_jvp_w, _ln_jvp_b),
    saving=_layer_norm_saving, reads=(0, 1), fresh=True, tuned=True, fresh_vjps=True)
