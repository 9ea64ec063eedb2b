"""Regression and likelihood losses with PyTorch's names, arguments and defaults:
`binary_cross_entropy`, `l1_loss`, `smooth_l1_loss`, `huber_loss`, `kl_div`,
`gaussian_nll_loss`, `poisson_nll_loss`; then `one_hot`. The margin losses are in
`margin_losses.py`, CTC in `ctc.py`, the dropout family in `dropout.py`, `embedding` in
`embedding.py`.

All are compositions of recorded ops (so gradients, forward mode, `rg.func.vmap` and
`rg.jit` replays come from the op table); arguments are checked first, with errors
that name them and their shapes (`_loss_args.py`). The deprecated `size_average` and
`reduce` flags are honoured as PyTorch does, with its warning.
"""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from .. import creation, ops
from .._values import every_value, values_of
from ..engine import apply
from ..grad_mode import state
from ..ops.checks import check_within
from ..primitive import ArgumentError
from ..tensor import Tensor
from ._args import _t, promote
from ._errors import ArgumentTypeError, MixedDtypeError
from ._loss_args import (
    LossShapeError,
    LossValueError,
    broadcast_shape,
    check_reduction,
    float_pair,
    floating,
    legacy_reduction,
    same_shape,
)
from ._loss_args import (
    reduce as _reduce,
)
from ._opmath import float16_in_float32
from .elementwise import abs as _abs
from .elementwise import exp, log, where
from .math import xlogy
from .reductions import sum
from .shape import unsqueeze

__all__ = ["binary_cross_entropy", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
           "gaussian_nll_loss", "poisson_nll_loss", "one_hot"]


def _in_unit_interval(x: Tensor, fn: str, name: str) -> Tensor:
    """A 0-d one to multiply into the result: an op that raises at every call (rg.jit
    replays included) if `x` leaves [0, 1]; checked here first, so that eager mode raises
    PyTorch's RuntimeError."""
    message = f"{fn}: all elements of {name} should be between 0 and 1"
    if state.tracer is None:
        v = every_value(x)
        if v.size and not bool(((v >= 0) & (v <= 1)).all()):
            raise LossValueError(message)
    return apply(check_within, x.detach(), lo=0.0, hi=1.0, open_lo=False, message=message)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction: str = "mean") -> Tensor:
    """-w (t log(x) + (1 - t) log(1 - x)) for probabilities x in [0, 1]; each log is clamped
    at -100, as in PyTorch, so x = 0 or 1 gives a finite loss, and the gradients are
    PyTorch's: (x - t) / max(x (1 - x), 1e-12) for x. `weight` broadcasts to the input's
    shape."""
    fn = "binary_cross_entropy"
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction), fn)
    x, t = _t(input), _t(target)
    if x.shape != t.shape:
        raise ArgumentError(f"{fn}: target of shape {tuple(t.shape)} must have the same shape "
                            f"as input {tuple(x.shape)}")
    floating(x, fn)  # integer or bool probabilities: PyTorch raises, never promotes them
    if t.dtype != x.dtype:  # torch: "Found dtype Long but expected Float"
        raise MixedDtypeError(f"{fn}: found target dtype {t.dtype} but expected {x.dtype} "
                              "(the input's): convert the target with .to(input.dtype)")
    x, t = promote(x, t)
    floating(x, fn)
    one = _in_unit_interval(x, fn, "input (apply a sigmoid, or use "
                            "binary_cross_entropy_with_logits)")
    one = one * _in_unit_interval(t, fn, "target")
    loss = apply(ops.binary_cross_entropy, x, t)
    if weight is not None:
        w = _t(weight)
        if broadcast_shape(fn, weight=w, input=x) != x.shape:
            raise LossShapeError(f"{fn}: weight of shape {tuple(w.shape)} does not broadcast "
                                 f"to the input's shape {tuple(x.shape)}")
        loss = loss * w.to(x.dtype)  # PyTorch applies it in place: no wider result
    return _reduce(loss, reduction) * one


