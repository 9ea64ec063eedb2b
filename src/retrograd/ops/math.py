"""Element-wise math beyond `elementwise.py`: rounding, logarithms and powers, inverse
trigonometric and hyperbolic functions, the error function, two-input functions
(`atan2`, `hypot`, `logaddexp`, `lerp`, `fmod`, ...), integer division and shifts,
and predicates (`isnan`, `isclose`, `logical_and`, `all`, ...).

One row per op, the forward beside each input's local derivative (`g` times it
serves as both vjp and jvp). Values and gradients follow PyTorch, at the
non-differentiable points too: rounding has a zero gradient; `fmod(x, y)` and
`remainder(x, y)` pass `g` to `x` and `-g * trunc(x / y)` (`floor`) to `y`;
`floor_divide` has a zero gradient; `copysign` passes `g * sign` to `x` (0 at
`x == 0`); `nan_to_num` passes `g` where `x` is finite. Integer inputs keep
their dtype where PyTorch's do (`floor` of an integer is itself) and divide by
zero with PyTorch's error.
"""

from __future__ import annotations

import math

import numpy as np

from ..primitive import defop, elementwise
from ._special import erf as _erf
from ._special import erfc as _erfc
from ._special import erfinv as _erfinv
from .elementwise import zero_grad

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0


_zero = zero_grad  # the derivative of a piecewise-constant op: zeros, NaN-proof


def _keep_int(f):
    """A rounding forward that returns integer and bool inputs unchanged (a copy)."""
    def forward(x, **attrs):
        if x.dtype.kind in "biu":
            return x.copy()
        return f(x, **attrs)
    forward.__name__ = f.__name__
    return forward


def _round(x, *, decimals=0):
    return np.round(x, decimals) if decimals else np.rint(x)


def _frac(x):
    return x - np.trunc(x)


def _nan_to_num(x, *, nan=0.0, posinf=None, neginf=None):
    return np.nan_to_num(x, copy=True, nan=nan, posinf=posinf, neginf=neginf)


# Rounding: zero gradient (PyTorch's), except frac's, which is 1.
floor = elementwise("floor", _keep_int(np.floor), _zero, reads=(), smooth=False)
ceil = elementwise("ceil", _keep_int(np.ceil), _zero, reads=(), smooth=False)
trunc = elementwise("trunc", _keep_int(np.trunc), _zero, reads=(), smooth=False)
round = elementwise("round", _keep_int(_round), _zero, reads=(), smooth=False)  # noqa: A001
frac = elementwise("frac", _frac, lambda m, g, out, x: g, reads=(), smooth=False)
nan_to_num = elementwise("nan_to_num", _nan_to_num,
                         lambda m, g, out, x, **kw: m.where(m.isfinite(x), g, 0.0))

# Logarithms, powers, reciprocals.
log2 = elementwise("log2", np.log2, lambda m, g, out, x: g / (x * _LN2), into=np.log2)
log10 = elementwise("log10", np.log10, lambda m, g, out, x: g / (x * _LN10), into=np.log10)
exp2 = elementwise("exp2", np.exp2, lambda m, g, out, x: g * out * _LN2, save_out=True,
                   reads=(), into=np.exp2)
expm1 = elementwise("expm1", np.expm1, lambda m, g, out, x: g * out + g, save_out=True,
                    reads=(), into=np.expm1)
rsqrt = elementwise("rsqrt", lambda x: np.true_divide(1.0, np.sqrt(x)),
                    lambda m, g, out, x: g * out * out * out * -0.5, save_out=True, reads=(),
                    fresh=True)
reciprocal = elementwise("reciprocal", lambda x: np.true_divide(1.0, x),
                         lambda m, g, out, x: -g * out * out, save_out=True, reads=(),
                         fresh=True)
square = elementwise("square", np.square, lambda m, g, out, x: g * x * 2.0, into=np.square)

# Inverse trigonometric and hyperbolic functions.
asin = elementwise("asin", np.arcsin, lambda m, g, out, x: g * m.rsqrt(1.0 - x * x),
                   into=np.arcsin)
acos = elementwise("acos", np.arccos, lambda m, g, out, x: -g * m.rsqrt(1.0 - x * x),
                   into=np.arccos)
atan = elementwise("atan", np.arctan, lambda m, g, out, x: g / (x * x + 1.0), into=np.arctan)
sinh = elementwise("sinh", np.sinh, lambda m, g, out, x: g * m.cosh(x), into=np.sinh)
cosh = elementwise("cosh", np.cosh, lambda m, g, out, x: g * m.sinh(x), into=np.cosh)
asinh = elementwise("asinh", np.arcsinh, lambda m, g, out, x: g * m.rsqrt(x * x + 1.0),
                    into=np.arcsinh)
acosh = elementwise("acosh", np.arccosh, lambda m, g, out, x: g * m.rsqrt(x * x - 1.0),
                    into=np.arccosh)
