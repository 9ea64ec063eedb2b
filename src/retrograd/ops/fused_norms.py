"""Fused normalisation layers: `layer_norm`, (x - mean) / sqrt(var + eps) * weight + bias
over the trailing axes, as one node with NumPy fast paths (the other file, besides
`fused.py`, where a rule asks `m is NUMPY`).

The fast forward works on rows of the trailing size n: the row means are BLAS
products with ones, the sums of squares NumPy's vecdot, and the per-row scale times
the weight is one rank-2 matrix product (an outer product rstd w', which NumPy's
broadcasting would make as a slow per-row loop). It hands its backward the rows, the
mean to take off them and rstd (`saving`), from which the three vjps are a few passes:

    dx = rstd (gw - mean(gw) - xhat mean(gw xhat)),   gw = g * weight
    dweight = sum over rows of g xhat,   dbias = sum over rows of g

The x rule makes all three in one hand-off to the threads, while g's rows are at hand,
and leaves the parameters' two for their rules. A g that is one row repeated (what
`sum` and `mean` send back) makes the rules a few products with that row.

With compiled kernels on (`retrograd.kernels`, for float32/float64 inputs of at least
its size) the forward and the backward are instead one kernel call per thread piece
(`kernels.norms`): the statistics, centred within each row, and the output in one loop
nest per row; dx and the piece's dweight/dbias partials in another. Its saving is the
rows, their means and rstd, with the stash marked "kernel": every backward of that
forward then takes the kernel too (the uncentred rows would cancel in the NumPy
formulas), a repeated-row g included (read as one row), and so do the weight's and
bias's rules when the x rule did not run (the first leaves the other's for it).

Every rule also has a generic path (`m` other than NUMPY, or no saved rows) in
terms of `standardize`, so a recorded backward (create_graph, rg.jit) and the jvps
are differentiable again.
"""

from __future__ import annotations

import weakref

import numpy as np

from .. import kernels as _kernels
from .. import threads as _threads
from ..kernels import norms as _knorms
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


if hasattr(np, "vecdot"):
    def _rowdot(a, b, out) -> None:
        """Each row's dot product of two (r, n) arrays, into out (NumPy 2's vecdot: a BLAS
        dot per row, about half einsum's time)."""
        np.vecdot(a, b, out=out)
else:  # NumPy 1.x
    def _rowdot(a, b, out) -> None:
        """Each row's dot product of two (r, n) arrays, into out."""
        np.einsum("ij,ij->i", a, b, out=out)


def _ln_output(out, rows, s, shift, wv, bv) -> None:
    """out = (rows - shift) * s * w + b for a block of rows (s, shift per row; shift and b
    may be None) = rows * (s w') + (-shift s w' + 1 b'): the two rank-2 factors as BLAS
    products (NumPy's per-row broadcast is slower)."""
    r, n = out.shape
    _rank2(s, np.zeros_like(s), wv, wv, out=out)
    out *= rows
    if shift is not None or bv is not None:
        c = np.zeros_like(s) if shift is None else np.negative(shift * s)
        out += _rank2(c, _ones(r, out.dtype), wv, np.zeros(n, out.dtype) if bv is None else bv,
                      (r, n))


def _compiled(x) -> bool:
    """Whether the compiled kernels take this (fast-path) input."""
    return x.dtype in _KERNEL_DTYPES and _kernels.enabled(x.size)


_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _ln_rows_compiled(x, w, b, axes, eps):
    """_ln_rows by the compiled forward: (y, (rows, mean, rstd, {"kernel": True}))."""
    n = _count(x.shape, axes)
    rows_in = np.ascontiguousarray(x).reshape(-1, n)
    r, dt = rows_in.shape[0], x.dtype
    mu, rstd = np.empty(r, dt), np.empty(r, dt)
    wv = _ones(n, dt) if w is None else w.reshape(-1)
    bv = np.zeros(n, dt) if b is None else b.reshape(-1)
    y = np.empty(x.shape, dt)
    y2 = y.reshape(r, n)

    def piece(a, z):
        _knorms.layer_norm_forward(rows_in[a:z], wv, bv, eps, y2[a:z], mu[a:z], rstd[a:z])

    _threads.run(piece, _threads.chunks(r, _WORK * rows_in.size))
    return y, (rows_in, mu, rstd, {"kernel": True})


