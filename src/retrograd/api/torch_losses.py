"""The losses that `torch` itself has (`torch.kl_div`, `torch.ctc_loss`, ...), as
`rg.kl_div`, `rg.ctc_loss`, ...: ATen's signatures, where `reduction` is an integer
(0 'none', 1 'mean', 2 'sum'; the names are accepted too) and the deprecated
`size_average`/`reduce` do not exist.

PyTorch 2.13's Python bindings of these functions give 'none' when `reduction` is
not passed (their schema says 'mean'); so do these, so that ported code gives the
same numbers. The checks `torch.nn.functional` adds on top (a positive triplet
margin, one number of dimensions for margin ranking) are not made here, as in
`torch`.
"""

from __future__ import annotations

import numpy as np

from ..primitive import ArgumentError
from ..tensor import Tensor
from . import ctc as _ctc
from . import losses as _losses
from . import margin_losses as _margins
from ._args import _t
from ._loss_args import LossShapeError, broadcast_shape, check_reduction, floating
from ._loss_args import reduce as _reduce
from .activations import logsigmoid

__all__ = ["binary_cross_entropy_with_logits", "cosine_embedding_loss", "ctc_loss",
           "hinge_embedding_loss", "kl_div", "margin_ranking_loss", "poisson_nll_loss",
           "triplet_margin_loss"]

_NAMES = {0: "none", 1: "mean", 2: "sum"}


class LossTargetDtypeError(TypeError, RuntimeError):
    """A target of the wrong dtype (PyTorch raises RuntimeError): integer labels for
    binary_cross_entropy_with_logits, float ones where class indices are expected."""


def _reduction(reduction, fn: str) -> str:
    """ATen's reduction enum (or its name) as a name."""
    if isinstance(reduction, str):
        return check_reduction(reduction, fn)
    if isinstance(reduction, (int, np.integer)) and not isinstance(reduction, bool) \
            and int(reduction) in _NAMES:
        return _NAMES[int(reduction)]
    raise ArgumentError(f"{fn}: reduction must be 0 ('none'), 1 ('mean') or 2 ('sum'), got "
                        f"{reduction!r}")


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                     reduction: int = 0) -> Tensor:
    """(1 - t) x - (1 + (pos_weight - 1) t) log sigmoid(x), times `weight`: binary
    cross-entropy of logits, computed stably. Target, weight and pos_weight broadcast to
    the input's shape. Like `torch.binary_cross_entropy_with_logits`."""
    fn = "binary_cross_entropy_with_logits"
    reduction = _reduction(reduction, fn)
    x, t = _t(input), _t(target)
    named = {"input": x, "target": t}
    if weight is not None:
        named["weight"] = _t(weight)
    if pos_weight is not None:
        named["pos_weight"] = _t(pos_weight)
    if broadcast_shape(fn, **named) != x.shape:
        shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in named.items())
        raise LossShapeError(f"{fn}: {shapes}: each must broadcast to the input's shape")
    floating(x, fn)  # first, as PyTorch: "log_sigmoid" not implemented for 'Long'
    if t.dtype.kind != "f":
        raise LossTargetDtypeError(f"{fn}: target must be a floating tensor (0/1 labels or "
                                   f"probabilities), got {t.dtype}; convert it with .float()")
    # PyTorch builds the loss in place on (1 - target): the result has the target's
    # dtype (a float32 target of a float64 input gives a float32 loss), each step
    # rounded to it, and weight and pos_weight never widen it
    out = t.dtype
    log_sig = logsigmoid(x)
    if pos_weight is not None:
        log_sig = (log_sig * ((_t(pos_weight) - 1) * t + 1)).to(x.dtype)
    loss = (((1 - t) * x).to(out) - log_sig).to(out)
    if weight is not None:
        loss = (loss * _t(weight)).to(out)
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0,
                          reduction: int = 0) -> Tensor:
    """Like `torch.cosine_embedding_loss`; see `rg.nn.functional.cosine_embedding_loss`."""
    fn = "cosine_embedding_loss"
    return _margins.cosine_embedding_loss(input1, input2, target, margin,
                                          reduction=_reduction(reduction, fn))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0,
             reduction: int = 0, zero_infinity: bool = False) -> Tensor:
    """Like `torch.ctc_loss`; see `rg.nn.functional.ctc_loss`."""
    return _ctc.ctc(log_probs, targets, input_lengths, target_lengths, blank,
                    _reduction(reduction, "ctc_loss"), zero_infinity)


def hinge_embedding_loss(input, target, margin: float = 1.0, reduction: int = 0) -> Tensor:
    """Like `torch.hinge_embedding_loss`; see `rg.nn.functional.hinge_embedding_loss`."""
    return _margins.hinge_embedding_loss(
        input, target, margin, reduction=_reduction(reduction, "hinge_embedding_loss"))


def kl_div(input, target, reduction: int = 0, *, log_target: bool = False) -> Tensor:
    """Like `torch.kl_div` (no 'batchmean': divide the 'sum' by the batch size); see
    `rg.nn.functional.kl_div`."""
    name = _reduction(reduction, "kl_div")
    if name == "mean":  # the functional form would warn about 'mean'; torch.kl_div does not
        return _losses.kl_div(input, target, reduction="none", log_target=log_target).mean()
    return _losses.kl_div(input, target, reduction=name, log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin: float = 0.0,
                        reduction: int = 0) -> Tensor:
    """Like `torch.margin_ranking_loss`; see `rg.nn.functional.margin_ranking_loss`."""
    fn = "margin_ranking_loss"
    return _margins.margin_ranking(_t(input1), _t(input2), _t(target), margin,
                                   _reduction(reduction, fn), fn)


def poisson_nll_loss(input, target, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    """Like `torch.poisson_nll_loss` (every argument required, as there); see
    `rg.nn.functional.poisson_nll_loss`."""
    return _losses.poisson_nll_loss(input, target, log_input, full, eps=eps,
                                    reduction=_reduction(reduction, "poisson_nll_loss"))


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, reduction: int = 0) -> Tensor:
    """Like `torch.triplet_margin_loss` (any margin); see
    `rg.nn.functional.triplet_margin_loss`."""
    fn = "triplet_margin_loss"
    return _margins.triplet(anchor, positive, negative, margin, p, eps, swap,
                            _reduction(reduction, fn), fn)
