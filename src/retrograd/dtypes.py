"""Dtypes, the default float dtype, and turning user data into arrays.

This module and `creation.py` are the places that create arrays from user data;
the op table creates the rest.
"""

from __future__ import annotations

import numpy as np

float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int64 = np.dtype(np.int64)
bool_ = np.dtype(np.bool_)

_default = [float32]


def get_default_dtype() -> np.dtype:
    """The dtype that Python floats and lists of floats become (float32 unless changed)."""
    return _default[0]


def set_default_dtype(dtype) -> None:
    """Change the default float dtype (float32 or float64)."""
    dt = np.dtype(dtype)
    if dt.kind != "f":
        raise TypeError(f"default dtype must be a floating dtype, got {dt}")
    _default[0] = dt


def is_float(dtype: np.dtype) -> bool:
    """True for dtypes that may carry gradients (real or complex floating)."""
    return dtype.kind in "fc"


def as_array(data, dtype=None) -> np.ndarray:
    """Turn Python numbers, nested lists and NumPy arrays into an ndarray.

    Python floats become the default dtype, ints int64 and bools bool; NumPy
    arrays keep their dtype unless `dtype` is given.
    """
    if dtype is not None:
        return np.array(data, dtype=np.dtype(dtype))
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, np.generic):
        return np.asarray(data)
    arr = np.asarray(data)
    kind = arr.dtype.kind
    if kind == "f":
        return arr.astype(_default[0], copy=False)
    if kind == "i" or kind == "u":
        return arr.astype(np.int64, copy=False)
    if kind in "bc":
        return arr
    raise TypeError(
        f"cannot make a tensor from {type(data).__name__} (NumPy dtype {arr.dtype}); "
        "expected numbers, nested lists of numbers or a NumPy array"
    )
