"""Indexing and rearranging: `rg.gather`, `rg.scatter*`, `rg.index_select`, `rg.flip`,
`rg.roll`, `rg.diagonal`, `rg.tril`, `rg.meshgrid`, `F.unfold`/`F.fold`, ...

Integer index tensors are inputs of the ops they feed (so `rg.jit` reads each
call's indices); rearrangements with no op of their own are compositions of
reshape, permute, expand, getitem and cat, so their gradients come for free.
Arguments are checked here, before any array work, with errors that name the
argument and the shapes.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from .. import ops
from .._values import (
    batched,
    every_value,
    jit_error,
    jit_error_type,
    per_element,
    refuse,
    refuse_batched,
)
from ..engine import apply
from ..grad_mode import state
from ..tensor import Tensor, as_tensor
from ._args import _dims, _t, dim_alias, int_arg
from ._errors import DtypeError, IndexDtypeError, IndexRangeError, ShapeError, scalar_as
from ._fresh import fresh, row_major
from .elementwise import where
from .math import remainder
from .pieces import joined
from .shape import cat, expand, permute, reshape

# ----------------------------------------------------------------- argument checks


class IndexShapeError(IndexError, ShapeError):
    """A dimension or index of the wrong rank where PyTorch raises IndexError; a ValueError
    (and RuntimeError) as retrograd's other shape errors."""


def _index_arg(index, fn: str, name: str = "index") -> Tensor:
    """An integer index as a tensor (lists and arrays accepted); anything else refused."""
    if not isinstance(index, Tensor):
        arr = np.asarray(index)
        if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
            raise IndexDtypeError(f"{fn}(): {name} must be an integer tensor, got {arr.dtype}")
        index = as_tensor(arr.astype(np.int64))
    if index.dtype.kind not in "iu":
        raise IndexDtypeError(f"{fn}(): {name} must be an integer tensor (int64), got dtype "
                              f"{index.dtype}")
    return index


def _dim(dim, ndim: int, fn: str) -> int:
    dim = int_arg(dim)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{fn}(): dim must be an int, got {dim!r}")
    return _dims(int(dim), None, ndim, fn)


def _check_range(index: Tensor, size: int, d: int, fn: str, name: str = "index") -> None:
    """Every entry of `index` in [0, size): PyTorch refuses negative indices here too."""
    if index.size == 0:
        return
    values = every_value(index)  # under vmap: every batch element's
    lo, hi = int(values.min()), int(values.max())
    if lo < 0 or hi >= size:
        bad = lo if lo < 0 else hi
        raise IndexRangeError(f"{fn}(): {name} {bad} is out of bounds for dimension {d} with "
                              f"size {size}")


def _same_dtype(x: Tensor, src: Tensor, fn: str) -> None:
    if src.dtype != x.dtype:
        raise DtypeError(f"{fn}(): src has dtype {src.dtype} but input has dtype {x.dtype}; "
                         "they must match")


def _as_1d(x: Tensor) -> Tensor:
    return reshape(x, 1) if x.ndim == 0 else x


def _back(out: Tensor, zero_d: bool) -> Tensor:
    return reshape(out, ()) if zero_d else out


# ----------------------------------------------------------------- gather / scatter


def gather(input, dim: int, index, *, sparse_grad: bool = False) -> Tensor:
    """`out[i][j][k] = input[i][index[i][j][k]][k]` along `dim` (PyTorch's gather)."""
    x = _t(input)
    if isinstance(index, Tensor) and index.size == 0:
        # PyTorch checks nothing but `dim` for an empty index (any rank or dtype): the
        # result is empty, of the index's shape, on input's graph
        _dim(dim, x.ndim, "gather")
        return reshape(reshape(x, -1)[:0], index.shape)
    idx = _index_arg(index, "gather")
    zero_d = x.ndim == 0 and idx.ndim == 0
    d = _dim(dim, x.ndim, "gather")
    if idx.ndim != builtins.max(x.ndim, 1) and not zero_d:
        raise ShapeError(f"gather(): index of shape {idx.shape} must have as many dimensions "
                         f"as input of shape {x.shape}")
    x, idx = _as_1d(x), _as_1d(idx)
    for k, (a, b) in enumerate(zip(idx.shape, x.shape)):
        if k != d and a > b:
            raise ShapeError(f"gather(): index of shape {idx.shape} is larger than input of "
                             f"shape {x.shape} in dimension {k}")
    _check_range(idx, x.shape[d], d, "gather")
    return _back(apply(ops.gather, x, idx, axis=d - x.ndim), zero_d)


