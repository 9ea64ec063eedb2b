"""Argument handling shared by the functional API: PyTorch's `dim`/`keepdim` and
NumPy's `axis`/`keepdims`, checked once, with errors naming the function."""

from __future__ import annotations

import builtins
import math

import numpy as np

from ..tensor import Tensor, as_tensor


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor(x)


def _dims(dim, axis, ndim, name):
    if dim is not None and axis is not None:
        raise TypeError(f"{name}() got both 'dim' and 'axis'; pass one of them")
    d = dim if dim is not None else axis
    if d is None:
        return None
    items = tuple(d) if isinstance(d, (tuple, list)) else (d,)
    out = []
    for a in items:
        if not isinstance(a, (int, np.integer)):
            raise TypeError(f"{name}(): dim must be an int or a tuple of ints, got {a!r}")
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1):
            raise IndexError(f"{name}(): dim {a} is out of range for a tensor with {ndim} "
                             "dimension(s)")
        out.append(int(a) % builtins.max(ndim, 1))
    if len(set(out)) != len(out):
        raise ValueError(f"{name}(): dim {d} repeats a dimension")
    return out[0] if isinstance(d, (int, np.integer)) else tuple(out)


def _keep(keepdim, keepdims):
    return bool(keepdims) if keepdims is not None else bool(keepdim)


def _count(shape, axis):
    if axis is None:
        return math.prod(shape)
    axes = axis if isinstance(axis, tuple) else (axis,)
    return math.prod(shape[a] for a in axes)


