"""rg.sym's simplification: the rewrites `build` applies to every new node, and Horner form.

These rewrites give exactly what plain evaluation would (up to the sign of a
zero result): `a+0 -> a`, `a-0 -> a`, `0-a -> -a`, `1*a -> a`, `-1*a -> -a`,
`a/1 -> a`, `a**1 -> a`, `a**0 -> 1`, `1**a -> 1`, `--a -> a`, `a+(-b) -> a-b`,
`a-(-b) -> a+b`, `-(a-b) -> b-a`, `(-a)*b -> -(a*b)`, `where(c, a, a) -> a`.
Those that are exact only for finite values (`0*a -> 0`, `a-a -> 0`,
`0/a -> 0`) apply only under the `assume_finite` rule, as does `horner`,
which the reverse sweep applies to its results. Constant folding and the
canonical order of `+` and `*` operands are in `expr.build` itself.
"""

from __future__ import annotations

import numpy as np

from ..ir import CONST, VAR
from .expr import BOOL_OPS, ONE, REWRITES, ZERO, Expr, build, const_node, is_const
from .state import STATE


def _boolish(n: Expr) -> bool:
    """A comparison: 0/1 valued, so `c + 0` stays `c + 0` (it turns the step into a float)."""
    return n.op in BOOL_OPS


def _rw_add(a: Expr, b: Expr) -> Expr | None:
    if is_const(b, 0) and not _boolish(a):
        return a
    if is_const(a, 0) and not _boolish(b):
        return b
    if b.op == "neg":
        return build("sub", (a, b.inputs[0]))
    if a.op == "neg":
        return build("sub", (b, a.inputs[0]))
    return None


def _rw_sub(a: Expr, b: Expr) -> Expr | None:
    if is_const(b, 0) and not _boolish(a):
        return a
    if is_const(a, 0) and not _boolish(b):
        return build("neg", (b,))
    if a is b and STATE.assume_finite:
        return ZERO
    if b.op == "neg":
        return build("add", (a, b.inputs[0]))
    return None


def _rw_mul_const(c: float, y: Expr) -> Expr | None:
    if c == 1 and not _boolish(y):
        return y
    if c == -1 and not _boolish(y):
        return build("neg", (y,))
    if c == 0 and STATE.assume_finite:
        return ZERO
    return None


def _rw_mul(a: Expr, b: Expr) -> Expr | None:
    if a.op == CONST and a._val.__class__ is float:
        r = _rw_mul_const(a._val, b)
        if r is not None:
            return r
    if b.op == CONST and b._val.__class__ is float:
        r = _rw_mul_const(b._val, a)
        if r is not None:
            return r
    if a.op == "neg":
        if b.op == "neg":
            return build("mul", (a.inputs[0], b.inputs[0]))
        return build("neg", (build("mul", (a.inputs[0], b)),))
    if b.op == "neg":
        return build("neg", (build("mul", (a, b.inputs[0])),))
    return None


def _rw_div(a: Expr, b: Expr) -> Expr | None:
    if is_const(b, 1) and not _boolish(a):
        return a
    if is_const(b, -1) and not _boolish(a):
        return build("neg", (a,))
    if is_const(a, 0) and STATE.assume_finite:
        return ZERO
    if a.op == "neg":
        if b.op == "neg":
            return build("div", (a.inputs[0], b.inputs[0]))
        return build("neg", (build("div", (a.inputs[0], b)),))
    if b.op == "neg":
        return build("neg", (build("div", (a, b.inputs[0])),))
    return None


def _rw_pow(a: Expr, b: Expr) -> Expr | None:
    if is_const(b, 1) and not _boolish(a):
        return a
    if is_const(b, 0) or is_const(a, 1):
        return ONE
    return None


def _rw_neg(a: Expr) -> Expr | None:
    if a.op == "neg":
        return a.inputs[0]
    if a.op == "sub":
        return build("sub", (a.inputs[1], a.inputs[0]))
    return None


def _rw_where(c: Expr, a: Expr, b: Expr) -> Expr | None:
    if a is b:
        return a
    if c.op == CONST and np.ndim(c._val) == 0:
        return a if c._val else b
    return None



REWRITES.update({
    "add": _rw_add, "sub": _rw_sub, "mul": _rw_mul, "div": _rw_div, "pow": _rw_pow,
    "neg": _rw_neg, "where": _rw_where,
})


# ---------------------------------------------------------------- polynomials

def _monomial(n: Expr) -> tuple[float, Expr | None, int] | None:
    """(c, x, k) when `n` is c * x**k (x a variable, k a whole number), else None."""
    c = 1.0
    if n.op == "mul" and n.inputs[0].op == CONST and n.inputs[0]._val.__class__ is float:
        c, n = n.inputs[0]._val, n.inputs[1]
    if n.op == CONST and n._val.__class__ is float and c == 1.0:
        return n._val, None, 0
    if n.op == VAR:
        return c, n, 1
    if n.op == "pow" and n.inputs[0].op == VAR and n.inputs[1].op == CONST:
        k = n.inputs[1]._val
        if k.__class__ is float and k.is_integer() and 0 <= k <= 1_000_000:
            return c, n.inputs[0], int(k)
    return None


def horner(e: Expr) -> Expr:
    """A polynomial in one variable, c0 + c1*x + ... + cn*x**n written as sums of
    monomials, in Horner form c0 + x*(c1 + x*(... + x*cn)) where that has fewer nodes
    (it also evaluates in fewer operations). Part of `assume_finite`: at x = inf,
    `x**2 - x` is nan but its Horner form `(x - 1)*x` is inf."""
    if e.op not in ("add", "sub"):
        return e
    terms: dict[int, float] = {}
    x = None
    stack = [(e, 1.0)]
    while stack:
        n, sign = stack.pop()
        if n.op in ("add", "sub"):
            stack.append((n.inputs[0], sign))
            stack.append((n.inputs[1], sign if n.op == "add" else -sign))
            continue
        if n.op == "neg":
            stack.append((n.inputs[0], -sign))
            continue
        m = _monomial(n)
        if m is None or (m[1] is not None and x is not None and m[1] is not x):
            return e
        c, v, k = m
        x = v if v is not None else x
        terms[k] = terms.get(k, 0.0) + sign * c
    terms = {k: c for k, c in terms.items() if c != 0.0}
    if x is None or not terms:
        return e
    low, high = min(terms), max(terms)
    h = const_node(terms[high])
    for k in range(high - 1, low - 1, -1):
        h = build("mul", (h, x))
        if k in terms:
            h = build("add", (h, const_node(terms[k])))
    if low:
        h = build("mul", (h, build("pow", (x, const_node(float(low))))))
    return h if h.size < e.size else e
