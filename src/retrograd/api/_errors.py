"""Exceptions for bad arguments, PyTorch's way.

PyTorch raises RuntimeError (or NotImplementedError, one of its subclasses) for
problems that Python would call a TypeError or a ValueError. Each class here is
both, so `except RuntimeError` in ported code and `except TypeError` /
`except ValueError` in Python code catch the same error.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import ValueOverflowError, int_in_range  # noqa: F401  (re-exported)
from ..primitive import ArgumentError, DtypeError, ShapeError  # noqa: F401  (defined in the core)


class UnsupportedArgumentError(ArgumentError, NotImplementedError):
    """A combination of arguments PyTorch has no implementation for (interpolate's mode for
    an input of that many dimensions): its NotImplementedError, and the ValueError /
    RuntimeError of a bad argument."""


class ArgumentTypeError(TypeError, RuntimeError):
    """An argument of the wrong kind where PyTorch raises RuntimeError (a float thread
    count, a bool alpha for a numeric result)."""


class IndexRangeError(IndexError, RuntimeError):
    """An index out of range in gather, scatter, index_select, index_add, ...: PyTorch's
    RuntimeError there (IndexError where it indexes with []), so this is both."""


class IndexDtypeError(TypeError, RuntimeError):
    """A floating (or other non-integer) index where an integer tensor is needed: PyTorch
    raises RuntimeError ('Expected dtype int32/int64 for index'); this is also a TypeError."""


class EmptyDimError(IndexError, ValueError, RuntimeError):
    """A reduction with no identity (max, median, mode, kthvalue, arg*) along a dimension
    of size 0: PyTorch's IndexError, and the RuntimeError/ValueError older code catches."""


def empty_dim(fn: str, dim, shape) -> EmptyDimError:
    """The error for `fn` reducing dimension `dim` of size 0, in PyTorch's words."""
    return EmptyDimError(f"{fn}(): Expected reduction dim {dim} to have non-zero size "
                         f"(the input has shape {tuple(shape)})")


class MixedDtypeError(ArgumentTypeError):
    """Tensors of different dtypes where PyTorch wants one (a layer's input and its
    weights): a RuntimeError there, never a silent promotion here."""




def scalar_as(value, dtype: np.dtype, fn: str) -> np.ndarray:
    """A Python number as a 0-d array of `dtype`, by PyTorch's checked conversion of a fill
    value: refused (ValueOverflowError) where `dtype` cannot hold it (an integer or a float
    beyond an integer dtype's range, a NaN for one, a finite float beyond a float dtype's
    range, a complex number with an imaginary part for a real dtype), instead of NumPy's
    wraparound, inf or dropped imaginary part. Bool takes any number (nonzero: True)."""
    kind = dtype.kind
    if kind == "b" or isinstance(value, (bool, np.bool_)):
        return np.asarray(value != 0 if kind == "b" else value).astype(dtype)
    if isinstance(value, (complex, np.complexfloating)) and kind != "c":
        if value.imag != 0:
            raise _no_fit(value, dtype, fn)
        value = value.real
    if kind in "iu":
        if not isinstance(value, (int, np.integer)):
            info = np.iinfo(dtype)
            if not info.min <= value <= info.max:  # NaN too; for a float, no wraparound
                raise _no_fit(value, dtype, fn)
            value = int(value)  # toward zero, as PyTorch truncates
        value = int_in_range(int(value), dtype, fn)
    elif kind == "f":
        try:
            big = np.isfinite(value) and abs(float(value)) > float(np.finfo(dtype).max)
        except OverflowError:  # an int beyond any float
            big = True
        if big:
            raise _no_fit(value, dtype, fn)
    return np.asarray(value).astype(dtype)


def _no_fit(value, dtype: np.dtype, fn: str) -> ValueOverflowError:
    return ValueOverflowError(f"{fn}: value {value!r} cannot be converted to type "
                              f"{np.dtype(dtype)} without overflow")


def check_broadcast(name: str, x, y) -> None:
    """Raise ShapeError naming both shapes if `x` and `y` (tensors, arrays, numbers or
    lists) do not broadcast. For an operator's error path: called after NumPy refused
    them, so the fast path pays nothing."""
    sx = tuple(x.shape) if hasattr(x, "shape") else np.shape(x)
    sy = tuple(y.shape) if hasattr(y, "shape") else np.shape(y)
    try:
        np.broadcast_shapes(sx, sy)
    except ValueError:
        raise ShapeError(f"{name}(): shapes {sx} and {sy} do not broadcast") from None


ArgumentDtypeError = DtypeError  # the names the first users of this module gave them
ArgumentValueError = ArgumentError
