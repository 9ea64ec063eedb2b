"""Sliding-block layers: `Unfold` (im2col: the blocks of an image as columns) and `Fold`
(col2im, its adjoint: columns summed back into an image), with PyTorch's arguments."""

from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["Fold", "Unfold"]


class Unfold(Module):
    """The sliding `kernel_size` blocks of (N, C, H, W) as columns (N, C*kh*kw, L)
    (`F.unfold`). Like `torch.nn.Unfold`."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """Columns (N, C*kh*kw, L) summed back into an (N, C, *output_size) image (`F.fold`,
    overlapping blocks add up). Like `torch.nn.Fold`."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")
