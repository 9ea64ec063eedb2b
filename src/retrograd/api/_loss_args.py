"""Argument handling shared by the losses (`api/losses.py`, `api/margin_losses.py`,
`api/ctc.py`): PyTorch's `reduction` strings and deprecated `size_average`/`reduce`
flags, shape checks that name both shapes, and the reduction itself.

Errors are raised before any NumPy call. Where PyTorch raises `RuntimeError` (a
shape that does not broadcast, a value out of its domain), ours is also a
`ValueError` (or `IndexError`, `TypeError`) so that either `except` catches it.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from ..primitive import ArgumentError
from ..tensor import Tensor
from ._args import _t, promote
from .reductions import mean, sum

REDUCTIONS = ("none", "mean", "sum")


class LossShapeError(ValueError, RuntimeError):
    """Shapes a loss cannot combine (PyTorch raises RuntimeError)."""


class LossValueError(ValueError, RuntimeError):
    """An argument or input value outside its domain (PyTorch raises RuntimeError)."""


class LossTargetError(IndexError, RuntimeError):
    """A class index outside [0, C) (PyTorch raises RuntimeError, "target out of range")."""


class LossDtypeError(TypeError, NotImplementedError):
    """A dtype the loss does not support (PyTorch: RuntimeError or NotImplementedError)."""


def legacy_reduction(size_average, reduce, reduction: str) -> str:
    """`reduction` from PyTorch's deprecated flags when either is given (with PyTorch's
    warning): both true (or unset) 'mean', `reduce` alone 'sum', `reduce=False` 'none'."""
    if size_average is None and reduce is None:
        return reduction
    for name, v in (("size_average", size_average), ("reduce", reduce)):
        if v is not None and not isinstance(v, (bool, int, np.bool_, np.integer)):
            raise TypeError(f"{name} (deprecated) must be None or a bool, got {v!r}; PyTorch "
                            f"would read it as {bool(v)}; pass reduction=... by keyword")
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    out = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{out}' instead.", stacklevel=3)
    return out


def check_reduction(reduction, fn: str, extra: tuple = ()) -> str:
    """`reduction` if it is one of 'none', 'mean', 'sum' (or `extra`), else ValueError."""
    if reduction not in REDUCTIONS + extra:
        allowed = ", ".join(repr(r) for r in REDUCTIONS + extra)
        raise ArgumentError(f"{fn}: {reduction!r} is not a valid value for reduction (one of "
                            f"{allowed})")
    return reduction


def reduce(loss: Tensor, reduction: str) -> Tensor:
    """The mean or sum of every element, or `loss` itself for 'none'."""
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return sum(loss)
    return loss


def broadcast_shape(fn: str, **named) -> tuple:
    """The broadcast shape of the named tensors, or LossShapeError naming each shape."""
    shapes = [tuple(t.shape) for t in named.values()]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        listed = ", ".join(f"{k} {tuple(t.shape)}" for k, t in named.items())
        raise LossShapeError(f"{fn}: the shapes of {listed} do not broadcast") from None


def _caller_level() -> int:
    """The stacklevel of the first frame outside retrograd (a loss may be reached through
    wrappers), so a warning names the user's line."""
    f, level = sys._getframe(1), 1
    while f is not None and f.f_globals.get("__name__", "").startswith("retrograd."):
        f, level = f.f_back, level + 1
    return level


def same_shape(x: Tensor, y: Tensor, fn: str, a: str = "input", b: str = "target") -> None:
    """PyTorch's warning where `x` and `y` differ in shape but broadcast (the loss is then
    taken over the broadcast shape, as PyTorch does, though it is most often a bug);
    LossShapeError where they do not broadcast."""
    if x.shape != y.shape:
        broadcast_shape(fn, **{a: x, b: y})
        warnings.warn(f"Using a {b} size ({y.shape!r}) that is different to the {a} size "
                      f"({x.shape!r}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", UserWarning,
                      stacklevel=_caller_level())


def floating(x: Tensor, fn: str, name: str = "input") -> Tensor:
    """`x` if floating, else LossDtypeError."""
    if x.dtype.kind != "f":
        raise LossDtypeError(f"{fn}: {name} must be a floating tensor, got {x.dtype}")
    return x


def no_half(x: Tensor, fn: str) -> None:
    """Refuse float16, which PyTorch's CPU kernels of ctc_loss and the margin losses over
    class indices lack ("not implemented for 'Half'")."""
    if x.dtype == np.float16:
        raise LossDtypeError(f"{fn}: not implemented for float16 (as PyTorch's kernel); "
                             "convert the input with .float()")


def float_pair(input, target, fn: str) -> tuple:
    """Input and target (of one shape, or PyTorch's warning), converted to PyTorch's
    result dtype, which must be floating."""
    x, y = _t(input), _t(target)
    same_shape(x, y, fn)
    x, y = promote(x, y)
    floating(x, fn)
    return x, y
