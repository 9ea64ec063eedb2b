"""Element-wise math and logic: `rg.floor`, `rg.erf`, `rg.atan2`, `rg.lerp`, `rg.div`,
`rg.isclose`, `rg.logical_and`, `rg.all`, `rg.bitwise_left_shift`, ... with PyTorch's
names, arguments and result dtypes (operands promoted by `_args.promote`)."""

from __future__ import annotations

import builtins

import numpy as np

from .. import ops
from .._values import values_of
from ..dtypes import get_default_dtype
from ..engine import apply, apply1
from ..primitive import ArgumentError
from ..tensor import Tensor
from ._args import _dims, _keep, _t, promote
from ._errors import ArgumentTypeError, DtypeError, check_broadcast
from ._opmath import float16_in_float32

__all__ = [
    "floor", "ceil", "trunc", "fix", "round", "frac", "log2", "log10", "exp2", "expm1",
    "rsqrt", "reciprocal", "square", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
    "atanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "erf", "erfc",
    "erfinv", "atan2", "arctan2", "hypot", "copysign", "logaddexp", "logaddexp2", "xlogy",
    "lerp", "fmod", "remainder", "floor_divide", "div", "divide", "true_divide", "isnan",
    "isinf", "isfinite", "isclose", "allclose", "logical_and", "logical_or", "logical_xor",
    "logical_not", "all", "any", "nan_to_num", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not", "bitwise_left_shift", "bitwise_right_shift",
]


# ---------------------------------------------------------------- one input

def _floating(x) -> Tensor:
    """The input of a floating op: integer and bool tensors become the default float dtype."""
    x = _t(x)
    return x if x.data.dtype.kind in "fc" else x.to(get_default_dtype())


def _real(x, name: str) -> Tensor:
    x = _t(x)
    if x.data.dtype.kind == "c":
        raise DtypeError(f"{name}() is not supported for complex tensors (got {x.dtype})")
    return x


def _unary_float(opname: str, doc: str, real: bool = False):
    """rg.<opname>: integers and bool computed in the default float dtype; complex input
    refused when `real` (as torch's CPU kernels)."""
    op = ops.OPS[opname]
    kinds = "f" if real else "fc"

    def fn(input) -> Tensor:
        x = input
        if x.__class__ is not Tensor or x.data.dtype.kind not in kinds:
            x = _floating(_real(x, opname) if real else x)
        return apply1(op, x)

    fn.__name__ = fn.__qualname__ = opname
    fn.__doc__ = doc
    return fn


log2 = _unary_float("log2", "Base-2 logarithm.")
log10 = _unary_float("log10", "Base-10 logarithm.")
exp2 = _unary_float("exp2", "2 ** x.")
expm1 = _unary_float("expm1", "exp(x) - 1, accurate near 0.")
rsqrt = _unary_float("rsqrt", "1 / sqrt(x).")
reciprocal = _unary_float("reciprocal", "1 / x (integers give the default float dtype).")
asin = _unary_float("asin", "Inverse sine.")
acos = _unary_float("acos", "Inverse cosine.")
atan = _unary_float("atan", "Inverse tangent.")
sinh = _unary_float("sinh", "Hyperbolic sine.")
cosh = _unary_float("cosh", "Hyperbolic cosine.")
asinh = _unary_float("asinh", "Inverse hyperbolic sine.")
acosh = _unary_float("acosh", "Inverse hyperbolic cosine.")
atanh = _unary_float("atanh", "Inverse hyperbolic tangent.")
erf = _unary_float("erf", "The error function, to a few units in the last place.", True)
erfc = _unary_float("erfc", "1 - erf(x), keeping its relative accuracy in the right tail.",
                    True)
erfinv = _unary_float("erfinv", "The inverse of erf on [-1, 1] (+-inf at +-1, nan outside).",
                      True)
arcsin, arccos, arctan = asin, acos, atan
arcsinh, arccosh, arctanh = asinh, acosh, atanh


def square(input) -> Tensor:
    """x * x (integers stay integers, bool becomes int64, as in PyTorch)."""
    x = _t(input)
    if x.data.dtype == np.bool_:
        x = x.to(np.int64)
    return apply1(ops.square, x)


def _rounding(opname: str, doc: str):
    op = ops.OPS[opname]

    def fn(input) -> Tensor:
        return apply1(op, _not_bool(_real(input, opname), opname))

    fn.__name__ = fn.__qualname__ = opname
    fn.__doc__ = doc
    return fn


def _not_bool(x: Tensor, name: str) -> Tensor:
    if x.data.dtype == np.bool_:  # PyTorch has no rounding kernels for bool
        raise DtypeError(f"{name}() is not implemented for bool tensors; convert with .long()")
    return x


