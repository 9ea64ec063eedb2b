"""Element-wise functions: `rg.exp`, `rg.maximum`, `rg.where`, ..."""

from __future__ import annotations

import warnings

import numpy as np

from .. import ops
from ..dtypes import get_default_dtype, int_in_range, result_type
from ..engine import apply, apply1
from ..grad_mode import state as _state
from ..tensor import Tensor
from ._args import _t, promote
from ._errors import ArgumentError, DtypeError, scalar_as


def _floating(x) -> Tensor:
    """The input of a floating op (`exp`, `sqrt`, ...): integer and bool tensors become the
    default float dtype, as in PyTorch."""
    x = _t(x)
    return x if x.data.dtype.kind in "fc" else x.to(get_default_dtype())


def exp(input) -> Tensor:
    """e**x element-wise (integers become the default float). Like `torch.exp`:
    `rg.exp(rg.tensor([0.0, 1.0]))` is `tensor([1., 2.7183])`."""
    if input.__class__ is not Tensor or input.data.dtype.kind not in "fc":
        input = _floating(input)
    return apply1(ops.exp, input)


def log(input) -> Tensor:
    """Natural logarithm element-wise (`-inf` at 0, `nan` below). Like `torch.log`."""
    if input.__class__ is not Tensor or input.data.dtype.kind not in "fc":
        input = _floating(input)
    return apply1(ops.log, input)


def log1p(input) -> Tensor:
    """log(1 + x), accurate near 0. Like `torch.log1p`: `rg.log1p(rg.tensor(1e-8))` is 1e-08."""
    if input.__class__ is not Tensor or input.data.dtype.kind not in "fc":
        input = _floating(input)
    return apply1(ops.log1p, input)


def sqrt(input) -> Tensor:
    """Square root element-wise; its derivative at 0 is inf, as in PyTorch. Like `torch.sqrt`."""
    if input.__class__ is not Tensor or input.data.dtype.kind not in "fc":
        input = _floating(input)
    return apply1(ops.sqrt, input)


def abs(input) -> Tensor:  # noqa: A001 - the NumPy/PyTorch name
    """|x|; of complex data the (real) modulus, except under a complex-step gradient check,
    where the real op refuses complex data (it is not analytic)."""
    input = input if input.__class__ is Tensor else _t(input)
    if input.data.dtype.kind == "c" and not _state.complex_step:
        return apply1(ops.cabs, input)
    return apply1(ops.abs, input)


def sin(input) -> Tensor:
    """Sine element-wise (radians). Like `torch.sin`; d/dx is `cos(x)`."""
    if input.__class__ is not Tensor or input.data.dtype.kind not in "fc":
        input = _floating(input)
    return apply1(ops.sin, input)


def cos(input) -> Tensor:
    """Cosine element-wise (radians). Like `torch.cos`; d/dx is `-sin(x)`."""
    if input.__class__ is not Tensor or input.data.dtype.kind not in "fc":
        input = _floating(input)
    return apply1(ops.cos, input)


def tan(input) -> Tensor:
    """Tangent element-wise (radians). Like `torch.tan`; d/dx is `1 + tan(x)**2`."""
    if input.__class__ is not Tensor or input.data.dtype.kind not in "fc":
        input = _floating(input)
    return apply1(ops.tan, input)


def tanh(input) -> Tensor:
    """Hyperbolic tangent element-wise. Like `torch.tanh`; d/dx is `1 - tanh(x)**2`."""
    if input.__class__ is not Tensor or input.data.dtype.kind not in "fc":
        input = _floating(input)
    return apply1(ops.tanh, input)


def sigmoid(input) -> Tensor:
    """The logistic function 1 / (1 + e**-x), computed without overflow. Like
    `torch.sigmoid` (`scipy.special.expit`): `rg.sigmoid(rg.tensor(0.0))` is 0.5."""
    if input.__class__ is not Tensor or input.data.dtype.kind not in "fc":
        input = _floating(input)
    return apply1(ops.sigmoid, input)


def relu(input) -> Tensor:
    """max(x, 0) element-wise, with derivative 0 at 0 (PyTorch's choice). Like `torch.relu`:
    `rg.relu(rg.tensor([-1.0, 2.0]))` is `tensor([0., 2.])`."""
    return apply1(ops.relu, input if input.__class__ is Tensor else _t(input))


def sign(input) -> Tensor:
    """-1, 0 or 1 element-wise; its derivative is 0. Like `torch.sign` (of a bool tensor,
    a copy of it)."""
    input = input if input.__class__ is Tensor else _t(input)
    if input.data.dtype == np.bool_:
        return input.clone()
    return apply1(ops.sign, input)


