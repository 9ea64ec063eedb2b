"""Margin and embedding losses with PyTorch's names, arguments and defaults:
`margin_ranking_loss`, `hinge_embedding_loss`, `soft_margin_loss`,
`multilabel_soft_margin_loss`, `cosine_embedding_loss`, `multi_margin_loss`,
`multilabel_margin_loss`, `triplet_margin_loss`, `triplet_margin_with_distance_loss`.

Compositions of recorded ops, written after PyTorch's kernels (`clamp_min` where
they clamp, so the gradient passes at the hinge; a strict `z > 0` where they test
one, so it does not). Class targets are used through ops only (comparisons with an
`arange`, `gather`), so `rg.jit` replays and `rg.func.vmap` batches them; their range
is checked by an op of the program as well as in Python.
"""

from __future__ import annotations

import math

import numpy as np

from .. import creation
from .._values import every_value
from ..engine import apply
from ..grad_mode import state
from ..ops.checks import check_within
from ..primitive import ArgumentError
from ..tensor import Tensor
from ._args import _t, promote
from ._errors import MixedDtypeError
from ._loss_args import (
    LossDtypeError,
    LossShapeError,
    LossTargetError,
    broadcast_shape,
    check_reduction,
    floating,
    legacy_reduction,
    no_half,
)
from ._loss_args import reduce as _reduce
from .activations import logsigmoid
from .cumulative import cumprod
from .elementwise import abs as _abs
from .elementwise import clamp, minimum, relu, sqrt, where
from .indexing import gather, index_select
from .norms import vector_norm
from .reductions import sum
from .shape import reshape, unsqueeze

__all__ = ["margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "cosine_embedding_loss", "multi_margin_loss",
           "multilabel_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss"]


def _legacy(size_average, reduce, reduction: str, fn: str) -> str:
    return check_reduction(legacy_reduction(size_average, reduce, reduction), fn)


# ---------------------------------------------------------------- pairs and signs