floor = _rounding("floor", "Largest whole number <= x (integers unchanged); zero gradient.")
ceil = _rounding("ceil", "Smallest whole number >= x (integers unchanged); zero gradient.")
trunc = _rounding("trunc", "x rounded toward zero (integers unchanged); zero gradient.")
fix = trunc


def round(input, *, decimals: int = 0) -> Tensor:  # noqa: A001 - PyTorch's name
    """Round half to even, to `decimals` places (negative: tens, hundreds...); zero gradient."""
    if not isinstance(decimals, (int, np.integer)) or isinstance(decimals, bool):
        raise TypeError(f"round(): 'decimals' must be an int, got {decimals!r}")
    x = _not_bool(_real(input, "round"), "round")
    if decimals and x.data.dtype.kind in "biu":
        raise DtypeError(f"round(): 'decimals' is only supported for floating tensors, got "
                        f"{x.dtype}")
    return apply(ops.round, x, decimals=int(decimals)) if decimals else apply1(ops.round, x)


def frac(input) -> Tensor:
    """x - trunc(x), the fractional part with x's sign; gradient 1."""
    x = _real(input, "frac")
    if x.data.dtype.kind not in "f":
        raise DtypeError(f"frac() needs a floating tensor, got {x.dtype}")
    return apply1(ops.frac, x)


def nan_to_num(input, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """NaN, +inf and -inf replaced (infinities by the dtype's extremes unless given);
    the gradient passes only where x is finite."""
    x = _t(input)
    for name, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if v is not None and not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"nan_to_num(): '{name}' must be a number or None, got {v!r}")
    if x.data.dtype.kind not in "fc":
        return x.clone()
    return apply(ops.nan_to_num, x, nan=float(nan),
                 posinf=None if posinf is None else float(posinf),
                 neginf=None if neginf is None else float(neginf))


# ---------------------------------------------------------------- two inputs

def _operands(name: str, *xs, floating: bool = False, real: bool = True):
    """Operands promoted to PyTorch's result dtype; at least one of them a tensor."""
    out = list(promote(*xs, floating=floating))
    if not builtins.any(isinstance(x, Tensor) for x in out):
        out[0] = Tensor(out[0])
    if real and builtins.any(np.asarray(getattr(x, "data", x)).dtype.kind == "c" for x in out):
        raise DtypeError(f"{name}() is not supported for complex tensors")
    return out


def atan2(input, other) -> Tensor:
    """The angle of the point (other, input), in (-pi, pi]: `atan2(y, x)`."""
    return apply(ops.atan2, *_operands("atan2", input, other, floating=True))


arctan2 = atan2


def hypot(input, other) -> Tensor:
    """sqrt(x**2 + y**2) without overflow or underflow in the squares."""
    return apply(ops.hypot, *_operands("hypot", input, other, floating=True))


def copysign(input, other) -> Tensor:
    """|input| with the sign of `other` (-0.0 counts as negative); no gradient to `other`."""
    return apply(ops.copysign, *_operands("copysign", input, other, floating=True))


def logaddexp(input, other) -> Tensor:
    """log(exp(x) + exp(y)), without overflow; complex tensors too, as PyTorch's."""
    x, y = _operands("logaddexp", input, other, floating=True, real=False)
    if _dtype(x).kind == "c" or _dtype(y).kind == "c":
        return _logaddexp_complex(_t(x), _t(y))
    return apply(ops.logaddexp, x, y)


def _logaddexp_complex(x: Tensor, y: Tensor) -> Tensor:
    """PyTorch's complex logaddexp: with hi the operand of larger real part (x on a tie),
    hi + log1p(exp(lo - hi)); both real parts -inf gives lo. Composed of ops: the
    gradient is 1 / (1 + exp(other - self)), conjugated, as PyTorch's."""
    from .elementwise import where
    first = x.real >= y.real
    hi, lo = where(first, x, y), where(first, y, x)
    both_neg_inf = (lo.real == -np.inf) & (hi.real == -np.inf)
    # no -inf - -inf (nan, and NumPy's warning) in the branch not taken
    d = where(both_neg_inf, 0.0, lo) - where(both_neg_inf, 0.0, hi)
    return where(both_neg_inf, lo, hi + d.exp().log1p())


def logaddexp2(input, other) -> Tensor:
    """log2(2**x + 2**y), without overflow."""
    return apply(ops.logaddexp2, *_operands("logaddexp2", input, other, floating=True))


def xlogy(input, other) -> Tensor:
    """x * log(y), and 0 where x == 0 (unless y is NaN)."""
    return apply(ops.xlogy, *_operands("xlogy", input, other, floating=True))


