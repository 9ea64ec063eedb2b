"""PyTorch's `torch.nn.modules.normalization` path: its layers, re-exported from retrograd.nn."""

from ..normalization import (  # noqa: F401
    CrossMapLRN2d,
    GroupNorm,
    LayerNorm,
    LocalResponseNorm,
    RMSNorm,
)

__all__ = [
    "CrossMapLRN2d", "GroupNorm", "LayerNorm", "LocalResponseNorm", "RMSNorm",
]
