"""Element-wise number functions with PyTorch's names: infinities and sign bits
(`rg.isneginf`, `rg.isposinf`, `rg.isreal`, `rg.signbit`, `rg.sgn`), `rg.heaviside`,
powers of two and floats taken apart (`rg.float_power`, `rg.ldexp`, `rg.frexp`),
integer arithmetic (`rg.gcd`, `rg.lcm`) and `rg.nextafter`.

The differentiable ones are compositions of existing ops (sgn of a complex number
is `x / |x|`, ldexp is `x * 2**other`, frexp's mantissa is `x` times a power of
two), so their gradients are PyTorch's and `rg.jit`, vmap and jvp see only ops;
gcd, lcm and frexp's exponent are rows without a gradient, nextafter a row whose
gradient passes to `input` (`ops/discrete.py`).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import devices, ops
from ..dtypes import get_default_dtype, result_type
from ..engine import apply
from ..grad_mode import state
from ..ops import discrete
from ..tensor import Tensor
from ._args import _t, promote
from ._errors import DtypeError
from .elementwise import abs, sign, where
from .math import isnan, logical_not, logical_or

frexp_result = namedtuple("frexp", ["mantissa", "exponent"])
"""What `frexp` returns, as `torch.return_types.frexp`: `mantissa`, `exponent`."""


def _no_complex(x: Tensor, fn: str) -> None:
    if x.dtype.kind == "c":
        raise DtypeError(f"{fn}(): complex tensors are not supported (got {x.dtype})")


# ----------------------------------------------------------------- predicates


def isneginf(input) -> Tensor:
    """Element-wise test for -inf (a bool tensor). Like `torch.isneginf`."""
    x = _t(input)
    _no_complex(x, "isneginf")
    return x == float("-inf")


def isposinf(input) -> Tensor:
    """Element-wise test for +inf (a bool tensor). Like `torch.isposinf`."""
    x = _t(input)
    _no_complex(x, "isposinf")
    return x == float("inf")


def isreal(input) -> Tensor:
    """Element-wise test for a zero imaginary part: True everywhere for a real tensor.
    Like `torch.isreal`."""
    x = _t(input)
    if x.dtype.kind == "c":
        return apply(ops.imag, x) == 0
    nan = isnan(x)
    return logical_or(nan, logical_not(nan))


def signbit(input) -> Tensor:
    """Element-wise test of the sign bit: True for negatives, -0.0 and a NaN with its
    sign bit set. Like `torch.signbit`."""
    x = _t(input)
    _no_complex(x, "signbit")
    if x.dtype == np.bool_:
        return x != x
    if x.dtype.kind in "iu":
        return x < 0
    bits = np.dtype(f"i{x.dtype.itemsize}")  # the sign bit is the integer's sign
    return apply(ops.bitcast, x, dtype=bits) < 0


def sgn(input) -> Tensor:
    """The sign: -1, 0 or 1 for real numbers (0 for NaN), `x / |x|` (0 at 0) for complex
    ones.

    Like `torch.sgn`, with its gradient for complex inputs (0 at 0)."""
    x = _t(input)
    if x.dtype == np.bool_:
        return x.clone()
    if x.dtype.kind != "c":
        return sign(x) if x.dtype.kind in "iu" else where(isnan(x), 0.0, sign(x))
    a = abs(x)
    zero = a == 0
    return where(zero, 0, x / where(zero, 1.0, a))


def heaviside(input, values) -> Tensor:
    """The Heaviside step: 0 where `input` < 0, 1 where > 0, and `values` where it is 0
    (NaN gives 0). `input` and `values` must share a dtype. Like `torch.heaviside`."""
    x, v = _t(input), _t(values)
    if x.dtype != v.dtype:
        raise DtypeError(f"heaviside(): input ({x.dtype}) and values ({v.dtype}) must have "
                         "the same dtype")
    _no_complex(x, "heaviside")
    return where(x == 0, v, (x > 0).to(x.dtype))


# ----------------------------------------------------------------- powers of two


def float_power(input, exponent) -> Tensor:
    """`input ** exponent` computed in float64 (complex128 if either is complex), whatever
    the inputs' dtypes. Like `torch.float_power`."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power(): input or exponent must be a tensor")
    complex_ = any((v.dtype if isinstance(v, Tensor) else np.asarray(v).dtype).kind == "c"
                   for v in (input, exponent))
    dt = np.complex128 if complex_ else np.float64

    def cast(v):
        if isinstance(v, Tensor):
            return v.to(dt)
        return Tensor(np.asarray(v, dtype=dt)) if isinstance(v, (list, np.ndarray)) else v

    x, e = cast(input), cast(exponent)
    return x ** e if isinstance(x, Tensor) else e.__rpow__(x)


