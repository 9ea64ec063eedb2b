"""Order statistics: `rg.quantile`, `rg.nanquantile`, `rg.nanmedian`.

Each is a composition, written as PyTorch computes it: sort (an index from a
non-differentiable op, then `gather`), ranks from `q`, the values at the ranks
below and above gathered and `lerp`ed. So the gradients are PyTorch's to the last
detail: the sorted positions the ranks pick get them (linear interpolation splits
one between two neighbours, midpoint halves it), and a `q` tensor that requires
grad gets d/dq of the linear interpolation. `rg.jit` and `rg.func.vmap` see only
ops, so they replay and batch these functions as they are.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import devices, ops
from .._values import every_value
from ..engine import apply
from ..tensor import Tensor
from ._args import _dims, _t, dim_alias, keepdim_alias
from ._errors import ArgumentError, DtypeError
from .elementwise import where
from .indexing import movedim
from .math import ceil, floor, isfinite, isnan, lerp, logical_and, logical_not, logical_or, round
from .shape import reshape, unsqueeze

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")

nanmedian_result = namedtuple("nanmedian", ["values", "indices"])
"""What `nanmedian(x, dim)` returns, as `torch.return_types.nanmedian`."""


def _dim(dim, ndim: int, fn: str) -> int:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{fn}(): dim must be an int, got {dim!r}")
    return _dims(int(dim), None, ndim, fn)


# ----------------------------------------------------------------- nanmedian


def _nanmedian_index(x: Tensor, ax: int) -> Tensor:
    """Index along `ax` (kept, size 1) of the lower median of the non-NaN entries; of the
    first entry where all are NaN."""
    order = apply(ops.argsort, x, axis=ax, descending=False)  # stable; NaN sorts last
    count = apply(ops.sum, logical_not(isnan(x)), axis=ax, keepdims=True)
    pos = apply(ops.right_shift, count - 1, devices.like(np.array(1, np.int64), x.data))
    # (count - 1) >> 1 is floor((count - 1) / 2): -1 where all are NaN
    pos = where(pos < 0, 0, pos)
    return apply(ops.gather, order, pos, axis=ax)


def _shared(flat: Tensor, v: Tensor) -> Tensor:
    """The value `v` (picked from `flat`), with PyTorch's gradient of a median over all
    entries: shared equally among the entries equal to it (among the NaNs if it is NaN).
    A finite value stays `v` exactly (the shared sum only adds a zero); an infinite or
    NaN one is that sum itself."""
    vd = v.detach()
    mask = logical_or(flat == vd, logical_and(isnan(flat), isnan(vd)))
    w = mask.to(flat.dtype) / apply(ops.sum, mask.to(flat.dtype), axis=None, keepdims=False)
    s = apply(ops.sum, where(mask, flat, 0.0) * w, axis=None, keepdims=False)
    finite = isfinite(vd)
    s0 = where(finite, s, 0.0)
    return where(finite, vd + (s0 - s0.detach()), s)


def _empty_median(flat: Tensor) -> Tensor:
    """The median of no entries, as PyTorch's: NaN in the input's dtype (cast as PyTorch
    casts it: the lowest int64 or int32, 0 for narrower integers, True for bool), and for a
    float input a function of it, so a backward gives an empty gradient."""
    nan = Tensor._wrap(devices.like(np.array(np.nan), flat.data)).to(flat.dtype)
    return flat.sum() + nan if flat.dtype.kind == "f" else nan


def nanmedian(input, dim: int | None = None, keepdim: bool = False, *, axis=None,
              keepdims=None):
    """The lower median of the entries that are not NaN: of all entries with no `dim`
    (a value; NaN if all are), else `(values, indices)` along `dim`.

    Like `torch.nanmedian`; the gradient goes to the returned index. Where entries
    tie (or a row is all NaN) the index is one of them, perhaps not PyTorch's."""
    dim = dim_alias(dim, axis, "nanmedian")
    keepdim = keepdim_alias(keepdim, keepdims, "nanmedian")
    x = _t(input)
    if x.dtype.kind == "c":
        raise DtypeError(f"nanmedian(): complex tensors have no order (got {x.dtype})")
    if x.dtype == np.bool_ and not (dim is None and x.size == 0):  # (torch: an empty
        raise DtypeError("nanmedian(): not implemented for bool tensors (as in PyTorch); "
                         "convert with .int() or .float() first")  # one's is True)
    if dim is None:
        if keepdim:
            raise TypeError("nanmedian(): keepdim needs a dim (over all entries the result is "
                            "a single value)")
        flat = reshape(x, -1)
        if flat.shape[0] == 0:
            return _empty_median(flat)
        v = reshape(apply(ops.gather, flat, _nanmedian_index(flat, -1), axis=-1), ())
        return _shared(flat, v) if x.dtype.kind == "f" else v
    d = _dim(dim, x.ndim, "nanmedian")
    zero_d = x.ndim == 0
    x1 = reshape(x, 1) if zero_d else x
    if x1.shape[d] == 0:
        raise IndexError(f"nanmedian(): reduction dim {d} of shape {x.shape} has size 0")
    ax = d - x1.ndim
    idx = _nanmedian_index(x1, ax)
    vals = apply(ops.gather, x1, idx, axis=ax)
    if zero_d:
        return nanmedian_result(reshape(vals, ()), reshape(idx, ()))
    if not keepdim:
        shape = x1.shape[:d] + x1.shape[d + 1:]
        vals, idx = reshape(vals, shape), reshape(idx, shape)
    return nanmedian_result(vals, idx)


