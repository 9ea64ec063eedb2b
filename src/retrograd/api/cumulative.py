"""Cumulative ops and sorting: `rg.cumsum`, `rg.cumprod`, `rg.cummax`, `rg.logcumsumexp`,
`rg.sort`, `rg.argsort`, `rg.topk`, `rg.kthvalue`, `rg.median`, `rg.mode`.

The ordering ops return PyTorch's named pairs `(values, indices)`: the indices
come from a non-differentiable op, the values are `gather(input, indices)`, so
gradients flow to the selected positions. Sorts are stable (equal entries keep
their order, NaN sorts above everything), which is a valid answer for
PyTorch's `stable=False` too.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import ops
from ..creation import _index_size
from ..engine import apply
from ..primitive import ArgumentError
from ..tensor import Tensor
from ._args import _dims, _t, dim_alias, int_arg, keepdim_alias
from ._errors import DtypeError, empty_dim
from .quantiles import _empty_median, _shared
from .shape import reshape

_PAIR = ("values", "indices")
return_types = type("return_types", (), {
    "__doc__": "PyTorch's named (values, indices) pairs, by the function returning them.",
    **{name: namedtuple(name, _PAIR) for name in
       ("sort", "topk", "kthvalue", "median", "mode", "cummax", "cummin")}})


def _dim(dim, x: Tensor, fn: str) -> int:
    dim = int_arg(dim)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{fn}(): dim must be an int, got {dim!r}")
    return _dims(int(dim), None, x.ndim, fn)


def _prepare(x, dim, fn):
    """(input as at least 1-d, dim counted from the end, whether it was 0-d)."""
    x = _t(x)
    d = _dim(dim, x, fn)
    if x.ndim == 0:
        return reshape(x, 1), -1, True
    return x, d - x.ndim, False


def _float_only(x: Tensor, fn: str) -> None:
    if x.dtype.kind not in "fc":
        raise DtypeError(f"{fn}(): needs a floating tensor, got {x.dtype}")


def _cum(op, input, dim, dtype, fn, **attrs) -> Tensor:
    if dim is None:
        raise TypeError(f"{fn}(): missing the argument 'dim'")
    x = _t(input)
    if dtype is not None:
        x = x.to(dtype)
    elif x.dtype.kind in "bui" and op is not ops.logcumsumexp:
        x = x.to(np.int64)  # PyTorch accumulates integers and bools in int64
    x1, ax, zero_d = _prepare(x, dim, fn)
    out = apply(op, x1, axis=ax, **attrs)
    return reshape(out, ()) if zero_d else out


def cumsum(input, dim: int | None = None, *, dtype=None, axis=None) -> Tensor:
    """Running sums along `dim`."""
    dim = dim_alias(dim, axis, "cumsum")
    return _cum(ops.cumsum, input, dim, dtype, "cumsum")


def cumprod(input, dim: int | None = None, *, dtype=None, axis=None) -> Tensor:
    """Running products along `dim`; the gradient never divides by an entry, so it is right
    where entries are zero."""
    dim = dim_alias(dim, axis, "cumprod")
    return _cum(ops.cumprod, input, dim, dtype, "cumprod")


def logcumsumexp(input, dim: int | None = None, *, axis=None) -> Tensor:
    """log(cumsum(exp(input))) along `dim`, without overflow."""
    dim = dim_alias(dim, axis, "logcumsumexp")
    _float_only(_t(input), "logcumsumexp")
    return _cum(ops.logcumsumexp, input, dim, None, "logcumsumexp")


def _cum_extreme(input, dim, largest, fn):
    x, ax, zero_d = _prepare(input, dim, fn)
    _check_sortable(x, fn)
    idx = apply(ops.cum_extreme_index, x, axis=ax, largest=largest)
    vals = apply(ops.gather, x, idx, axis=ax)
    if zero_d:
        vals, idx = reshape(vals, ()), reshape(idx, ())
    return getattr(return_types, fn)(vals, idx)


def _required_dim(dim, axis, fn: str):
    """The dim of a function that needs one (`dim` or NumPy's `axis`)."""
    dim = dim_alias(dim, axis, fn)
    if dim is None:
        raise TypeError(f"{fn}() missing required argument 'dim' (an int)")
    return dim


def cummax(input, dim: int | None = None, *, axis=None):
    """Running maximum along `dim` and where it was attained (the latest on ties)."""
    return _cum_extreme(input, _required_dim(dim, axis, "cummax"), True, "cummax")


def cummin(input, dim: int | None = None, *, axis=None):
    """Running minimum along `dim` and where it was attained (the latest on ties)."""
    return _cum_extreme(input, _required_dim(dim, axis, "cummin"), False, "cummin")


def _check_sortable(x: Tensor, fn: str, bools: bool = True) -> None:
    """Refuse complex tensors, and bool ones where PyTorch's kernel has no bool version
    (`bools=False`: topk, kthvalue, median, nanmedian; sort and argsort take them)."""
    if x.dtype.kind == "c":  # PyTorch: RuntimeError or NotImplementedError (both, here)
        raise DtypeError(f"{fn}(): complex tensors have no order")
    if not bools and x.dtype == np.bool_:
        raise DtypeError(f"{fn}(): not implemented for bool tensors (as in PyTorch); convert "
                         "with .int() or .float() first")


def argsort(input, dim: int = -1, descending: bool = False, *, stable: bool = False,
            axis=None) -> Tensor:
    """Indices that sort `input` along `dim` (stably)."""
    dim = dim_alias(dim, axis, "argsort", -1)
    x, ax, zero_d = _prepare(input, dim, "argsort")
    _check_sortable(x, "argsort")
    idx = apply(ops.argsort, x, axis=ax, descending=bool(descending))
    return reshape(idx, ()) if zero_d else idx


def sort(input, dim: int = -1, descending: bool = False, *, stable: bool = False, axis=None):
    """(values, indices) sorted along `dim`; equal entries keep their order."""
    dim = dim_alias(dim, axis, "sort", -1)
    x, ax, zero_d = _prepare(input, dim, "sort")
    _check_sortable(x, "sort")
    idx = apply(ops.argsort, x, axis=ax, descending=bool(descending))
    vals = apply(ops.gather, x, idx, axis=ax)
    if zero_d:
        vals, idx = reshape(vals, ()), reshape(idx, ())
    return return_types.sort(vals, idx)


def msort(input) -> Tensor:
    """Sorted along the first dimension."""
    return sort(input, 0).values


def _take(idx: Tensor, ax: int, start: int, stop: int) -> Tensor:
    """Entries start:stop of `idx` along `ax`, row-major as torch's indices are (so a
    ported `indices.view(-1)` works)."""
    return idx[(Ellipsis, slice(start, stop)) + (slice(None),) * (-ax - 1)].contiguous()


def topk(input, k: int, dim: int = -1, largest: bool = True, sorted: bool = True,  # noqa: A002
         *, axis=None):
    """The `k` largest (or smallest) entries along `dim` and their indices, in order."""
    dim = dim_alias(dim, axis, "topk", -1)
    x, ax, zero_d = _prepare(input, dim, "topk")
    _check_sortable(x, "topk", bools=False)
    n = x.shape[ax]
    k = _index_size(k)  # topk(num_pos * 3): a one-element integer tensor is an int
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"topk(): argument 'k' must be int, not {type(k).__name__}")
    if not 0 <= k <= n:  # torch: RuntimeError "selected index k out of range"
        raise ArgumentError(f"topk(): selected index k out of range: k ({k!r}) must be in "
                            f"[0, {n}], the length of dimension {dim} of shape "
                            f"{_t(input).shape}")
    # in order; among ties, torch's order. sorted=False: torch's CPU order (its
    # nth_element's where k * 64 > n, replayed up to a size, else sorted)
    attrs = {} if sorted else {"sorted": False}
    idx = apply(ops.topk_index, x, axis=ax, k=int(k), largest=bool(largest), **attrs)
    vals = apply(ops.gather, x, idx, axis=ax)
    if zero_d and k == 1:
        vals, idx = reshape(vals, ()), reshape(idx, ())
    return return_types.topk(vals, idx)