atanh = elementwise("atanh", np.arctanh, lambda m, g, out, x: g / (1.0 - x * x),
                    into=np.arctanh)

# The error function (vectorised, accurate to a few units in the last place: _special.py).
erf = elementwise("erf", _erf, lambda m, g, out, x: g * m.exp(-(x * x)) * _TWO_OVER_SQRT_PI,
                  fresh=True)
erfc = elementwise("erfc", _erfc, lambda m, g, out, x: g * m.exp(-(x * x)) * -_TWO_OVER_SQRT_PI,
                   fresh=True)
erfinv = elementwise("erfinv", _erfinv,
                     lambda m, g, out, x: g * m.exp(out * out) * _SQRT_PI_OVER_TWO,
                     save_out=True, reads=(), fresh=True)


# Two inputs (broadcast; the runner sums each gradient back to its input's shape).
def _copysign_dx(m, g, out, x, y):
    return g * m.where(x == 0, 0.0, out / m.where(x == 0, 1.0, x))


def _xlogy(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = x * np.log(y)
    return np.where((x == 0) & ~np.isnan(y), np.zeros_like(r), r)


def _xlogy_dx(m, g, out, x, y):
    # PyTorch's: g * log(y), except 0 where x == 0 and y <= 0 (and 0 where g == 0).
    return m.where(m.logical_and(x == 0, y <= 0), 0.0, m.xlogy(g, y))


def _lerp(start, end, weight):
    d = end - start
    return np.where(np.abs(weight) < 0.5, start + weight * d, end - d * (1 - weight))


class IntegerDivisionError(ZeroDivisionError, RuntimeError):
    """Integer division by zero: PyTorch's RuntimeError('ZeroDivisionError'), and a
    ZeroDivisionError."""


def _int_divisor(x, y, name):
    """PyTorch refuses integer division by zero, where a quotient is computed: an empty
    dividend (so an empty result) divides by nothing."""
    kind = y.dtype.kind if hasattr(y, "dtype") else np.asarray(y).dtype.kind
    if kind in "biu" and np.size(x) and bool(np.any(y == 0)):
        raise IntegerDivisionError(f"{name}: integer division by zero")


def _floor_divide(x, y):
    _int_divisor(x, y, "floor_divide")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.floor_divide(x, y)


def _trunc_divide(x, y):
    _int_divisor(x, y, "div(rounding_mode='trunc')")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if np.result_type(x, y).kind in "biu":
            q = np.floor_divide(x, y)
            return q + ((q < 0) & (q * y != x))  # floor rounds negative quotients down
        return np.trunc(np.true_divide(x, y))


def _fmod(x, y):
    _int_divisor(x, y, "fmod")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(x, y)


def _remainder(x, y):
    _int_divisor(x, y, "remainder")
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.remainder(x, y)
    if r.dtype.kind == "f":  # a zero takes the dividend's sign (torch's fmod-based kernel),
        zero = r == 0        # not the divisor's (NumPy's)
        if zero.any():
            r = np.where(zero, np.copysign(np.zeros((), r.dtype), x), r)
    return r


def _atan2_d(which):
    """atan2's partials, g x / (x^2 + y^2) and -g y / (x^2 + y^2), taken as 0 at the
    origin (PyTorch's value there; the limit does not exist)."""
    def rule(m, g, out, y, x):
        den = x * x + y * y
        at0 = den == 0
        num = g * x if which == 0 else -g * y
        return m.where(at0, num * 0.0, num / m.where(at0, 1.0, den))
    return rule


def _atan2_t(which):
    """atan2's jvp, PyTorch's: t x / (x^2 + y^2) and -t y / (x^2 + y^2) as they stand, so
    NaN at the origin (its reverse mode gives 0 there)."""
    def rule(m, t, out, y, x):
        return (t * x if which == 0 else -t * y) / (x * x + y * y)
    return rule


atan2 = defop("atan2", np.arctan2, (_atan2_d(0), _atan2_d(1)), (_atan2_t(0), _atan2_t(1)),
              broadcast=True, into=np.arctan2)
hypot = elementwise("hypot", np.hypot, lambda m, g, out, x, y: g * x / out,
                    lambda m, g, out, x, y: g * y / out, save_out=True, into=np.hypot)
copysign = elementwise("copysign", np.copysign, _copysign_dx, _zero, save_out=True,
                       reads=(0,), into=np.copysign)
def _logaddexp_d(which: int, base_pow):
    """logaddexp's (or logaddexp2's) derivative in one argument, PyTorch's formula
    g / (1 + b**(other - self)): 1 for the +inf argument beside a finite or -inf one and 0
    for the other (the output-based exp(self - out) gives NaN there), NaN where both are
    the same infinity."""
    def rule(m, g, out, x, y):
        a, b = (x, y) if which == 0 else (y, x)
        return g / (1 + base_pow(m, b - a))
    return rule


logaddexp = elementwise("logaddexp", np.logaddexp, _logaddexp_d(0, lambda m, d: m.exp(d)),
                        _logaddexp_d(1, lambda m, d: m.exp(d)), into=np.logaddexp)
logaddexp2 = elementwise("logaddexp2", np.logaddexp2,
                         _logaddexp_d(0, lambda m, d: m.exp2(d)),
                         _logaddexp_d(1, lambda m, d: m.exp2(d)), into=np.logaddexp2)
xlogy = elementwise("xlogy", _xlogy, _xlogy_dx, lambda m, g, out, x, y: g * x / y, fresh=True)


def _bce(x, t):
    """-(t log x + (1 - t) log(1 - x)), each log clamped at -100 (PyTorch's: x = 0 or 1
    gives a finite loss)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lx = np.maximum(np.log(x), -100)
        l1 = np.maximum(np.log1p(-x), -100)
    return -(t * lx + (1 - t) * l1)


_BCE_EPS = float(np.float32(1e-12))  # PyTorch's EPSILON, a float constant in every dtype

def _bce_slope(x, t):
    with np.errstate(divide="ignore", invalid="ignore"):
        return (x - t) / np.maximum((1.0 - x) * x, _BCE_EPS)


def _bce_slope_dx(m, g, out, x, t):
    """PyTorch's binary_cross_entropy_double_backward: (x^2 - 2 x t + t) / ((x + eps)^2
    (1 - x + eps)^2), eps = 1e-12: 0 at x = t = 0 or 1 (the quotient's own derivative
    there, through the clamp, would be 1e12)."""
    a, b = x + 1e-12, 1.0 - x + 1e-12
    return g * (x * x - 2.0 * x * t + t) / (a * a * (b * b))


# bce's slope in x, (x - t) / max(x (1 - x), 1e-12), as an op of its own so that its
# derivatives (second derivatives of bce) are PyTorch's formulas
bce_slope = elementwise(
    "bce_slope", _bce_slope, _bce_slope_dx,
    lambda m, g, out, x, t: -g / m.maximum((1.0 - x) * x, 1e-12), fresh=True)  # (a double)

# PyTorch's derivatives: (x - t) / max(x (1 - x), 1e-12) for x (so 0 where x = t at 0 or 1,
# +-1e12 where they differ), log(1 - x) - log(x) for t, both unclamped
binary_cross_entropy = elementwise(
    "binary_cross_entropy", _bce,
    lambda m, g, out, x, t: g * m.bce_slope(x, t),
    lambda m, g, out, x, t: g * (m.log1p(-x) - m.log(x)), fresh=True)
lerp = elementwise("lerp", _lerp, lambda m, g, out, s, e, w: g * (1.0 - w),
                   lambda m, g, out, s, e, w: g * w, lambda m, g, out, s, e, w: g * (e - s),
                   fresh=True)
fmod = elementwise("fmod", _fmod, lambda m, g, out, x, y: g,
                   lambda m, g, out, x, y: -g * m.trunc_divide(x, y), reads=(0, 1),
                   smooth=False, fresh=True)
remainder = elementwise("remainder", _remainder, lambda m, g, out, x, y: g,
                        lambda m, g, out, x, y: -g * m.floor_divide(x, y), reads=(0, 1),
                        smooth=False, fresh=True)
floor_divide = elementwise("floor_divide", _floor_divide, _zero, _zero, reads=(),
                           smooth=False, fresh=True)
trunc_divide = elementwise("trunc_divide", _trunc_divide, _zero, _zero, reads=(),
                           smooth=False, fresh=True)

# Shifts of integers (no gradient): NumPy's, which like PyTorch give 0 (or -1 for a
# negative value shifted right) once the shift reaches the width of the dtype.
left_shift = defop("left_shift", np.left_shift, fresh=True)
right_shift = defop("right_shift", np.right_shift, fresh=True)

# Predicates and logic (bool results, no gradient).
isnan = defop("isnan", np.isnan, fresh=True)
isinf = defop("isinf", np.isinf, fresh=True)
isfinite = defop("isfinite", np.isfinite, fresh=True)
isclose = defop("isclose", lambda x, y, *, rtol=1e-05, atol=1e-08, equal_nan=False: np.isclose(
    x, y, rtol=rtol, atol=atol, equal_nan=equal_nan), fresh=True)
logical_and = defop("logical_and", np.logical_and, fresh=True)
logical_or = defop("logical_or", np.logical_or, fresh=True)
logical_xor = defop("logical_xor", np.logical_xor, fresh=True)
logical_not = defop("logical_not", np.logical_not, fresh=True)
all = defop("all", lambda x, *, axis=None, keepdims=False: np.asarray(  # noqa: A001
    np.all(x, axis=axis, keepdims=keepdims)), fresh=True)
any = defop("any", lambda x, *, axis=None, keepdims=False: np.asarray(  # noqa: A001
    np.any(x, axis=axis, keepdims=keepdims)), fresh=True)
