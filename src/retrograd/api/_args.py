"""Argument handling shared by the functional API: PyTorch's `dim`/`keepdim` and
NumPy's `axis`/`keepdims`, checked once, with errors naming the function."""

from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from .. import devices
from ..dtypes import float_result_type, result_type, scalar_array
from ..grad_mode import state
from ..primitive import ShapeError
from ..tensor import Tensor, as_tensor


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor(x)


def promote(*operands, floating: bool = False) -> tuple:
    """The operands of an element-wise op, converted to the dtype PyTorch gives its result.

    Call it in every public function of two or more operands (`maximum`, `where`,
    `atan2`, ...) before `apply`, so the op's NumPy forward computes in that dtype
    and eager mode, the backward and `rg.jit` all agree. The rule is
    `dtypes.result_type`: bool < integer < floating < complex; tensors with
    dimensions outrank 0-d tensors, which outrank Python and NumPy scalars, unless
    the lower one is of a higher category (float32 tensor + 2.0 is float32; int64
    tensor + 2.5 is the default float dtype; float32 + int64 tensors is float32).

    `operands`: Tensors, NumPy arrays, nested lists, Python or NumPy scalars; None
    passes through. Returns a tuple, one item per operand: a Tensor for a tensor,
    array or list, cast with a recorded (differentiable) `.to()` when its dtype
    differs; a read-only 0-d NumPy array for a scalar, which `apply` takes as a
    constant (integers outside the dtype's range wrap around, as in PyTorch).
    `floating=True` for ops whose result is floating whatever the inputs (`/`,
    `atan2`, `hypot`): an integer or bool result becomes the default float dtype.

    Example: `y, x = promote(y, x, floating=True); return apply(ops.atan2, y, x)`.
    """
    dt = (float_result_type if floating else result_type)(*operands)
    out = tuple(_as_dtype(x, dt) for x in operands)
    for x in out:
        if isinstance(x, Tensor) and x.data.__class__ is not np.ndarray \
                and devices.is_device_array(x.data):  # scalars become constants on its device
            return tuple(devices.like(c, x.data) if c.__class__ is np.ndarray else c
                         for c in out)
    return out


def _as_dtype(x, dt):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return x if x.data.dtype == dt else x.to(dt)
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return scalar_array(x, dt)
    t = as_tensor(x)
    return t if t.data.dtype == dt else t.to(dt)


def int_arg(a):
    """`a`, with a one-element integer (or bool) tensor read as its int, as PyTorch reads
    such a tensor where an int is expected (`x.sum(n)`, `x.chunk(n)` with `n` a 0-d
    tensor); a float or many-element tensor raises TypeError, as in PyTorch. Through
    `Tensor.__index__`; under `rg.jit` only a constant of the trace is read (a traced
    value is refused, never frozen into the trace)."""
    if not isinstance(a, Tensor):
        return a
    if state.tracer is not None and a.data.size == 1 and a.dtype.kind in "iub":
        state.tracer.check_index(a)  # JitError unless a constant of the trace
        return int(devices.host(a.data).reshape(()))
    return operator.index(a)


def _dims(dim, axis, ndim, name):
    if dim.__class__ is int and axis is None and -ndim <= dim < ndim:  # the common call
        return dim % ndim
    if dim is not None and axis is not None:
        raise TypeError(f"{name}() got both 'dim' and 'axis'; pass one of them")
    d = int_arg(dim if dim is not None else axis)
    if d is None:
        return None
    items = tuple(d) if isinstance(d, (tuple, list)) else (d,)
    out = []
    for a in items:
        a = int_arg(a)
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"{name}(): dim must be an int or a tuple of ints, got {a!r}")
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1):
            raise IndexError(f"{name}(): dim {a} is out of range for a tensor with {ndim} "
                             "dimension(s)")
        out.append(int(a) % builtins.max(ndim, 1))
    if len(set(out)) != len(out):
        raise ShapeError(f"{name}(): dim {d} repeats a dimension")
    return out[0] if isinstance(d, (int, np.integer)) else tuple(out)


def dim_alias(dim, axis, name: str, default=None):
    """`dim`, or NumPy's `axis` where that was passed instead (PyTorch takes either name
    for every `dim`); both at once is refused. `default` is `dim`'s own default."""
    if axis is None:
        return dim
    if dim is not default and dim != default:
        raise TypeError(f"{name}() got both 'dim' and 'axis'; pass one of them")
    return axis


def keepdim_alias(keepdim, keepdims, name: str):
    """`keepdim`, or NumPy's `keepdims` where that was passed instead."""
    if keepdims is None:
        return keepdim
    if keepdim:
        raise TypeError(f"{name}() got both 'keepdim' and 'keepdims'; pass one of them")
    return keepdims


def broadcasts_into(shape, target) -> bool:
    """Whether `shape` broadcasts to `target` without enlarging it (a bias, a mask or an
    addend that must fit the result it joins)."""
    try:
        return np.broadcast_shapes(tuple(shape), tuple(target)) == tuple(target)
    except ValueError:
        return False


def _keep(keepdim, keepdims):
    return bool(keepdims) if keepdims is not None else bool(keepdim)


def _count(shape, axis):
    if axis is None:
        return math.prod(shape)
    axes = axis if isinstance(axis, tuple) else (axis,)
    return math.prod(shape[a] for a in axes)


