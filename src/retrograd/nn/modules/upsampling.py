"""PyTorch's `torch.nn.modules.upsampling` path: its layers, re-exported from retrograd.nn."""

from ..upsampling import (  # noqa: F401
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)

__all__ = [
    "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d",
]