def _reduced(vals, idx, ax, keepdim, zero_d, kind):
    if zero_d:
        return getattr(return_types, kind)(reshape(vals, ()), reshape(idx, ()))
    if not keepdim:
        shape = tuple(s for i, s in enumerate(vals.shape) if i != vals.ndim + ax)
        vals, idx = reshape(vals, shape), reshape(idx, shape)
    return getattr(return_types, kind)(vals, idx)


def kthvalue(input, k: int, dim: int = -1, keepdim: bool = False, *, axis=None, keepdims=None):
    """The `k`-th smallest entry (1-based) along `dim` and its index."""
    dim = dim_alias(dim, axis, "kthvalue", -1)
    keepdim = keepdim_alias(keepdim, keepdims, "kthvalue")
    x, ax, zero_d = _prepare(input, dim, "kthvalue")
    _check_sortable(x, "kthvalue", bools=False)
    n = x.shape[ax]
    if n == 0:
        raise empty_dim("kthvalue", dim, _t(input).shape)
    k = _index_size(k)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise ArgumentError(f"kthvalue(): k ({k!r}) must be an int in [1, {n}], the length of "
                            f"dimension {dim} of shape {_t(input).shape}")
    idx = apply(ops.kth_index, x, axis=ax, k=int(k))  # among ties, torch's pick
    return _reduced(apply(ops.gather, x, idx, axis=ax), idx, ax, keepdim, zero_d, "kthvalue")


