"""PyTorch's `torch.nn.modules.pixelshuffle` path: its layers, re-exported from retrograd.nn."""

from ..upsampling import (  # noqa: F401
    PixelShuffle,
    PixelUnshuffle,
)

__all__ = [
    "PixelShuffle", "PixelUnshuffle",
]