def take_along_dim(input, indices, dim: int | None = None) -> Tensor:
    """Pick values along `dim` at `indices`, broadcasting input and indices elsewhere;
    with no `dim`, index the flattened input. Along `dim`, indices wrap modulo its size
    as in PyTorch (negative ones count from the end)."""
    x = _t(input)
    idx = _index_arg(indices, "take_along_dim", "indices")
    if dim is None:
        flat = reshape(x, -1)
        i = reshape(idx, -1)
        _check_range(i, flat.shape[0], 0, "take_along_dim", "indices")
        return apply(ops.gather, flat, i, axis=-1)
    if idx.ndim != x.ndim:
        raise ShapeError(f"take_along_dim(): indices of shape {idx.shape} must have as many "
                         f"dimensions as input of shape {x.shape}")
    d = _dim(dim, x.ndim, "take_along_dim")
    x, idx = _as_1d(x), _as_1d(idx)
    try:
        rest = np.broadcast_shapes(x.shape[:d] + (1,) + x.shape[d + 1:],
                                   idx.shape[:d] + (1,) + idx.shape[d + 1:])
    except ValueError:
        raise ShapeError(f"take_along_dim(): input of shape {x.shape} and indices of shape "
                         f"{idx.shape} do not broadcast outside dimension {d}") from None
    if x.shape[d]:
        # PyTorch 2.13 wraps indices along `dim` modulo its size (-1 is the last entry);
        # the flattened form above refuses negative indices as gather does
        idx = remainder(idx, x.shape[d])
    _check_range(idx, x.shape[d], d, "take_along_dim", "indices")
    xs = rest[:d] + (x.shape[d],) + rest[d + 1:]
    js = rest[:d] + (idx.shape[d],) + rest[d + 1:]
    x = x if x.shape == xs else expand(x, *xs)
    idx = idx if idx.shape == js else expand(idx, *js)
    return apply(ops.gather, x, idx, axis=d - x.ndim)


def _scatter_args(input, dim, index, src, fn):
    x = _t(input)
    idx = _index_arg(index, fn)
    d = _dim(dim, x.ndim, fn)
    if not isinstance(src, Tensor):  # a number: the value written at every index
        if isinstance(src, (bool, int, float, np.number)):  # checked as torch's fill value
            src = Tensor(np.full(idx.shape, scalar_as(src, x.dtype, fn), dtype=x.dtype))
        else:
            src = as_tensor(src)
    _same_dtype(x, src, fn)
    if idx.numel() == 0 and not (idx.ndim == x.ndim == src.ndim):
        return x, None, src, d  # PyTorch writes nothing and checks no shapes: a copy of x
    if not (idx.ndim == x.ndim == src.ndim):
        raise ShapeError(f"{fn}(): index {idx.shape}, input {x.shape} and src {src.shape} "
                         "must have the same number of dimensions")
    for k, (a, b, c) in enumerate(zip(idx.shape, x.shape, src.shape)):
        if a > c or (k != d and a > b):
            raise ShapeError(f"{fn}(): index of shape {idx.shape} is larger than src of shape "
                             f"{src.shape} or than input of shape {x.shape} (outside dim {d}) "
                             f"in dimension {k}")
    if x.ndim:
        _check_range(idx, x.shape[d], d, fn)
    return x, idx, src, d


def scatter(input, dim: int, index, src=None, *, value=None, reduce: str | None = None
            ) -> Tensor:
    """A copy of `input` with `src` (a tensor, or one number) written at `index` along `dim`.

    Where an index repeats, which source is written is unspecified (as in PyTorch).
    `reduce='add'` / `'multiply'` accumulate instead."""
    if (src is None) == (value is None):
        raise TypeError("scatter(): pass exactly one of src and value")
    src = value if src is None else src
    x, idx, src, d = _scatter_args(input, dim, index, src, "scatter")
    if idx is None:
        return x.clone()
    if x.ndim == 0:
        x, idx, src = _as_1d(x), _as_1d(idx), _as_1d(src)
    if reduce is None:
        out = apply(ops.scatter_dim, x, idx, src, axis=d - x.ndim)
    elif reduce in ("add", "multiply"):
        out = apply(ops.scatter_reduce, x, idx, src, axis=d - x.ndim,
                    reduce="sum" if reduce == "add" else "prod", include_self=True)
    else:
        raise ShapeError(f"scatter(): reduce must be 'add' or 'multiply', got {reduce!r}")
    return _back(out, _t(input).ndim == 0)


def scatter_add(input, dim: int, index, src) -> Tensor:
    """A copy of `input` with `src` added at `index` along `dim` (repeats accumulate)."""
    x, idx, src, d = _scatter_args(input, dim, index, src, "scatter_add")
    if idx is None:
        return x.clone()
    zero_d = x.ndim == 0
    x, idx, src = _as_1d(x), _as_1d(idx), _as_1d(src)
    return _back(apply(ops.scatter_add_dim, x, idx, src, axis=d - x.ndim), zero_d)