@float16_in_float32("input", "end", "weight")
def lerp(input, end, weight) -> Tensor:
    """input + weight * (end - input), with PyTorch's formula for weights >= 1/2; float16
    computed in float32 and rounded once, as PyTorch's; a complex number weights complex
    tensors."""
    s, e = _t(input), _t(end)
    if e.data.dtype != s.data.dtype:  # PyTorch: RuntimeError
        raise ArgumentTypeError(f"lerp(): 'input' and 'end' must be floating tensors of one "
                                f"dtype, got {s.dtype} and {e.dtype}")
    if s.data.dtype.kind not in "fc":  # PyTorch: NotImplementedError (for 'Long')
        raise DtypeError(f"lerp(): 'input' and 'end' must be floating tensors, got {s.dtype}")
    if isinstance(weight, Tensor):
        if weight.ndim == 0 and weight.data.dtype != s.data.dtype:
            weight = weight.to(s.dtype)  # PyTorch: a 0-d weight of any dtype acts as a number
        if weight.data.dtype != s.data.dtype:
            raise ArgumentTypeError(f"lerp(): 'weight' must have dtype {s.dtype}, got "
                                    f"{weight.dtype}")
    elif isinstance(weight, (int, float, np.integer, np.floating)) and \
            not isinstance(weight, bool) or \
            isinstance(weight, (complex, np.complexfloating)) and s.data.dtype.kind == "c":
        weight = np.array(weight, s.data.dtype)
    elif isinstance(weight, (complex, np.complexfloating)):  # PyTorch: RuntimeError too
        raise RuntimeError(f"lerp(): a complex weight {weight!r} for {s.dtype} tensors cannot "
                           f"be converted to a real number")
    else:
        raise TypeError(f"lerp(): 'weight' must be a number or a tensor, got {weight!r}")
    return apply(ops.lerp, s, e, weight)


def _dtype(x) -> np.dtype:
    return x.data.dtype if isinstance(x, Tensor) else np.asarray(x).dtype


def _integer_friendly(name: str, op, x, y) -> Tensor:
    x, y = _operands(name, x, y)
    if _dtype(x) == np.bool_:
        raise DtypeError(f"{name}() is not supported for bool tensors; convert with .long()")
    try:
        return apply(op, x, y)
    except ValueError:
        check_broadcast(name, x, y)  # PyTorch's RuntimeError for shapes that do not fit
        raise


def fmod(input, other) -> Tensor:
    """C's remainder: x - trunc(x / y) * y, with the sign of x. Gradients as PyTorch:
    1 to x, -trunc(x / y) to y. Integer division by zero raises ZeroDivisionError."""
    return _integer_friendly("fmod", ops.fmod, input, other)


def remainder(input, other) -> Tensor:
    """Python's `%`: x - floor(x / y) * y, with the sign of y. Gradients: 1 to x,
    -floor(x / y) to y."""
    return _integer_friendly("remainder", ops.remainder, input, other)


def floor_divide(input, other) -> Tensor:
    """Python's `//`: floor(x / y) (integers stay integers); zero gradient."""
    return _integer_friendly("floor_divide", ops.floor_divide, input, other)


_ROUNDING = (None, "trunc", "floor")


def div(input, other, *, rounding_mode: str | None = None) -> Tensor:
    """x / y; `rounding_mode` None (true division: integers give floats), 'trunc' (toward
    zero) or 'floor' (as `//`). The rounded forms keep integer dtypes and have zero gradient."""
    if rounding_mode not in _ROUNDING:
        raise ArgumentError(f"div(): 'rounding_mode' must be None, 'trunc' or 'floor', got "
                            f"{rounding_mode!r}")
    if rounding_mode is None:
        x, y = _operands("div", input, other, floating=True, real=False)
        return apply(ops.div, x, y)
    op = ops.trunc_divide if rounding_mode == "trunc" else ops.floor_divide
    return _integer_friendly("div", op, input, other)


divide = div


def true_divide(input, other) -> Tensor:
    """x / y, always floating."""
    return div(input, other)


# ---------------------------------------------------------------- predicates and logic

def isnan(input) -> Tensor:
    """Elementwise test for NaN, a bool tensor. Like `torch.isnan`."""
    return apply(ops.isnan, _t(input))  # a bool result: never recorded for grad


def isinf(input) -> Tensor:
    """Elementwise test for +inf or -inf, a bool tensor. Like `torch.isinf`."""
    return apply(ops.isinf, _t(input))


