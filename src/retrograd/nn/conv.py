"""Convolution layers: `Conv2d`."""

from __future__ import annotations

from . import functional as F
from . import init
from ._utils import _pair, _weight_and_bias
from .module import Module

__all__ = ["Conv2d"]


class Conv2d(Module):
    """2-D convolution over (N, C, H, W); weight (out, in/groups, kh, kw) as in PyTorch."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 dtype=None) -> None:
        super().__init__()
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2d: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups})")
        if padding_mode != "zeros":
            raise ValueError(f"Conv2d: only padding_mode='zeros' is supported, got "
                             f"{padding_mode!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.stride = _pair(stride, "stride")
        self.dilation = _pair(dilation, "dilation")
        if isinstance(padding, str):
            if padding == "valid":
                padding = 0
            elif padding == "same":
                if self.stride != (1, 1):
                    raise ValueError("Conv2d: padding='same' needs stride 1")
                total = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
                if any(t % 2 for t in total):
                    raise ValueError("Conv2d: padding='same' with an even effective kernel size "
                                     "needs asymmetric padding, which is not supported")
                padding = (total[0] // 2, total[1] // 2)
            else:
                raise ValueError(f"Conv2d: padding must be an int, a pair, 'valid' or 'same', "
                                 f"got {padding!r}")
        self.padding = _pair(padding, "padding")
        self.groups = groups
        _weight_and_bias(self, (out_channels, in_channels // groups) + self.kernel_size, bias,
                         dtype)

    def reset_parameters(self) -> None:
        init._default_layer_init(self.weight, self.bias)

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s
