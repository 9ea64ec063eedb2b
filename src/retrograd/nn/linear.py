"""Dense layers: `Linear` (y = x @ W.T + b) and `Identity`."""

from __future__ import annotations

from .. import ops
from ..engine import apply
from ..tensor import Tensor
from . import functional as F
from . import init
from ._utils import _weight_and_bias
from .module import Module

__all__ = ["Identity", "Linear"]


class Identity(Module):
    """Returns its input unchanged (a placeholder layer). Like `torch.nn.Identity`."""
    def forward(self, x):
        return x


class Linear(Module):
    """y = x @ weight.T + bias; weight (out_features, in_features), PyTorch's initialisation."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype=None) -> None:
        super().__init__()
        if in_features < 0 or out_features < 0:
            raise ValueError(f"Linear: feature sizes must be non-negative, got "
                             f"({in_features}, {out_features})")
        self.in_features, self.out_features = in_features, out_features
        _weight_and_bias(self, (out_features, in_features), bias, dtype)

    def reset_parameters(self) -> None:
        init._default_layer_init(self.weight, self.bias)

    def forward(self, x):
        b = self.bias
        if x.__class__ is Tensor and x.data.ndim and x.data.shape[-1] == self.in_features \
                and self.weight.data.shape == (self.out_features, self.in_features) \
                and (b is None or b.data.shape == (self.out_features,)):
            return apply(ops.linear, x, self.weight, b)  # checked: skip F.linear's checks
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")
