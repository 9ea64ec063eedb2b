"""Lookup tables: `embedding` (rows of a weight at integer indices) and `embedding_bag`
(the sum, mean or max of each bag of rows), PyTorch's arguments and semantics.

Both are compositions of recorded ops (`index_select`, `index_add`, `scatter_reduce`,
`gather`), with every index-dependent quantity (bag membership, counts, the max's
winners, the frequency scale) computed by ops too, so `rg.jit` replays them for each
call's indices. Options that only change the backward pass are written as a
forward-exact detour: `scale_grad_by_freq` is `r + (r - r.detach()) * (s - 1)`,
exactly `r` forward, `s` times the gradient backward (forward mode sees the scaled
tangent too: PyTorch defines no forward derivative for it).
"""

from __future__ import annotations

import numpy as np

from .. import devices, ops
from .._values import every_value
from ..engine import apply
from ..grad_mode import no_grad
from ..primitive import ArgumentError
from ..tensor import Tensor
from ._args import _t
from ._errors import DtypeError, ShapeError
from ._fresh import fresh
from .elementwise import where
from .indexing import gather, index_select, scatter_reduce
from .norms import vector_norm
from .shape import cat

__all__ = ["embedding", "embedding_bag"]


def _indices(idx: Tensor, fn: str, what: str = "input", strict: bool = False) -> None:
    """Integer indices; `strict`: int64 or int32 only, as PyTorch's embedding and 2-D
    embedding_bag take (its 1-D embedding_bag also takes the narrow integer types)."""
    if idx.dtype.kind not in "iu" or strict and idx.dtype not in (np.int64, np.int32):
        raise DtypeError(f"{fn}: {what} must hold integer indices (int64 or int32), got "
                         f"{idx.dtype}")


def _weight(w: Tensor, fn: str) -> None:
    if w.ndim != 2:
        raise ArgumentError(f"{fn}: weight has to be a 2-D tensor (num_embeddings, "
                            f"embedding_dim), got shape {w.shape}")


class PaddingIdxError(ShapeError, AssertionError):
    """A padding_idx outside the table (PyTorch: AssertionError from embedding, RuntimeError
    from embedding_bag)."""


def _padding(padding_idx, n: int, fn: str):
    if padding_idx is None:
        return None
    if not -n <= padding_idx < n:
        raise PaddingIdxError(f"{fn}: padding_idx must be within the number of embeddings, {-n} "
                         f"through {n - 1}, but got {padding_idx}")
    return int(padding_idx) % n


class BagIndexError(IndexError, RuntimeError):
    """An index outside the table (PyTorch: IndexError from embedding, RuntimeError from
    embedding_bag)."""


def _in_range(idx: Tensor, n: int, fn: str) -> None:
    d = every_value(idx)
    if d.size and (d.min() < 0 or d.max() >= n):
        bad = int(d[(d < 0) | (d >= n)].flat[0])
        raise BagIndexError(f"{fn}: index {bad} is out of range for {n} embeddings (valid: 0 "
                         f"through {n - 1})")


def _const(values: np.ndarray, like: Tensor) -> Tensor:
    return Tensor(devices.const_like(values, like.data))


def _renorm_rows(w: Tensor, flat: Tensor, max_norm: float, p: float) -> None:
    """Rescale in place the rows of `w` that `flat` looks up to norm at most `max_norm`, as
    PyTorch does before the lookup (rows not looked up are multiplied by exactly 1)."""
    with no_grad():
        norms = vector_norm(w, p, dim=1)
        hits = apply(ops.index_add, apply(ops.zeros_like, norms), flat,
                     apply(ops.ones_like, flat).to(norms.dtype), axis=-1)
        big = (hits > 0) & (norms > max_norm)
        w.mul_(where(big, max_norm / (norms + 1e-7), 1.0).to(w.dtype).reshape(-1, 1))


def _counts(flat: Tensor, n: int, dtype) -> Tensor:
    """How often each of the n rows is looked up in `flat` (ops: replayed per call)."""
    zeros = _const(np.zeros(n, dtype=dtype), flat)
    return apply(ops.index_add, zeros, flat, apply(ops.ones_like, flat).to(dtype), axis=-1)


def _scaled_by_freq(rows: Tensor, flat: Tensor, n: int) -> Tensor:
    """`rows` forward; backward, each row's gradient divided by how often its index occurs
    in the batch (PyTorch's scale_grad_by_freq)."""
    if not rows.requires_grad:
        return rows
    freq = index_select(_counts(flat, n, rows.dtype), 0, flat).reshape(-1, 1)
    r = rows.detach()
    return rows + (rows - r) * (1.0 / freq - 1.0)


