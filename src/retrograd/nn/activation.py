"""Activation modules: `ReLU`, `Tanh`, `Sigmoid`, `Softmax`, `LogSoftmax`, and the rest of
`torch.nn`'s (`GELU`, `SiLU`, `ELU`, `Hardtanh`, `PReLU`, `RReLU`, ...), each a thin call
into `functional`. `PReLU` is the one with a parameter (its slopes, `weight`)."""

from __future__ import annotations

import numpy as np

from .. import ops
from ..api.activations import _implicit_dim
from ..engine import apply1
from ..grad_mode import no_grad
from ..primitive import ArgumentError
from ..tensor import Tensor
from . import functional as F
from ._utils import _dtype
from .module import Module, Parameter

__all__ = [
    "ReLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "GELU", "SiLU", "Mish", "Softplus",
    "ELU", "CELU", "SELU", "LeakyReLU", "ReLU6", "Hardtanh", "Hardswish", "Hardsigmoid",
    "Softsign", "LogSigmoid", "Softmin", "GLU", "Tanhshrink", "Threshold", "PReLU", "RReLU",
    "Hardshrink", "Softshrink", "Softmax2d",
]


class ReLU(Module):
    """Applies `F.relu` (`retrograd.nn.functional.relu`) to its input, with the
    same arguments. Like `torch.nn.ReLU`: `rg.nn.ReLU()(x)`."""
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        if self.inplace:
            return F.relu(input, inplace=True)
        return apply1(ops.relu, input) if input.__class__ is Tensor else F.relu(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """Applies `F.tanh` (`retrograd.nn.functional.tanh`) to its input, with the
    same arguments. Like `torch.nn.Tanh`: `rg.nn.Tanh()(x)`."""
    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    """Applies `F.sigmoid` (`retrograd.nn.functional.sigmoid`) to its input, with the
    same arguments. Like `torch.nn.Sigmoid`: `rg.nn.Sigmoid()(x)`."""
    def forward(self, input):
        return F.sigmoid(input)


class Softmax(Module):
    """Applies `F.softmax` (`retrograd.nn.functional.softmax`) to its input, with the
    same arguments. Like `torch.nn.Softmax`: `rg.nn.Softmax(dim=-1)(x)`; without `dim`,
    PyTorch's deprecated implicit choice (dim 0 for 0-, 1- and 3-D inputs, else 1),
    with its warning."""
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def _dim(self, x) -> int:
        if self.dim is not None:
            return self.dim
        return _implicit_dim(getattr(x, "ndim", 0), type(self).__name__.lower())

    def forward(self, input):
        return F.softmax(input, self._dim(input))

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """Applies `F.log_softmax` (`retrograd.nn.functional.log_softmax`) to its input, with the
    same arguments. Like `torch.nn.LogSoftmax`: `rg.nn.LogSoftmax(dim=-1)(x)`."""
    def forward(self, input):
        return F.log_softmax(input, self._dim(input))


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of a (N, C, H, W) or (C, H, W) input, at every
    position. Like `torch.nn.Softmax2d`."""
    def forward(self, input):
        if getattr(input, "ndim", None) not in (3, 4):
            raise ArgumentError(f"Softmax2d: expected input to be 3D or 4D, got "
                                f"{getattr(input, 'ndim', None)}D instead (shape "
                                f"{getattr(input, 'shape', None)})")
        return F.softmax(input, -3)


# ---------------------------------------------------------------- the rest of torch.nn's

class GELU(Module):
    """Applies `F.gelu` (`retrograd.nn.functional.gelu`) to its input, with the
    same arguments. Like `torch.nn.GELU`: `rg.nn.GELU()(x)`."""
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ArgumentError(f"GELU: 'approximate' must be 'none' or 'tanh', got "
                                f"{approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class _Inplace(Module):
    """An activation with PyTorch's `inplace` flag and no other argument."""

    _fn = None

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class SiLU(_Inplace):
    """Applies `F.silu` (`retrograd.nn.functional.silu`) to its input, with the
    same arguments. Like `torch.nn.SiLU`: `rg.nn.SiLU()(x)`."""
    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    """Applies `F.mish` (`retrograd.nn.functional.mish`) to its input, with the
    same arguments. Like `torch.nn.Mish`: `rg.nn.Mish()(x)`."""
    _fn = staticmethod(F.mish)


class SELU(_Inplace):
    """Applies `F.selu` (`retrograd.nn.functional.selu`) to its input, with the
    same arguments. Like `torch.nn.SELU`: `rg.nn.SELU()(x)`."""
    _fn = staticmethod(F.selu)


class ReLU6(_Inplace):
    """Applies `F.relu6` (`retrograd.nn.functional.relu6`) to its input, with the
    same arguments. Like `torch.nn.ReLU6`: `rg.nn.ReLU6()(x)`."""
    _fn = staticmethod(F.relu6)
    min_val, max_val = 0.0, 6.0  # PyTorch's ReLU6 is a Hardtanh(0, 6): code reads these


class Hardswish(_Inplace):
    """Applies `F.hardswish` (`retrograd.nn.functional.hardswish`) to its input, with the
    same arguments. Like `torch.nn.Hardswish`: `rg.nn.Hardswish()(x)`."""
    _fn = staticmethod(F.hardswish)

    def extra_repr(self) -> str:  # PyTorch shows no inplace for this one
        return ""


class Hardsigmoid(_Inplace):
    """Applies `F.hardsigmoid` (`retrograd.nn.functional.hardsigmoid`) to its input, with the
    same arguments. Like `torch.nn.Hardsigmoid`: `rg.nn.Hardsigmoid()(x)`."""
    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self) -> str:  # PyTorch shows no inplace for this one
        return ""


