"""Reductions: `rg.sum`, `rg.mean`, `rg.var`, `rg.max`, `rg.softmax`, ..."""

from __future__ import annotations

import builtins

import numpy as np

from .. import ops
from ..engine import apply
from ..tensor import Tensor
from ._args import _count, _dims, _keep, _t
from .elementwise import maximum, minimum, sqrt


def sum(x, dim=None, keepdim=False, *, axis=None, keepdims=None, dtype=None) -> Tensor:  # noqa: A001
    x = _t(x)
    if dtype is not None:
        x = x.to(dtype)
    elif x.dtype.kind in "bi":
        x = x.to(np.int64)
    return apply(ops.sum, x, axis=_dims(dim, axis, x.ndim, "sum"), keepdims=_keep(keepdim,
                                                                                   keepdims))


def mean(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    x = _t(x)
    if x.dtype.kind not in "fc":
        raise TypeError(f"mean() needs a floating tensor, got {x.dtype}; convert with .float()")
    ax = _dims(dim, axis, x.ndim, "mean")
    return apply(ops.sum, x, axis=ax, keepdims=_keep(keepdim, keepdims)) / _count(x.shape, ax)


def var(x, dim=None, keepdim=False, *, correction=None, unbiased=None, ddof=None, axis=None,
        keepdims=None) -> Tensor:
    """Variance; `correction=1` (Bessel) by default as in PyTorch."""
    x = _t(x)
    given = [c for c in (correction, ddof) if c is not None]
    if unbiased is not None:
        given.append(1 if unbiased else 0)
    if len(given) > 1:
        raise TypeError("var(): pass only one of 'correction', 'unbiased' and 'ddof'")
    corr = given[0] if given else 1
    ax = _dims(dim, axis, x.ndim, "var")
    n = _count(x.shape, ax)
    centred = x - apply(ops.sum, x, axis=ax, keepdims=True) / n
    ss = apply(ops.sum, centred * centred, axis=ax, keepdims=_keep(keepdim, keepdims))
    return ss / builtins.max(n - corr, 0)


def std(x, dim=None, keepdim=False, *, correction=None, unbiased=None, ddof=None, axis=None,
        keepdims=None) -> Tensor:
    return sqrt(var(x, dim, keepdim, correction=correction, unbiased=unbiased, ddof=ddof,
                    axis=axis, keepdims=keepdims))


def _extreme(op, name, x, dim, keepdim, axis, keepdims):
    if isinstance(dim, Tensor):  # torch.max(a, b) is the element-wise maximum
        return (maximum if name == "max" else minimum)(x, dim)
    x = _t(x)
    ax = _dims(dim, axis, x.ndim, name)
    if x.size == 0:
        raise RuntimeError(f"{name}(): cannot reduce an empty tensor of shape {x.shape}")
    return apply(op, x, axis=ax, keepdims=_keep(keepdim, keepdims))


def max(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:  # noqa: A001
    """Largest value (over `dim`); values only, use `argmax` for indices."""
    return _extreme(ops.max, "max", x, dim, keepdim, axis, keepdims)


def min(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:  # noqa: A001
    return _extreme(ops.min, "min", x, dim, keepdim, axis, keepdims)


def prod(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    x = _t(x)
    return apply(ops.prod, x, axis=_dims(dim, axis, x.ndim, "prod"),
                 keepdims=_keep(keepdim, keepdims))


def logsumexp(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    x = _t(x)
    return apply(ops.logsumexp, x, axis=_dims(dim, axis, x.ndim, "logsumexp"),
                 keepdims=_keep(keepdim, keepdims))


def softmax(x, dim=-1, *, axis=None) -> Tensor:
    x = _t(x)
    return apply(ops.softmax, x, axis=_dims(dim if axis is None else None, axis, x.ndim,
                                            "softmax"))


def log_softmax(x, dim=-1, *, axis=None) -> Tensor:
    x = _t(x)
    return apply(ops.log_softmax, x, axis=_dims(dim if axis is None else None, axis, x.ndim,
                                                "log_softmax"))


def argmax(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    x = _t(x)
    return apply(ops.argmax, x, axis=_dims(dim, axis, x.ndim, "argmax"),
                 keepdims=_keep(keepdim, keepdims))


def argmin(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    x = _t(x)
    return apply(ops.argmin, x, axis=_dims(dim, axis, x.ndim, "argmin"),
                 keepdims=_keep(keepdim, keepdims))