# ----------------------------------------------------------------- quantile


def _q_arg(q, x: Tensor, fn: str) -> tuple[Tensor, bool]:
    """(q as a 1-d tensor of x's dtype, whether it was a scalar)."""
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise ArgumentError(f"{fn}(): q must be a scalar or a 1-d tensor, got shape "
                                     f"{q.shape}")
        if q.dtype != x.dtype:
            raise DtypeError(f"{fn}(): q of dtype {q.dtype} must have the input's "
                                     f"dtype {x.dtype}")
        vals = devices.host(every_value(q))
        if vals.size and not bool(np.all((vals >= 0) & (vals <= 1))):
            raise ArgumentError(f"{fn}(): q values must be in the range [0, 1], got "
                                     f"{vals.min()} to {vals.max()}")
        return reshape(q, -1), q.ndim == 0
    if isinstance(q, (bool, int, float, np.integer, np.floating)):
        if not 0 <= q <= 1:
            raise ArgumentError(f"{fn}(): q must be in the range [0, 1] but got {q}")
        return Tensor._wrap(devices.like(np.array([q], x.dtype), x.data)), True
    raise TypeError(f"{fn}(): q must be a number or a tensor, got {type(q).__name__}")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, fn) -> Tensor:
    x = _t(input)
    if x.dtype not in (np.float32, np.float64):
        raise DtypeError(f"{fn}(): input must be float32 or float64, got {x.dtype}")
    qt, scalar = _q_arg(q, x, fn)
    if interpolation not in _MODES:
        raise ArgumentError(f"{fn}(): interpolation must be one of {', '.join(_MODES)}, "
                                 f"got {interpolation!r}")
    d = None if dim is None else _dim(dim, x.ndim, fn)
    if x.size == 0:
        raise ArgumentError(f"{fn}(): input of shape {x.shape} must be non-empty")
    if d is None or x.ndim == 0:
        rows = reshape(x, -1)
    else:
        rows = movedim(x, d, -1)
    vals = rows.sort(-1).values  # NaN sorts last
    n = vals.shape[-1]
    if ignore_nan:  # ranks among the entries that are not NaN (0 if all are)
        count = apply(ops.sum, logical_not(isnan(vals)), axis=-1, keepdims=True)
        ranks = qt * (count - 1)
        ranks = where(ranks < 0, 0.0, ranks)
    else:  # a NaN in a row makes its quantiles NaN: rank the last (NaN) entry
        has_nan = apply(ops.max, isnan(vals), axis=-1, keepdims=True)  # any
        ranks = where(has_nan, float(n - 1), qt * (n - 1))
    if interpolation == "lower":
        ranks = floor(ranks)
    elif interpolation == "higher":
        ranks = ceil(ranks)
    elif interpolation == "nearest":
        ranks = round(ranks)  # half to even, as PyTorch
    below = ranks.to(np.int64)
    out = apply(ops.gather, vals, below, axis=-1)
    if interpolation in ("linear", "midpoint"):
        weights = ranks - below if interpolation == "linear" else \
            Tensor._wrap(devices.like(np.full(ranks.shape, 0.5, x.dtype), x.data))
        above = apply(ops.gather, vals, ceil(ranks).to(np.int64), axis=-1)
        out = lerp(out, above, weights)
    out = movedim(out, -1, 0)  # the quantiles first, then the kept dims
    if scalar:
        out = reshape(out, out.shape[1:])
    if keepdim and x.ndim:
        lead = 0 if scalar else 1
        if d is None:
            out = reshape(out, out.shape[:lead] + (1,) * x.ndim)
        else:
            out = unsqueeze(out, lead + d)
    return out


def quantile(input, q, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The `q`-th quantiles (q in [0, 1], a number or a 1-d tensor) of all entries, or
    along `dim`; with a tensor `q` the quantiles make a new first dimension.

    `interpolation` between the two nearest sorted entries: 'linear', 'lower',
    'higher', 'midpoint' or 'nearest'. A NaN makes its row's quantiles NaN. Like
    `torch.quantile`, with its gradients (to the input, and to a tensor `q`)."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(input, q, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """`quantile` of the entries that are not NaN (NaN where a row is all NaN). Like
    `torch.nanquantile`."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")