def scatter_reduce(input, dim: int, index, src, reduce: str, *, include_self: bool = True
                   ) -> Tensor:
    """Reduce `src` onto `input` at `index` along `dim` with 'sum', 'prod', 'mean', 'amax'
    or 'amin'; `include_self=False` leaves input's own values out where an index lands.

    Gradients as PyTorch's: amax/amin share the gradient among ties; prod's is exact with
    zeros (its second derivative is not, where two zeros meet at one position)."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin", "max", "min"):
        raise ShapeError(f"scatter_reduce(): reduce must be one of 'sum', 'prod', 'mean', "
                         f"'amax', 'amin', got {reduce!r}")
    x, idx, src, d = _scatter_args(input, dim, index, src, "scatter_reduce")
    if reduce == "mean" and x.dtype == np.bool_:
        raise DtypeError("scatter_reduce(): reduce='mean' is not implemented for bool tensors")
    if idx is None:
        return x.clone()
    zero_d = x.ndim == 0
    x, idx, src = _as_1d(x), _as_1d(idx), _as_1d(src)
    # 'max'/'min': PyTorch's forward takes them for amax/amin, its derivatives refuse them
    return _back(apply(ops.scatter_reduce, x, idx, src, axis=d - x.ndim, reduce=reduce,
                       include_self=bool(include_self)), zero_d)


def index_select(input, dim: int, index) -> Tensor:
    """The entries of `input` at positions `index` (a vector) along `dim`."""
    x = _t(input)
    idx = _index_arg(index, "index_select")
    if idx.ndim > 1:
        raise IndexShapeError(f"index_select(): index must be a vector, got shape {idx.shape}")
    d = _dim(dim, x.ndim, "index_select")
    zero_d = x.ndim == 0
    x, idx = _as_1d(x), _as_1d(idx)
    _check_range(idx, x.shape[d], d, "index_select")
    return _back(apply(ops.index_select, x, idx, axis=d - x.ndim), zero_d)


def index_add(input, dim: int, index, source, *, alpha=1) -> Tensor:
    """A copy of `input` with `alpha * source` added at positions `index` along `dim`;
    `alpha` converted to input's dtype first, as PyTorch does (truncated for an integer
    dtype, refused where it does not fit)."""
    x = _t(input)
    idx = _index_arg(index, "index_add")
    src = _t(source)
    if idx.ndim > 1:
        raise ShapeError(f"index_add(): index must be a vector, got shape {idx.shape}")
    d = _dim(dim, x.ndim, "index_add")
    zero_d = x.ndim == 0
    x, idx, src = _as_1d(x), _as_1d(idx), _as_1d(src)
    _same_dtype(x, src, "index_add")
    want = x.shape[:d] + (idx.shape[0],) + x.shape[d + 1:]
    if src.shape != want:
        raise ShapeError(f"index_add(): source of shape {src.shape} must have shape {want} "
                         f"(input {x.shape} with dimension {d} the length of index)")
    _check_range(idx, x.shape[d], d, "index_add")
    alpha = scalar_as(alpha, x.dtype, "index_add").item()  # as PyTorch: 2.5 is 2 for ints
    if alpha != 1:
        src = src * alpha
    return _back(apply(ops.index_add, x, idx, src, axis=d - x.ndim), zero_d)


def take(input, index) -> Tensor:
    """The entries of `input`, seen as flat, at positions `index` (any shape; negative
    counts from the end), in `index`'s shape. Like `torch.take`."""
    x = _t(input)
    if isinstance(index, Tensor) and index.dtype != np.int64:  # int32 too, as PyTorch
        raise DtypeError(f"take(): index must be a long (int64) tensor, got {index.dtype}")
    idx = _index_arg(index, "take")
    n = x.size
    flat = reshape(x, -1)
    if idx.size == 0:
        return reshape(flat[:0], idx.shape)
    values = every_value(idx)
    lo, hi = int(values.min()), int(values.max())
    if lo < -n or hi >= n:
        raise IndexError(f"take(): index {lo if lo < -n else hi} is out of range for a tensor "
                         f"of {n} elements (shape {x.shape})")
    i = reshape(idx.to(np.int64), -1)
    i = where(i < 0, i + n, i)
    return reshape(apply(ops.gather, flat, i, axis=-1), idx.shape)


def select(input, dim: int, index: int) -> Tensor:
    """The slice of `input` at position `index` along `dim` (that dim removed; a view).
    Like `torch.select`."""
    x = _t(input)
    if x.ndim == 0:
        raise IndexError("select(): cannot be applied to a 0-d tensor")
    d = _dim(dim, x.ndim, "select")
    index = int_arg(index)
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"select(): index must be an int, got {index!r}")
    n = x.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} is out of range for dimension {d} of size "
                         f"{n} (shape {x.shape})")
    return x[(slice(None),) * d + (int(index),)]


# ----------------------------------------------------------------- masks


def _mask_arg(mask, x: Tensor, fn: str) -> Tensor:
    m = mask if isinstance(mask, Tensor) else as_tensor(np.asarray(mask))
    if m.dtype != np.bool_:
        raise DtypeError(f"{fn}(): mask must be a bool tensor, got dtype {m.dtype}")
    return m


