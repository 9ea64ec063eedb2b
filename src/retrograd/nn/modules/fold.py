"""PyTorch's `torch.nn.modules.fold` path: its layers, re-exported from retrograd.nn."""

from ..fold import (  # noqa: F401
    Fold,
    Unfold,
)

__all__ = [
    "Fold", "Unfold",
]