def maximum(input, other) -> Tensor:  # noqa: A002 - PyTorch's names
    """Element-wise larger of `input` and `other` (broadcast; PyTorch's result dtype). Ties
    share the gradient equally. Python numbers are accepted (PyTorch wants tensors)."""
    return apply(ops.maximum, *_operands(input, other))


def minimum(input, other) -> Tensor:  # noqa: A002 - PyTorch's names
    """Element-wise smaller of `input` and `other`; see `maximum`."""
    return apply(ops.minimum, *_operands(input, other))


def clamp(input, min=None, max=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """Limit values to [min, max] as PyTorch does: `min(max(x, min), max)`, so `max` wins
    when `min > max`. The gradient passes where `min <= x <= max` (bounds included)."""
    x = input
    if min is None and max is None:
        raise ArgumentError("clamp() needs at least one of 'min' and 'max'")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_tensors(x, min, max)
    for name, b in (("min", min), ("max", max)):
        if isinstance(b, (complex, np.complexfloating)):
            raise DtypeError("clamp is not supported for complex types")
        if b is not None and not isinstance(b, (int, float, np.integer, np.floating)):
            raise TypeError(f"clamp(): '{name}' must be a number or a Tensor, got "
                            f"{type(b).__name__}")
    x = _t(x)
    dt = result_type(x, min, max)
    if dt == np.bool_:
        raise DtypeError("clamp() is not supported for bool tensors (with bool bounds)")
    if dt != x.dtype:
        x = x.to(dt)
    lo = None if min is None else _as_python(min, dt)
    hi = None if max is None else _as_python(max, dt)
    return apply(ops.clamp, x, lo=lo, hi=hi)


def _clamp_tensors(x, lo, hi) -> Tensor:
    """`clamp` with tensor bounds (broadcast; a number or None for the other). As in
    PyTorch: the value is min(max(x, lo), hi), NaN anywhere giving NaN; the derivatives
    are PyTorch's (ops `clamp_t`, `clamp_min_t`, `clamp_max_t`), which differ between
    reverse and forward mode at ties."""
    dt = result_type(*(v for v in (x, lo, hi) if v is not None))
    if dt == np.bool_:
        one = hi if lo is None else lo if hi is None else None
        if not isinstance(one, Tensor):  # torch: one tensor bound is a logical max/min
            raise DtypeError("clamp() is not supported for bool tensors (with bool bounds)")
        return maximum(x, lo) if hi is None else minimum(x, hi)
    x, lo, hi = (None if v is None else _t(v).to(dt) if isinstance(v, Tensor)
                 else Tensor(np.asarray(v, dtype=dt)) for v in (x, lo, hi))
    if lo is None:
        return apply(ops.clamp_max_t, x, hi)
    if hi is None:
        return apply(ops.clamp_min_t, x, lo)
    return apply(ops.clamp_t, x, lo, hi)


def _as_python(v, dt):
    """A clamp bound in the result dtype, as PyTorch converts it: checked (refused where the
    dtype cannot hold it), a small negative wrapped for an unsigned dtype (-1 is 255)."""
    return scalar_as(v, dt, "clamp").item()


clip = clamp


def where(condition, input=None, other=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """`input` where `condition` holds, else `other` (broadcast; PyTorch's result dtype).
    `where(condition)` alone is `nonzero(condition, as_tuple=True)`, as in PyTorch."""
    x, y = input, other
    if x is None and y is None:  # (the method: api.indexing imports this module)
        return _t(condition).nonzero(as_tuple=True)
    if x is None or y is None:
        raise TypeError("where() takes a condition alone, or a condition, x and y")
    c = _condition(_t(condition))
    a, b = _operands(x, y)
    for raw, other in ((x, b), (y, a)):  # a number the integer result cannot hold: torch refuses
        if isinstance(raw, (int, np.integer)) and not isinstance(raw, (bool, np.bool_)) \
                and isinstance(other, Tensor) and other.dtype.kind in "iu":
            int_in_range(int(raw), other.dtype, "where")
    return apply(ops.where, c, a, b)


def _condition(c: Tensor) -> Tensor:
    """where's condition: a bool tensor, or a uint8 one read as nonzero with PyTorch's
    deprecation warning; other dtypes refused, as PyTorch refuses them."""
    if c.dtype == np.bool_:
        return c
    if c.dtype == np.uint8:
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated "
                      "and will be removed in a future version of PyTorch. Use a boolean "
                      "condition instead.", UserWarning, stacklevel=3)
        return c != 0
    raise DtypeError(f"where(): condition must be a bool tensor, got {c.dtype}")


def _operands(x, y):
    """Two operands in PyTorch's result dtype; two Python numbers make 0-d tensors."""
    x, y = promote(x, y)
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        x = Tensor(x)
    return x, y