def tensor_value_as(value, dtype: np.dtype, fn: str):
    """A 0-d tensor fill value in `dtype`, checked as `scalar_as` checks a number (PyTorch
    reads the tensor's value) where the cast could lose it: from complex to real, or from
    float to integer or to a narrower float; a float value stays differentiable."""
    src = value.data.dtype
    if src == dtype:
        return value
    if dtype.kind != "b" and (src.kind == "c" and dtype.kind != "c" or src.kind == "f"
                              and (dtype.kind in "iu" or dtype.itemsize < src.itemsize)):
        for v in np.ravel(every_value(value)):
            scalar_as(v.item(), dtype, fn)
    return value.to(dtype)


def masked_fill(input, mask, value) -> Tensor:
    """`input` with `value` (a number or a 0-d tensor) where `mask` is True; the two
    broadcast, so a larger mask gives a larger result (as in PyTorch; `masked_fill_`
    refuses it). A value the input's dtype cannot hold is refused, as PyTorch does."""
    x = _t(input)
    m = _mask_arg(mask, x, "masked_fill")
    try:
        shape = np.broadcast_shapes(m.shape, x.shape)
    except ValueError:
        raise ShapeError(f"masked_fill(): mask of shape {m.shape} does not broadcast with "
                         f"input of shape {x.shape}") from None
    if isinstance(value, Tensor):
        if value.ndim:
            raise ShapeError(f"masked_fill(): value must be a number or a 0-d tensor, got "
                             f"shape {value.shape}")
        value = tensor_value_as(value, x.dtype, "masked_fill")
    else:
        value = Tensor(scalar_as(value, x.dtype, "masked_fill"))
    if shape != x.shape:
        x = expand(x, *shape)
    return row_major(where(m, value, x))  # (where() keeps a permuted input's order)


def masked_select(input, mask) -> Tensor:
    """The entries of `input` where `mask` is True, as a vector (the two broadcast)."""
    x = _t(input)
    m = _mask_arg(mask, x, "masked_select")
    try:
        shape = np.broadcast_shapes(m.shape, x.shape)
    except ValueError:
        raise ShapeError(f"masked_select(): mask of shape {m.shape} and input of shape "
                         f"{x.shape} do not broadcast") from None
    if x.shape != shape:
        x = expand(x, *shape)
    if m.shape != shape:
        m = expand(m, *shape)
    try:
        return x[m]
    except RuntimeError as e:  # rg.jit's refusal of a traced mask, said for this function
        if not isinstance(e, jit_error_type()):
            raise
        raise jit_error("masked_select() (a boolean index: the result's length is the "
                        "number of True entries)", "keep the shape with "
                        "rg.where(mask, input, 0) or masked_fill, or select outside the "
                        "jitted function") from e


def nonzero(input, *, as_tuple: bool = False):
    """Indices of the nonzero entries: an (n, ndim) int64 tensor, or one vector per dim."""
    x = _t(input)
    refuse("nonzero() (the number of rows is the number of nonzero entries, and any size "
           "read from it downstream would be frozen)", "keep the shape with a mask (rg.where, "
           "masked_fill, a product with the mask), or call nonzero outside the jitted or "
           "vmapped function", x)
    out = apply(ops.nonzero, x)
    if not as_tuple:
        return out
    if x.ndim == 0:
        return (out.sum(-1),)  # zeros, one per hit (an op: the count depends on the values)
    return tuple(out[:, k].contiguous() for k in range(x.ndim))  # row-major, as torch's


def argwhere(input) -> Tensor:
    """The indices of the nonzero entries, one row per entry: `nonzero(input)`. Like
    `torch.argwhere`. Inside vmap, each batch element's rows (torch.func.vmap's fallback
    loop; equal counts only), where `nonzero` refuses as torch's does."""
    if batched(input):
        r = per_element(argwhere, input)
        if r is not None:
            return r
    return nonzero(input)


# ----------------------------------------------------------------- diagonals and triangles


def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The `offset` diagonal of the matrices in dims (dim1, dim2), as the last dimension."""
    x = _t(input)
    if x.ndim < 2:
        raise IndexShapeError(f"diagonal(): input must have at least 2 dimensions, got shape "
                         f"{x.shape}")
    d1, d2 = _dim(dim1, x.ndim, "diagonal"), _dim(dim2, x.ndim, "diagonal")
    if d1 == d2:
        raise ShapeError(f"diagonal(): dim1 and dim2 must differ, both are {d1}")
    return apply(ops.diagonal, x, offset=int(offset), axis1=d1 - x.ndim, axis2=d2 - x.ndim)


def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices with `input`'s last dimension on their `offset` diagonal (dims dim1, dim2)."""
    x = _t(input)
    if x.ndim == 0:  # torch: the result has one dimension, so dim1=-2 is out of range
        raise IndexShapeError("diag_embed(): dimension out of range for a 0-d input (expected "
                              "a dimension in [-1, 0])")
    nd = x.ndim + 1
    d1, d2 = _dim(dim1, nd, "diag_embed"), _dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise ShapeError(f"diag_embed(): dim1 and dim2 must differ, both are {d1}")
    x = _as_1d(x)
    n = x.shape[-1] + builtins.abs(int(offset))
    shape = list(x.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, n)
    return apply(ops.diag_scatter, x, offset=int(offset), axis1=d1 - nd, axis2=d2 - nd,
                 shape=tuple(shape))