def _ln_rows(x, w, b, axes, eps):
    """(y, (base, shift, rstd, stash)): the output; the rows (r, n) of x, or of x - mean
    when some row's mean is large against its spread; the mean to take off `base` (None
    when base is centred); each row's 1/std; a dict where the x rule leaves the parameters'
    gradients for their rules. Rows are split over the intra-op threads in one hand-off:
    each piece takes its rows' one-pass statistics and writes their output, unless some
    row needs centring (rare), when every row is centred in a second hand-off."""
    if _compiled(x):
        return _ln_rows_compiled(x, w, b, axes, eps)
    n = _count(x.shape, axes)
    rows_in = np.ascontiguousarray(x).reshape(-1, n)
    r, dt = rows_in.shape[0], x.dtype
    pieces = _threads.chunks(r, _WORK * rows_in.size)
    mu, rstd = np.empty(r, dt), np.empty(r, dt)
    wv = _ones(n, dt) if w is None else w.reshape(-1)
    bv = None if b is None else b.reshape(-1)
    y = np.empty(x.shape, dt)
    y2 = y.reshape(r, n)
    one = _ones(n, dt)

    def rstd_of(s):  # variance to 1/std, in place
        s += eps
        np.sqrt(s, out=s)
        np.divide(1.0, s, out=s)

    def one_pass(a, z):
        rows, m, s = rows_in[a:z], mu[a:z], rstd[a:z]
        np.matmul(rows, one, out=m)
        m /= n
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: centred below
            _rowdot(rows, rows, s)
            s /= n
            msq = m * m
            s -= msq  # the variance, E[x^2] - mean^2
        np.maximum(s, 0.0, out=s)
        if not (msq <= _SPREAD * s).all():  # it would cancel (or overflowed to nan:
            return False  # inf - inf): centre first (every row)
        rstd_of(s)
        _ln_output(y2[a:z], rows, s, m, wv, bv)
        return True

    if all(_threads.run(one_pass, pieces)):
        return y, (rows_in, mu, rstd, {})
    base = np.empty_like(rows_in)

    def centred(a, z):
        rows, s = base[a:z], rstd[a:z]
        np.subtract(rows_in[a:z], mu[a:z, None], out=rows)
        with np.errstate(over="ignore"):  # an inf variance: rstd 0, as PyTorch's
            _rowdot(rows, rows, s)
        s /= n
        rstd_of(s)
        _ln_output(y2[a:z], rows, s, None, wv, bv)

    _threads.run(centred, pieces)
    return y, (base, None, rstd, {})


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


def _rows_of(g, base):
    """g as (r, n) rows, and whether every row is the same one (g broadcast over the rows,
    as `sum` and `mean` send it): then the rules work with that one row."""
    g2 = g.reshape(base.shape)
    if g2.strides[0] == 0:
        return g2, True
    return (g2 if g2.flags.c_contiguous else np.ascontiguousarray(g2)), False


def _ln_grads_compiled(g, out, w, shape):
    """_ln_grads by the compiled backward (a forward saved by the compiled kernel): dx
    (None when `shape` is None: only the parameters' gradients) and (dweight, dbias), the
    latter the sums of each thread piece's partials."""
    base, mu, rstd, _ = out
    r, n = base.shape
    dt = base.dtype
    wv = _ones(n, dt) if w is None else w.reshape(-1)
    g2, same = _rows_of(g, base)
    step = 0 if same else 1
    if same:
        g2 = g2[:1]
    g2 = np.ascontiguousarray(g2, dtype=dt)
    gx = None if shape is None else np.empty(shape, dt)
    d2 = np.empty((0, n), dt) if gx is None else gx.reshape(r, n)

    def piece(a, z):
        pw, pb = np.zeros(n, dt), np.zeros(n, dt)
        _knorms.layer_norm_backward(base[a:z], mu[a:z], rstd[a:z], wv, g2[a:z] if step else g2,
                                    step, d2 if gx is None else d2[a:z], pw, pb)
        return pw, pb

    parts = _threads.run(piece, _threads.chunks(r, _WORK * base.size))
    pw, pb = parts[0]
    for p, q in parts[1:]:
        pw += p
        pb += q
    return gx, (pw, pb)


