"""Out-of-place writes at indices, with PyTorch's names: `rg.index_fill`,
`rg.index_copy`, `rg.index_put`, `rg.index_reduce`, `rg.put`, `rg.masked_scatter`,
`rg.select_scatter`, `rg.slice_scatter`, `rg.diagonal_scatter` (their in-place `_`
forms are Tensor methods).

Each is a composition of the indexing rows (`scatter_dim`, `index_add`,
`scatter_reduce`, `gather`, `setitem`, `diag_scatter`) and `where`, with the index
tensors passed to the ops as inputs: so the gradients are PyTorch's (the input's
where it is not overwritten, the source's where it lands), and `rg.jit` reads each
call's indices. Indices are checked here, before any array work, with errors that
name the argument, the dimension and its size.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from .. import devices, ops
from .._values import every_value, refuse, values_of
from ..engine import apply
from ..grad_mode import state
from ..tensor import Tensor, as_tensor
from ._args import _t
from ._errors import ArgumentError, DtypeError, scalar_as
from .elementwise import where
from .indexing import _as_1d, _back, _check_range, _dim, _index_arg, tensor_value_as
from .shape import expand, reshape

# ----------------------------------------------------------------- helpers


def _wrap_check(index: Tensor, size: int, d: int, fn: str, name: str = "index") -> Tensor:
    """`index` with negative entries counted from the end (PyTorch allows them here),
    after checking every entry is in [-size, size)."""
    if index.size:
        values = devices.host(every_value(index))
        lo, hi = int(values.min()), int(values.max())
        if lo < -size or hi >= size:
            bad = lo if lo < -size else hi
            raise IndexError(f"{fn}(): {name} {bad} is out of bounds for dimension {d} with "
                             f"size {size}")
    if index.dtype != np.int64:
        index = index.to(np.int64)
    return where(index < 0, index + size, index)


def _same_dtype(x: Tensor, src: Tensor, fn: str, name: str = "source") -> None:
    if src.dtype != x.dtype:
        raise DtypeError(f"{fn}(): {name} has dtype {src.dtype} but input has dtype "
                         f"{x.dtype}; they must match")


class LongIndexError(IndexError, RuntimeError):
    """An integer index tensor that is not int64 where PyTorch takes only int64
    (index_copy, index_fill): RuntimeError there (IndexError for index_fill), so both."""


def _long_index(index, fn: str) -> None:
    """Refuse an integer index tensor of another dtype than int64, as PyTorch's index_copy
    and index_fill do (gpt-fast's int32 positions need `.long()` there); a non-integer
    one is refused later, as for the other index functions."""
    if isinstance(index, Tensor) and index.dtype.kind in "iu" and index.dtype != np.int64:
        raise LongIndexError(f"{fn}(): Expected a long (int64) tensor for index, but got "
                             f"{index.dtype}")


def _vector_index(index, fn: str) -> Tensor:
    idx = _index_arg(index, fn)
    if idx.ndim > 1:
        raise ArgumentError(f"{fn}(): index must be a vector or a scalar, got shape "
                            f"{idx.shape}")
    return reshape(idx, 1) if idx.ndim == 0 else idx


def _along(index: Tensor, d: int, shape: tuple) -> Tensor:
    """A vector index along dim `d`, broadcast to `shape` (for the scatter rows)."""
    view = tuple(-1 if k == d else 1 for k in range(len(shape)))
    return expand(reshape(index, view), *shape)


def _source_args(input, dim, index, source, fn):
    """(input, dim, index, source), at least 1-d, with source's shape checked: input's,
    with dimension `dim` as long as the index."""
    x = _t(input)
    idx = _vector_index(index, fn)
    src = _t(source)
    d = _dim(dim, x.ndim, fn)
    _same_dtype(x, src, fn)
    x1 = _as_1d(x)
    if src.ndim == 0 and x1.ndim == 1:
        src = reshape(src, 1)
    want = x1.shape[:d] + (idx.shape[0],) + x1.shape[d + 1:]
    if src.shape != want:
        raise IndexError(f"{fn}(): source of shape {src.shape} must have shape {want} (input "
                         f"{x.shape} with dimension {d} as long as the index, "
                         f"{idx.shape[0]})")
    return x, x1, d, idx, src


# ----------------------------------------------------------------- along one dimension


def _is_complex_value(value) -> bool:
    if isinstance(value, Tensor):
        return value.dtype.kind == "c"
    return isinstance(value, (complex, np.complexfloating))


def index_fill(input, dim: int, index, value) -> Tensor:
    """A copy of `input` with `value` (a number, or a 0-d tensor that may require grad)
    at positions `index` (negative counts from the end) along `dim`. Like
    `torch.index_fill`."""
    x = _t(input)
    _long_index(index, "index_fill")
    idx = _vector_index(index, "index_fill")
    d = _dim(dim, x.ndim, "index_fill")
    x1 = _as_1d(x)
    n = x1.shape[d]
    if _is_complex_value(value) and x.dtype.kind != "c":
        raise DtypeError(f"index_fill(): converting a complex value to {x.dtype} (the input's "
                         "dtype) is not supported (as in PyTorch)")
    if isinstance(value, Tensor):
        if value.ndim:
            raise ArgumentError(f"index_fill(): value must be a number or a 0-d tensor, got "
                                f"shape {value.shape}")
        value = tensor_value_as(value, x.dtype, "index_fill")
    else:
        value = Tensor(scalar_as(value, x.dtype, "index_fill"))
    idx = _wrap_check(idx, n, d, "index_fill")
    if idx.shape[0] == 0:  # nothing to fill: a copy (the any() below needs an entry)
        return x.clone()
    positions = Tensor._wrap(devices.like(np.arange(n), x.data))
    # read through the positions (the same values), so that a replay of a traced call
    # with an index out of range raises as eager mode does, instead of filling nothing
    idx = apply(ops.index_select, positions, idx, axis=-1)
    hit = apply(ops.max, reshape(positions, (n, 1)) == reshape(idx, (1, -1)), axis=-1,
                keepdims=False)  # any: each position at most once
    mask = reshape(hit, tuple(n if k == d else 1 for k in range(x1.ndim)))
    return _back(where(mask, value, x1), x.ndim == 0)


def index_copy(input, dim: int, index, source) -> Tensor:
    """A copy of `input` with the slices of `source` written at positions `index` along
    `dim` (where an index repeats, which slice is written is unspecified, as in
    PyTorch). Like `torch.index_copy`."""
    _long_index(index, "index_copy")
    x, x1, d, idx, src = _source_args(input, dim, index, source, "index_copy")
    _check_range(idx, x1.shape[d], d, "index_copy")
    out = apply(ops.scatter_dim, x1, _along(idx, d, src.shape), src, axis=d - x1.ndim)
    return _back(out, x.ndim == 0)


_INDEX_REDUCE = ("prod", "mean", "amax", "amin")


def index_reduce(input, dim: int, index, source, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """Reduce the slices of `source` onto `input` at positions `index` along `dim` with
    'prod', 'mean', 'amax' or 'amin' (`include_self=False` leaves input's own values out
    where an index lands). Like `torch.index_reduce`, with its gradients (amax/amin
    share among ties)."""
    if reduce not in _INDEX_REDUCE:
        raise ArgumentError(f"index_reduce(): reduce must be one of prod, mean, amax or amin, "
                            f"got {reduce!r}")
    x, x1, d, idx, src = _source_args(input, dim, index, source, "index_reduce")
    _check_range(idx, x1.shape[d], d, "index_reduce")
    out = apply(ops.scatter_reduce, x1, _along(idx, d, src.shape), src, axis=d - x1.ndim,
                reduce=reduce, include_self=bool(include_self))
    return _back(out, x.ndim == 0)


# ----------------------------------------------------------------- at flat or tuple indices


def _values_arg(values, x: Tensor, fn: str, name: str) -> Tensor:
    if not isinstance(values, Tensor):
        raise TypeError(f"{fn}(): {name} must be a tensor, got {type(values).__name__}")
    _same_dtype(x, values, fn, name)
    return values


def put(input, index, source, accumulate: bool = False) -> Tensor:
    """A copy of `input`, seen as flat, with `source`'s entries written (or added, with
    `accumulate`) at the flat positions `index` (negative counts from the end). Like
    `torch.put`."""
    x = _t(input)
    idx = _index_arg(index, "put")
    src = _values_arg(source, x, "put", "source")
    if src.size != idx.size:
        raise IndexError(f"put(): source and index must have the same number of elements, "
                         f"got {src.size} and {idx.size}")
    n = x.size
    lin = reshape(_wrap_check(idx, n, 0, "put"), -1)
    flat, s = reshape(x, -1), reshape(src, -1)
    if accumulate:
        out = apply(ops.index_add, flat, lin, s, axis=-1)
    else:
        out = apply(ops.scatter_dim, flat, lin, s, axis=-1)
    return reshape(out, x.shape)


def index_put(input, indices, values, accumulate: bool = False) -> Tensor:
    """A copy of `input` with `values` written at `input[indices]` (`indices` a tuple of
    integer or bool tensors, one per leading dimension, broadcast together; negative
    counts from the end), or added there with `accumulate` (repeats add up). `values`
    broadcasts to the indexed shape. Like `torch.index_put`."""
    x = _t(input)
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): indices must be a tuple of tensors, got "
                        f"{type(indices).__name__}")
    v = _values_arg(values, x, "index_put", "values")
    idxs: list[Tensor] = []
    for k, i in enumerate(indices):
        if not isinstance(i, Tensor):
            raise TypeError(f"index_put(): indices[{k}] must be a tensor, got "
                            f"{type(i).__name__}")
        if i.dtype == np.bool_:  # a mask over the next i.ndim dims: its nonzero positions
            refuse("index_put() with a bool index (the number of positions is the number of "
                   "True entries)", "use rg.where(mask, values, input) instead", i)
            idxs.extend(as_tensor(p.astype(np.int64)) for p in np.nonzero(i.data))
        elif i.dtype.kind in "iu":
            idxs.append(i)
        else:
            raise IndexError(f"index_put(): indices[{k}] has dtype {i.dtype}; tensors used as "
                             "indices must be integer or bool")
    k = len(idxs)
    if k > x.ndim:
        raise IndexError(f"index_put(): too many indices ({k}) for a tensor of dimension "
                         f"{x.ndim}")
    try:
        bshape = np.broadcast_shapes(*(i.shape for i in idxs))
    except ValueError:
        raise IndexError(f"index_put(): index shapes {[i.shape for i in idxs]} cannot be "
                         "broadcast together") from None
    lead, rest = x.shape[:k], x.shape[k:]
    lin = Tensor._wrap(devices.like(np.zeros((), np.int64), x.data))
    for j, i in enumerate(idxs):
        lin = lin + _wrap_check(i, lead[j], j, "index_put") * math.prod(lead[j + 1:])
    lin = reshape(expand(lin, *bshape) if lin.shape != bshape else lin, -1)
    region = tuple(bshape) + rest
    try:
        np.broadcast_shapes(v.shape, region)
        fits = len(v.shape) <= len(region)
    except ValueError:
        fits = False
    if not fits or np.broadcast_shapes(v.shape, region) != region:
        raise ArgumentError(f"index_put(): values of shape {v.shape} cannot be broadcast to "
                            f"the indexed shape {region}")
    v = reshape(expand(v, *region) if v.shape != region else v,
                (math.prod(bshape),) + rest)  # not -1: rest may hold a 0
    x2 = reshape(x, (math.prod(lead),) + rest)
    ax = -(len(rest) + 1)
    if accumulate:
        out = apply(ops.index_add, x2, lin, v, axis=ax)
    else:
        out = apply(ops.scatter_dim, x2, _along(lin, 0, v.shape), v, axis=ax)
    return reshape(out, x.shape)


def masked_scatter(input, mask, source) -> Tensor:
    """A copy of `input` (broadcast with `mask`) with `source`'s first entries, in order,
    written where `mask` is True. Like `torch.masked_scatter`; the gradient of each
    source entry used is the output's there, of the others zero."""
    x = _t(input)
    m = mask if isinstance(mask, Tensor) else as_tensor(np.asarray(mask))
    if m.dtype != np.bool_:
        raise DtypeError(f"masked_scatter(): mask must be a bool tensor, got dtype {m.dtype}")
    src = _values_arg(source, x, "masked_scatter", "source")
    try:
        shape = np.broadcast_shapes(x.shape, m.shape)
    except ValueError:
        raise ArgumentError(f"masked_scatter(): mask of shape {m.shape} and input of shape "
                            f"{x.shape} do not broadcast") from None
    arr = devices.host(every_value(m))  # under vmap: every batch element's mask
    per = arr.reshape(arr.shape[:arr.ndim - m.ndim] + (-1,))
    hits = int(per.sum(-1).max()) * (math.prod(shape) // builtins.max(m.size, 1)) \
        if per.size else 0
    if hits > src.size:
        raise ArgumentError(f"masked_scatter(): source has {src.size} elements, fewer than the "
                            f"{hits} True entries of mask")
    flat_m = reshape(expand(m, *shape) if m.shape != shape else m, -1)
    flat_x = reshape(expand(x, *shape) if x.shape != shape else x, -1)
    if src.size == 0:
        return reshape(flat_x.clone(), shape)
    pos = apply(ops.cumsum, flat_m.to(np.int64), axis=-1) - 1
    pos = where(pos < 0, 0, pos)
    picked = apply(ops.gather, reshape(src, -1), pos, axis=-1)
    return reshape(where(flat_m, picked, flat_x), shape)


# ----------------------------------------------------------------- into a slice or diagonal


def _fits(src, want: tuple, fn: str) -> Tensor:
    src = _t(src)
    if src.shape != tuple(want):
        raise ArgumentError(f"{fn}(): src of shape {src.shape} must have the shape of the "
                            f"slice it replaces, {tuple(want)}")
    return src


def select_scatter(input, src, dim: int, index: int) -> Tensor:
    """A copy of `input` with `input.select(dim, index)` replaced by `src` (of that
    slice's shape). Like `torch.select_scatter`."""
    x = _t(input)
    if x.ndim == 0:
        raise IndexError("select_scatter(): input is 0-d, it has no dimension to select from")
    d = _dim(dim, x.ndim, "select_scatter")
    i = _int_position(index, x.shape[d], d, "select_scatter")
    idx = (slice(None),) * d + (i,)
    src = _fits(src, x.shape[:d] + x.shape[d + 1:], "select_scatter")
    return apply(ops.setitem, x, src.to(x.dtype), idx=idx)


def slice_scatter(input, src, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Tensor:
    """A copy of `input` with the slice `start:end:step` along `dim` replaced by `src` (of
    that slice's shape). Like `torch.slice_scatter`."""
    x = _t(input)
    if x.ndim == 0:
        raise IndexError("slice_scatter(): input is 0-d, it has no dimension to slice")
    d = _dim(dim, x.ndim, "slice_scatter")
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step <= 0:
        raise ArgumentError(f"slice_scatter(): slice step must be a positive int, got {step!r}")
    sl = slice(start, end, int(step))
    idx = (slice(None),) * d + (sl,)
    n = len(range(*sl.indices(x.shape[d])))
    src = _fits(src, x.shape[:d] + (n,) + x.shape[d + 1:], "slice_scatter")
    return apply(ops.setitem, x, src.to(x.dtype), idx=idx)


def diagonal_scatter(input, src, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of `input` with its `offset` diagonal in dims (dim1, dim2) replaced by `src`
    (of that diagonal's shape: the other dims, then the diagonal). Like
    `torch.diagonal_scatter`."""
    x = _t(input)
    if x.ndim < 2:
        raise ArgumentError(f"diagonal_scatter(): input must have at least 2 dimensions, got "
                            f"shape {x.shape}")
    d1, d2 = _dim(dim1, x.ndim, "diagonal_scatter"), _dim(dim2, x.ndim, "diagonal_scatter")
    if d1 == d2:
        raise ArgumentError(f"diagonal_scatter(): dim1 and dim2 must differ, both are {d1}")
    off = int(offset)
    n1, n2 = x.shape[d1], x.shape[d2]
    length = builtins.max(0, builtins.min(n1 + builtins.min(off, 0),
                                          n2 - builtins.max(off, 0)))
    other = tuple(s for k, s in enumerate(x.shape) if k not in (d1, d2))
    src = _fits(src, other + (length,), "diagonal_scatter").to(x.dtype)
    attrs = dict(offset=off, axis1=d1 - x.ndim, axis2=d2 - x.ndim, shape=x.shape)
    placed = apply(ops.diag_scatter, src, **attrs)
    mask = ops.NUMPY.diag_scatter(np.ones(src.shape, np.bool_), **attrs)
    return where(Tensor._wrap(devices.like(mask, x.data)), placed, x)


def _int_position(index, size: int, d: int, fn: str) -> int:
    if isinstance(index, Tensor):
        if index.ndim or index.dtype.kind not in "iu":
            raise TypeError(f"{fn}(): index must be an int, got a tensor of shape "
                            f"{index.shape} and dtype {index.dtype}")
        index = int(values_of(index, f"{fn}() with a tensor index", "pass a Python int"))
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"{fn}(): index must be an int, got {index!r}")
    if not -size <= index < size:
        raise IndexError(f"{fn}(): index {index} is out of range for dimension {d} with size "
                         f"{size}")
    return int(index) % size



# ----------------------------------------------------------------- in place


def _any_requires_grad(args, kwargs) -> bool:
    return any(isinstance(a, Tensor) and a.requires_grad for a in (*args, *kwargs.values()))


def _in_place(fn):
    """The in-place form `x.name_(...)` of an out-of-place write: the result copied into
    x (`copy_`: version counter, the refusal of a leaf that requires grad, rg.jit's record
    of the write). While gradients are recorded (x or another argument requires grad) the
    result is computed from a clone of x, so the values its backward reads are not the
    ones the write overwrites."""
    def method(self, *args, **kwargs):
        src = self.clone() if state.enabled and (self.requires_grad or _any_requires_grad(
            args, kwargs)) else self
        return self.copy_(fn(src, *args, **kwargs))
    method.__name__ = method.__qualname__ = fn.__name__ + "_"
    method.__doc__ = f"In place: `{fn.__name__}` written into the tensor; returns it."
    return method


index_fill_ = _in_place(index_fill)
index_copy_ = _in_place(index_copy)
index_reduce_ = _in_place(index_reduce)
put_ = _in_place(put)
masked_scatter_ = _in_place(masked_scatter)
index_put_ = _in_place(index_put)
index_put_.__doc__ = """In place: `values` written (or added, with `accumulate`) at
`input[indices]`; returns `input`. Like `torch.index_put_`."""
