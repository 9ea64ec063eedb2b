"""Convolution layers: `Conv1d`, `Conv2d`, `Conv3d`, `ConvTranspose1d/2d/3d`, with
PyTorch's arguments, weight layouts and initialisation."""

from __future__ import annotations

import numpy as np

from ..primitive import ArgumentError
from . import functional as F
from . import init
from ._utils import _dtype
from .module import Module, Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(v, nd: int, name: str, layer: str) -> tuple:
    if isinstance(v, (int, np.integer)):
        return (int(v),) * nd
    t = tuple(int(a) for a in v)
    if len(t) != nd:
        raise ArgumentError(f"{layer}: {name} must be an int or a tuple of {nd} ints, got {v!r}")
    return t


class _ConvNd(Module):
    """What every convolution layer shares: arguments checked once, weight and bias."""

    _nd = 2
    _transposed = False

    @property
    def transposed(self) -> bool:
        """Whether this is a transposed convolution (PyTorch's attribute)."""
        return self._transposed

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 output_padding=0, dtype=None) -> None:
        super().__init__()
        name, nd = type(self).__name__, self._nd
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ArgumentError(f"{name}: in_channels ({in_channels}) and out_channels "
                                f"({out_channels}) must be divisible by groups ({groups})")
        if padding_mode not in _PADDING_MODES:
            raise ArgumentError(f"{name}: padding_mode must be one of {', '.join(_PADDING_MODES)}, "
                                f"got {padding_mode!r}")
        if self._transposed and padding_mode != "zeros":
            raise ArgumentError(f"{name}: only padding_mode='zeros' is supported, got "
                                f"{padding_mode!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(kernel_size, nd, "kernel_size", name)
        self.stride = _ntuple(stride, nd, "stride", name)
        self.dilation = _ntuple(dilation, nd, "dilation", name)
        self.output_padding = _ntuple(output_padding, nd, "output_padding", name)
        if isinstance(padding, str):
            if padding not in ("same", "valid") or self._transposed:
                raise ArgumentError(f"{name}: padding must be an int, a tuple of ints"
                                    f"{'' if self._transposed else ', valid or same'}, got "
                                    f"{padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ArgumentError(f"{name}: padding='same' is not supported for strided "
                                    f"convolutions")
            self.padding = padding
        else:
            self.padding = _ntuple(padding, nd, "padding", name)
        self.groups = groups
        self.padding_mode = padding_mode
        if padding == "same":
            total = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            widths = [(t // 2, t - t // 2) for t in total]
        elif padding == "valid":
            widths = [(0, 0)] * nd
        else:
            widths = [(p, p) for p in self.padding]
        self._reversed_padding = [a for w in reversed(widths) for a in w]
        shape = (in_channels, out_channels // groups) if self._transposed else \
            (out_channels, in_channels // groups)
        dt = _dtype(dtype)
        self.weight = Parameter(np.empty(shape + self.kernel_size, dtype=dt))
        if bias:
            self.bias = Parameter(np.empty(out_channels, dtype=dt))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init._default_layer_init(self.weight, self.bias)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self._nd:
            s += f", padding={self.padding}"  # 'same' unquoted, as PyTorch prints it
        if self.dilation != (1,) * self._nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _conv = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, 0, dtype)

    def forward(self, input):
        conv = type(self)._conv
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding, mode=self.padding_mode)
            return conv(input, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                    self.groups)


class Conv1d(_Conv):
    """1-D convolution over (N, C, L); weight (out, in/groups, k)."""

    _nd = 1
    _conv = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C, H, W); weight (out, in/groups, kh, kw) as in PyTorch."""

    _nd = 2
    _conv = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over (N, C, D, H, W); weight (out, in/groups, kd, kh, kw)."""

    _nd = 3
    _conv = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    _transposed = True
    _conv = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, output_padding, dtype)

    def _output_padding(self, x, output_size) -> tuple:
        """The output_padding that makes the output `output_size` (PyTorch's rule)."""
        if output_size is None:
            return self.output_padding
        nd = self._nd
        size = tuple(int(a) for a in output_size)
        if len(size) == nd + 2 or (len(size) == nd + 1 and x.ndim == nd + 1):
            size = size[-nd:]
        if len(size) != nd:
            raise ArgumentError(f"{type(self).__name__}: output_size must have {nd} or {nd + 2} "
                                f"elements, got {output_size}")
        pads = []
        for i in range(nd):
            least = ((x.shape[-nd + i] - 1) * self.stride[i] - 2 * self.padding[i]
                     + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            if not least <= size[i] < least + self.stride[i]:
                raise ArgumentError(f"{type(self).__name__}: requested output size {size} is not "
                                    f"reachable from input of shape {x.shape}: dimension {i} must "
                                    f"be in [{least}, {least + self.stride[i] - 1}]")
            pads.append(size[i] - least)
        return tuple(pads)

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return type(self)._conv(input, self.weight, self.bias, self.stride, self.padding,
                                output_padding, self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-D convolution; weight (in, out/groups, k)."""

    _nd = 1
    _conv = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-D convolution; weight (in, out/groups, kh, kw)."""

    _nd = 2
    _conv = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-D convolution; weight (in, out/groups, kd, kh, kw)."""

    _nd = 3
    _conv = staticmethod(F.conv_transpose3d)
