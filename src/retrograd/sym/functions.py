"""rg.sym's functions: `exp`, `log`, ..., `erf`, `atan2`, `softplus`, `where`; each one op
of the table.

Each builds its node through `expr.build`, so it is simplified like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .expr import Expr, as_expr, build


def _unary(opname: str, doc: str) -> Callable[[Any], Expr]:
    """The rg.sym function for the one-input op `opname` of the op table."""
    def fn(x: Any) -> Expr:
        return build(opname, (as_expr(x),))

    fn.__name__ = fn.__qualname__ = opname
    fn.__doc__ = doc
    return fn


exp = _unary("exp", "e**x.")
log = _unary("log", "Natural logarithm.")
log1p = _unary("log1p", "log(1 + x).")
sqrt = _unary("sqrt", "Square root.")
sin = _unary("sin", "Sine.")
cos = _unary("cos", "Cosine.")
tan = _unary("tan", "Tangent.")
tanh = _unary("tanh", "Hyperbolic tangent.")
sigmoid = _unary("sigmoid", "1 / (1 + exp(-x)).")
relu = _unary("relu", "max(x, 0); its derivative at 0 is 0.")
abs = _unary("abs", "Absolute value; its derivative at 0 is 0.")  # noqa: A001


def maximum(x: Any, y: Any) -> Expr:
    """Element-wise maximum (ties share the gradient)."""
    return build("maximum", (as_expr(x), as_expr(y)))


def minimum(x: Any, y: Any) -> Expr:
    """Element-wise minimum (ties share the gradient)."""
    return build("minimum", (as_expr(x), as_expr(y)))


def where(cond: Any, x: Any, y: Any) -> Expr:
    """`x` where `cond` holds (is nonzero), else `y`."""
    return build("where", (as_expr(cond), as_expr(x), as_expr(y)))


# The smooth element-wise ops of `ops/math.py` and `ops/activations.py`: nothing here knows
# their derivatives either (the sweep calls each op's own rule).
log2 = _unary("log2", "Base-2 logarithm.")
log10 = _unary("log10", "Base-10 logarithm.")
exp2 = _unary("exp2", "2**x.")
expm1 = _unary("expm1", "exp(x) - 1, accurate near 0.")
rsqrt = _unary("rsqrt", "1 / sqrt(x).")
reciprocal = _unary("reciprocal", "1 / x.")
square = _unary("square", "x * x.")
asin = _unary("asin", "Inverse sine.")
acos = _unary("acos", "Inverse cosine.")
atan = _unary("atan", "Inverse tangent.")
sinh = _unary("sinh", "Hyperbolic sine.")
cosh = _unary("cosh", "Hyperbolic cosine.")
asinh = _unary("asinh", "Inverse hyperbolic sine.")
acosh = _unary("acosh", "Inverse hyperbolic cosine.")
atanh = _unary("atanh", "Inverse hyperbolic tangent.")
erf = _unary("erf", "The error function.")
erfc = _unary("erfc", "1 - erf(x).")
erfinv = _unary("erfinv", "The inverse of erf on (-1, 1).")
silu = _unary("silu", "x * sigmoid(x).")
mish = _unary("mish", "x * tanh(softplus(x)).")
logsigmoid = _unary("logsigmoid", "log(sigmoid(x)), without overflow.")
softsign = _unary("softsign", "x / (1 + |x|).")


def _binary(opname: str, doc: str) -> Callable[[Any, Any], Expr]:
    """The rg.sym function for the two-input op `opname` of the op table."""
    def fn(x: Any, y: Any) -> Expr:
        return build(opname, (as_expr(x), as_expr(y)))

    fn.__name__ = fn.__qualname__ = opname
    fn.__doc__ = doc
    return fn


atan2 = _binary("atan2", "The angle of the point (x, y) = (second, first), in (-pi, pi].")
hypot = _binary("hypot", "sqrt(x**2 + y**2).")
logaddexp = _binary("logaddexp", "log(exp(x) + exp(y)), without overflow.")
logaddexp2 = _binary("logaddexp2", "log2(2**x + 2**y), without overflow.")
xlogy = _binary("xlogy", "x * log(y), 0 where x == 0.")


def gelu(x: Any, approximate: str = "none") -> Expr:
    """x * Phi(x), or its tanh approximation (`approximate='tanh'`)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu(): 'approximate' must be 'none' or 'tanh', got {approximate!r}")
    return build("gelu", (as_expr(x),), (("approximate", approximate),))


def softplus(x: Any, beta: float = 1.0, threshold: float = 20.0) -> Expr:
    """log(1 + exp(beta * x)) / beta, and x where beta * x > threshold."""
    return build("softplus", (as_expr(x),), (("beta", float(beta)),
                                             ("threshold", float(threshold))))


MATH = {f.__name__: f for f in (
    log2, log10, exp2, expm1, rsqrt, reciprocal, square, asin, acos, atan, sinh, cosh, asinh,
    acosh, atanh, erf, erfc, erfinv, silu, mish, logsigmoid, softsign, atan2, hypot, logaddexp,
    logaddexp2, xlogy, gelu, softplus)}
"""The functions above by name (for `parse`)."""
BINARY = frozenset((atan2, hypot, logaddexp, logaddexp2, xlogy))
"""Those of them that take two arguments."""
