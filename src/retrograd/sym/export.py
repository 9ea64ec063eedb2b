"""rg.sym expressions as SymPy expressions (`Expr.to_sympy`); SymPy is imported only when used.

Reads nodes and builds nothing of rg.sym's, so it sits below `expr.py`;
the way back in, `from_sympy`, lives with the other readers in `parse.py`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .. import ir
from ..ir import CONST, VAR


def load_sympy() -> Any:
    """The `sympy` module, or an ImportError saying how to install it."""
    try:
        import sympy
    except ImportError:
        raise ImportError("rg.sym's SymPy conversion needs SymPy: "
                          "pip install 'retrograd[sym]'") from None
    return sympy


def _sympy_number(sp: Any, v: Any) -> Any:
    """An exact SymPy number for a constant: a fraction when it is one with a small denominator."""
    if isinstance(v, np.ndarray):
        raise TypeError("to_sympy(): array constants have no SymPy form")
    if isinstance(v, complex):
        return sp.Float(v.real) + sp.I * sp.Float(v.imag)
    if math.isnan(v):
        return sp.nan
    if math.isinf(v):
        return sp.oo if v > 0 else -sp.oo
    f = Fraction(v)
    if f.denominator <= 1024:
        return sp.Rational(f.numerator, f.denominator)
    return sp.Float(v, 17)


def to_sympy(exprs: Sequence[ir.IRNode]) -> list:
    """SymPy expressions for `exprs` (comparisons become 0/1 Piecewise steps, as evaluated)."""
    sp = load_sympy()

    def step(a: Any, b: Any, rel: Any) -> Any:
        return sp.Piecewise((1, rel(a, b)), (0, True))

    rels = {"gt": sp.StrictGreaterThan, "lt": sp.StrictLessThan, "ge": sp.GreaterThan,
            "le": sp.LessThan, "eq": sp.Eq, "ne": sp.Ne}
    fns = {
        "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
        "div": lambda a, b: a / b, "pow": lambda a, b: a ** b, "neg": lambda a: -a,
        "exp": sp.exp, "log": sp.log, "log1p": lambda a: sp.log(1 + a), "sqrt": sp.sqrt,
        "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "tanh": sp.tanh,
        "sigmoid": lambda a: 1 / (1 + sp.exp(-a)), "relu": lambda a: sp.Max(a, 0),
        "abs": sp.Abs, "sign": sp.sign, "maximum": sp.Max, "minimum": sp.Min,
        "log2": lambda a: sp.log(a, 2), "log10": lambda a: sp.log(a, 10),
        "exp2": lambda a: 2 ** a, "expm1": lambda a: sp.exp(a) - 1,
        "rsqrt": lambda a: 1 / sp.sqrt(a), "reciprocal": lambda a: 1 / a,
        "square": lambda a: a ** 2, "asin": sp.asin, "acos": sp.acos, "atan": sp.atan,
        "sinh": sp.sinh, "cosh": sp.cosh, "asinh": sp.asinh, "acosh": sp.acosh,
        "atanh": sp.atanh, "erf": sp.erf, "erfc": sp.erfc, "erfinv": sp.erfinv,
        "atan2": sp.atan2, "hypot": lambda a, b: sp.sqrt(a ** 2 + b ** 2),
        "logaddexp": lambda a, b: sp.log(sp.exp(a) + sp.exp(b)),
        "logaddexp2": lambda a, b: sp.log(2 ** a + 2 ** b, 2),
        "xlogy": lambda a, b: sp.Piecewise((0, sp.Eq(a, 0)), (a * sp.log(b), True)),
        "silu": lambda a: a / (1 + sp.exp(-a)),
        "mish": lambda a: a * sp.tanh(sp.log(1 + sp.exp(a))),
        "logsigmoid": lambda a: -sp.log(1 + sp.exp(-a)),
        "softsign": lambda a: a / (1 + sp.Abs(a)),
    }
    logic = {"logical_and": sp.And, "logical_or": sp.Or, "logical_xor": sp.Xor}
    m: dict = {}
    relational: dict = {}
    for n in ir.toposort(exprs):
        op = n.op
        if op == VAR:
            m[n] = sp.Symbol(n.attrs[0][1])
        elif op == CONST:
            m[n] = _sympy_number(sp, n._val)
        elif op in rels:
            a, b = (m[i] for i in n.inputs)
            relational[n] = rels[op](a, b)
            m[n] = step(a, b, rels[op])
        elif op == "where":
            c, a, b = n.inputs
            cond = relational.get(c)
            if cond is None:
                cond = sp.Ne(m[c], 0)
            m[n] = sp.Piecewise((m[a], cond), (m[b], True))
        elif op in logic or op == "logical_not":
            conds = [relational.get(i, None) for i in n.inputs]
            conds = [sp.Ne(m[i], 0) if c is None else c for c, i in zip(conds, n.inputs)]
            relational[n] = sp.Not(conds[0]) if op == "logical_not" else logic[op](*conds)
            m[n] = sp.Piecewise((1, relational[n]), (0, True))
        elif op in fns:
            m[n] = fns[op](*[m[i] for i in n.inputs])
        else:
            raise TypeError(f"to_sympy(): no SymPy form for the op '{op}'")
    return [m[e] for e in exprs]