def _in_input_dtype(input, target):
    """A floating target in a floating input's dtype: PyTorch's huber_loss and
    soft_margin_loss give the input's dtype, not the promoted one."""
    x, y = _t(input), _t(target)
    if x.dtype.kind == "f" and y.dtype.kind == "f" and y.dtype != x.dtype:
        return y.to(x.dtype)
    return target


def _weighted(loss: Tensor, weight, x: Tensor, reduction: str, fn: str, by_weight: bool):
    """PyTorch 2.13's optional per-element `weight` of l1_loss (mean: sum(w l) / sum(w))
    and huber_loss (mean: mean(w l))."""
    w = _t(weight)
    if w.shape != x.shape:
        raise ArgumentError(f"{fn}: weight of shape {tuple(w.shape)} and input of shape "
                            f"{tuple(x.shape)}: weights and input must have the same size")
    loss = loss * w
    if reduction == "mean" and by_weight:
        return sum(loss) / sum(w)
    return _reduce(loss, reduction)


@float16_in_float32("input", "target")
def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",
            weight=None) -> Tensor:
    """|input - target| (subgradient 0 at equality); with `weight`, 'mean' is the
    weighted mean sum(w |d|) / sum(w), as in PyTorch. Complex tensors too (a real loss,
    the modulus of the difference, as PyTorch's)."""
    fn = "l1_loss"
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction), fn)
    x, y = _t(input), _t(target)
    if x.dtype == np.bool_ or y.dtype == np.bool_:  # PyTorch: no `-` with a bool tensor
        raise ArgumentTypeError(f"{fn}: input and target must not be bool (PyTorch has no "
                                f"subtraction of bool tensors), got {x.dtype} and {y.dtype}")
    if x.dtype.kind == "c" or y.dtype.kind == "c":
        same_shape(x, y, fn)
        x, y = promote(x, y)
    else:
        x, y = float_pair(x, y, fn)
    loss = _abs(x - y)
    if weight is not None:
        return _weighted(loss, weight, x, reduction, fn, by_weight=True)
    return _reduce(loss, reduction)


@float16_in_float32("input", "target")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - beta / 2 (beta = 0: the L1 loss)."""
    fn = "smooth_l1_loss"
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction), fn)
    if beta < 0:
        raise LossValueError(f"{fn}: beta must be non-negative, got {beta}")
    x, y = float_pair(input, target, fn)
    d = x - y
    z = _abs(d)
    if beta == 0:
        return _reduce(z, reduction)
    small = z < beta
    # the quadratic of d itself (not of |d|, whose sign'(0) = 0 would zero the second
    # derivative at d = 0); an infinite d takes no 0 * inf into its gradient
    dq = where(small, d, 0.0)
    return _reduce(where(small, 0.5 * dq * dq / beta, z - 0.5 * beta), reduction)


@float16_in_float32("input", "target")
def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0,
               weight=None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - delta / 2); with `weight`, each
    element's loss is scaled and 'mean' is the plain mean, as in PyTorch."""
    fn = "huber_loss"
    check_reduction(reduction, fn)
    if delta <= 0:
        raise LossValueError(f"{fn}: delta must be positive, got {delta}")
    floating(_t(input), fn)  # PyTorch casts the loss to the input's dtype: no integer one
    x, y = float_pair(input, _in_input_dtype(input, target), fn)
    d = x - y
    z = _abs(d)
    small = z < delta
    dq = where(small, d, 0.0)  # of d, not |d|: second derivative 1 at d = 0 (as smooth_l1)
    loss = where(small, 0.5 * dq * dq, delta * (z - 0.5 * delta))
    if weight is not None:
        return _weighted(loss, weight, x, reduction, fn, by_weight=False)
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """KL divergence with `input` log-probabilities: target (log target - input), 0 where the
    target is 0. 'batchmean' divides the sum by the batch size (the true KL mean); 'mean'
    is over every element, as in PyTorch (which warns about it; so do we)."""
    fn = "kl_div"
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("kl_div: reduction='mean' divides the total loss by both the batch size "
                      "and the support size; 'batchmean' divides only by the batch size, as "
                      "the KL divergence's definition does", stacklevel=2)
    check_reduction(reduction, fn, ("batchmean",))
    x, t = _t(input), _t(target)
    floating(x, fn, "input")
    floating(t, fn, "target")
    broadcast_shape(fn, input=x, target=t)
    x, t = promote(x, t)
    loss = exp(t) * (t - x) if log_target else xlogy(t, t) - t * x
    if reduction == "batchmean":
        total = sum(loss)
        return total / x.shape[0] if x.ndim else total
    return _reduce(loss, reduction)


