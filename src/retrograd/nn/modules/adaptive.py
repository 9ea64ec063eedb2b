"""PyTorch's `torch.nn.modules.adaptive` path: its layers, re-exported from retrograd.nn."""

from ..adaptive import (  # noqa: F401
    AdaptiveLogSoftmaxWithLoss,
)

__all__ = [
    "AdaptiveLogSoftmaxWithLoss",
]