class Softplus(Module):
    """Applies `F.softplus` (`retrograd.nn.functional.softplus`) to its input, with the
    same arguments. Like `torch.nn.Softplus`: `rg.nn.Softplus()(x)`."""
    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class ELU(Module):
    """Applies `F.elu` (`retrograd.nn.functional.elu`) to its input, with the
    same arguments. Like `torch.nn.ELU`: `rg.nn.ELU()(x)`."""
    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    """Applies `F.celu` (`retrograd.nn.functional.celu`) to its input, with the
    same arguments. Like `torch.nn.CELU`: `rg.nn.CELU()(x)`."""
    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class LeakyReLU(Module):
    """Applies `F.leaky_relu` (`retrograd.nn.functional.leaky_relu`) to its input, with the
    same arguments. Like `torch.nn.LeakyReLU`: `rg.nn.LeakyReLU()(x)`."""
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                           else "")


class Hardtanh(Module):
    """Applies `F.hardtanh` (`retrograd.nn.functional.hardtanh`) to its input, with the
    same arguments. Like `torch.nn.Hardtanh`: `rg.nn.Hardtanh()(x)`."""
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0,
                 inplace: bool = False) -> None:
        super().__init__()
        if min_val > max_val:
            raise ArgumentError(f"Hardtanh: 'min_val' ({min_val}) cannot be greater than "
                                f"'max_val' ({max_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (
            ", inplace=True" if self.inplace else "")


class Threshold(Module):
    """Applies `F.threshold` (`retrograd.nn.functional.threshold`) to its input, with the
    same arguments. Like `torch.nn.Threshold`: `rg.nn.Threshold(0.5, 0.0)(x)`."""
    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (
            ", inplace=True" if self.inplace else "")


class Softsign(Module):
    """Applies `F.softsign` (`retrograd.nn.functional.softsign`) to its input, with the
    same arguments. Like `torch.nn.Softsign`: `rg.nn.Softsign()(x)`."""
    def forward(self, input):
        return F.softsign(input)


class LogSigmoid(Module):
    """Applies `F.logsigmoid` (`retrograd.nn.functional.logsigmoid`) to its input, with the
    same arguments. Like `torch.nn.LogSigmoid`: `rg.nn.LogSigmoid()(x)`."""
    def forward(self, input):
        return F.logsigmoid(input)


class Tanhshrink(Module):
    """Applies `F.tanhshrink` (`retrograd.nn.functional.tanhshrink`) to its input, with the
    same arguments. Like `torch.nn.Tanhshrink`: `rg.nn.Tanhshrink()(x)`."""
    def forward(self, input):
        return F.tanhshrink(input)


class Softmin(Module):
    """Applies `F.softmin` (`retrograd.nn.functional.softmin`) to its input, with the
    same arguments. Like `torch.nn.Softmin`: `rg.nn.Softmin(dim=-1)(x)`."""
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmin(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class GLU(Module):
    """Applies `F.glu` (`retrograd.nn.functional.glu`) to its input, with the
    same arguments. Like `torch.nn.GLU`: `rg.nn.GLU()(x)`."""
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """x where x > 0, else a * x, with `a` learned: one slope for all channels
    (`num_parameters=1`) or one per channel (dim 1), each initialised to `init`.
    Like `torch.nn.PReLU`; its parameter is `weight`."""
    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(np.full(num_parameters, init, dtype=_dtype(dtype)))

    def reset_parameters(self) -> None:
        with no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomised leaky ReLU (`F.rrelu`): random slopes in [lower, upper] for x <= 0 in
    training mode, their mean in eval mode. Like `torch.nn.RReLU`."""
    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace
                                                           else "")


class Hardshrink(Module):
    """Applies `F.hardshrink`: 0 where |x| <= lambd, x elsewhere. Like `torch.nn.Hardshrink`."""
    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """Applies `F.softshrink`: x shrunk towards 0 by lambd, 0 where |x| <= lambd. Like
    `torch.nn.Softshrink`."""
    def forward(self, input):
        return F.softshrink(input, self.lambd)