def isfinite(input) -> Tensor:
    """Elementwise test for a finite value (not inf, not NaN). Like `torch.isfinite`."""
    return apply(ops.isfinite, _t(input))


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """|x - y| <= atol + rtol * |y|, element-wise (infinities equal only to themselves)."""
    for name, v in (("rtol", rtol), ("atol", atol)):
        if not isinstance(v, (int, float, np.integer, np.floating)) or v < 0:
            raise ArgumentError(f"isclose(): '{name}' must be a non-negative number, got {v!r}")
    x, y = _t(input), _t(other)
    if x.data.dtype != y.data.dtype:
        raise ArgumentTypeError(f"isclose(): 'input' ({x.dtype}) and 'other' ({y.dtype}) "
                                "must have the same dtype")
    return apply(ops.isclose, x, y, rtol=float(rtol), atol=float(atol),
                 equal_nan=bool(equal_nan))


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True if every element is `isclose` (shapes must broadcast)."""
    x, y = _t(input), _t(other)
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise ArgumentError(f"allclose(): shapes {x.shape} and {y.shape} do not broadcast") \
            from None
    close = isclose(x, y, rtol, atol, equal_nan)
    return bool(values_of(close, "allclose() (a Python bool)",
                          "use rg.isclose(...).all(), a tensor, instead").all())


def _logical(opname: str):
    op = ops.OPS[opname]

    def fn(input, other) -> Tensor:
        return apply(op, *_operands(opname, input, other, real=False))

    fn.__name__ = fn.__qualname__ = opname
    fn.__doc__ = f"Element-wise {opname.split('_')[1]} of the inputs' truth values (bool result)."
    return fn


logical_and = _logical("logical_and")
logical_or = _logical("logical_or")
logical_xor = _logical("logical_xor")


def logical_not(input) -> Tensor:
    """Element-wise not of the input's truth value (bool result)."""
    return apply(ops.logical_not, _t(input))


def _truth(op, name, input, dim, keepdim, axis, keepdims) -> Tensor:
    x = _t(input)
    axes = _dims(dim, axis, x.ndim, name)  # checked; a 0-d tensor's dim 0 is itself
    r = apply(op, x, axis=None if x.ndim == 0 else axes, keepdims=_keep(keepdim, keepdims))
    return r.to(np.uint8) if x.dtype == np.uint8 else r  # uint8 in, uint8 out, as torch


def all(input, dim=None, keepdim: bool = False, *, axis=None,  # noqa: A001 - PyTorch's name
        keepdims=None) -> Tensor:
    """True where every element (over `dim`, an int or tuple) is nonzero; a bool tensor."""
    return _truth(ops.all, "all", input, dim, keepdim, axis, keepdims)


def any(input, dim=None, keepdim: bool = False, *, axis=None,  # noqa: A001 - PyTorch's name
        keepdims=None) -> Tensor:
    """True where some element (over `dim`) is nonzero; a bool tensor."""
    return _truth(ops.any, "any", input, dim, keepdim, axis, keepdims)


# ---------------------------------------------------------------- bitwise

def _bitwise(opname: str, name: str, x, y, bool_ok: bool = True) -> Tensor:
    x, y = _operands(name, x, y, real=False)
    if _dtype(x).kind not in ("biu" if bool_ok else "iu"):
        raise DtypeError(f"{name}() needs {'bool or ' if bool_ok else ''}integer tensors, got "
                         f"{_dtype(x)}")  # NotImplementedError in PyTorch, and a TypeError
    return apply(ops.OPS[opname], x, y)


def bitwise_and(input, other) -> Tensor:
    """Bitwise AND of integer or bool tensors (the `&` operator). Like `torch.bitwise_and`."""
    return _bitwise("bitwise_and", "bitwise_and", input, other)


def bitwise_or(input, other) -> Tensor:
    """Bitwise OR of integer or bool tensors (the `|` operator). Like `torch.bitwise_or`."""
    return _bitwise("bitwise_or", "bitwise_or", input, other)


def bitwise_xor(input, other) -> Tensor:
    """Bitwise XOR of integer or bool tensors (the `^` operator). Like `torch.bitwise_xor`."""
    return _bitwise("bitwise_xor", "bitwise_xor", input, other)


def bitwise_not(input) -> Tensor:
    """Bitwise NOT of an integer or bool tensor (the `~` operator). Like `torch.bitwise_not`."""
    x = _t(input)
    if x.data.dtype.kind not in "biu":
        raise DtypeError(f"bitwise_not() needs a bool or integer tensor, got {x.dtype}")
    return apply1(ops.OPS["bitwise_not"], x)


def bitwise_left_shift(input, other) -> Tensor:
    """x << y on integers, wrapping as PyTorch's (shifts past the width give 0)."""
    return _bitwise("left_shift", "bitwise_left_shift", input, other, bool_ok=False)


def bitwise_right_shift(input, other) -> Tensor:
    """x >> y on integers, arithmetic (sign-filling) for signed dtypes."""
    return _bitwise("right_shift", "bitwise_right_shift", input, other, bool_ok=False)
