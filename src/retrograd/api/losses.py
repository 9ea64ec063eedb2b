"""Losses and misc functional ops with PyTorch's names, arguments and defaults:
`binary_cross_entropy`, `l1_loss`, `smooth_l1_loss`, `huber_loss`, `kl_div`,
`cosine_embedding_loss`, `margin_ranking_loss`, `one_hot`, `embedding` and the
dropout variants.

All are compositions of recorded ops (so gradients, forward mode and `rg.jit`
replays come from the op table); arguments are checked first, with errors that
name them and their shapes.
"""

from __future__ import annotations

import numpy as np

from .. import creation, ops
from .._values import every_value, values_of
from ..devices import namespace_of
from ..engine import apply
from ..grad_mode import no_grad
from ..ops.checks import check_within
from ..tensor import Tensor
from ._args import _t
from .elementwise import abs as _abs
from .elementwise import clamp, log, where
from .indexing import index_select
from .math import xlogy
from .norms import vector_norm
from .reductions import mean, sum

__all__ = ["binary_cross_entropy", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
           "cosine_embedding_loss", "margin_ranking_loss", "one_hot", "embedding",
           "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

_REDUCTIONS = ("mean", "sum", "none")


def _reduction(reduction: str, fn: str, extra: tuple = ()) -> None:
    if reduction not in _REDUCTIONS + extra:
        allowed = ", ".join(repr(r) for r in _REDUCTIONS + extra)
        raise ValueError(f"{fn}: reduction must be one of {allowed}, got {reduction!r}")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return sum(loss)
    return loss


def _same_shape(x: Tensor, y: Tensor, fn: str, a: str = "input", b: str = "target") -> None:
    if x.shape != y.shape:
        raise ValueError(f"{fn}: {b} of shape {y.shape} must have the same shape as {a} "
                         f"{x.shape} (broadcasting a loss is almost always a bug)")


def _float_pair(input, target, fn: str) -> tuple:
    x, y = _t(input), _t(target)
    if x.dtype.kind != "f":
        raise TypeError(f"{fn}: input must be floating, got {x.dtype}")
    _same_shape(x, y, fn)
    if y.dtype != x.dtype:
        y = y.to(x.dtype)
    return x, y


def binary_cross_entropy(input, target, weight=None, reduction: str = "mean") -> Tensor:
    """-w (t log(x) + (1 - t) log(1 - x)) for probabilities x in [0, 1]; each log is clamped
    at -100, as in PyTorch, so x = 0 or 1 gives a finite loss."""
    _reduction(reduction, "binary_cross_entropy")
    x, t = _float_pair(input, target, "binary_cross_entropy")
    one = apply(check_within, x.detach(), lo=0.0, hi=1.0, open_lo=False, message=(
        "binary_cross_entropy: all elements of input should be between 0 and 1 (apply a "
        "sigmoid, or use binary_cross_entropy_with_logits)"))  # an op: checked at each replay
    loss = -(t * _clamped_log(x) + (1.0 - t) * _clamped_log(1.0 - x))
    if weight is not None:
        w = _t(weight)
        try:
            np.broadcast_shapes(w.shape, x.shape)
        except ValueError:
            raise ValueError(f"binary_cross_entropy: weight of shape {w.shape} does not "
                             f"broadcast to input of shape {x.shape}") from None
        loss = loss * w
    return _reduce(loss, reduction) * one


def _clamped_log(x: Tensor) -> Tensor:
    """max(log(x), -100), with a finite (zero) gradient where x is 0."""
    pos = x > 0
    return clamp(where(pos, log(where(pos, x, 1.0)), -100.0), min=-100.0)


def l1_loss(input, target, reduction: str = "mean") -> Tensor:
    """|input - target| (subgradient 0 at equality)."""
    _reduction(reduction, "l1_loss")
    x, y = _float_pair(input, target, "l1_loss")
    return _reduce(_abs(x - y), reduction)


def smooth_l1_loss(input, target, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - beta / 2 (beta = 0: the L1 loss)."""
    _reduction(reduction, "smooth_l1_loss")
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    x, y = _float_pair(input, target, "smooth_l1_loss")
    d = x - y
    a = _abs(d)
    if beta == 0:
        return _reduce(a, reduction)
    return _reduce(where(a < beta, (0.5 / beta) * d * d, a - 0.5 * beta), reduction)


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - delta / 2)."""
    _reduction(reduction, "huber_loss")
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    x, y = _float_pair(input, target, "huber_loss")
    d = x - y
    a = _abs(d)
    return _reduce(where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta)), reduction)


