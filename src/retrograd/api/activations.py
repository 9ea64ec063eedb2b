"""Activation functions with `torch.nn.functional`'s names, arguments and defaults
(`rg.nn.functional.gelu`, ...; `rg.celu`, `rg.selu`, `rg.threshold` as in `torch`).

Most are one node of the op table (`ops/activations.py`); `celu`, `selu` and
`relu6` are `elu` and `hardtanh` with fixed attributes, and `softmin`, `glu`,
`tanhshrink` are short compositions. `inplace=True` writes the result into the
input (through `copy_`, so autograd sees the write, as PyTorch's does).
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import ops
from ..engine import apply, apply1
from ..tensor import Tensor
from ._args import _dims, _t
from .elementwise import sigmoid, tanh
from .reductions import softmax
from .shape import split

__all__ = [
    "gelu", "silu", "mish", "softplus", "elu", "celu", "selu", "leaky_relu", "relu6",
    "hardtanh", "hardswish", "hardsigmoid", "softsign", "logsigmoid", "softmin", "glu",
    "tanhshrink", "threshold",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _float(input, name: str) -> Tensor:
    x = _t(input)
    if x.data.dtype.kind != "f":
        raise TypeError(f"{name}() needs a floating tensor, got {x.dtype}; convert with "
                        ".float()")
    return x


def _number(v, arg: str, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}(): '{arg}' must be a number, got {v!r}")
    return float(v)


def _run(x: Tensor, inplace: bool, f) -> Tensor:
    """`f(x)`, or with `inplace` written into x (computed from a copy, which the graph keeps
    while x itself changes)."""
    if not inplace:
        return f(x)
    return x.copy_(f(x.clone()))


def gelu(input, approximate: str = "none") -> Tensor:
    """x * Phi(x) (Phi the standard normal CDF), or its tanh approximation
    (`approximate='tanh'`)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu(): 'approximate' must be 'none' or 'tanh', got {approximate!r}")
    return apply(ops.gelu, _float(input, "gelu"), approximate=approximate)


def silu(input, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (swish)."""
    return _run(_float(input, "silu"), inplace, lambda v: apply1(ops.silu, v))


def mish(input, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _run(_float(input, "mish"), inplace, lambda v: apply1(ops.mish, v))


def softplus(input, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    beta = _number(beta, "beta", "softplus")
    if beta == 0:
        raise ValueError("softplus(): 'beta' must be nonzero")
    return apply(ops.softplus, _float(input, "softplus"), beta=beta,
                 threshold=_number(threshold, "threshold", "softplus"))


def _elu(x: Tensor, alpha: float, scale: float, input_scale: float, inplace: bool) -> Tensor:
    return _run(x, inplace, lambda v: apply(ops.elu, v, alpha=alpha, scale=scale,
                                            input_scale=input_scale))


def elu(input, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    return _elu(_float(input, "elu"), _number(alpha, "alpha", "elu"), 1.0, 1.0, inplace)


def celu(input, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, alpha * (exp(x / alpha) - 1) otherwise."""
    alpha = _number(alpha, "alpha", "celu")
    if alpha == 0:
        raise ValueError("celu(): 'alpha' must be nonzero (it divides x)")
    return _elu(_float(input, "celu"), alpha, 1.0, 1.0 / alpha, inplace)


def selu(input, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _elu(_float(input, "selu"), _SELU_ALPHA, _SELU_SCALE, 1.0, inplace)


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, negative_slope * x otherwise (that slope at 0, as PyTorch)."""
    slope = _number(negative_slope, "negative_slope", "leaky_relu")
    return _run(_float(input, "leaky_relu"), inplace,
                lambda v: apply(ops.leaky_relu, v, negative_slope=slope))


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """x clamped to [min_val, max_val]; unlike `clamp`, no gradient at the bounds."""
    lo = _number(min_val, "min_val", "hardtanh")
    hi = _number(max_val, "max_val", "hardtanh")
    if lo > hi:
        raise ValueError(f"hardtanh(): 'min_val' ({lo}) cannot be greater than 'max_val' ({hi})")
    return _run(_float(input, "hardtanh"), inplace,
                lambda v: apply(ops.hardtanh, v, min_val=lo, max_val=hi))


def relu6(input, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6): `hardtanh(x, 0, 6)`."""
    return _run(_float(input, "relu6"), inplace,
                lambda v: apply(ops.hardtanh, v, min_val=0.0, max_val=6.0))


def hardsigmoid(input, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    return _run(_float(input, "hardsigmoid"), inplace, lambda v: apply1(ops.hardsigmoid, v))


def hardswish(input, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return _run(_float(input, "hardswish"), inplace, lambda v: apply1(ops.hardswish, v))


def softsign(input) -> Tensor:
    """x / (1 + |x|)."""
    return apply1(ops.softsign, _float(input, "softsign"))


def logsigmoid(input) -> Tensor:
    """log(sigmoid(x)), without overflow for large |x|."""
    return apply1(ops.logsigmoid, _float(input, "logsigmoid"))


def tanhshrink(input) -> Tensor:
    """x - tanh(x)."""
    x = _float(input, "tanhshrink")
    return x - tanh(x)


def threshold(input, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else `value`."""
    th = _number(threshold, "threshold", "threshold")
    val = _number(value, "value", "threshold")
    return _run(_float(input, "threshold"), inplace,
                lambda v: apply(ops.threshold, v, threshold=th, value=val))


def _implicit_dim(ndim: int, name: str) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """softmax(-x) along `dim`."""
    x = _float(input, "softmin") if dtype is None else _t(input).to(dtype)
    if dim is None:
        dim = _implicit_dim(x.ndim, "softmin")
    return softmax(-x, _dims(dim, None, x.ndim, "softmin"))


def glu(input, dim: int = -1) -> Tensor:
    """a * sigmoid(b), with a and b the two halves of x along `dim`."""
    x = _float(input, "glu")
    if x.ndim == 0:
        raise ValueError("glu(): does not support scalars because halving size must be even")
    d = _dims(dim, None, x.ndim, "glu")
    n = x.shape[d]
    if n % 2:
        raise ValueError(f"glu(): halving dimension must be even, but dimension {d} is size {n}")
    a, b = split(x, n // 2, d)
    return a * sigmoid(b)
