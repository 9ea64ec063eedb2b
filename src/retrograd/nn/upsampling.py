"""Resampling layers: `Upsample`, `PixelShuffle`, `PixelUnshuffle`."""

from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["Upsample", "PixelShuffle", "PixelUnshuffle"]


class Upsample(Module):
    """`F.interpolate` as a layer."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                 recompute_scale_factor=None) -> None:
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, x):
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self) -> str:
        what = f"scale_factor={self.scale_factor}" if self.size is None else f"size={self.size}"
        return f"{what}, mode={self.mode!r}"


class PixelShuffle(Module):
    """Rearrange (N, C*r*r, H, W) into (N, C, H*r, W*r), for sub-pixel upsampling.
    Like `torch.nn.PixelShuffle`."""
    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, x):
        return F.pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """The inverse of `PixelShuffle`: (N, C, H*r, W*r) into (N, C*r*r, H, W).
    Like `torch.nn.PixelUnshuffle`."""
    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, x):
        return F.pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
