"""`rg.as_strided_scatter` (and `Tensor.as_strided_scatter`): PyTorch's out-of-place write
through a strided window.

As `rg.as_strided` does, it reads the input's elements in row-major order as its storage
(what torch does for a contiguous tensor; a non-contiguous one is refused rather than given
an order torch might not use). The window's storage positions become one flat index, and the
write is a `scatter_dim` row on the flattened input, fed by a gather of the source: so
forward mode, vmap and `rg.jit` come with the rows.

A window that covers a storage position more than once (strides smaller than the sizes
below them) writes it several times; torch keeps the element its copy kernel writes last,
and the order of that kernel (TensorIterator's: the dimension with the smallest output
stride innermost, ties broken by the smaller size, then by the source's strides) is
followed here, so the values are torch's. The gradients are the true derivatives: the
input's is the output's outside the window; a source element's is the output's at its
position if it is the one kept there, else zero. torch's formulas differ on both counts
(its input gradient is the output's *inside* the window, and every source element gets
the output's at its position, kept or not; albanD flagged the formula in pytorch#77128),
and finite differences side with these.
"""

from __future__ import annotations

import numpy as np

from .. import devices, ops
from ..engine import apply
from ..tensor import Tensor
from ._args import _t
from .shape import reshape

__all__ = ["as_strided_scatter"]


def _ints(values, what: str) -> tuple:
    if isinstance(values, (int, np.integer)):
        values = (values,)
    try:
        return tuple(int(v) for v in values)
    except TypeError:
        raise TypeError(f"as_strided_scatter(): {what} must be a sequence of ints, got "
                        f"{values!r}") from None


def _storage_index(size: tuple, stride: tuple, offset: int, storage: int) -> np.ndarray:
    """The storage position of each element of the window, in the window's shape; checked
    against a storage of `storage` elements (torch's errors' meaning)."""
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided_scatter(): mismatch in length of strides and shape: "
                           f"size {size}, stride {stride}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"as_strided_scatter(): negative size in {size}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided_scatter(): negative strides are not supported, got "
                           f"strides {stride}")
    if offset < 0:
        raise RuntimeError(f"as_strided_scatter(): invalid storage offset {offset}")
    if any(s == 0 and n > 1 for n, s in zip(size, stride)):
        raise RuntimeError(f"as_strided_scatter(): unsupported operation: the window (size "
                           f"{size}, stride {stride}) has a dimension of stride 0, so more "
                           "than one of its elements refers to a single memory location")
    idx = np.full(size, offset, dtype=np.int64)
    for k, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        idx = idx + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    need = int(idx.max()) + 1 if idx.size else 0
    if need > storage:
        raise RuntimeError(f"as_strided_scatter(): size {size}, stride {stride} and storage "
                           f"offset {offset} need a storage of {need} elements, out of bounds "
                           f"for the input's {storage}")
    return idx


def _write_order(size: tuple, stride: tuple) -> list:
    """The dimensions outermost first, in the order torch's copy kernel (TensorIterator)
    visits them when it writes a contiguous source through the window: an insertion sort
    that puts the smaller output stride inner, breaks a tie by the smaller size, then looks
    at the source's (contiguous) strides; a zero stride defers to the next operand."""
    nd = len(size)
    contiguous, step = [0] * nd, 1
    for k in range(nd - 1, -1, -1):
        contiguous[k] = step
        step *= max(size[k], 1)

    def should_swap(d0: int, d1: int) -> int:
        for st in (stride, contiguous):
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if size[d0] > size[d1]:
                return 1
        return 0

    perm = list(range(nd - 1, -1, -1))  # innermost first
    for i in range(1, nd):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm[::-1]


def _last_writes(idx: np.ndarray, size: tuple, stride: tuple) -> tuple:
    """(storage positions, each once, and the row-major index into the source of the element
    written there last), for a window whose positions `idx` may repeat."""
    order = _write_order(size, stride)
    pos = np.transpose(idx, order).reshape(-1)
    which = np.transpose(np.arange(idx.size, dtype=np.int64).reshape(size), order).reshape(-1)
    if np.unique(pos).size == pos.size:
        return pos, which
    _, first = np.unique(pos[::-1], return_index=True)
    keep = pos.size - 1 - first
    return pos[keep], which[keep]


def as_strided_scatter(input, src, size, stride, storage_offset: int | None = None  # noqa: A002
                       ) -> Tensor:
    """A copy of `input` with the elements that `input.as_strided(size, stride,
    storage_offset)` would read replaced by `src` (of shape `size`; cast to input's dtype).
    Like `torch.as_strided_scatter` on a contiguous input; differentiable in both."""
    x = _t(input)
    source = _t(src)
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    offset = 0 if storage_offset is None else int(storage_offset)
    d = x.data
    if d.ndim > 1 and not d.flags.c_contiguous:
        raise RuntimeError(f"as_strided_scatter(): supported on contiguous tensors only (shape "
                           f"{x.shape} is a non-contiguous view); call .contiguous() first")
    idx = _storage_index(size, stride, offset, x.size)
    if source.shape != size:
        raise RuntimeError(f"as_strided_scatter(): expected src to have the size of the "
                           f"window, {list(size)}, got src of size {list(source.shape)}")
    if source.dtype != x.dtype:
        source = source.to(x.dtype)
    pos, which = _last_writes(idx, size, stride)
    values = reshape(source, -1)
    if which.size != values.size or np.any(which != np.arange(which.size)):
        values = values[Tensor._wrap(devices.like(which, d))]
    index = Tensor._wrap(devices.like(pos, d))
    out = apply(ops.scatter_dim, reshape(x, -1), index, values, axis=-1)
    return reshape(out, x.shape)
