"""Sets, counts and searches: `rg.unique`, `rg.unique_consecutive`, `rg.isin`,
`rg.bincount`, `rg.histc`, `rg.histogram`, `rg.bucketize`, `rg.searchsorted`.

Their results are integers, bools or counts, with no gradient (except bincount's
weighted sums, an `index_add` of the weights). Those of a fixed shape (isin,
searchsorted, bucketize, histc, histogram) come from rows of the op table
(`ops/discrete.py`), so `rg.jit` replays them on each call's values; those whose
length depends on the values (unique, unique_consecutive, bincount) refuse inside
`rg.jit` and `rg.func.vmap`.
"""

from __future__ import annotations

import builtins
from collections import namedtuple

import numpy as np

from .. import devices, ops
from .._values import batched, every_value, per_element, refuse, values_of
from ..dtypes import result_type
from ..engine import apply
from ..ops import discrete
from ..tensor import Tensor
from ._args import _dims, _t
from ._errors import ArgumentError, DtypeError

histogram_result = namedtuple("histogram", ["hist", "bin_edges"])
histogramdd_result = namedtuple("histogramdd", ["hist", "bin_edges"])
"""What `histogram` returns, as `torch.return_types.histogram`: `hist`, `bin_edges`."""


def _orderable(x: Tensor, fn: str) -> None:
    if x.dtype.kind == "c":
        raise DtypeError(f"{fn}(): complex tensors are not supported (got {x.dtype})")


# ----------------------------------------------------------------- unique


def _runs(s, equal_rows: bool):
    """Where each new value starts in `s` (sorted or not), as a bool mask."""
    new = np.ones(s.shape[0], dtype=bool)
    if s.shape[0] > 1:
        diff = s[1:] != s[:-1]  # NaN differs from NaN: each is its own value, as in PyTorch
        new[1:] = diff.any(axis=1) if equal_rows else diff
    return new


def _unique(x: Tensor, sort: bool, dim, fn: str):
    """(values, inverse, counts) as arrays."""
    _orderable(x, fn)
    refuse(f"{fn}() (the result's length is the number of distinct values)",
           "keep the shape, e.g. compare with a fixed set of values, or call it outside the "
           "jitted or vmapped function", x)
    a = devices.host(values_of(x, fn, "call it outside"))
    if dim is None:
        flat = a.reshape(-1)
        order = np.argsort(flat, kind="stable") if sort else np.arange(flat.size)
        s = flat[order]
        new = _runs(s, False)
        values = s[new]
        inv_shape = a.shape
    else:
        d = _dims(dim, None, x.ndim, fn) if x.ndim else None
        if d is None:
            raise IndexError(f"{fn}(): dim {dim} given, but the input is 0-d")
        moved = np.moveaxis(a, d, 0)
        n = moved.shape[0]
        rows = moved.reshape(n, -1) if moved.size else moved.reshape(n, 0)
        if n and rows.shape[1] == 0:
            raise ArgumentError(f"{fn}(): input of shape {x.shape} has a size-0 dimension "
                                f"other than dim {d}, so it has no slices to compare")
        order = np.lexsort(rows.T[::-1]) if sort and rows.shape[1] else np.arange(n)
        s = rows[order]
        new = _runs(s, True)
        values = np.moveaxis(moved[order][new], 0, d)
        inv_shape = (n,)
    inverse = np.empty(order.shape, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, new.shape[0])).astype(np.int64)
    return values, inverse.reshape(inv_shape), counts


def _unique_result(x, values, inverse, counts, return_inverse, return_counts):
    out = Tensor._wrap(devices.like(np.ascontiguousarray(values), x.data))
    if not (return_inverse or return_counts):
        return out
    res = [out]
    if return_inverse:
        res.append(Tensor._wrap(devices.like(inverse, x.data)))
    if return_counts:
        res.append(Tensor._wrap(devices.like(counts, x.data)))
    return tuple(res)


def unique(input, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None):
    """The distinct values of `input` (flattened), or its distinct slices along `dim`,
    in ascending (lexicographic) order; with `return_inverse`, where each entry's value
    is in the result; with `return_counts`, how often each occurs.

    Like `torch.unique`: every NaN is distinct, -0.0 equals 0.0, and the result is
    sorted even with `sorted=False` (as PyTorch's CPU result). It has no gradient and,
    its length depending on the values, refuses inside `rg.jit` and vmap."""
    x = _t(input)
    values, inverse, counts = _unique(x, True, dim, "unique")
    return _unique_result(x, values, inverse, counts, return_inverse, return_counts)


