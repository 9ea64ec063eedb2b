"""Activation functions with `torch.nn.functional`'s names, arguments and defaults
(`rg.nn.functional.gelu`, ...; `rg.celu`, `rg.selu`, `rg.threshold` as in `torch`).

Most are one node of the op table (`ops/activations.py`); `celu`, `selu` and
`relu6` are `elu` and `hardtanh` with fixed attributes, and `softmin`, `glu`,
`tanhshrink` are short compositions. `inplace=True` writes the result into the
input (through `copy_`, so autograd sees the write, as PyTorch's does).

`prelu` is one node (`ops.prelu`, with PyTorch's derivatives at 0 in each order);
`rrelu`, `hardshrink`, `softshrink` and `gumbel_softmax` are compositions
of recorded ops (`where`, `*`, `softmax`), written so that values, NaNs and
gradients agree with PyTorch's kernels; the trailing-underscore spellings
(`relu_`, `elu_`, ...) are the in-place forms torch.nn.functional has.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import creation, ops
from ..devices import namespace_of
from ..dtypes import get_default_dtype
from ..engine import apply, apply1
from ..grad_mode import state
from ..tensor import Tensor
from ._args import _dims, _t
from ._errors import ArgumentError, DtypeError, ShapeError
from .elementwise import clamp, relu, sigmoid, tanh, where
from .reductions import softmax
from .shape import split

__all__ = [
    "gelu", "silu", "mish", "softplus", "elu", "celu", "selu", "leaky_relu", "relu6",
    "hardtanh", "hardswish", "hardsigmoid", "softsign", "logsigmoid", "softmin", "glu",
    "tanhshrink", "threshold",
]
__all__ += [  # PyTorch's parametric, randomised and shrinking activations; in-place forms
    "prelu", "rrelu", "rrelu_", "hardshrink", "softshrink", "gumbel_softmax", "relu_", "elu_",
    "celu_", "selu_", "leaky_relu_", "hardtanh_", "threshold_",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _float(input, name: str) -> Tensor:
    x = _t(input)
    if x.data.dtype.kind != "f":
        raise DtypeError(f"{name}() needs a floating tensor, got {x.dtype}; convert with "
                         ".float()")
    return x


def _real(input, name: str) -> Tensor:
    """`input` (float or complex), and an integer one as a tensor of the default float dtype
    (PyTorch's result dtype for `softsign` and `tanhshrink` of integers); bool refused."""
    x = _t(input)
    kind = x.data.dtype.kind
    if kind in "iu":
        return x.to(get_default_dtype())
    return x if kind in "fc" else _float(x, name)


def _int_limit(v, x: Tensor, arg: str, name: str) -> int:
    """A number for an integer tensor as PyTorch takes it: a float truncated toward zero if
    it lies in x's range, an int wrapped if it is a small negative for an unsigned dtype;
    refused otherwise."""
    n = int(v)
    info = np.iinfo(x.data.dtype)
    if info.min <= v <= info.max:
        return n
    if info.min == 0 and isinstance(v, (int, np.integer)) and -info.max <= n < 0:
        return n + info.max + 1
    raise ArgumentError(f"{name}(): '{arg}' ({v!r}) cannot be converted to {x.dtype} (input "
                        f"of shape {x.shape}) without overflow")


def _hardtanh_int(x: Tensor, lo: float, hi: float, name: str) -> Tensor:
    """hardtanh of an integer tensor: a clamp to the truncated bounds, in x's dtype."""
    if x.data.dtype.kind == "u" and (int(lo) < 0 or int(hi) < 0):
        raise ArgumentError(f"{name}(): cannot do hardtanh on an unsigned type ({x.dtype}) "
                            f"with negative limits ({lo}, {hi})")
    return clamp(x, _int_limit(int(lo), x, "min_val", name),
                 _int_limit(int(hi), x, "max_val", name))


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
        raise ArgumentError(f"gelu(): 'approximate' must be 'none' or 'tanh', got {approximate!r}")
    return apply(ops.gelu, _float(input, "gelu"), approximate=approximate)


def silu(input, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (swish). Complex x as PyTorch: values only (torch has no complex
    derivative for silu, so a complex input that requires grad is refused)."""
    x = _t(input)
    if x.data.dtype.kind == "c":
        if x.requires_grad and state.enabled:
            raise RuntimeError("silu does not support automatic differentiation for outputs "
                               "with complex dtype.")
        return _run(x, inplace, lambda v: v * sigmoid(v))
    return _run(_float(input, "silu"), inplace, lambda v: apply1(ops.silu, v))


def mish(input, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _run(_float(input, "mish"), inplace, lambda v: apply1(ops.mish, v))


def softplus(input, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    beta = _number(beta, "beta", "softplus")
    if beta == 0:
        raise ArgumentError("softplus(): 'beta' must be nonzero")
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
        raise ArgumentError("celu(): 'alpha' must be nonzero (it divides x)")
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
        raise ArgumentError(f"hardtanh(): 'min_val' ({lo}) cannot be greater than 'max_val' ({hi})")
    x = _t(input)
    if x.data.dtype.kind in "iu":  # integers keep their dtype, as in PyTorch
        return _run(x, inplace, lambda v: _hardtanh_int(v, lo, hi, "hardtanh"))
    return _run(_float(x, "hardtanh"), inplace,
                lambda v: apply(ops.hardtanh, v, min_val=lo, max_val=hi))


def relu6(input, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6): `hardtanh(x, 0, 6)`."""
    x = _t(input)
    if x.data.dtype.kind in "iu":  # integers keep their dtype, as in PyTorch
        return _run(x, inplace, lambda v: _hardtanh_int(v, 0, 6, "relu6"))
    return _run(_float(x, "relu6"), inplace,
                lambda v: apply(ops.hardtanh, v, min_val=0.0, max_val=6.0))


def hardsigmoid(input, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    return _run(_float(input, "hardsigmoid"), inplace, lambda v: apply1(ops.hardsigmoid, v))


def hardswish(input, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return _run(_float(input, "hardswish"), inplace, lambda v: apply1(ops.hardswish, v))


def softsign(input) -> Tensor:
    """x / (1 + |x|) (complex x too, as PyTorch, by composition)."""
    x = _real(input, "softsign")
    if x.data.dtype.kind == "c":
        return x / (1 + x.abs())
    return apply1(ops.softsign, x)


def logsigmoid(input) -> Tensor:
    """log(sigmoid(x)), without overflow for large |x|."""
    return apply1(ops.logsigmoid, _float(input, "logsigmoid"))


def tanhshrink(input) -> Tensor:
    """x - tanh(x)."""
    x = _real(input, "tanhshrink")
    return x - tanh(x)


def threshold(input, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else `value`."""
    th = _number(threshold, "threshold", "threshold")
    val = _number(value, "value", "threshold")
    x = _t(input)
    if x.data.dtype.kind in "iu":  # integers keep their dtype; the numbers are truncated
        t = _int_limit(threshold, x, "threshold", "threshold")
        w = _int_limit(value, x, "value", "threshold")
        return _run(x, inplace, lambda v: where(v > t, v, creation.full_like(v, w)))
    return _run(_float(x, "threshold"), inplace,
                lambda v: apply(ops.threshold, v, threshold=th, value=val))


def _implicit_dim(ndim: int, name: str) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """softmax(-x) along `dim`. With `dtype`, x is negated in its own dtype before the cast,
    as PyTorch's `(-input).softmax(dim, dtype=dtype)`: uint8 wraps, bool is refused."""
    x = _float(input, "softmin") if dtype is None else (-_t(input)).to(dtype)
    if dim is None:
        dim = _implicit_dim(x.ndim, "softmin")
    d = _dims(dim, None, x.ndim, "softmin")
    return softmax(-x, d) if dtype is None else softmax(x, d)


def glu(input, dim: int = -1) -> Tensor:
    """a * sigmoid(b), with a and b the two halves of x along `dim`."""
    x = _float(input, "glu")
    if x.ndim == 0:
        raise ArgumentError("glu(): does not support scalars because halving size must be even")
    d = _dims(dim, None, x.ndim, "glu")
    n = x.shape[d]
    if n % 2:
        raise ArgumentError(f"glu(): halving dimension must be even, but dimension {d} is size {n}")
    a, b = split(x, [n // 2, n // 2], d)  # sizes, not a chunk size: an empty dim halves too
    return a * sigmoid(b)


# ---------------------------------------------------------------- parametric and randomised

def prelu(input, weight) -> Tensor:
    """x where x > 0, else weight * x, with one learned slope per channel (dim 1) or one for
    all: `weight` is 0-d or 1-D of size 1 or C. Like `torch.nn.functional.prelu`."""
    x, w = _float(input, "prelu"), _t(weight)
    if w.dtype != x.dtype:
        raise DtypeError(f"prelu: weight of dtype {w.dtype} does not match the input's dtype "
                         f"{x.dtype} (no type promotion here, as in PyTorch)")
    if w.ndim > 1:
        raise ShapeError(f"prelu: expected `weight` to be a scalar or 1-D tensor, but got "
                           f"shape {w.shape}")
    channels = x.shape[1] if x.ndim >= 2 else 1
    if w.size != 1 and w.size != channels:
        raise ShapeError(f"prelu: mismatch of parameter numbers and input channel size: "
                           f"weight has {w.size} parameters, input of shape {x.shape} has "
                           f"{channels} channel(s) (dim 1)")
    if w.size != 1 and x.ndim > 2:
        w = w.reshape((channels,) + (1,) * (x.ndim - 2))
    elif w.ndim and x.ndim < w.ndim:
        w = w.reshape(())
    return apply(ops.prelu, x, w)


def _bounds(lower: float, upper: float) -> tuple:
    lo, hi = _number(lower, "lower", "rrelu"), _number(upper, "upper", "rrelu")
    if lo > hi:
        raise ArgumentError(f"rrelu(): lower bound should be less than or equal to the upper "
                           f"bound, got lower={lo}, upper={hi}")
    return lo, hi


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomised leaky ReLU: in training each x <= 0 is multiplied by its own slope drawn
    uniformly from [lower, upper]; in eval by the mean slope (lower + upper) / 2.

    The slopes come from the global generator (`rg.manual_seed` makes them reproducible).
    """
    x = _float(input, "rrelu")
    lo, hi = _bounds(lower, upper)
    if not training:
        return _run(x, inplace, lambda v: apply(ops.leaky_relu, v, negative_slope=(lo + hi) / 2))
    u = creation.generator(like=x.data).random(x.shape)
    slope = (lo + (hi - lo) * u).astype(x.dtype)
    return _run(x, inplace, lambda v: where(v <= 0, v * slope, v))


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    """`rrelu` written into `input`."""
    return rrelu(input, lower, upper, training, inplace=True)


def _lambd(lambd, name: str) -> float:
    return _number(lambd, "lambd", name)


def hardshrink(input, lambd: float = 0.5) -> Tensor:
    """0 where -lambd <= x <= lambd, x elsewhere (NaN kept). Like
    `torch.nn.functional.hardshrink`."""
    x = _float(input, "hardshrink")
    lam = _lambd(lambd, "hardshrink")
    return where((x >= -lam) & (x <= lam), 0.0, x)


def softshrink(input, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between (lambd >= 0). Like
    `torch.nn.functional.softshrink`."""
    x = _float(input, "softshrink")
    lam = _lambd(lambd, "softshrink")
    if not lam >= 0:
        raise ArgumentError(f"softshrink(): lambd must be non-negative, got {lam}")
    return where((x >= -lam) & (x <= lam), 0.0, where(x > lam, x - lam, x + lam))


def gumbel_softmax(logits, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample from the Gumbel-softmax (Concrete) distribution: softmax((logits + g) / tau)
    along `dim`, g standard Gumbel noise from the global generator. With `hard`, the
    one-hot of the largest entry in the forward pass and the soft sample's gradient
    (straight-through: y_hard - y_soft.detach() + y_soft, as PyTorch computes it)."""
    x = _t(logits)
    if x.dtype.kind != "f":
        raise DtypeError(f"gumbel_softmax(): logits must be floating (the Gumbel noise is "
                           f"continuous), got {x.dtype}")
    if eps != 1e-10:
        warnings.warn("gumbel_softmax(): `eps` parameter is deprecated and has no effect.",
                      UserWarning, stacklevel=2)
    d = _dims(dim, None, x.ndim, "gumbel_softmax")
    u = creation.generator(like=x.data).random(x.shape)
    xp = namespace_of(u)
    gumbels = (-xp.log(-xp.log1p(-u))).astype(x.dtype)  # -log of Exponential(1) draws
    y_soft = softmax((x + gumbels) / tau, d)
    if not hard:
        return y_soft
    idx = y_soft.detach().argmax(d, keepdim=True)
    ones = apply(ops.ones_like, idx).to(y_soft.dtype)  # (on the input's device)
    y_hard = apply(ops.zeros_like, y_soft.detach()).scatter(d, idx, ones)
    return y_hard - y_soft.detach() + y_soft


# ---------------------------------------------------------------- in-place forms

def relu_(input) -> Tensor:
    """max(x, 0) written into `input`."""
    return _run(_t(input), True, relu)


def elu_(input, alpha: float = 1.0) -> Tensor:
    """`elu` written into `input`."""
    return elu(input, alpha, inplace=True)


def celu_(input, alpha: float = 1.0) -> Tensor:
    """`celu` written into `input`."""
    return celu(input, alpha, inplace=True)


def selu_(input) -> Tensor:
    """`selu` written into `input`."""
    return selu(input, inplace=True)


def leaky_relu_(input, negative_slope: float = 0.01) -> Tensor:
    """`leaky_relu` written into `input`."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """`hardtanh` written into `input`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold: float, value: float) -> Tensor:
    """`threshold` written into `input`."""
    return _threshold(input, threshold, value, inplace=True)


_threshold = threshold
