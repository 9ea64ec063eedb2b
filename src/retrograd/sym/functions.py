"""rg.sym's functions: `exp`, `log`, ..., `maximum`, `minimum`, `where`, each one op of the table.

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