def unique_consecutive(input, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None):
    """`input` (flattened, or its slices along `dim`) with each run of equal consecutive
    values kept once; `return_inverse` and `return_counts` as in `unique`. Like
    `torch.unique_consecutive`."""
    x = _t(input)
    values, inverse, counts = _unique(x, False, dim, "unique_consecutive")
    return _unique_result(x, values, inverse, counts, return_inverse, return_counts)


# ----------------------------------------------------------------- membership and counts


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False
         ) -> Tensor:
    """Whether each entry of `elements` is among `test_elements` (a bool tensor of
    `elements`' shape; `invert` negates). NaN is in nothing. Like `torch.isin`; either
    argument may be a number."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): at least one of elements and test_elements must be a tensor")
    e, t = _t(elements), _t(test_elements)
    for name, v in (("elements", e), ("test_elements", t)):
        if v.dtype.kind in "cb":
            raise ArgumentError(f"isin(): {name} of dtype {v.dtype} is not supported")
    common = np.result_type(e.dtype, t.dtype) if e.dtype.kind == t.dtype.kind else None
    if common is None:  # an int against a float: compared in torch's promoted dtype
        common = result_type(e, t)
        e, t = (v if v.dtype == common else v.to(common) for v in (e, t))
    return apply(discrete.isin, e, t, invert=bool(invert))


def bincount(input, weights=None, minlength: int = 0) -> Tensor:
    """How often each value 0, 1, ... occurs in the 1-d non-negative integer `input`
    (at least `minlength` counts; int64), or the sum of `weights` at each value
    (float64 for integer weights). Like `torch.bincount`; the weighted sums are
    differentiable in the weights. Its length depends on the values, so it refuses
    inside `rg.jit` and vmap."""
    x = _t(input)
    if x.dtype.kind not in "iu":
        raise DtypeError(f"bincount(): input must be an integer tensor, got {x.dtype}")
    if x.ndim != 1:
        raise ArgumentError(f"bincount(): input must be 1-d (non-negative integers), got "
                            f"shape {x.shape}")
    if isinstance(minlength, bool) or not isinstance(minlength, (int, np.integer)):
        raise TypeError(f"bincount(): minlength must be an int, got {minlength!r}")
    if minlength < 0:
        raise ArgumentError(f"bincount(): minlength should be >= 0, got {minlength}")
    w = None if weights is None else _t(weights)
    if w is not None and w.shape != x.shape:
        raise ArgumentError(f"bincount(): weights of shape {w.shape} must be 1-d and as long "
                            f"as input, of shape {x.shape}")
    if batched(x, w):  # inside vmap: each element's; torch's fallback too, equal lengths only
        r = per_element(lambda a, ww: bincount(a, ww, minlength), x, w)
        if r is not None:
            return r
    refuse("bincount() (the result's length is the largest value + 1)",
           "use scatter_add or index_add into a tensor of a fixed length, or call it outside",
           x, *([] if w is None else [w]))
    a = devices.host(values_of(x, "bincount()", "call it outside"))
    if a.size and a.min() < 0:
        raise ArgumentError(f"bincount(): input must be non-negative, got {a.min()}")
    n = builtins.max(int(a.max()) + 1 if a.size else 0, int(minlength))
    if w is None or not a.size:  # torch: an empty input gives int64 zeros, weights or not
        return Tensor._wrap(devices.like(np.bincount(a, minlength=n).astype(np.int64), x.data))
    if w.dtype.kind not in "f":
        w = w.to(np.float64)
    zeros = Tensor._wrap(devices.like(np.zeros(n, dtype=w.dtype), x.data))
    return apply(ops.index_add, zeros, x, w, axis=-1)


# ----------------------------------------------------------------- histograms


def _bins_arg(bins, fn: str) -> int:
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)):
        raise TypeError(f"{fn}(): bins must be an int, got {bins!r}")
    if bins <= 0:
        raise ArgumentError(f"{fn}(): bins must be > 0, got {bins}")
    return int(bins)


def _float_input(input, fn: str) -> Tensor:
    x = _t(input)
    if x.dtype.kind != "f":
        raise DtypeError(f"{fn}(): input must be a floating tensor, got {x.dtype}")
    return x


def histc(input, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """Counts of the entries in `bins` equal-width bins over [min, max] (the data's own
    range when min == max), in the input's dtype; entries outside the range (and NaN)
    are not counted. Like `torch.histc` (no gradient)."""
    x = _float_input(input, "histc")
    nb = _bins_arg(bins, "histc")
    lo, hi = float(min), float(max)
    if lo != hi:
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ArgumentError(f"histc(): range of [{lo}, {hi}] is not finite")
        if lo > hi:
            raise ArgumentError(f"histc(): max ({hi}) must be larger than min ({lo})")
    return apply(discrete.histc, x.detach(), bins=nb, lo=lo, hi=hi)  # no gradient


def histogram(input, bins, *, range=None, weight=None, density: bool = False):  # noqa: A002
    """`(hist, bin_edges)`: counts (or summed `weight`s) of the entries in the bins.

    `bins` an int (that many equal bins over `range`, or over the data's own range)
    or a 1-d tensor of increasing edges; the last bin includes its right edge, entries
    outside are not counted; `density` divides by the total and the bin widths. Like
    `torch.histogram` (no gradient)."""
    x = _float_input(input, "histogram").detach()  # no gradient
    if weight is not None:
        w = _t(weight)
        if w.dtype != x.dtype:
            raise DtypeError(f"histogram(): weight of dtype {w.dtype} must have the input's "
                             f"dtype {x.dtype}")
        if w.shape != x.shape:
            raise ArgumentError(f"histogram(): weight of shape {w.shape} must have the input's "
                                f"shape {x.shape}")
    else:
        w = apply(ops.ones_like, x)
    if isinstance(bins, Tensor):
        if range is not None:
            raise TypeError("histogram(): range is only accepted with an int bins")
        if bins.dtype != x.dtype:
            raise DtypeError(f"histogram(): bins of dtype {bins.dtype} must have the input's "
                             f"dtype {x.dtype}")
        if bins.ndim != 1 or bins.shape[0] < 2:
            raise ArgumentError(f"histogram(): bins must be a 1-d tensor of at least 2 edges, "
                                f"got shape {bins.shape}")
        edges, local = bins.detach(), False
    else:
        nb = _bins_arg(bins, "histogram")
        bounds = {}
        if range is not None:
            lo, hi = (float(v) for v in range)
            if not (np.isfinite(lo) and np.isfinite(hi)):
                raise ArgumentError(f"histogram(): range [{lo}, {hi}] is not finite")
            if lo > hi:
                raise ArgumentError(f"histogram(): min should not exceed max, but got range "
                                    f"[{lo}, {hi}]")
            bounds = {"lo": lo, "hi": hi}
        edges, local = apply(discrete.histogram_edges, x, bins=nb, **bounds), True
    hist = apply(discrete.histogram, x, edges, w.detach(), density=bool(density), local=local)
    return histogram_result(hist, edges.clone() if isinstance(bins, Tensor) else edges)


def histogramdd(input, bins, *, range=None, weight=None, density: bool = False):  # noqa: A002
    """`(hist, bin_edges)`: the joint histogram of the rows of `input` (..., D), each of
    its last-dimension entries a coordinate. `bins` an int (per dimension), a sequence of
    D ints, or of D 1-d tensors of increasing edges; `range` the flat
    [min_0, max_0, min_1, max_1, ...] for int bins (else each column's own range);
    `weight` (the leading shape of `input`) sums weights instead of counting; `density`
    divides by the total and the bin volumes. Like `torch.histogramdd` (no gradient)."""
    x = _float_input(input, "histogramdd").detach()
    if x.ndim < 2:  # torch: the points are the rows of an (N, D) input
        raise ArgumentError(f"histogramdd(): input tensor should have at least 2 dimensions, "
                            f"got shape {tuple(x.shape)}")
    dims = x.shape[-1]
    rows = x.reshape(-1, dims)
    if weight is not None:
        w = _t(weight)
        if w.dtype != x.dtype or w.shape != x.shape[:-1]:
            raise ArgumentError(f"histogramdd(): weight must have the input's dtype {x.dtype} "
                                f"and its leading shape {x.shape[:-1]}, got {w.dtype} and "
                                f"{w.shape}")
        w = w.detach().reshape(-1)
    else:
        w = apply(ops.ones_like, rows[:, 0])
    given = isinstance(bins, (list, tuple)) and builtins.all(isinstance(b, Tensor) for b in bins)
    if given:
        if range is not None:
            raise TypeError("histogramdd(): range is only accepted with int bins")
        edges = [b.detach() for b in bins]
    else:
        counts = [bins] * dims if isinstance(bins, (int, np.integer)) else list(bins)
        if len(counts) != dims:  # a short list would index past its end, a long one drop some
            raise ArgumentError("histogramdd: The size of bins must be equal to the innermost "
                                f"dimension of the input ({dims}), got {len(counts)}")
        counts = [_bins_arg(b, "histogramdd") for b in counts]
        if range is not None and len(range) != 2 * dims:
            raise ArgumentError(f"histogramdd(): range should have {2 * dims} elements, got "
                                f"{len(range)}")
        edges = []
        for d in builtins.range(dims):
            bounds = {} if range is None else {"lo": float(range[2 * d]),
                                               "hi": float(range[2 * d + 1])}
            edges.append(apply(discrete.histogram_edges, rows[:, d], bins=counts[d], **bounds))
    if len(edges) != dims:
        raise ArgumentError(f"histogramdd(): expected {dims} sequences of bin edges or counts "
                            f"for input of last dimension {dims}, got {len(edges)}")
    for e in edges:
        if e.dtype != x.dtype or e.ndim != 1 or e.shape[0] < 2:
            raise ArgumentError(f"histogramdd(): bin edges must be 1-d tensors of the input's "
                                f"dtype {x.dtype} with at least 2 entries, got {e.dtype} "
                                f"{e.shape}")
    hist = apply(discrete.histogramdd, rows, w, *edges, density=bool(density), local=not given)
    return histogramdd_result(hist, tuple(e.clone() for e in edges) if given else tuple(edges))


# ----------------------------------------------------------------- searching


def searchsorted(sorted_sequence, input, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter=None) -> Tensor:
    """Where each entry of `input` would be inserted into the last dimension of
    `sorted_sequence` to keep it sorted: the first such place, or the last with
    `right=True` / `side='right'`. A 1-d sequence serves every value; otherwise its
    leading dimensions must equal `input`'s. `sorter` holds the indices that sort an
    unsorted sequence. int64 (int32 with `out_int32`). Like `torch.searchsorted`."""
    seq = _t(sorted_sequence)
    v = _t(input)
    for t in (seq, v):
        _orderable(t, "searchsorted")
    if seq.ndim == 0:
        raise ArgumentError("searchsorted(): sorted_sequence must have at least 1 dimension, "
                            "got a 0-d tensor")
    if side not in (None, "left", "right"):
        raise ArgumentError(f"searchsorted(): side can only be 'left' or 'right', got {side!r}")
    if side is not None and right and side == "left":
        raise ArgumentError("searchsorted(): side='left' and right=True contradict each other")
    right = bool(right) or side == "right"
    if seq.ndim > 1:
        if v.ndim == 0:
            raise ArgumentError(f"searchsorted(): input can be a number only when "
                                f"sorted_sequence is 1-d, got shape {seq.shape}")
        if seq.shape[:-1] != v.shape[:-1]:
            raise ArgumentError(f"searchsorted(): sorted_sequence of shape {seq.shape} must be "
                                f"1-d or have the leading dimensions of input, of shape "
                                f"{v.shape}")
    if sorter is not None:
        s = _t(sorter)
        if s.dtype != np.int64:
            raise DtypeError(f"searchsorted(): sorter must be an int64 tensor, got {s.dtype}")
        if s.shape != seq.shape:
            raise ArgumentError(f"searchsorted(): sorter of shape {s.shape} must have "
                                f"sorted_sequence's shape {seq.shape}")
        vals = devices.host(every_value(s))
        if vals.size and (vals.min() < 0 or vals.max() >= seq.shape[-1]):
            raise ArgumentError(f"searchsorted(): sorter index out of range [0, "
                                f"{seq.shape[-1]})")
        seq = apply(ops.gather, seq, s, axis=-1)
    return apply(discrete.searchsorted, seq, v, right=right, int32=bool(out_int32))


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The bucket of each entry among the increasing 1-d `boundaries`: i with
    boundaries[i-1] < x <= boundaries[i] (with `right=True`, boundaries[i-1] <= x <
    boundaries[i]). Like `torch.bucketize`."""
    b = _t(boundaries)
    if b.ndim != 1:
        raise ArgumentError(f"bucketize(): boundaries must be 1-d, got shape {b.shape}")
    return searchsorted(b, input, out_int32=out_int32, right=right)
