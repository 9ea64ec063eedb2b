"""Loss modules, torch.nn's: each holds its options (and a `weight` buffer where PyTorch
has one) and calls its `functional` twin. Constructor arguments have PyTorch's names,
order and defaults, the deprecated `size_average`/`reduce` included (honoured as
PyTorch does, with its warning; a string there is refused, since PyTorch would
silently read `MSELoss('sum')` as size_average=True, i.e. 'mean')."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..api._loss_args import LossShapeError, LossValueError, legacy_reduction
from ..primitive import ArgumentError
from . import functional as F
from .linear import Linear
from .module import Module

__all__ = [
    "L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "NLLLoss2d", "BCELoss",
    "BCEWithLogitsLoss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "GaussianNLLLoss",
    "PoissonNLLLoss", "HingeEmbeddingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
    "CosineEmbeddingLoss", "MarginRankingLoss", "MultiMarginLoss", "MultiLabelMarginLoss",
    "TripletMarginLoss", "TripletMarginWithDistanceLoss", "CTCLoss", "LinearCrossEntropyLoss",
]


class _Loss(Module):
    """Holds `reduction` ('none', 'mean' or 'sum'; checked when called, as in PyTorch)."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = legacy_reduction(size_average, reduce, reduction)

    def extra_repr(self) -> str:  # torch's losses print no arguments: MSELoss()
        return ""


class _WeightedLoss(_Loss):
    """A loss with a per-class `weight`, kept as a buffer (it follows `.to()` and is saved
    in the state_dict)."""

    def __init__(self, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


# ---------------------------------------------------------------- regression

class L1Loss(_Loss):
    """Mean absolute error |input - target|. Like `torch.nn.L1Loss`."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error between input and target (`reduction`: mean, sum or none).
    Like `torch.nn.MSELoss`: `rg.nn.MSELoss()(pred, target)`."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error below `beta`, absolute error above (continuous at beta). Like
    `torch.nn.SmoothL1Loss`."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared error below `delta`, delta times the absolute error above. Like
    `torch.nn.HuberLoss`."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        if isinstance(delta, bool) or not isinstance(delta, (float, int)):
            raise TypeError(f"HuberLoss: delta must be a float or int, got {type(delta)}")
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


# ---------------------------------------------------------------- likelihoods

class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities against class indices (`weight`,
    `ignore_index`, `reduction`). Like `torch.nn.NLLLoss`."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """`NLLLoss` under its old name for (N, C, H, W) inputs (torch.nn keeps it too)."""


class CrossEntropyLoss(_WeightedLoss):
    """Cross-entropy of logits (N, C, ...) against class indices or probabilities,
    with `weight`, `ignore_index`, `reduction`, `label_smoothing`. Like
    `torch.nn.CrossEntropyLoss`: `rg.nn.CrossEntropyLoss()(logits, labels)`."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities in [0, 1] against targets in [0, 1] (each log
    clamped at -100). Like `torch.nn.BCELoss`."""

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of logits against 0/1 targets, computed stably (`weight`,
    `pos_weight`, `reduction`). Like `torch.nn.BCEWithLogitsLoss`."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """KL divergence of log-probabilities `input` from `target` (`log_target`: target in
    log space too; reduction 'batchmean' is the true KL). Like `torch.nn.KLDivLoss`."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of `target` under N(input, var); called as
    `loss(input, target, var)`. Like `torch.nn.GaussianNLLLoss`."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6,
                 reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of counts `target` under Poisson(exp(input)) (or
    Poisson(input) with log_input=False). Like `torch.nn.PoissonNLLLoss`."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None,
                 eps: float = 1e-8, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist Temporal Classification; called as
    `loss(log_probs, targets, input_lengths, target_lengths)`. Like `torch.nn.CTCLoss`."""

    def __init__(self, blank: int = 0, reduction: str = "mean",
                 zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


# ---------------------------------------------------------------- margins and embeddings

class HingeEmbeddingLoss(_Loss):
    """x where the target is 1, max(0, margin - x) where it is -1. Like
    `torch.nn.HingeEmbeddingLoss`."""

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-target * input)) for targets of -1 and 1. Like
    `torch.nn.SoftMarginLoss`."""

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per sample, the mean over classes of the binary cross-entropy of logits against
    0/1 targets. Like `torch.nn.MultiLabelSoftMarginLoss`."""

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for -1. Like
    `torch.nn.CosineEmbeddingLoss`."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """max(0, -target (x1 - x2) + margin). Like `torch.nn.MarginRankingLoss`."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss (p 1 or 2, `margin`, per-class `weight`). Like
    `torch.nn.MultiMarginLoss`."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None,
                 reduce=None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ArgumentError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got {p}")
        if weight is not None and weight.ndim != 1:
            raise ArgumentError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                                f"{weight.ndim}D instead")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss; the target lists each sample's classes, ended by -1. Like
    `torch.nn.MultiLabelMarginLoss`."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with the p-norm distance.
    Like `torch.nn.TripletMarginLoss`."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ArgumentError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                                f"{margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """`TripletMarginLoss` with any `distance_function(x1, x2)` (default: the Euclidean
    pairwise distance). Like `torch.nn.TripletMarginWithDistanceLoss`."""

    def __init__(self, *, distance_function: Callable | None = None, margin: float = 1.0,
                 swap: bool = False, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        if margin <= 0:
            raise ArgumentError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                                f"than 0, got {margin} instead")
        self.distance_function = distance_function
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


# ---------------------------------------------------------------- a layer and its loss

class LinearCrossEntropyLoss(_WeightedLoss):
    """A Linear layer (in_features -> num_classes x out_features, no bias by default) and the
    cross-entropy of its logits, as one module. Like `torch.nn.LinearCrossEntropyLoss`;
    `options` (PyTorch's chunking, which saves memory and gives the same values) is kept
    but the whole batch is computed at once."""

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple = (),
                 bias: bool = False, device=None, dtype=None, reduction: str = "mean",
                 weight=None, ignore_index: int | None = None, label_smoothing: float = 0.0,
                 options=None) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise LossShapeError(f"LinearCrossEntropyLoss: expected weight shape "
                                 f"{(num_classes,)}, got {tuple(weight.shape)}")
        if not 0.0 <= label_smoothing <= 1.0:
            raise LossValueError(f"LinearCrossEntropyLoss: expected label_smoothing to be in "
                                 f"range [0, 1], got {label_smoothing}")
        super().__init__(weight, None, None, reduction)
        self.num_classes, self.out_features = num_classes, tuple(out_features)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes),
                             bias=bias, dtype=dtype)
        if device is not None:
            self.linear.to(device)
        self.options = options

    def forward(self, input, target):
        w = self.linear.weight.reshape(self.num_classes, *self.out_features,
                                       self.linear.in_features)
        b = None if self.linear.bias is None else self.linear.bias.reshape(
            self.num_classes, *self.out_features)
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
