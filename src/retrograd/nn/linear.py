"""Dense layers: `Linear` (y = x @ W.T + b), `Bilinear` (y = x1 W x2 + b) and `Identity`."""

from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..engine import apply
from ..grad_mode import state
from ..primitive import ArgumentError
from ..tensor import Tensor
from . import functional as F
from . import init
from ._utils import _dtype, _weight_and_bias
from .module import Module, Parameter

__all__ = ["Identity", "Linear", "Bilinear", "NonDynamicallyQuantizableLinear"]


class Identity(Module):
    """Returns its input unchanged (a placeholder layer; any constructor arguments are
    ignored). Like `torch.nn.Identity`."""
    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x @ weight.T + bias; weight (out_features, in_features), PyTorch's initialisation."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        if in_features < 0 or out_features < 0:
            raise ArgumentError(f"Linear: feature sizes must be non-negative, got "
                                f"({in_features}, {out_features})")
        self.in_features, self.out_features = in_features, out_features
        _weight_and_bias(self, (out_features, in_features), bias, dtype)

    def reset_parameters(self) -> None:
        init._default_layer_init(self.weight, self.bias)

    def forward(self, input):
        w, b = self.weight, self.bias  # read once: a parametrization runs at each read
        if input.__class__ is Tensor and input.data.ndim \
                and input.data.shape[-1] == self.in_features \
                and input.data.dtype == w.data.dtype \
                and w.data.shape == (self.out_features, self.in_features) \
                and (b is None or b.data.shape == (self.out_features,)) \
                and state.flops is None:  # (a FlopCounterMode counts F.linear)
            return apply(ops.linear, input, w, b)  # checked: skip F.linear's checks
        return F.linear(input, w, b)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")



class NonDynamicallyQuantizableLinear(Linear):
    """A Linear layer under PyTorch's name for attention's output projection (its
    `MultiheadAttention.out_proj`, so printed models read the same)."""


class Bilinear(Module):
    """y = x1^T W x2 + b for x1 (*, in1_features), x2 (*, in2_features): weight
    (out_features, in1_features, in2_features), bias (out_features,), both uniform in
    +-1/sqrt(in1_features) as PyTorch initialises them. Like `torch.nn.Bilinear`."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        dt = _dtype(dtype)
        self.weight = Parameter(np.empty((out_features, in1_features, in2_features), dtype=dt))
        if bias:
            self.bias = Parameter(np.empty(out_features, dtype=dt))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.in1_features <= 0:
            raise ArgumentError(f"Bilinear: in1_features must be > 0, but got "
                                f"(in1_features={self.in1_features})")
        bound = 1 / math.sqrt(self.in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