def diag(input, diagonal: int = 0) -> Tensor:
    """A vector to a square matrix with it on the `diagonal`-th diagonal, or a matrix's
    `diagonal`-th diagonal as a vector."""
    x = _t(input)
    if x.ndim == 1:
        return diag_embed(x, diagonal, 0, 1)
    if x.ndim == 2:
        return globals()["diagonal"](x, diagonal, 0, 1).clone()
    raise ShapeError(f"diag(): input must be a vector or a matrix, got shape {x.shape}")


def _triangle(x, diagonal, fn, lower):
    x = _t(x)
    if x.ndim < 2:
        raise ShapeError(f"{fn}(): input must have at least 2 dimensions, got shape {x.shape}")
    r, c = x.shape[-2:]
    off = np.arange(c)[None, :] - np.arange(r)[:, None]
    keep = off <= diagonal if lower else off >= diagonal
    return row_major(where(Tensor(keep), x, Tensor(np.zeros((), dtype=x.dtype))))


def tril(input, diagonal: int = 0) -> Tensor:
    """The lower triangle (on and below the `diagonal`-th diagonal) of the last two dims."""
    return _triangle(input, int(diagonal), "tril", True)


def triu(input, diagonal: int = 0) -> Tensor:
    """The upper triangle (on and above the `diagonal`-th diagonal) of the last two dims."""
    return _triangle(input, int(diagonal), "triu", False)


# ----------------------------------------------------------------- rearranging


def _dim_list(dims, ndim, fn) -> tuple:
    items = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    ds = tuple(_dim(d, ndim, fn) for d in items)
    if len(set(ds)) != len(ds):
        raise ShapeError(f"{fn}(): dims {dims} repeat a dimension")
    return ds


def flip(input, dims, *more) -> Tensor:
    """A copy with the order of entries reversed along each of `dims` (a sequence, or the
    dims as arguments: PyTorch's method form `t.flip(0, 1)`)."""
    x = _t(input)
    if more:
        dims = (dims, *more)
    ds = _dim_list(dims, x.ndim, "flip")
    if x.ndim == 0:
        return x.clone()
    idx = tuple(slice(None, None, -1) if k in ds else slice(None) for k in range(x.ndim))
    return x[idx].clone()


def fliplr(input) -> Tensor:
    """Reverse the order of the columns (dimension 1; needs 2 or more dims). Like `torch.fliplr`."""
    x = _t(input)
    if x.ndim < 2:
        raise ShapeError(f"fliplr(): input must have at least 2 dimensions, got {x.shape}")
    return flip(x, 1)


def flipud(input) -> Tensor:
    """Reverse the order of the rows (dimension 0). Like `torch.flipud`."""
    x = _t(input)
    if x.ndim < 1:
        raise ShapeError("flipud(): input must have at least 1 dimension")
    return flip(x, 0)


def roll(input, shifts, dims=None) -> Tensor:
    """Entries shifted cyclically by `shifts` along `dims` (no dims: over the flattened
    input, shape kept)."""
    x = _t(input)
    if dims is None:
        if isinstance(shifts, (tuple, list)) and len(shifts) != 1:
            raise ShapeError(f"roll(): with no dims, shifts must be one int, got {shifts}")
        s = shifts[0] if isinstance(shifts, (tuple, list)) else shifts
        return reshape(roll(reshape(x, -1), s, 0), x.shape)
    sh = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
    ds = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if len(sh) != len(ds):
        raise ShapeError(f"roll(): shifts {shifts} and dims {dims} must have the same length")
    if x.ndim == 0:
        raise IndexRangeError(f"roll(): dimension specified as {ds[0]} but the tensor has no "
                              "dimensions")
    out = x
    for s, d in zip(sh, ds):
        d = _dim(d, x.ndim, "roll")
        n = x.shape[d] if x.ndim else 1
        k = int(s) % n if n else 0
        if k == 0 or x.ndim == 0:
            continue
        pre = (slice(None),) * d
        out = cat([out[pre + (slice(n - k, None),)], out[pre + (slice(0, n - k),)]], d)
    return out if out is not x else x.clone()


def _sizes(sizes, fn) -> tuple:
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    out = []
    for s in sizes:
        if isinstance(s, Tensor) and s.dtype.kind in "iu" and s.data.size == 1:
            s = int(s.item())  # an integer tensor of one element is a size, as in PyTorch
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"{fn}(): sizes must be a tuple of ints, got {sizes}")
        if s < 0:
            raise ShapeError(f"{fn}(): sizes must be non-negative ints, got {sizes}")
        out.append(int(s))
    return tuple(out)


