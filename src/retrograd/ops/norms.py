"""Normalisation: `standardize`, (x - mean) / sqrt(var + eps) over some axes, and
`pnorm`, the vector p-norm (sum |x|^p)^(1/p) with PyTorch's zero gradient at 0.

One node instead of the eight a composition makes (mean, subtract, square, mean,
add, sqrt, divide and their broadcasts). LayerNorm, GroupNorm (after a reshape)
and BatchNorm in training mode (over all axes but the channel) are this op
followed by the affine scale and shift.

The Jacobian is symmetric, rstd * (I - 11'/n - xhat xhat'/n) on each group, so
the vjp and the jvp are one rule. When the forward ran for a recorded node it
hands the backward `(xhat, rstd)` (`saving`); a recorded backward (create_graph,
rg.jit) recomputes both with ops, so it is differentiable again.
"""

from __future__ import annotations

import math

import numpy as np

from ..devices import namespace_of as _ns
from ..primitive import defop
from .reductions import _neg_axes, expand_back, keep


def _count(shape, axes) -> int:
    return math.prod(shape[a] for a in axes)


def _stats(x, axes, eps, zero=False):
    n = _count(x.shape, axes)
    if x.dtype.kind == "f" and sorted(axes) == list(range(-len(axes), 0)) and x.size \
            and x.flags.c_contiguous:
        return _row_stats(x, len(axes), n, eps, zero)
    mu = np.add.reduce(x, axis=axes, keepdims=True)
    mu /= n
    xc = x - mu
    var = np.add.reduce(xc * xc, axis=axes, keepdims=True)
    var /= n
    var += eps
    rstd = _rstd(var, zero)
    xc *= rstd
    return xc, rstd


def _rstd(var, zero):
    """1 / sqrt(var) in var's memory; with `zero`, 0 where var is 0."""
    rstd = np.sqrt(var, out=var)
    np.divide(1.0, rstd, out=rstd, where=(rstd != 0) if zero else True)
    return rstd


def _row_stats(x, k, n, eps, zero=False):
    """`_stats` over the last `k` axes of a contiguous array, as rows of `n`: the row sums
    are BLAS products (a ufunc reduction over short rows is several times slower)."""
    rows = x.reshape(-1, n)
    mu = rows @ _ns(x).ones(n, dtype=x.dtype)
    mu /= n
    out = _ns(x).empty(x.shape, x.dtype)  # the result owns its memory (not a reshape of a
    xc = out.reshape(-1, n)               # temporary), so rg.jit lets an in-place write in
    np.subtract(rows, mu[:, None], out=xc)
    var = np.einsum("ij,ij->i", xc, xc)
    var /= n
    var += eps
    rstd = _rstd(var, zero)
    xc *= rstd[:, None]
    return out, rstd.reshape(x.shape[:x.ndim - k] + (1,) * k)


def _standardize(x, *, axes, eps, zero=False):
    return _stats(x, axes, eps, zero)[0]


def _standardize_saving(x, *, axes, eps, zero=False):
    xhat, rstd = _stats(x, axes, eps, zero)
    return xhat, (xhat, rstd)


def _standardize_rule(m, g, out, x, *, axes, eps, zero=False):
    """rstd * (g - mean(g) - xhat * mean(g * xhat)) over `axes` (negative: counted from the
    end, so a tangent with leading batch dimensions reduces the same groups)."""
    n = _count(x.shape, axes)
    if isinstance(out, tuple):  # what the forward saved
        xhat, rstd = out
    else:
        xc = x - m.sum(x, axis=axes, keepdims=True) / n
        var = m.sum(xc * xc, axis=axes, keepdims=True) / n + eps
        if zero:  # rstd 0 where var is 0 (see `standardize`), with no sqrt taken at 0 (its
            flat = var == 0  # derivative there would make the second-order terms NaN)
            rstd = m.where(flat, 0.0, 1.0 / m.sqrt(m.where(flat, 1.0, var)))
        else:
            rstd = 1.0 / m.sqrt(var)
        xhat = xc * rstd
    mg = m.sum(g, axis=axes, keepdims=True) / n
    mgx = m.sum(g * xhat, axis=axes, keepdims=True) / n
    return (g - mg - xhat * mgx) * rstd


standardize = defop("standardize", _standardize, (_standardize_rule,), (_standardize_rule,),
                    saving=_standardize_saving, fresh=True)
"""`zero=True`: a group whose var + eps is 0 (constant, with eps 0) gives 0 and a zero
gradient rather than NaN, as PyTorch's batch-norm kernel (batch_norm in training,
instance_norm) takes its inverse deviation as 0 there; layer and group norm give NaN."""


# ---------------------------------------------------------------- p-norms

def _pnorm(x, *, p, axis=None, keepdims=False):
    if p == 2:
        return np.sqrt(np.add.reduce(x * x, axis=axis, keepdims=keepdims))
    a = np.abs(x)
    return np.add.reduce(a ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def _pnorm_local(m, out, x, p, axis, keepdims):
    """d norm / d x = sign(x) |x|^(p-1) / norm^(p-1), and 0 where the norm is 0 (x is all
    zeros there, so only the denominator needs guarding) and, for p < 1, where x is 0,
    as in PyTorch."""
    nk = keep(m, out, x.shape, axis, keepdims)
    safe = nk + (nk == 0)
    if p == 2:
        return x / safe
    if p < 1:  # |x|^(p-1) is infinite at x = 0, where PyTorch's gradient is 0
        zero = x == 0
        a = m.where(zero, 1.0, m.abs(x))
        return m.where(zero, 0.0, m.sign(x) * a ** (p - 1) / safe ** (p - 1))
    return m.sign(x) * m.abs(x) ** (p - 1) / safe ** (p - 1)


pnorm = defop(
    "pnorm", _pnorm,
    (lambda m, g, out, x, *, p, axis=None, keepdims=False: expand_back(
        m, g, x.shape, axis, keepdims) * _pnorm_local(m, out, x, p, axis, keepdims),),
    (lambda m, t, out, x, *, p, axis=None, keepdims=False: m.sum(
        t * _pnorm_local(m, out, x, p, axis, keepdims), axis=_neg_axes(axis, x.ndim),
        keepdims=keepdims),),
    save_out=True)
