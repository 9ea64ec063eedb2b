"""Loss modules: `MSELoss`, `CrossEntropyLoss`, `NLLLoss`, `BCEWithLogitsLoss`."""

from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["MSELoss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss"]


class MSELoss(Module):
    """Mean squared error between input and target (`reduction`: mean, sum or none).
    Like `torch.nn.MSELoss`: `rg.nn.MSELoss()(pred, target)`."""
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)


class CrossEntropyLoss(Module):
    """Cross-entropy of logits (N, C, ...) against class indices or probabilities,
    with `weight`, `ignore_index`, `reduction`, `label_smoothing`. Like
    `torch.nn.CrossEntropyLoss`: `rg.nn.CrossEntropyLoss()(logits, labels)`."""
    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__()
        self.weight, self.ignore_index = weight, ignore_index
        self.reduction, self.label_smoothing = reduction, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction,
                               self.label_smoothing)


class NLLLoss(Module):
    """Negative log-likelihood of log-probabilities against class indices (`weight`,
    `ignore_index`, `reduction`). Like `torch.nn.NLLLoss`."""
    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__()
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class BCEWithLogitsLoss(Module):
    """Binary cross-entropy of logits against 0/1 targets, computed stably (`weight`,
    `pos_weight`, `reduction`). Like `torch.nn.BCEWithLogitsLoss`."""
    def __init__(self, weight=None, reduction: str = "mean", pos_weight=None) -> None:
        super().__init__()
        self.weight, self.reduction, self.pos_weight = weight, reduction, pos_weight

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction,
                                                  self.pos_weight)