def repeat(input, *sizes, repeats=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """Tensor.repeat: the input tiled `sizes[k]` times along each dim (extra leading dims
    for extra sizes); `repeats=` is torch's keyword for them."""
    x = _t(input)
    if repeats is not None:
        if sizes:
            raise TypeError("repeat() got multiple values for argument 'repeats'")
        sizes = (repeats,)
    reps = _sizes(sizes, "repeat")
    if len(reps) < x.ndim:
        raise ShapeError(f"repeat(): {len(reps)} sizes {reps} are fewer than the {x.ndim} "
                         f"dimensions of shape {x.shape}")
    shape = (1,) * (len(reps) - x.ndim) + x.shape
    inter = tuple(v for s in shape for v in (1, s))
    big = tuple(v for r, s in zip(reps, shape) for v in (r, s))
    y = reshape(expand(reshape(x, inter), *big), tuple(r * s for r, s in zip(reps, shape)))
    return y.clone()  # a copy, as PyTorch's: the reshape of the broadcast may be a view of
    # x (repeats along a size-1 dim), and even when it copied it shares x's version counter


def tile(input, dims, *more) -> Tensor:
    """The input repeated `dims[k]` times along each dim (missing leading dims count 1);
    `t.tile(2, 1)` as `t.tile((2, 1))`, as PyTorch's method takes both."""
    x = _t(input)
    if more:
        dims = (dims, *more)
    reps = _sizes((dims,) if isinstance(dims, (tuple, list)) else ((dims,),), "tile")
    if len(reps) < x.ndim:
        reps = (1,) * (x.ndim - len(reps)) + reps
    return repeat(x, reps)


def repeat_interleave(input, repeats=None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Each entry repeated `repeats` times (an int, or one count per entry) along `dim`
    (no dim: the flattened input). With only a count tensor, repeat its positions."""
    if repeats is None:  # torch.repeat_interleave(counts): 0, 1, ... each count times
        counts = _index_arg(input, "repeat_interleave", "repeats")
        return repeat_interleave(as_tensor(np.arange(counts.shape[0] if counts.ndim else 1)),
                                 counts, 0)
    x = _t(input)
    if dim is None:
        x, d = reshape(x, -1), 0
    elif x.ndim == 0:  # torch refuses a dim of a 0-d input
        raise IndexShapeError(f"repeat_interleave(): dimension {dim} out of range for a 0-d "
                              "input (pass no dim)")
    else:
        d = _dim(dim, x.ndim, "repeat_interleave")
    x = _as_1d(x)
    n = x.shape[d]
    if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        r = int(repeats)
        if r < 0:
            raise ShapeError(f"repeat_interleave(): repeats must be non-negative, got {r}")
        y = reshape(x, x.shape[:d + 1] + (1,) + x.shape[d + 1:])
        y = expand(y, *(x.shape[:d + 1] + (r,) + x.shape[d + 1:]))
        out = reshape(y, x.shape[:d] + (n * r,) + x.shape[d + 1:]).clone()  # as repeat
    else:
        if isinstance(repeats, Tensor) and repeats.dtype.kind not in "iu":
            raise DtypeError(f"repeat_interleave(): repeats must be an integer tensor, got "
                             f"{repeats.dtype} (torch: not implemented)")
        reps = _index_arg(repeats, "repeat_interleave", "repeats")
        if reps.ndim > 1 or reps.size not in (1, n):
            raise ShapeError(f"repeat_interleave(): repeats of shape {reps.shape} must hold "
                             f"one count, or one per entry ({n}) of dimension {d}")
        if state.tracer is not None:
            state.tracer.check_index(reps)  # the counts decide the shape: a trace constant
        refuse_batched("repeat_interleave() with a tensor of repeats (the counts decide the "
                       "result's length)", "pass the same repeats for every batch element "
                       "(in_dims None for them) or loop over the batch", reps)
        counts = np.broadcast_to(reps.data.reshape(-1), (n,))
        if counts.size and counts.min() < 0:
            raise ShapeError("repeat_interleave(): repeats must be non-negative")
        idx = as_tensor(np.repeat(np.arange(n), counts))
        out = apply(ops.index_select, x, idx, axis=d - x.ndim)
    if output_size is not None and out.shape[d] != output_size:
        raise ShapeError(f"repeat_interleave(): output_size {output_size} but the result has "
                         f"{out.shape[d]} entries along dimension {d}")
    return out


def unflatten(input, dim: int, sizes) -> Tensor:
    """Dimension `dim` split into `sizes` (one entry may be -1)."""
    x = _t(input)
    if x.ndim == 0:
        raise ShapeError(f"unflatten(): dimension {dim} of a 0-dim tensor does not exist")
    d = _dim(dim, x.ndim, "unflatten")
    sizes = tuple(int(s) for s in sizes)
    if not sizes:
        raise ShapeError("unflatten(): sizes must not be empty")
    n = x.shape[d]
    known = math.prod(s for s in sizes if s != -1)
    if sizes.count(-1) == 1 and known and n % known == 0:
        sizes = tuple(n // known if s == -1 else s for s in sizes)
    if sizes.count(-1) or any(s < 0 for s in sizes) or math.prod(sizes) != n:
        raise ShapeError(f"unflatten(): sizes {sizes} do not multiply to {n}, the length of "
                         f"dimension {d} of shape {x.shape}")
    return reshape(x, x.shape[:d] + sizes + x.shape[d + 1:])


def movedim(input, source, destination) -> Tensor:
    """Dimensions `source` moved to positions `destination`, the others kept in order."""
    x = _t(input)
    if x.ndim == 0 and all(d in (0, -1) for d in (
            tuple(source) if isinstance(source, (tuple, list)) else (source,))
            + (tuple(destination) if isinstance(destination, (tuple, list))
               else (destination,))):
        return apply(ops.reshape, x, shape=())  # PyTorch: dims 0 and -1 of a 0-d tensor
    src = _dim_list(source, x.ndim, "movedim")
    dst = _dim_list(destination, x.ndim, "movedim")
    if len(src) != len(dst):
        raise ShapeError(f"movedim(): source {source} and destination {destination} must have "
                         "the same length")
    order = [k for k in range(x.ndim) if k not in src]
    axes = [None] * x.ndim
    for s, t in zip(src, dst):
        axes[t] = s
    it = iter(order)
    axes = [a if a is not None else next(it) for a in axes]
    return permute(x, *axes) if x.ndim else x


moveaxis = movedim


def narrow(input, dim: int, start: int, length: int) -> Tensor:
    """`length` entries from `start` along `dim` (a view)."""
    x = _t(input)
    if x.ndim == 0:
        raise ShapeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _dim(dim, x.ndim, "narrow")
    n = x.shape[d]
    if isinstance(start, Tensor) and (start.ndim or start.dtype.kind not in "iu"):
        raise RuntimeError("narrow(): start must be an 0-dim integral Tensor.")  # as torch
    s = int(start)
    if not -n <= s <= n:
        raise IndexError(f"narrow(): start {start} is out of range for dimension {d} of size "
                         f"{n}")
    if s < 0:
        s += n
    if length < 0 or s + length > n:
        raise ShapeError(f"narrow(): start {start} + length {length} exceeds dimension {d} of "
                         f"size {n}")
    return x[(slice(None),) * d + (slice(s, s + int(length)),)]


def chunk(input, chunks: int, dim: int = 0) -> tuple:
    """At most `chunks` pieces of equal length (the last may be shorter) along `dim`."""
    x = _t(input)
    chunks = int_arg(chunks)
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks <= 0:
        raise ShapeError(f"chunk(): chunks must be a positive int, got {chunks!r}")
    if x.ndim == 0:
        raise ShapeError("chunk expects at least a 1-dimensional tensor")
    d = _dim(dim, x.ndim, "chunk")
    n = x.shape[d]
    size = -(-n // int(chunks)) if n else 0
    if size == 0:
        return tuple(x[(slice(None),) * d + (slice(0, 0),)] for _ in range(int(chunks)))
    return joined(x, [(slice(None),) * d + (slice(i, i + size),) for i in range(0, n, size)])


def unbind(input, dim: int = 0, *, axis=None) -> tuple:
    """The slices along `dim`, each without that dimension."""
    dim = dim_alias(dim, axis, "unbind", 0)
    x = _t(input)
    if x.ndim == 0:
        raise IndexShapeError("unbind(): dimension specified as 0 but the tensor has no "
                              "dimensions")
    d = _dim(dim, x.ndim, "unbind")
    return joined(x, [(slice(None),) * d + (i,) for i in range(x.shape[d])])


def meshgrid(*tensors, indexing: str = "ij") -> tuple:
    """Coordinate grids from vectors: 'ij' (matrix) or 'xy' (Cartesian) indexing."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ShapeError(f"meshgrid(): indexing must be 'ij' or 'xy', got {indexing!r}")
    ts = [_t(t) for t in tensors]
    for k, t in enumerate(ts):
        if t.ndim > 1:
            raise ShapeError(f"meshgrid(): tensor {k} must be 0-d or 1-d, got shape {t.shape}")
    ts = [_as_1d(t) for t in ts]
    swap = indexing == "xy" and len(ts) >= 2
    order = list(range(len(ts)))
    if swap:
        order[0], order[1] = 1, 0
    shape = tuple(ts[k].shape[0] for k in order)
    out = []
    for k, t in enumerate(ts):
        pos = order.index(k)
        view = tuple(-1 if j == pos else 1 for j in range(len(ts)))
        out.append(expand(reshape(t, view), *shape))
    return tuple(out)


def unfold(input, dimension: int, size: int, step: int) -> Tensor:
    """Tensor.unfold: every window of `size` entries, `step` apart, along `dimension`; the
    windows take that dimension's place and their entries a new last dimension. A view of
    the input, as torch's: its strides are torch's and a write into it reaches the input."""
    x = _t(input)
    zero_d = x.ndim == 0
    d = _dim(dimension, builtins.max(x.ndim, 1), "unfold")
    x = _as_1d(x)
    n = x.shape[d]
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step <= 0:
        raise ShapeError(f"unfold(): step must be a positive int, got {step!r}")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 0 <= size <= n:
        raise ShapeError(f"unfold(): size {size!r} must be an int in [0, {n}], the length of "
                         f"dimension {d} of shape {x.shape}")
    y = apply(ops.unfold_view, x, axis=d - x.ndim, size=int(size), step=int(step))
    return reshape(y, (size,)) if zero_d else y


# ----------------------------------------------------------------- im2col


def _pairs(v, name, fn):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (int(v), int(v))
    v = tuple(v)
    if len(v) != 2 or not all(isinstance(a, (int, np.integer)) for a in v):
        raise ShapeError(f"{fn}(): {name} must be an int or a pair of ints, got {v}")
    return tuple(int(a) for a in v)


def _window_args(kernel_size, dilation, padding, stride, fn):
    k = _pairs(kernel_size, "kernel_size", fn)
    d = _pairs(dilation, "dilation", fn)
    p = _pairs(padding, "padding", fn)
    s = _pairs(stride, "stride", fn)
    for name, v, lo in (("kernel_size", k, 1), ("dilation", d, 1), ("stride", s, 1),
                        ("padding", p, 0)):
        if builtins.min(v) < lo:
            raise ShapeError(f"{fn}(): {name} must be {'positive' if lo else 'non-negative'}, "
                             f"got {v}")
    return k, d, p, s


def _blocks(size, k, d, p, s):
    return tuple((size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))


def im2col(input, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """F.unfold: the sliding blocks of an (N, C, H, W) input as columns (N, C*kh*kw, L)."""
    x = _t(input)
    if x.ndim not in (3, 4):
        raise ShapeError(f"unfold(): input must be (N, C, H, W) or (C, H, W), got shape "
                         f"{x.shape}")
    if x.dtype.kind in "iu":  # PyTorch's im2col: floating, complex and bool only
        raise DtypeError(f"unfold(): input must be floating point, complex or bool, got "
                         f"{x.dtype}")
    batched = x.ndim == 4
    if not batched:
        x = reshape(x, (1,) + x.shape)
    k, d, p, s = _window_args(kernel_size, dilation, padding, stride, "unfold")
    oh, ow = _blocks(x.shape[2:], k, d, p, s)
    if oh <= 0 or ow <= 0:
        raise ShapeError(f"unfold(): kernel_size {k} (dilation {d}, padding {p}) is larger "
                         f"than the padded input of shape {x.shape}")
    n, c = x.shape[:2]
    cols = apply(ops.unfold, x, kernel=k, stride=s, padding=p, dilation=d, pad_value=0.0)
    out = reshape(cols, (n, c * k[0] * k[1], oh * ow))
    return row_major(fresh(out if batched else reshape(out, out.shape[1:])))


def col2im(input, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """F.fold: columns (N, C*kh*kw, L) summed back into an (N, C, H, W) output (the
    adjoint of F.unfold; overlapping blocks add up)."""
    x = _t(input)
    if x.ndim not in (2, 3):
        raise ShapeError(f"fold(): input must be (N, C*kh*kw, L) or (C*kh*kw, L), got shape "
                         f"{x.shape}")
    if x.dtype.kind in "iu":  # PyTorch's col2im: floating, complex and bool only
        raise DtypeError(f"fold(): input must be floating point, complex or bool, got "
                         f"{x.dtype}")
    batched = x.ndim == 3
    if not batched:
        x = reshape(x, (1,) + x.shape)
    size = _pairs(output_size, "output_size", "fold")
    k, d, p, s = _window_args(kernel_size, dilation, padding, stride, "fold")
    n, ck, length = x.shape
    if ck % (k[0] * k[1]):
        raise ShapeError(f"fold(): input's dimension 1 ({ck}) must be divisible by the "
                         f"kernel's size {k[0]}*{k[1]}")
    oh, ow = _blocks(size, k, d, p, s)
    if oh <= 0 or ow <= 0 or oh * ow != length:
        raise ShapeError(f"fold(): input of shape {x.shape} has {length} blocks, but "
                         f"output_size {size} with kernel_size {k}, dilation {d}, padding {p}, "
                         f"stride {s} gives {builtins.max(oh, 0)}*{builtins.max(ow, 0)}")
    c = ck // (k[0] * k[1])
    cols = reshape(x, (n, c, k[0], k[1], oh, ow))
    out = apply(ops.fold, cols, shape=(n, c) + size, kernel=k, stride=s, padding=p,
                dilation=d, pad_value=0.0)
    return out if batched else reshape(out, out.shape[1:])