def kl_div(input, target, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL divergence with `input` log-probabilities: target (log target - input), 0 where the
    target is 0. 'batchmean' divides the sum by the batch size (the true KL mean); 'mean'
    is over every element, as in PyTorch."""
    _reduction(reduction, "kl_div", ("batchmean",))
    x, t = _t(input), _t(target)
    if x.dtype.kind != "f":
        raise TypeError(f"kl_div: input must be floating, got {x.dtype}")
    try:
        np.broadcast_shapes(x.shape, t.shape)
    except ValueError:
        raise ValueError(f"kl_div: target of shape {t.shape} does not broadcast with input "
                         f"of shape {x.shape}") from None
    if t.dtype != x.dtype:
        t = t.to(x.dtype)
    if log_target:
        loss = apply(ops.exp, t) * (t - x)
    else:
        loss = xlogy(t, t) - t * x
    if reduction == "batchmean":
        return sum(loss) / (x.shape[0] if x.ndim else 1)
    return _reduce(loss, reduction)


def _targets(target, n_shape: tuple, fn: str, dtype) -> Tensor:
    y = _t(target)
    if y.shape != n_shape:
        raise ValueError(f"{fn}: target must have shape {n_shape}, got {y.shape}")
    return y if y.dtype == dtype else y.to(dtype)


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0,
                          reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where target is 1, max(0, cos - margin) where it is -1 (cosine along
    the last dim, with PyTorch's 1e-12 added to each squared norm)."""
    _reduction(reduction, "cosine_embedding_loss")
    a, b = _t(input1), _t(input2)
    fn = "cosine_embedding_loss"
    if a.shape != b.shape or a.ndim not in (1, 2):
        raise ValueError(f"{fn}: input1 and input2 must have one shape, (N, D) or (D,); got "
                         f"{a.shape} and {b.shape}")
    y = _targets(target, a.shape[:-1], fn, a.dtype)
    prod = sum(a * b, -1)
    m1 = sum(a * a, -1) + 1e-12
    m2 = sum(b * b, -1) + 1e-12
    cos = prod / apply(ops.sqrt, m1 * m2)
    zero = np.zeros((), a.dtype)
    loss = where(y == 1, 1.0 - cos, zero) + where(y == -1, clamp(cos - margin, min=0.0), zero)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin: float = 0.0,
                        reduction: str = "mean") -> Tensor:
    """max(0, -target (x1 - x2) + margin)."""
    _reduction(reduction, "margin_ranking_loss")
    a, b, y = _t(input1), _t(input2), _t(target)
    if not (a.shape == b.shape == y.shape):
        raise ValueError(f"margin_ranking_loss: input1, input2 and target must have one shape; "
                         f"got {a.shape}, {b.shape} and {y.shape}")
    if y.dtype != a.dtype:
        y = y.to(a.dtype)
    return _reduce(clamp(-y * (a - b) + margin, min=0.0), reduction)


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """(..., num_classes) int64 with a 1 at each class index; num_classes=-1: max + 1."""
    y = _t(tensor)
    if y.dtype.kind not in "iu":
        raise TypeError(f"one_hot: expected an integer (int64) tensor of class indices, got "
                        f"{y.dtype}")
    d = every_value(y)  # checked here (inside rg.jit: for the traced call's labels)
    if d.size and d.min() < 0:
        raise ValueError("one_hot: class values must be non-negative")
    if num_classes == -1:
        d = values_of(y, "one_hot() with num_classes=-1 (the class count is the largest "
                      "label + 1)", "pass num_classes")
        if not d.size:
            raise ValueError("one_hot: can not infer the total number of classes from an empty "
                             "tensor; pass num_classes")
        num_classes = int(d.max()) + 1
    elif num_classes < 1 or (d.size and d.max() >= num_classes):
        raise ValueError(f"one_hot: class values must be smaller than num_classes="
                         f"{num_classes} (largest is {int(d.max()) if d.size else None})")
    return apply(ops.one_hot, y, classes=int(num_classes), dtype=np.dtype(np.int64))


