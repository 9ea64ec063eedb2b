"""Optimizer updates as ops (forward only, no gradient): under `rg.jit` a parameter's
Adam step is three traced nodes (the two moments and the update, which reads the step
count) instead of a dozen element-wise nodes and the bias corrections' 0-d arithmetic,
each a generated line and a NumPy call. Each op can write into a given array (`into`):
the jit hands it the old moment's or parameter's own buffer when nothing reads that
value afterwards, so the step updates them in place with no copy back.

`adam_exp_avg(m, d, weight=)` is torch.lerp(m, d, weight) branch for branch (Adam's first
moment, weight = 1 - beta1); `adam_exp_avg_sq(v, d, beta=)` is v beta + (1 - beta) d d;
`adam_apply(x, m, v, step, lr=, beta1=, beta2=, eps=, decay=)` is the parameter after
one Adam step, given the already updated moments m and v (or AMSGrad's running maximum
as v) and the already incremented 0-d step count:

    x * decay - lr / (1 - beta1^t) * (m / (sqrt(v) / sqrt(1 - beta2^t) + eps))

with PyTorch's operations in its order, each rounded to x's dtype (the factors are
Python floats, made in double precision as PyTorch makes them). Eager Adam calls the
same functions on its arrays in place. With the compiled kernels (`kernels.updates`)
each is one exact loop, equal bit for bit to the NumPy path.
"""

from __future__ import annotations

import math

import numpy as np

from .. import kernels
from ..devices import namespace_of as _ns
from ..primitive import defop

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _compiled(loop, out, src, *others) -> bool:
    """Whether the compiled `loop` applies: host arrays of one float dtype and shape,
    C-contiguous, and no array it reads (`others`) overlapping `out`, which it writes
    after copying `src` into it (cheap checks first: this runs for every parameter; a
    small parameter takes the loop once a large one has compiled it)."""
    dt = out.dtype
    if (dt is not _F32 and dt is not _F64) or out.__class__ is not np.ndarray \
            or not kernels.enabled(out.size, loop):
        return False
    shape = out.shape
    for a in (out, src) + others:
        if (a.__class__ is not np.ndarray or a.dtype is not dt or a.shape != shape
                or not a.flags.c_contiguous):
            return False
    for a in others:  # two arrays that own their memory are disjoint unless one
        if a is out or (a.base is not None or out.base is not None) and \
                np.may_share_memory(a, out):
            return False
    return True


_KERNELS: list = []


def _k():
    """The compiled loops' module, imported on first use (it imports Numba lazily)."""
    if not _KERNELS:
        from ..kernels import updates
        _KERNELS.append(updates)
    return _KERNELS[0]


def lerp_(m, d, weight: float, out) -> None:
    """out = torch.lerp(m, d, weight) (weight a Python float), branch for branch."""
    weight = float(weight)  # a float32 NumPy scalar (Tensor betas): torch's double weight
    low = weight < 0.5
    f = weight if low else 1.0 - weight
    K = _k()
    if _compiled(K.lerp_, out, m, d):
        if out is not m:
            np.copyto(out, m)
        K.lerp_(out, d, weight)
        return
    t = d - m
    t *= f
    if low:
        _ns(out).add(m, t, out=out)
    else:
        _ns(out).subtract(d, t, out=out)


def square_avg_(v, d, beta: float, out) -> None:
    """out = v beta + (1 - beta) d d (Adam's second moment)."""
    w = 1.0 - beta  # (in float32 for a float32 NumPy beta, as torch's 1 - beta Tensor)
    K = _k()
    if isinstance(beta, float) and _compiled(K.square_avg_, out, v, d):
        if out is not v:
            np.copyto(out, v)
        K.square_avg_(out, d, beta)
        return
    t = w * d
    t *= d
    _ns(out).multiply(v, beta, out=out)
    out += t