def _ln_grads(g, out, w, shape):
    """The fast backward, rows split over the threads: dx and this g's (dweight, dbias),
    made in the same hand-off while g's rows are at hand (BLAS calls are held to one
    thread only inside a hand-off; outside it, a threaded BLAS would compete with ours).

    With xc = base - shift, u = sum(g w) and c = rstd sum(g w xc) per row,
    dx = rstd g w + alpha base + beta, alpha = -rstd^2 c / n, beta = -rstd u / n - shift alpha;
    dweight = rstd @ (g base) - (rstd shift) @ g, dbias = ones @ g."""
    base, shift, rstd, _ = out
    r, n = base.shape
    dt = base.dtype
    wv = _ones(n, dt) if w is None else w.reshape(-1)
    gx = np.empty(shape, dt)  # not a reshaped view: the engine would copy a view
    d2 = gx.reshape(r, n)
    g2, same = _rows_of(g, base)
    if same:  # one row of g: its products with w are one vector, u one number
        gw = g2[0] * wv
        u_all = gw.sum()

    def rows(a, z):
        bs, s, d = base[a:z], rstd[a:z], d2[a:z]
        sh = None if shift is None else shift[a:z]
        if same:
            v = bs @ gw
            u = np.full(z - a, u_all, dt)
            pw = s @ bs  # the column sums of xhat, times g's row below
            if sh is not None:
                pw -= s @ sh
        else:
            gs = g2[a:z]
            u = gs @ wv
            t = gs * bs
            v = t @ wv
            pw = s @ t
            if sh is not None:
                pw -= (s * sh) @ gs
            pb = _ones(z - a, dt) @ gs
        if sh is not None:
            v -= sh * u
        alpha = s * s
        alpha *= v
        alpha *= s
        alpha /= -n
        beta = np.multiply(s, u, out=u)
        beta /= -n
        if sh is not None:
            beta -= sh * alpha
        if same:
            _rank2(s, beta, gw, _ones(n, dt), out=d)  # rstd g w + beta, one BLAS product
            d += bs * alpha[:, None]
            return pw, None
        _rank2(s, np.zeros_like(s), wv, wv, out=d)  # rstd w', then times g
        d *= gs
        np.multiply(bs, alpha[:, None], out=t)
        t += beta[:, None]
        d += t
        return pw, pb

    parts = _threads.run(rows, _threads.chunks(r, _WORK * base.size))
    pw, pb = parts[0]
    for p, q in parts[1:]:
        pw += p
        if not same:
            pb += q
    if same:
        pw *= g2[0]
        pb = g2[0] * r
    return gx, (pw, pb)


def _ln_vjp_x(m, g, out, x, w, b, *, axes, eps):
    if m is NUMPY and out.__class__ is tuple:
        grads = _ln_grads_compiled if "kernel" in out[3] else _ln_grads
        gx, params = grads(g, out, w, x.shape)
        ref = weakref.ref(g)  # for the weight's and bias's rules, with this g
        out[3]["w"], out[3]["b"] = (ref, params[0]), (ref, params[1])
        return gx
    return _standardize_rule(m, g if w is None else g * w, None, x, axes=axes, eps=eps)


def _param_grad(g, out, which):
    """dweight (which 0) or dbias (1) for this g: left by the x rule, else computed here."""
    hit = out[3].pop("wb"[which], None)
    if hit is not None and hit[0]() is g:
        return hit[1]
    if "kernel" in out[3]:  # both in one pass; the other rule's is left for it
        params = _ln_grads_compiled(g, out, None, None)[1]  # w only enters dx
        out[3]["bw"[which]] = (weakref.ref(g), params[1 - which])
        return params[which]
    base, shift, rstd, _ = out
    g2, same = _rows_of(g, base)
    if same:  # g's one row times the column sums of xhat, or the number of rows
        if which == 1:
            return g2[0] * base.shape[0]
        col = rstd @ base
        if shift is not None:
            col -= rstd @ shift
        return g2[0] * col
    if which == 1:
        return _ones(base.shape[0], base.dtype) @ g2
    gw = rstd @ (g2 * base)
    if shift is not None:
        gw -= (rstd * shift) @ g2
    return gw


def _ln_vjp_w(m, g, out, x, w, b, *, axes, eps):
    if m is NUMPY and out.__class__ is tuple:
        gw = _param_grad(g, out, 0)
        return gw if gw.shape == w.shape else gw.reshape(w.shape)
    xhat = m.standardize(x, axes=axes, eps=eps)
    return m.sum(g * xhat, axis=_lead(x, axes))


def _ln_vjp_b(m, g, out, x, w, b, *, axes, eps):
    if m is NUMPY and out.__class__ is tuple:
        gb = _param_grad(g, out, 1)
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
