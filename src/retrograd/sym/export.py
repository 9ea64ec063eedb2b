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
    }
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
        elif op in fns:
            m[n] = fns[op](*[m[i] for i in n.inputs])
        else:
            raise TypeError(f"to_sympy(): no SymPy form for the op '{op}'")
    return [m[e] for e in exprs]
