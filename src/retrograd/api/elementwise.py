"""Element-wise functions: `rg.exp`, `rg.maximum`, `rg.where`, ..."""

from __future__ import annotations

import numpy as np

from .. import ops
from ..engine import apply, apply1
from ..tensor import Tensor, as_tensor
from ._args import _t


def exp(x) -> Tensor:
    return apply1(ops.exp, x if x.__class__ is Tensor else _t(x))


def log(x) -> Tensor:
    return apply1(ops.log, x if x.__class__ is Tensor else _t(x))


def log1p(x) -> Tensor:
    return apply1(ops.log1p, x if x.__class__ is Tensor else _t(x))


def sqrt(x) -> Tensor:
    return apply1(ops.sqrt, x if x.__class__ is Tensor else _t(x))


def abs(x) -> Tensor:  # noqa: A001 - the NumPy/PyTorch name
    return apply1(ops.abs, x if x.__class__ is Tensor else _t(x))


def sin(x) -> Tensor:
    return apply1(ops.sin, x if x.__class__ is Tensor else _t(x))


def cos(x) -> Tensor:
    return apply1(ops.cos, x if x.__class__ is Tensor else _t(x))


def tan(x) -> Tensor:
    return apply1(ops.tan, x if x.__class__ is Tensor else _t(x))


def tanh(x) -> Tensor:
    return apply1(ops.tanh, x if x.__class__ is Tensor else _t(x))


def sigmoid(x) -> Tensor:
    return apply1(ops.sigmoid, x if x.__class__ is Tensor else _t(x))


def relu(x) -> Tensor:
    return apply1(ops.relu, x if x.__class__ is Tensor else _t(x))


def sign(x) -> Tensor:
    return apply1(ops.sign, x if x.__class__ is Tensor else _t(x))


def maximum(x, y) -> Tensor:
    return apply(ops.maximum, _t(x), _t(y))


def minimum(x, y) -> Tensor:
    return apply(ops.minimum, _t(x), _t(y))


def clamp(x, min=None, max=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """Limit values to [min, max]; the gradient passes at the bounds themselves."""
    if min is None and max is None:
        raise ValueError("clamp() needs at least one of 'min' and 'max'")
    if min is not None and max is not None and min > max:
        raise ValueError(f"clamp(): min ({min}) is greater than max ({max})")
    return apply(ops.clamp, _t(x), lo=min, hi=max)


clip = clamp


def where(condition, x, y) -> Tensor:
    c = _t(condition)
    if c.dtype != np.bool_:
        raise TypeError(f"where(): condition must be a bool tensor, got {c.dtype}")
    return apply(ops.where, c, *_pair(x, y))


def _pair(x, y):
    """Two operands as tensors or Python numbers (numbers do not upcast a tensor)."""
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        x = as_tensor(x)
    return (x if isinstance(x, (Tensor, int, float, complex)) else as_tensor(x),
            y if isinstance(y, (Tensor, int, float, complex)) else as_tensor(y))


