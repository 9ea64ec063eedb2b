"""Shapes: `rg.reshape`, `rg.permute`, `rg.expand`, `rg.cat`, `rg.split`, ..."""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence

import numpy as np

from .. import ops
from ..engine import apply
from ..tensor import Tensor
from ._args import _dims, _t, dim_alias, int_arg, promote
from ._errors import ShapeError
from .pieces import joined


def _by_keyword(fn: str, args: tuple, given, name: str) -> tuple:
    """The sizes of `fn(*args)` or of torch's keyword form `fn(name=given)`
    (`x.reshape(shape=(n, h, w))` as MAE and DiT write it), not both."""
    if given is None:
        return args
    if args:
        raise TypeError(f"{fn}() got multiple values for argument '{name}'")
    return (given,)


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    for s in shape:
        if s.__class__ is not int:
            break
    else:  # plain ints: nothing to read or check
        return shape
    out = tuple(int_arg(s) for s in shape)
    for s in out:  # PyTorch refuses floats and bools as sizes or dims (TypeError)
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"sizes must be a tuple of ints, got {tuple(shape)}")
    return tuple(int(s) for s in out)


def reshape(input, *sizes, shape=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """The same elements in a new shape (one dimension may be -1); a view where possible.
    Like `torch.reshape`: `rg.reshape(rg.arange(6), (2, 3))`, `x.reshape(shape=(2, 3))`."""
    x = _t(input)
    shape = _shape_args(_by_keyword("reshape", sizes, shape, "shape"))
    n = x.data.size
    if min(shape, default=0) >= -1:  # the common cases: sizes given in full, or one -1
        p = math.prod(shape)
        if p == n and -1 not in shape:
            return apply(ops.reshape, x, shape=shape)
        if p < 0 and n % -p == 0 and shape.count(-1) == 1:
            return apply(ops.reshape, x, shape=tuple(n // -p if s == -1 else s for s in shape))
    known = math.prod(s for s in shape if s != -1)
    target = shape
    if shape.count(-1) == 1 and known and x.size % known == 0:
        target = tuple(x.size // known if s == -1 else s for s in shape)
    if -1 in shape and not known:  # PyTorch: -1 beside a 0 is ambiguous, even for 0 elements
        raise ShapeError(f"cannot reshape a tensor of {x.size} elements into shape {shape} "
                         "because the unspecified dimension size -1 can be any value and is "
                         "ambiguous")
    if shape.count(-1) > 1 or any(s < -1 for s in shape) or math.prod(target) != x.size:
        raise ShapeError(f"cannot reshape a tensor of shape {x.shape} (size {x.size}) into "
                         f"shape {shape}")
    return apply(ops.reshape, x, shape=target)


def flatten(input, start_dim=0, end_dim=-1) -> Tensor:  # noqa: A002 - PyTorch's names
    """Merge dimensions `start_dim..end_dim` into one. Like `torch.flatten`."""
    x = _t(input)
    if x.ndim == 0:
        return reshape(x, 1)
    s, e = _dims(start_dim, None, x.ndim, "flatten"), _dims(end_dim, None, x.ndim, "flatten")
    if s > e:
        raise ShapeError(f"flatten(): start_dim {start_dim} comes after end_dim {end_dim} for a "
                         f"tensor of shape {x.shape}")
    if s == e:  # nothing to merge: the tensor itself, as PyTorch (no view, no new node)
        return x
    shape = x.shape[:s] + (math.prod(x.shape[s:e + 1]),) + x.shape[e + 1:]
    return reshape(x, shape)


def permute(input, *args, dims=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """Reorder the dimensions: `rg.permute(x, (2, 0, 1))`, `x.permute(dims=(2, 0, 1))`. Like
    `torch.permute`."""
    x = _t(input)
    dims = _shape_args(_by_keyword("permute", args, dims, "dims"))
    if sorted(d % builtins.max(x.ndim, 1) for d in dims) != list(range(x.ndim)):
        raise ShapeError(f"permute(): dims {dims} are not a permutation of the {x.ndim} "
                         f"dimensions of shape {x.shape}")
    return apply(ops.permute, x, axes=tuple(d % x.ndim for d in dims))


def transpose(input, dim0=None, dim1=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """Swap two dimensions (PyTorch); with none given, reverse them all (NumPy)."""
    x = _t(input)
    if dim0 is None and dim1 is None:
        return apply(ops.permute, x, axes=tuple(reversed(range(x.ndim))))
    if dim0 is None or dim1 is None:
        raise TypeError("transpose() takes both dim0 and dim1, or neither")
    if x.ndim == 0 and dim0 in (0, -1) and dim1 in (0, -1):  # PyTorch: a 0-d tensor
        return apply(ops.reshape, x, shape=())                # takes dims 0 and -1
    axes = list(range(x.ndim))
    d0, d1 = _dims(dim0, None, x.ndim, "transpose"), _dims(dim1, None, x.ndim, "transpose")
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return apply(ops.permute, x, axes=tuple(axes))


def expand(input, *sizes, size=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """A view repeating size-1 dimensions to `sizes` (-1 keeps a size); no copy.
    Like `torch.Tensor.expand` (`size=` its keyword)."""
    x = _t(input)
    sizes = _shape_args(_by_keyword("expand", sizes, size, "size"))
    lead = len(sizes) - x.ndim
    if lead < 0:
        raise ShapeError(f"expand(): cannot expand shape {x.shape} to fewer dimensions {sizes}")
    shape = tuple(x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    try:
        np.broadcast_shapes(x.shape, shape)
        if np.broadcast_shapes(x.shape, shape) != shape:
            raise ValueError
    except ValueError:
        raise ShapeError(f"expand(): cannot expand shape {x.shape} to {sizes}") from None
    return apply(ops.expand, x, shape=shape)


def broadcast_to(input, size) -> Tensor:  # noqa: A002 - PyTorch's names
    """`input` broadcast to `size`, as a view. Like `torch.broadcast_to`."""
    return expand(input, *tuple(size))


def squeeze(input, dim=None, *, axis=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """Drop dimensions of size 1 (all, or those in `dim`). Like `torch.squeeze`."""
    dim = dim_alias(dim, axis, "squeeze")
    x = _t(input)
    if dim is None:
        shape = tuple(s for s in x.shape if s != 1)
    else:
        d = _dims(dim, None, x.ndim, "squeeze")
        ds = d if isinstance(d, tuple) else (d,)
        shape = tuple(s for i, s in enumerate(x.shape) if not (i in ds and s == 1))
    return reshape(x, shape)


def unsqueeze(input, dim=None, *, axis=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """Insert a dimension of size 1 at `dim`. Like `torch.unsqueeze`:
    `rg.unsqueeze(rg.ones(3), 0).shape` is `(1, 3)`."""
    x = _t(input)
    if axis is not None or dim is None:
        dim = dim_alias(dim, axis, "unsqueeze")
        if dim is None:
            raise TypeError("unsqueeze() missing required argument 'dim' (an int)")
    if not -(x.ndim + 1) <= dim <= x.ndim:
        raise IndexError(f"unsqueeze(): dim {dim} is out of range for a tensor with {x.ndim} "
                         "dimension(s)")
    d = dim % (x.ndim + 1)
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


def cat(tensors: Sequence, dim=0, *, axis=None) -> Tensor:
    """Join tensors along an existing dimension `dim`. Like `torch.cat` (`rg.concatenate`,
    NumPy's name, is the same function): `rg.cat([rg.ones(2), rg.zeros(1)])` has 3 elements."""
    ts = [_t(t) for t in tensors]
    if not ts:
        raise ShapeError("cat() needs at least one tensor")
    ts = _legacy_empty(ts, dim if axis is None else None, axis)
    for k, t in enumerate(ts):
        if t.ndim == 0:
            raise ShapeError(f"cat(): zero-dimensional tensor (at position {k}) cannot be "
                             "concatenated")
    d = _dims(dim if axis is None else None, axis, ts[0].ndim, "cat")
    s0 = ts[0].data.shape
    dt = ts[0].data.dtype
    same = True
    for t in ts[1:]:
        s = t.data.shape
        if len(s) != len(s0) or s[:d] != s0[:d] or s[d + 1:] != s0[d + 1:]:
            raise ShapeError(f"cat(): shapes {[u.shape for u in ts]} do not match outside "
                             f"dimension {d}")
        same = same and t.data.dtype == dt
    return apply(ops.cat, *(ts if same else promote(*ts)), axis=d)


concatenate = cat


def _legacy_empty(ts: list, dim, axis) -> list:
    """PyTorch's cat skips 1-d empty tensors, whatever the others' shapes (detection code
    starts a loop's collection at `torch.zeros(0)` or `torch.Tensor()` and cats boxes onto
    it): each becomes an empty slice of the others' shape along `dim`, so its dtype still
    takes part in promotion and its gradient (of 0 elements) still reaches it."""
    legacy = [t.data.shape == (0,) for t in ts]
    ref = next((t for t, e in zip(ts, legacy) if not e), None)
    if ref is None or not builtins.any(legacy):
        return ts
    d = _dims(dim, axis, ref.ndim, "cat")
    empty = ref.shape[:d] + (0,) + ref.shape[d + 1:]
    return [reshape(t, empty) if e else t for t, e in zip(ts, legacy)]


def stack(tensors: Sequence, dim=0, *, axis=None) -> Tensor:
    """Join tensors of one shape along a new dimension `dim`. Like `torch.stack`."""
    ts = [_t(t) for t in tensors]
    if not ts:
        raise ShapeError("stack() needs at least one tensor")
    if any(t.shape != ts[0].shape for t in ts):
        raise ShapeError(f"stack(): all tensors must have the same shape, got "
                         f"{[t.shape for t in ts]}")
    d = dim if axis is None else axis
    return cat([unsqueeze(t, d) for t in ts], d)


def split(tensor, split_size_or_sections, dim=0) -> tuple:
    """PyTorch's split: a chunk size (the last may be smaller) or a list of sizes."""
    x = _t(tensor)
    if x.ndim == 0:
        raise ShapeError("split expects at least a 1-dimensional tensor")
    d = _dims(dim, None, x.ndim, "split")
    n = x.shape[d]
    split_size_or_sections = int_arg(split_size_or_sections)
    if isinstance(split_size_or_sections, (int, np.integer)):
        k = int(split_size_or_sections)
        if k <= 0:
            raise ShapeError(f"split(): chunk size must be positive, got {k}")
        sizes = [builtins.min(k, n - i) for i in range(0, n, k)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if builtins.sum(sizes) != n:
            raise ShapeError(f"split(): sizes {sizes} do not add up to {n}, the length of "
                             f"dimension {d}")
    idxs, start = [], 0
    for s in sizes:
        idxs.append((slice(None),) * d + (slice(start, start + s),))
        start += s
    return joined(x, idxs)


