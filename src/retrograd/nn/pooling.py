"""Pooling layers: max, average, power-average (LP), unpooling and adaptive pools over 1-3
spatial dims."""

from __future__ import annotations

from ..primitive import ArgumentError
from . import functional as F
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]


class _MaxPool(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPool):
    """Max pooling over 1 spatial dimension(s) (`kernel_size`, `stride`, `padding`,
    `dilation`, `return_indices`, `ceil_mode`). Like `torch.nn.MaxPool1d`."""
    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPool):
    """Max pooling over 2 spatial dimension(s) (`kernel_size`, `stride`, `padding`,
    `dilation`, `return_indices`, `ceil_mode`). Like `torch.nn.MaxPool2d`."""
    _fn = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPool):
    """Max pooling over 3 spatial dimension(s) (`kernel_size`, `stride`, `padding`,
    `dilation`, `return_indices`, `ceil_mode`). Like `torch.nn.MaxPool3d`."""
    _fn = staticmethod(F.max_pool3d)


class _AvgPool(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        extra = () if self.divisor_override is None else (self.divisor_override,)
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad, *extra)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPool):
    """Average pooling over 1 spatial dimension(s) (`kernel_size`, `stride`,
    `padding`, `ceil_mode`, `count_include_pad`). Like `torch.nn.AvgPool1d`."""
    _fn = staticmethod(F.avg_pool1d)

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        # PyTorch keeps these as 1-tuples here (`m.kernel_size[0]`), unlike MaxPool1d
        self.kernel_size, self.stride, self.padding = (
            v if isinstance(v, tuple) else tuple(v) if isinstance(v, list) else (v,)
            for v in (self.kernel_size, self.stride, self.padding))


class AvgPool2d(_AvgPool):
    """Average pooling over 2 spatial dimension(s) (`kernel_size`, `stride`,
    `padding`, `ceil_mode`, `count_include_pad`). Like `torch.nn.AvgPool2d`."""
    _fn = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPool):
    """Average pooling over 3 spatial dimension(s) (`kernel_size`, `stride`,
    `padding`, `ceil_mode`, `count_include_pad`). Like `torch.nn.AvgPool3d`."""
    _fn = staticmethod(F.avg_pool3d)


class _MaxUnpool(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, input, indices, output_size=None):
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    """The inverse of `MaxPool1d` given its indices: each value back where its
    maximum was, zeros elsewhere. Like `torch.nn.MaxUnpool1d`."""
    _fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpool):
    """The inverse of `MaxPool2d` given its indices: each value back where its
    maximum was, zeros elsewhere. Like `torch.nn.MaxUnpool2d`."""
    _fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpool):
    """The inverse of `MaxPool3d` given its indices: each value back where its
    maximum was, zeros elsewhere. Like `torch.nn.MaxUnpool3d`."""
    _fn = staticmethod(F.max_unpool3d)


class _Adaptive(Module):
    _fn = None

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return type(self)._fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """Average pooling to a fixed `output_size`, whatever the input size.
    Like `torch.nn.AdaptiveAvgPool1d`."""
    _fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_Adaptive):
    """Average pooling to a fixed `output_size`, whatever the input size.
    Like `torch.nn.AdaptiveAvgPool2d`."""
    _fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_Adaptive):
    """Average pooling to a fixed `output_size`, whatever the input size.
    Like `torch.nn.AdaptiveAvgPool3d`."""
    _fn = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMax(_Adaptive):
    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return type(self)._fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMax):
    """Max pooling to a fixed `output_size` (optionally with indices).
    Like `torch.nn.AdaptiveMaxPool1d`."""
    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMax):
    """Max pooling to a fixed `output_size` (optionally with indices).
    Like `torch.nn.AdaptiveMaxPool2d`."""
    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMax):
    """Max pooling to a fixed `output_size` (optionally with indices).
    Like `torch.nn.AdaptiveMaxPool3d`."""
    _fn = staticmethod(F.adaptive_max_pool3d)


class _LPPool(Module):
    _fn = None

    def __init__(self, norm_type: float, kernel_size, stride=None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride,
                              self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPool):
    """Power-average pooling over (N, C, L): (sum of x^p over each window)^(1/p).
    Like `torch.nn.LPPool1d`."""
    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPool):
    """Power-average pooling over (N, C, H, W). Like `torch.nn.LPPool2d`."""
    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPool):
    """Power-average pooling over (N, C, D, H, W). Like `torch.nn.LPPool3d`."""
    _fn = staticmethod(F.lp_pool3d)


class _FractionalMaxPool(Module):
    _fn = None
    _nd = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None) -> None:
        super().__init__()
        name, nd = type(self).__name__, self._nd

        def tup(v):
            return None if v is None else tuple(v) if isinstance(v, (tuple, list)) \
                else (v,) * nd
        self.kernel_size, self.return_indices = tup(kernel_size), return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size, self.output_ratio = tup(output_size), tup(output_ratio)
        if output_size is None and output_ratio is None:
            raise ArgumentError(f"{name} requires specifying either an output size, or a pooling "
                                "ratio")
        if output_size is not None and output_ratio is not None:
            raise ArgumentError(f"{name}: only one of output_size and output_ratio may be "
                                "specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ArgumentError(f"{name}: output_ratio must be between 0 and 1 (got "
                                f"{output_ratio})")

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.output_size, self.output_ratio,
                              self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPool):
    """Max pooling of (N, C, H, W) over pseudo-random overlapping windows to `output_size`
    (or `output_ratio` of the input); the windows are drawn anew at each call unless
    `_random_samples` is given. Like `torch.nn.FractionalMaxPool2d`."""
    _fn = staticmethod(F.fractional_max_pool2d)
    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPool):
    """Fractional max pooling of (N, C, D, H, W). Like `torch.nn.FractionalMaxPool3d`."""
    _fn = staticmethod(F.fractional_max_pool3d)
    _nd = 3
