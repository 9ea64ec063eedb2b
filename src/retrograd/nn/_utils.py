"""Helpers shared by the layers: argument pairs and a layer's weight and bias."""

from __future__ import annotations

import numpy as np

from ..dtypes import get_default_dtype
from ..primitive import ArgumentError
from .module import Module, Parameter


def _dtype(dtype):
    return get_default_dtype() if dtype is None else np.dtype(dtype)


def _weight_and_bias(layer: Module, shape: tuple, bias: bool, dtype) -> None:
    """A layer's `weight` of `shape` and `bias` (one per output, or None), initialised."""
    dt = _dtype(dtype)
    layer.weight = Parameter(np.empty(shape, dtype=dt))
    if bias:
        layer.bias = Parameter(np.empty(shape[0], dtype=dt))
    else:
        layer.register_parameter("bias", None)
    layer.reset_parameters()


def _pair(v, name: str) -> tuple[int, int]:
    if isinstance(v, (int, np.integer)):
        return (int(v), int(v))
    t = tuple(int(a) for a in v)
    if len(t) != 2:
        raise ArgumentError(f"{name} must be an int or a pair of ints, got {v!r}")
    return t