def margin_ranking_loss(input1, input2, target, margin: float = 0, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:
    """max(0, -target (input1 - input2) + margin): input1 should rank above input2 where
    target is 1, below where it is -1. The three must have one number of dimensions and
    broadcast."""
    fn = "margin_ranking_loss"
    reduction = _legacy(size_average, reduce, reduction, fn)
    a, b, y = _t(input1), _t(input2), _t(target)
    if not a.ndim == b.ndim == y.ndim:
        raise LossShapeError(f"{fn}: input1, input2 and target must have one number of "
                             f"dimensions; got {tuple(a.shape)}, {tuple(b.shape)} and "
                             f"{tuple(y.shape)}")
    return margin_ranking(a, b, y, margin, reduction, fn)


def margin_ranking(a: Tensor, b: Tensor, y: Tensor, margin: float, reduction: str,
                   fn: str) -> Tensor:
    """`margin_ranking_loss` without its check on the number of dimensions (which
    `torch.margin_ranking_loss` does not make)."""
    broadcast_shape(fn, input1=a, input2=b, target=y)
    return _reduce(clamp(-y * (a - b) + float(margin), min=0.0), reduction)


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean") -> Tensor:
    """input where target is 1, max(0, margin - input) where it is -1 (PyTorch's kernel:
    a target that is neither adds both terms). Input and target broadcast."""
    fn = "hinge_embedding_loss"
    reduction = _legacy(size_average, reduce, reduction, fn)
    x, y = _t(input), _t(target)
    floating(x, fn)
    broadcast_shape(fn, input=x, target=y)
    zero = np.zeros((), x.dtype)
    out = where(y != 1, clamp(float(margin) - x, min=0.0), zero) + where(y != -1, x, zero)
    return _reduce(out, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """log(1 + exp(-target * input)), computed without overflow (PyTorch's kernel gives
    inf once target * input < -88 in float32). The target broadcasts to the input."""
    fn = "soft_margin_loss"
    reduction = _legacy(size_average, reduce, reduction, fn)
    x, y = _t(input), _t(target)
    if state.enabled and y.requires_grad:  # PyTorch's kernel has no target derivative
        raise RuntimeError(f"{fn}: not differentiable with respect to 'target', which must "
                           "not require grad (pass target.detach())")
    if broadcast_shape(fn, input=x, target=y) != x.shape:
        raise LossShapeError(f"{fn}: target of shape {tuple(y.shape)} must broadcast to the "
                             f"input's shape {tuple(x.shape)}")
    floating(x, fn)  # PyTorch computes into the input's dtype: never an integer or bool one
    if x.dtype.kind == "f" and y.dtype.kind == "f":  # the input's dtype, as PyTorch gives
        y = y.to(x.dtype)
    x, y = promote(x, y)
    floating(x, fn)
    return _reduce(-logsigmoid(y * x), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """Per sample, the mean over the C classes (the last dimension) of the binary
    cross-entropy of logits -(t log sigmoid(x) + (1 - t) log sigmoid(-x)), times `weight`."""
    fn = "multilabel_soft_margin_loss"
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = _t(input), _t(target)
    if x.ndim == 0:
        raise IndexError(f"{fn}: input must have a class dimension (the last), got a 0-d "
                         "tensor")
    broadcast_shape(fn, input=x, target=t)
    floating(x, fn)
    loss = -(t * logsigmoid(x) + (1 - t) * logsigmoid(-x))
    if weight is not None:
        w = _t(weight)
        broadcast_shape(fn, input=x, weight=w)
        loss = loss * w
    # PyTorch sums dim input.ndim - 1 of the loss and divides by the input's class count:
    # the same axis as the last one unless target or weight broadcast the loss to more dims
    loss = sum(loss, x.ndim - 1) / x.shape[-1]
    return _reduce(loss, check_reduction(reduction, fn))


_EPSILON = 1e-12  # PyTorch's, added to each squared norm


def cosine_embedding_loss(input1, input2, target, margin: float = 0, size_average=None,
                          reduce=None, reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where target is 1, max(0, cos - margin) where it is -1, 0 elsewhere
    (cosine along the last dimension, 1e-12 added to each squared norm as in PyTorch).
    Inputs (N, D) with a target (N,), or (D,) with a 0-d target."""
    fn = "cosine_embedding_loss"
    reduction = _legacy(size_average, reduce, reduction, fn)
    a, b, y = _t(input1), _t(input2), _t(target)
    if y.ndim > 1:
        raise LossShapeError(f"{fn}: 0-d or 1-d target expected (multi-target is not "
                             f"supported), got shape {tuple(y.shape)}")
    want = 2 if y.ndim == 1 else 1
    if a.ndim != want or b.ndim != want:
        raise LossShapeError(f"{fn}: a {y.ndim}-d target expects {want}-d inputs, got input1 "
                             f"{tuple(a.shape)}, input2 {tuple(b.shape)} and target "
                             f"{tuple(y.shape)}")
    try:
        np.broadcast_shapes(broadcast_shape(fn, input1=a, input2=b)[:-1], y.shape)
    except ValueError:
        n = broadcast_shape(fn, input1=a, input2=b)[:-1]
        raise LossShapeError(f"{fn}: target must have shape {n}, got {tuple(y.shape)} "
                             f"(input1 {tuple(a.shape)}, input2 {tuple(b.shape)})") from None
    d = y.ndim
    prod = sum(a * b, d)
    m1 = sum(a * a, d) + _EPSILON
    m2 = sum(b * b, d) + _EPSILON
    cos = prod / sqrt(m1 * m2)
    zero = np.zeros((), cos.dtype)
    out = where(y == 1, 1.0 - cos, zero) + where(y == -1, clamp(cos - float(margin), min=0.0),
                                                 zero)
    return _reduce(out, reduction)


# ---------------------------------------------------------------- class targets

def _class_range(y: Tensor, lo: int, hi: int, fn: str) -> Tensor:
    """A 0-d one to multiply into the result, from an op that raises (at every call, rg.jit
    replays included) unless lo <= y <= hi; in eager mode PyTorch's error type first."""
    message = f"{fn}: target out of range: class indices must be in [{lo}, {hi}]"
    if state.tracer is None:
        v = every_value(y)
        if v.size and not bool(((v >= lo) & (v <= hi)).all()):
            bad = int(v[(v < lo) | (v > hi)].ravel()[0])
            raise LossTargetError(f"{message}, got {bad}")
    return apply(check_within, y.detach(), lo=lo, hi=hi, open_lo=False, message=message)


def _int_target(y: Tensor, fn: str) -> None:
    """int64 class indices only: PyTorch's margin kernels refuse every other dtype, the
    narrower integers and bool included ("expected scalar type Long")."""
    if y.dtype != np.int64:
        hint = "; convert it with target.long()" if y.dtype.kind in "iub" else ""
        raise LossDtypeError(f"{fn}: target must hold integer class indices (int64), got "
                             f"{y.dtype}{hint}")


def _empty_mean(loss: Tensor, reduction: str) -> Tensor:
    """PyTorch's multi-margin kernels: the mean of no samples is 0, not nan."""
    if reduction == "mean" and loss.shape[0] == 0:
        return sum(loss)
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None,
                      size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """Per sample, sum over the classes d other than the target y of
    w[y] max(0, margin - x[y] + x[d])^p, divided by the number of classes C. Input (N, C)
    or (C,), target (N,) or 0-d class indices, `weight` (C,) per class, p 1 or 2."""
    fn = "multi_margin_loss"
    reduction = _legacy(size_average, reduce, reduction, fn)
    if p not in (1, 2):
        raise ArgumentError(f"{fn}: only p == 1 and p == 2 are supported, got p={p}")
    x, y = _t(input), _t(target)
    if weight is not None and _t(weight).ndim != 1:
        raise ArgumentError(f"{fn}: weight must be one-dimensional, got shape "
                            f"{tuple(_t(weight).shape)}")
    if x.ndim > 2 or (x.ndim <= 1 and x.shape == (0,)) or (x.ndim == 2 and x.shape[1] == 0):
        raise LossShapeError(f"{fn}: expected a non-empty vector or matrix (N, C) with an "
                             f"optional 0-d batch size, got input of shape {tuple(x.shape)}")
    floating(x, fn)
    no_half(x, fn)
    _int_target(y, fn)
    n = 1 if x.ndim <= 1 else x.shape[0]
    c = 1 if x.ndim == 0 else x.shape[-1]
    if y.ndim > 1 or y.size != n:
        raise LossShapeError(f"{fn}: target must be 1-d with one class index per sample "
                             f"({n}), got shape {tuple(y.shape)} for input {tuple(x.shape)}")
    w = None
    if weight is not None:
        w = _t(weight)
        if w.size != c:
            raise LossShapeError(f"{fn}: weight must have one entry per class ({c}), got "
                                 f"shape {tuple(w.shape)}")
        if w.dtype != x.dtype:  # PyTorch's kernel takes one scalar type, never converts
            raise MixedDtypeError(f"{fn}: expected scalar type {x.dtype} but found {w.dtype} "
                                  f"(the weight's); convert it with .to(input.dtype)")
    one = _class_range(y, 0, c - 1, fn)
    x2, y1 = reshape(x, n, c), reshape(y, n)
    xy = gather(x2, 1, unsqueeze(y1, 1))
    z = (float(margin) - xy) + x2
    h = relu(z)
    if p == 2:
        h = h * h
    if w is not None:
        h = h * unsqueeze(index_select(w, 0, y1), 1)
    other = unsqueeze(y1, 1) != creation.arange(c, dtype=y1.dtype)
    loss = sum(where(other, h, np.zeros((), x.dtype)), 1) / c
    if reduction == "none":
        return (loss if y.ndim else reshape(loss, ())) * one
    return _empty_mean(loss, reduction) * one


def multilabel_margin_loss(input, target, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """Per sample, sum over its target classes j and the non-target classes d of
    max(0, 1 - x[j] + x[d]), divided by the number of classes C. `target` has the input's
    shape: the sample's class indices, ended by the first -1 (what follows is ignored)."""
    fn = "multilabel_margin_loss"
    reduction = _legacy(size_average, reduce, reduction, fn)
    x, y = _t(input), _t(target)
    if x.ndim > 2 or (x.ndim == 1 and x.shape[0] == 0) or (x.ndim == 2 and x.shape[1] == 0):
        raise LossShapeError(f"{fn}: expected a non-empty vector or matrix (N, C) with an "
                             f"optional 0-d batch size, got input of shape {tuple(x.shape)}")
    floating(x, fn)
    no_half(x, fn)
    _int_target(y, fn)
    c = 1 if x.ndim == 0 else x.shape[-1]
    ok = (y.ndim <= 1 and y.size == c) if x.ndim <= 1 else y.shape == x.shape
    if not ok:
        raise LossShapeError(f"{fn}: target of shape {tuple(y.shape)} does not fit input of "
                             f"shape {tuple(x.shape)} (the same shape expected)")
    one = _class_range(y, -1, c - 1, fn)
    n = 1 if x.ndim <= 1 else x.shape[0]
    x2, y2 = reshape(x, n, c), reshape(y, n, c)
    listed = cumprod((y2 >= 0).to(np.int64), 1) > 0          # before the first -1
    classes = creation.arange(c, dtype=y2.dtype)
    hits = (unsqueeze(y2, 2) == classes) & unsqueeze(listed, 2)  # (n, j, class)
    count = sum(hits.to(x.dtype), 1)                          # times each class is listed
    other = (count == 0).to(x.dtype)                          # not a target class
    z = (1.0 - unsqueeze(x2, 2)) + unsqueeze(x2, 1)           # (n, target class, d)
    h = sum(relu(z) * unsqueeze(other, 1), 2)
    loss = sum(h * count, 1) / c
    if reduction == "none":
        return (loss if x.ndim == 2 else reshape(loss, ())) * one
    return _empty_mean(loss, reduction) * one


# ---------------------------------------------------------------- triplets

def _pairwise_distance(x1: Tensor, x2: Tensor, p: float, eps: float) -> Tensor:
    """||x1 - x2 + eps||_p over the last dimension (PyTorch's pairwise_distance; p < 0
    included, 0-d inputs give |x1 - x2 + eps|)."""
    d = x1 - x2 + eps
    if d.ndim == 0:
        d = reshape(d, 1)
    p = float(p)
    if p >= 0 or math.isinf(p):
        return vector_norm(d, p, dim=-1)
    return sum(_abs(d) ** p, -1) ** (1.0 / p)


def _same_ndim(a: Tensor, p: Tensor, n: Tensor, fn: str) -> None:
    if not a.ndim == p.ndim == n.ndim:
        raise LossShapeError(f"{fn}: anchor, positive and negative must have one number of "
                             f"dimensions; got anchor {tuple(a.shape)}, positive "
                             f"{tuple(p.shape)} and negative {tuple(n.shape)}")


def _triplet(dist_pos: Tensor, dist_neg: Tensor, margin: float, reduction: str) -> Tensor:
    return _reduce(clamp(float(margin) + dist_pos - dist_neg, min=0.0), reduction)


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with d the p-norm
    distance over the last dimension (eps added to the difference); `swap` uses
    min(d(a, n), d(p, n)) as the negative distance."""
    fn = "triplet_margin_loss"
    reduction = _legacy(size_average, reduce, reduction, fn)
    if margin <= 0:
        raise ArgumentError(f"{fn}: margin must be greater than 0, got {margin}")
    return triplet(anchor, positive, negative, margin, p, eps, swap, reduction, fn)


def triplet(anchor, positive, negative, margin: float, p: float, eps: float, swap: bool,
            reduction: str, fn: str) -> Tensor:
    """`triplet_margin_loss` without its check that the margin is positive (which
    `torch.triplet_margin_loss` does not make)."""
    a, pos, neg = _t(anchor), _t(positive), _t(negative)
    _same_ndim(a, pos, neg, fn)
    broadcast_shape(fn, anchor=a, positive=pos, negative=neg)
    dist_pos = _pairwise_distance(a, pos, p, eps)
    dist_neg = _pairwise_distance(a, neg, p, eps)
    if swap:
        dist_neg = minimum(dist_neg, _pairwise_distance(pos, neg, p, eps))
    return _triplet(dist_pos, dist_neg, margin, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """`triplet_margin_loss` with any distance: `distance_function(x1, x2)` (default the
    Euclidean pairwise distance, eps 1e-6) returning one distance per sample."""
    fn = "triplet_margin_with_distance_loss"
    check_reduction(reduction, fn)
    if margin <= 0:
        raise ArgumentError(f"{fn}: margin must be greater than 0, got {margin}")
    a, pos, neg = _t(anchor), _t(positive), _t(negative)
    _same_ndim(a, pos, neg, fn)
    dist = distance_function if distance_function is not None else (
        lambda x1, x2: _pairwise_distance(_t(x1), _t(x2), 2.0, 1e-6))
    dist_pos = dist(a, pos)
    dist_neg = dist(a, neg)
    if swap:
        dist_neg = minimum(dist_neg, dist(pos, neg))
    return _triplet(dist_pos, dist_neg, margin, reduction)