_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) with
    `full`). `var` is a tensor of the input's shape, or one dimension short of it, or with
    one dimension of size 1 (homoscedastic), or a number. The clamp at `eps` lets the
    gradient through unchanged, as PyTorch's (done in place without grad) does."""
    fn = "gaussian_nll_loss"
    x = _t(input)
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ArgumentError(f"{fn}: var has negative entry/entries ({var})")
        v = creation.full_like(x, float(var))
        one = None
    else:
        v = _t(var)
        message = f"{fn}: var has negative entry/entries"
        if state.tracer is None:
            vals = every_value(v)
            if vals.size and bool((vals < 0).any()):
                raise ArgumentError(message)
        one = apply(check_within, v.detach(), lo=0.0, hi=math.inf, open_lo=False,
                    message=message)
        if v.shape != x.shape:
            if x.shape[:-1] == v.shape:
                v = unsqueeze(v, -1)
            elif not (x.ndim == v.ndim and builtins.sum(
                    b for a, b in zip(x.shape, v.shape) if a != b) == 1):
                raise ArgumentError(f"{fn}: var of shape {tuple(v.shape)} is of incorrect size "
                                    f"for input of shape {tuple(x.shape)} (the input's shape, "
                                    f"one dimension short of it, or one dimension of size 1)")
    check_reduction(reduction, fn)
    broadcast_shape(fn, input=x, target=_t(target), var=v)
    vd = v.detach()
    v = where(vd < eps, v - vd + eps, v)  # clamped, with the gradient let through
    d = x - _t(target)
    loss = 0.5 * (log(v) + d * d / v)
    if full:
        loss = loss + _HALF_LOG_2PI
    loss = _reduce(loss, reduction)
    return loss if one is None else loss * one


def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of `target` counts under Poisson(rate): exp(input) - target *
    input with `log_input` (input is the log rate), else input - target * log(input + eps);
    `full` adds Stirling's approximation of log(target!) where target > 1."""
    fn = "poisson_nll_loss"
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction), fn)
    x, t = _t(input), _t(target)
    broadcast_shape(fn, input=x, target=t)
    x, t = promote(x, t, floating=True)
    loss = exp(x) - t * x if log_input else x - t * log(x + eps)
    if full:
        big = t > 1
        ts = where(big, t, 2.0)  # the term is 0 elsewhere: no log(0) in its gradient
        stirling = ts * log(ts) - ts + 0.5 * log(2 * math.pi * ts)
        loss = loss + where(big, stirling, 0.0)
    return _reduce(loss, reduction)


def one_hot(input, num_classes: int = -1) -> Tensor:
    """(..., num_classes) int64 with a 1 at each class index; num_classes=-1: max + 1."""
    y = _t(input)
    if y.dtype != np.int64:
        raise ArgumentTypeError(f"one_hot is only applicable to index tensor of type LongTensor "
                                f"(int64), got {y.dtype}; convert it with .long()")
    d = every_value(y)  # checked here (inside rg.jit: for the traced call's labels)
    if d.size and d.min() < 0:
        raise ArgumentError("one_hot: class values must be non-negative")
    if num_classes == -1:
        d = values_of(y, "one_hot() with num_classes=-1 (the class count is the largest "
                      "label + 1)", "pass num_classes")
        if not d.size:
            raise ArgumentError("one_hot: can not infer the total number of classes from an empty "
                                "tensor; pass num_classes")
        num_classes = int(d.max()) + 1
    elif num_classes < 1 or (d.size and d.max() >= num_classes):
        raise ArgumentError(f"one_hot: class values must be smaller than num_classes="
                            f"{num_classes} (largest is {int(d.max()) if d.size else None})")
    return apply(ops.one_hot, y, classes=int(num_classes), dtype=np.dtype(np.int64))