def adam_update_(x, m, v, t: float, *, lr: float, beta1: float, beta2: float,
                 eps: float, decay: float = 1.0, out=None) -> None:
    """out (default x) = x decay - lr / (1 - beta1^t) * (m / (sqrt(v) / sqrt(1 - beta2^t)
    + eps)): eager Adam's update (in place on x) and the op's."""
    out = x if out is None else out
    K = _k()
    if isinstance(lr, (float, int)) and type(beta1) is float and type(beta2) is float \
            and _compiled(K.adam_apply_, out, x, m, v):
        # (a float32 lr, from a Tensor lr: the step size is rounded to float32, as torch)
        if out is not x:
            np.copyto(out, x)
        K.adam_apply_(out, m, v, t, lr, beta1, beta2, eps, decay)
        return
    bc1 = 1 - _pow(beta1, t)
    if isinstance(bc1, np.floating) and isinstance(lr, (float, int)):
        step_size = (1 / bc1) * lr  # torch's number / Tensor is reciprocal() * number
    else:
        step_size = lr / bc1
    bc2 = 1 - _pow(beta2, t)  # float32 for a float32 NumPy beta2 (Tensor betas), as torch's
    bc2_sqrt = math.sqrt(bc2) if isinstance(bc2, float) else np.sqrt(bc2)
    if decay != 1.0:
        _ns(out).multiply(x, decay, out=out)
    elif out is not x:
        out[...] = x
    denom = _ns(v).sqrt(v, out=_like(v))  # an array even for a 0-d v (NumPy gives a scalar)
    denom /= bc2_sqrt
    denom += eps
    _ns(m).divide(m, denom, out=denom)
    denom *= step_size
    out -= denom


def _pow(b, t: float):
    """b ** t; for a NumPy scalar b (a Tensor beta) as torch's Tensor ** number, whose
    kernel computes the cube as b * b * b (two roundings in float32)."""
    if isinstance(b, np.floating) and t == 3.0:
        return b * b * b
    return b ** t


def _like(a):
    return _ns(a).empty_like(a)


def _exp_avg(m, d, *, weight, out=None):
    out = _like(m) if out is None else out
    lerp_(m, d, weight, out)
    return out


def _exp_avg_sq(v, d, *, beta, out=None):
    out = _like(v) if out is None else out
    square_avg_(v, d, beta, out)
    return out


def _adam_apply(x, m, v, step, *, lr, beta1, beta2, eps, decay, out=None):
    out = _like(x) if out is None else out
    adam_update_(x, m, v, float(step), lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                 decay=decay, out=out)
    return out


def _disjoint(*arrays) -> bool:
    """Whether no two of the arrays share memory (arrays that own theirs are disjoint
    unless they are the same one)."""
    for i, a in enumerate(arrays):
        for b in arrays[i + 1:]:
            if a is b or (a.base is not None or b.base is not None) and \
                    np.may_share_memory(a, b):
                return False
    return True


def adam_step_(x, d, m, v, t: float, *, lr: float, beta1: float, beta2: float, eps: float,
               decay: float = 1.0) -> None:
    """One Adam step in place on the arrays x, m, v with gradient d (moments as
    `lerp_` and `square_avg_`, then `adam_update_`); one compiled pass when it can."""
    K = _k()
    if _compiled(K.adam_step_, x, x, m, v, d) and _disjoint(m, v, d) \
            and isinstance(lr, (float, int)) and type(beta1) is float \
            and type(beta2) is float:  # x: by _compiled; Tensor lr or betas: see above
        K.adam_step_(x, d, m, v, t, lr, beta1, beta2, eps, decay)
        return
    lerp_(m, d, 1.0 - beta1, m)
    square_avg_(v, d, beta2, v)
    adam_update_(x, m, v, t, lr=lr, beta1=beta1, beta2=beta2, eps=eps, decay=decay)


def _adam_step(x, d, m, v, step, *, lr, beta1, beta2, eps, decay, out=None):
    """(x', m', v') after one Adam step; `out` gives a buffer (or None) for each, e.g. the
    inputs themselves (the jit's donations)."""
    ox, om, ov = (None, None, None) if out is None else out
    factors = dict(lr=lr, beta1=beta1, beta2=beta2, eps=eps, decay=decay)
    if ox is x and om is m and ov is v:
        adam_step_(x, d, m, v, float(step), **factors)
        return x, m, v
    om = _like(m) if om is None else om
    ov = _like(v) if ov is None else ov
    lerp_(m, d, 1.0 - beta1, om)
    square_avg_(v, d, beta2, ov)
    ox = _like(x) if ox is None else ox
    adam_update_(x, om, ov, float(step), out=ox, **factors)
    return ox, om, ov


adam_exp_avg = defop("adam_exp_avg", _exp_avg, into=_exp_avg)
adam_exp_avg_sq = defop("adam_exp_avg_sq", _exp_avg_sq, into=_exp_avg_sq)
adam_apply = defop("adam_apply", _adam_apply, into=_adam_apply)
adam_step = defop("adam_step", _adam_step, into=_adam_step, donates=(0, 2, 3))