def embedding(input, weight, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """Rows of `weight` (num_embeddings, dim) at the integer indices `input`: shape
    input.shape + (dim,). The row `padding_idx` gets no gradient; with `max_norm`, the
    rows looked up are first rescaled in place to norm at most `max_norm`, as in PyTorch."""
    idx, w = _t(input), _t(weight)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"embedding: input must hold integer indices (int64), got {idx.dtype}")
    if w.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got "
                         f"shape {w.shape}")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: scale_grad_by_freq and sparse gradients are not "
                                  "supported")
    n = w.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise ValueError(f"embedding: padding_idx {padding_idx} must be within the "
                             f"num_embeddings ({n})")
        padding_idx %= n
    d = every_value(idx)
    if d.size and (d.min() < 0 or d.max() >= n):
        bad = int(d[(d < 0) | (d >= n)].flat[0])
        raise IndexError(f"embedding: index {bad} is out of range for {n} embeddings")
    if max_norm is not None:
        _renorm_rows(w, idx, float(max_norm), float(norm_type))
    flat = idx.reshape(-1)
    rows = index_select(w, 0, flat)
    if padding_idx is not None and w.requires_grad:
        keep = (flat != padding_idx).reshape(-1, 1)
        rows = where(keep, rows, index_select(w.detach(), 0, flat))
    return rows.reshape(idx.shape + (w.shape[1],))


def _renorm_rows(w: Tensor, idx: Tensor, max_norm: float, p: float) -> None:
    """Rescale in place the rows of `w` that `idx` looks up to norm at most `max_norm`, as
    PyTorch does before the lookup; computed with ops, so rg.jit replays it for each call's
    indices (rows not looked up are multiplied by exactly 1)."""
    with no_grad():
        norms = vector_norm(w, p, dim=1)
        flat = idx.reshape(-1)
        hits = apply(ops.index_add, apply(ops.zeros_like, norms), flat,
                     apply(ops.ones_like, flat).to(norms.dtype), axis=-1)
        big = (hits > 0) & (norms > max_norm)
        w.mul_(where(big, max_norm / (norms + 1e-7), 1.0).to(w.dtype).reshape(-1, 1))


# ---------------------------------------------------------------- dropout variants

def _channel_dropout(x, p: float, training: bool, fn: str, dims: int) -> Tensor:
    """Zero whole channels: a mask of shape (N, C, 1, ...) (or (C, 1, ...) unbatched)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{fn}: dropout probability has to be between 0 and 1, but got {p}")
    x = _t(x)
    if x.ndim not in (dims + 1, dims + 2):
        raise ValueError(f"{fn}: expected a {dims + 1}-D (unbatched) or {dims + 2}-D (batched) "
                         f"input, got shape {x.shape}")
    if not training or p == 0.0:
        return x
    lead = x.ndim - dims
    shape = x.shape[:lead] + (1,) * dims
    if p == 1.0:
        return x * namespace_of(x.data).zeros(shape, dtype=x.dtype)
    mask = (creation.generator(like=x.data).random(shape) >= p).astype(x.dtype)
    mask *= 1.0 / (1.0 - p)
    return x * mask


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) with probability p; scale the rest."""
    return _channel_dropout(input, p, training, "dropout1d", 1)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) or (C, H, W) with probability p; scale the rest."""
    return _channel_dropout(input, p, training, "dropout2d", 2)


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p."""
    return _channel_dropout(input, p, training, "dropout3d", 3)


_SELU_NEG = -1.7580993408473766  # -scale * alpha of SELU: where SELU sends -inf


def _alpha(x, p: float, training: bool, fn: str, shape) -> Tensor:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{fn}: dropout probability has to be between 0 and 1, but got {p}")
    x = _t(x)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    keep = creation.generator(like=x.data).random(shape(x)) >= p
    a = ((1.0 - p) * (1.0 + p * _SELU_NEG ** 2)) ** -0.5
    b = (1.0 - keep) * (a * _SELU_NEG) - a * _SELU_NEG * p
    return x * (keep * a).astype(x.dtype) + b.astype(x.dtype)


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps a SELU network's mean and variance: dropped values are set to
    SELU's negative saturation, then an affine map restores the statistics."""
    return _alpha(input, p, training, "alpha_dropout", lambda x: x.shape)


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """`alpha_dropout` of whole channels (dims after the second are masked together)."""
    return _alpha(input, p, training, "feature_alpha_dropout",
                  lambda x: x.shape[:2] + (1,) * (x.ndim - 2))
