"""PyTorch's symbolic-shape helpers (`torch.sym_max`, `sym_min`, `sym_int`, `sym_float`,
`sym_not`, `sym_sqrt`, `sym_sum`, `sym_ite`, `sym_fresh_size`, `sym_constrain_range`,
`sym_constrain_range_for_size`) for code written with torch.compile's dynamic shapes in
mind. retrograd's shapes are always concrete Python ints, so each is the plain Python
operation, with torch's result types (a float if any argument is one) and its checks.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable

__all__ = ["sym_max", "sym_min", "sym_int", "sym_float", "sym_not", "sym_sqrt", "sym_sum",
           "sym_ite", "sym_fresh_size", "sym_constrain_range", "sym_constrain_range_for_size"]

_INT_MAX = (1 << 63) - 1


def _number(a, fn: str):
    if hasattr(a, "item") and not isinstance(a, (int, float)):  # a 0-d tensor or NumPy scalar
        a = a.item()
    if not isinstance(a, (int, float)):
        raise TypeError(f"{fn}(): expected an int or a float, got {type(a).__name__}")
    return a


def _pick(a, b, fn: str, better) -> int | float:
    a, b = _number(a, fn), _number(b, fn)
    out = a if better(a, b) else b
    if isinstance(a, float) or isinstance(b, float):
        return float(out)
    return int(out)


def sym_max(a, b) -> int | float:
    """max(a, b), a float if either is one. Like `torch.sym_max` on concrete numbers."""
    return _pick(a, b, "sym_max", operator.ge)


def sym_min(a, b) -> int | float:
    """min(a, b), a float if either is one. Like `torch.sym_min` on concrete numbers."""
    return _pick(a, b, "sym_min", operator.le)


def sym_int(a) -> int:
    """int(a), rounding toward zero. Like `torch.sym_int` on concrete numbers."""
    return int(math.trunc(_number(a, "sym_int")))


def sym_float(a) -> float:
    """float(a). Like `torch.sym_float` on concrete numbers."""
    return float(_number(a, "sym_float"))


def sym_not(a) -> bool:
    """not a. Like `torch.sym_not` on concrete values."""
    return not a


def sym_sqrt(a) -> float:
    """math.sqrt(a). Like `torch.sym_sqrt` on concrete numbers."""
    return math.sqrt(_number(a, "sym_sqrt"))


def sym_sum(args: Iterable) -> int | float:
    """The sum of `args` (0 for none). Like `torch.sym_sum` on concrete numbers."""
    return sum(_number(a, "sym_sum") for a in args)


def sym_ite(b: bool, t, f):
    """t if b else f; b must be a bool. Like `torch.sym_ite` on concrete values."""
    if not isinstance(b, bool):
        raise TypeError(f"sym_ite(): expected a bool condition, got {type(b).__name__}")
    return t if b else f


def sym_fresh_size(expr):
    """expr itself (a concrete size needs no fresh symbol). Like `torch.sym_fresh_size`."""
    return expr


def sym_constrain_range(size, *, min: int | None = None, max: int | None = None) -> None:  # noqa: A002
    """Check that `size` lies in [min, max] (RuntimeError otherwise). Like
    `torch.sym_constrain_range` on a concrete size."""
    lo = -_INT_MAX - 1 if min is None else min
    hi = _INT_MAX if max is None else max
    if not lo <= size <= hi:
        raise RuntimeError(f"sym_constrain_range(): invalid value range for {size} between "
                           f"[{lo}, {hi}]")


def sym_constrain_range_for_size(size, *, min: int | None = None,  # noqa: A002
                                 max: int | None = None) -> None:  # noqa: A002
    """Check that `size` is a valid size in [min, max] (min at least 0; RuntimeError
    otherwise). Like `torch.sym_constrain_range_for_size` on a concrete size."""
    lo = 0 if min is None else min
    hi = _INT_MAX if max is None else max
    if not lo <= size <= hi:
        raise RuntimeError(f"sym_constrain_range_for_size(): invalid value range for {size} "
                           f"between [{lo}, {hi}]")