def embedding(input, weight, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """Rows of `weight` (num_embeddings, dim) at the integer indices `input`: shape
    input.shape + (dim,). The row `padding_idx` gets no gradient; with `max_norm`, the rows
    looked up are first rescaled in place to norm at most `max_norm`; with
    `scale_grad_by_freq`, each row's gradient is divided by its index's count in `input`.
    Like `torch.nn.functional.embedding`; `sparse=True` gives the same gradient, stored
    dense (retrograd has no sparse tensors)."""
    idx, w = _t(input), _t(weight)
    _indices(idx, "embedding", strict=True)
    _weight(w, "embedding")
    n = w.shape[0]
    padding_idx = _padding(padding_idx, n, "embedding")
    _in_range(idx, n, "embedding")
    flat = idx.reshape(-1)
    if max_norm is not None:
        _renorm_rows(w, flat, float(max_norm), float(norm_type))
    rows = index_select(w, 0, flat)
    if scale_grad_by_freq:
        rows = _scaled_by_freq(rows, flat, n)
    if padding_idx is not None and w.requires_grad:
        keep = (flat != padding_idx).reshape(-1, 1)
        rows = where(keep, rows, index_select(w.detach(), 0, flat))
    return fresh(rows.reshape(idx.shape + (w.shape[1],)))


_MODES = ("sum", "mean", "max")


def _bag_args(idx: Tensor, offsets, per_sample_weights, include_last_offset: bool) -> tuple:
    """(flat indices, offsets, per-sample weights, include_last_offset) with 2-D input
    turned into fixed-length bags, as PyTorch does."""
    if per_sample_weights is not None:
        per_sample_weights = _t(per_sample_weights)
        if per_sample_weights.shape != idx.shape:
            raise ArgumentError(f"embedding_bag: If per_sample_weights "
                                f"({per_sample_weights.shape}) is not None, then it must have the "
                                f"same shape as the input ({idx.shape})")
    if idx.ndim == 2:
        if offsets is not None:
            raise ArgumentError(f"embedding_bag: if input is 2D, then offsets has to be None, as "
                                f"input is treated is a mini-batch of fixed length sequences; got "
                                f"offsets of type {type(offsets).__name__}")
        if idx.shape[1] == 0:
            raise ShapeError(f"embedding_bag: a 2-D input needs bags of at least one index, "
                             f"got shape {idx.shape}")
        offsets = _const(np.arange(0, idx.size, idx.shape[1], dtype=np.int64), idx)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        return idx.reshape(-1), offsets, per_sample_weights, False
    if idx.ndim != 1:
        raise ArgumentError(f"embedding_bag: input has to be 1D or 2D Tensor, but got Tensor of "
                            f"dimension {idx.ndim} (shape {idx.shape})")
    if offsets is None:
        raise ArgumentError("embedding_bag: offsets has to be a 1D Tensor but got None")
    offsets = _t(offsets)
    if offsets.ndim != 1:
        raise ArgumentError(f"embedding_bag: offsets has to be a 1D Tensor, got shape "
                            f"{offsets.shape}")
    _indices(offsets, "embedding_bag", "offsets")
    return idx, offsets, per_sample_weights, bool(include_last_offset)


def _check_offsets(offsets: Tensor, length: int, include_last_offset: bool) -> None:
    o = every_value(offsets)
    if not o.size:
        return
    if include_last_offset and (o[..., -1] != length).any():
        # PyTorch's CPU kernels disagree here (float32 drops the entries after the last
        # offset, float64 folds them into the last bag, an empty result crashes): refused
        raise ShapeError(f"embedding_bag: with include_last_offset=True the last offset ends "
                         f"the last bag and must equal the input's length {length} (CSR "
                         f"format), got {int(o[..., -1].flat[0])}")
    if (o[..., 0] != 0).any():
        raise ShapeError(f"embedding_bag: offsets[0] has to be 0, i.e., the first sequence in "
                         f"the mini-batch has to start from position 0; got "
                         f"{int(o[..., 0].flat[0])}")
    if (o[..., -1] > length).any():
        raise ShapeError(f"embedding_bag: offsets[-1] can not be greater than input's length "
                         f"{length}, got {int(o[..., -1].max())}")
    if (np.diff(o, axis=-1) < 0).any():
        raise ShapeError("embedding_bag: offsets must be non-decreasing (each bag starts "
                         "where the previous one ends)")


def _bag_of(offsets: Tensor, length: int) -> Tensor:
    """The bag each of the `length` entries belongs to: one mark at each offset (an offset
    at `length` marks nothing), a cumulative sum, minus one."""
    o = offsets.to(np.int64)
    inside = o < length
    marks = apply(ops.index_add, _const(np.zeros(max(length, 1), np.int64), o),
                  where(inside, o, 0), inside.to(np.int64), axis=-1)
    return (apply(ops.cumsum, marks, axis=0) - 1)[:length]


def embedding_bag(input, weight, offsets=None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights=None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Tensor:
    """The sum, mean or max of each bag of embedding rows, without the (bags, length, dim)
    intermediate. Bags are the rows of a 2-D `input`, or slices of a 1-D `input` starting
    at `offsets` (with `include_last_offset`, the last offset ends the last bag). Entries
    equal to `padding_idx` are left out (and not counted by 'mean'); empty bags give zeros.
    `per_sample_weights` (mode 'sum' only) scales each row; 'max' sends the gradient to the
    first maximal row, as PyTorch. Like `torch.nn.functional.embedding_bag` (`sparse=True`:
    the same gradient, stored dense). `scale_grad_by_freq` divides each row's gradient by
    its index's count, as documented and as PyTorch's CUDA kernel and `embedding` do
    (PyTorch 2.13's CPU kernel reads the wrong count when counts differ, pytorch#190063)."""
    idx, w = _t(input), _t(weight)
    _indices(idx, "embedding_bag", strict=idx.ndim != 1)
    _weight(w, "embedding_bag")
    if w.dtype.kind != "f":
        raise DtypeError(f"embedding_bag: weight must be floating, got {w.dtype}")
    idx, offsets, psw, include_last_offset = _bag_args(idx, offsets, per_sample_weights,
                                                       include_last_offset)
    if mode not in _MODES:
        raise ArgumentError(f"embedding_bag: mode has to be one of sum, mean or max, got "
                            f"{mode!r}")
    if mode == "max" and scale_grad_by_freq:
        raise ArgumentError("embedding_bag: max mode does not support scaling the gradient by "
                            "the frequency")
    if mode == "max" and sparse:
        raise ArgumentError("embedding_bag: max mode does not support sparse weights")
    n, dim, length = w.shape[0], w.shape[1], idx.shape[0]
    if max_norm is not None:
        _in_range(idx, n, "embedding_bag")
        _renorm_rows(w, idx, float(max_norm), float(norm_type))
    if psw is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode={mode!r})")
    if psw is not None and psw.dtype != w.dtype:
        raise DtypeError(f"embedding_bag: per_sample_weights of dtype {psw.dtype} must have "
                         f"the weight's dtype {w.dtype}")
    padding_idx = _padding(padding_idx, n, "embedding_bag")
    _in_range(idx, n, "embedding_bag")
    _check_offsets(offsets, length, include_last_offset)
    bags = offsets.shape[0] - include_last_offset
    if bags <= 0:  # no bags: (0, dim), still connected to the weight
        return index_select(w, 0, _const(np.zeros(0, dtype=np.int64), w))
    bag = _bag_of(offsets, length)
    valid = bag < bags  # entries past the last offset (include_last_offset) belong nowhere
    if padding_idx is not None:
        valid = valid & (idx != padding_idx)
    bag = where(valid, bag, 0)
    rows = index_select(w, 0, idx.to(np.int64))
    if scale_grad_by_freq:
        rows = _scaled_by_freq(rows, idx.to(np.int64), n)
    zeros = _const(np.zeros((bags, dim), dtype=w.dtype), w)
    if mode == "max":
        return _bag_max(rows, bag, valid, zeros)
    scale = valid.to(w.dtype) if psw is None else where(valid, psw, 0.0)
    total = apply(ops.index_add, zeros, bag, rows * scale.reshape(-1, 1), axis=-2)
    if mode == "sum":
        return total
    count = apply(ops.index_add, _const(np.zeros(bags, dtype=w.dtype), w), bag,
                  valid.to(w.dtype), axis=-1)
    return total / where(count == 0, 1.0, count).reshape(-1, 1)


def _bag_max(rows: Tensor, bag: Tensor, valid: Tensor, zeros: Tensor) -> Tensor:
    """Per bag and dimension, the row PyTorch's loop keeps: the first valid one, replaced by
    each later one strictly greater (so the first maximum, or a NaN that comes first); the
    result is that row's value (gradient to it alone), 0 for an empty bag."""
    length, dim = rows.shape
    r = rows.detach()
    nan = r != r
    pos = _const(np.broadcast_to(np.arange(length, dtype=np.int64)[:, None], (length, dim)), r)
    bag2 = bag.reshape(-1, 1).expand(length, dim)
    ok = valid.reshape(-1, 1)
    cand = ok & ~nan
    lowest = _const(np.full(zeros.shape, -np.inf, dtype=r.dtype), r)
    best = scatter_reduce(lowest, 0, bag2, where(cand, r, -np.inf), "amax")
    hit = cand & (r == gather(best, 0, bag2))
    none = _const(np.full(zeros.shape, length, dtype=np.int64), r)
    first_max = scatter_reduce(none, 0, bag2, where(hit, pos, length), "amin")
    first = scatter_reduce(none, 0, bag2, where(ok, pos, length), "amin")
    pick = where(gather(_pad_row(nan, False), 0, first), first, first_max)
    return gather(_pad_row(rows, 0.0), 0, pick)


def _pad_row(x: Tensor, value) -> Tensor:
    """`x` (L, D) with one more row of `value` at the end (index L: an empty bag's pick)."""
    return cat([x, _const(np.full((1, x.shape[1]), value, dtype=x.dtype), x)], 0)