def median(input, dim: int | None = None, keepdim: bool = False, *, axis=None, keepdims=None):
    """The lower median (of an even count, the smaller middle entry): with no `dim`, of all
    entries (a value, whose gradient entries equal to it share, as in PyTorch); along `dim`,
    (values, indices). NaN is the median of a row holding one."""
    dim = dim_alias(dim, axis, "median")
    keepdim = keepdim_alias(keepdim, keepdims, "median")
    x = _t(input)
    _check_sortable(x, "median", bools=dim is None and x.size == 0)  # (torch: an empty
    if dim is None:                                             # bool tensor's is True)
        if keepdim:  # PyTorch's overload without dim takes no keepdim
            raise TypeError("median(): keepdim needs a dim (over all entries the result is a "
                            "single value)")
        flat = reshape(x, -1)
        if x.size == 0:
            return _empty_median(flat)
        idx = apply(ops.median_index, flat, axis=-1)
        v = reshape(apply(ops.gather, flat, idx, axis=-1), ())
        return _shared(flat, v) if x.dtype.kind == "f" else v  # ties share the gradient
    x, ax, zero_d = _prepare(x, dim, "median")
    if x.shape[ax] == 0:
        raise empty_dim("median", dim, x.shape)
    idx = apply(ops.median_index, x, axis=ax)
    return _reduced(apply(ops.gather, x, idx, axis=ax), idx, ax, keepdim, zero_d, "median")


def mode(input, dim: int = -1, keepdim: bool = False, *, axis=None, keepdims=None):
    """The most frequent entry along `dim` (the smallest of equally frequent ones) and the
    index of its last occurrence."""
    dim = dim_alias(dim, axis, "mode", -1)
    keepdim = keepdim_alias(keepdim, keepdims, "mode")
    x, ax, zero_d = _prepare(input, dim, "mode")
    _check_sortable(x, "mode")
    if x.shape[ax] == 0:
        raise empty_dim("mode", dim, x.shape)
    idx = apply(ops.mode_index, x, axis=ax)
    return _reduced(apply(ops.gather, x, idx, axis=ax), idx, ax, keepdim, zero_d, "mode")