def float_power_(input, exponent) -> Tensor:
    """In place: `input ** exponent` written into `input`, which must already be float64
    (complex128 for a complex result), as PyTorch's `Tensor.float_power_` refuses to
    round the float64 result into a narrower tensor."""
    complex_ = input.dtype.kind == "c" or (
        exponent.dtype if isinstance(exponent, Tensor) else np.asarray(exponent).dtype
    ).kind == "c"
    dt = np.dtype(np.complex128 if complex_ else np.float64)
    if input.dtype != dt:
        raise DtypeError(f"float_power_(): the base has dtype {input.dtype} but the result "
                         f"needs dtype {dt}; convert it with .to({dt}) first")
    recorded = state.enabled and (input.requires_grad or (
        isinstance(exponent, Tensor) and exponent.requires_grad))
    src = input.clone() if recorded else input  # pow's backward reads the old base
    return input.copy_(float_power(src, exponent))


def ldexp(input, other) -> Tensor:
    """`input * 2 ** other` (integer inputs give the default float dtype). Like
    `torch.ldexp`, and differentiable in both (as its composition in PyTorch)."""
    x, o = _t(input), _t(other)
    dt = result_type(x, o)  # torch: the promoted dtype, made floating (float16 stays)
    if dt.kind not in "fc":
        dt = get_default_dtype()
    x = x if x.dtype == dt else x.to(dt)
    return x * (2.0 ** (o if o.dtype == dt or dt.kind == "c" else o.to(dt)))


def frexp(input):
    """`(mantissa, exponent)` with `input = mantissa * 2 ** exponent` and |mantissa| in
    [0.5, 1) (0, inf and NaN keep exponent 0); exponent is int32. Like `torch.frexp`:
    the mantissa's gradient is 2 ** -exponent."""
    x = _t(input)
    if x.dtype.kind != "f":
        raise DtypeError(f"frexp(): only floating-point dtypes are supported, got {x.dtype}")
    e = apply(discrete.frexp_exponent, x)
    # two steps, so that neither power of two overflows (subnormal inputs): e >> 1 is
    # floor(e / 2)
    half = apply(ops.right_shift, e, devices.like(np.array(1, np.int32), x.data))
    two = Tensor._wrap(devices.like(np.array(2.0, x.dtype), x.data))
    m = x * two ** (-half).to(x.dtype) * two ** (half - e).to(x.dtype)
    return frexp_result(m, e)


# ----------------------------------------------------------------- integers and floats


def _integers(fn: str, input, other) -> tuple:
    x, y = promote(_t(input), other)
    for v in (x, y):
        dt = v.dtype if isinstance(v, Tensor) else np.asarray(v).dtype
        if dt.kind not in "iu":
            raise DtypeError(f"{fn}(): needs integer tensors, got {dt}")
    return x, y


def gcd(input, other) -> Tensor:
    """Element-wise greatest common divisor (non-negative; gcd(0, 0) = 0) of integer
    tensors. Like `torch.gcd`."""
    return apply(discrete.gcd, *_integers("gcd", input, other))


def lcm(input, other) -> Tensor:
    """Element-wise least common multiple (non-negative; 0 if either is 0) of integer
    tensors. Like `torch.lcm`."""
    return apply(discrete.lcm, *_integers("lcm", input, other))


def nextafter(input, other) -> Tensor:
    """The next floating-point value after `input` towards `other`, element-wise; as in
    PyTorch, `input`'s gradient passes through unchanged and `other`'s is zero. Like
    `torch.nextafter`."""
    x, y = promote(_t(input), other)
    for v in (x, y):
        dt = v.dtype if isinstance(v, Tensor) else np.asarray(v).dtype
        if dt.kind != "f":
            raise DtypeError(f"nextafter(): needs floating tensors, got {dt}")
    return apply(discrete.nextafter, x, y)
