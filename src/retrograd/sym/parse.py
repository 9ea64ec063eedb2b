"""Expressions read in: from Python-syntax text (`parse`) and from SymPy (`from_sympy`).

Both walk their input with an explicit stack (no recursion) and build through
the public constructors, so what they give is simplified and hash-consed like
anything built by hand: `parse(str(e)) is e`.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

from .export import load_sympy
from .expr import ONE, ZERO, Expr, build, const, is_const, var
from .functions import (
    BINARY,
    MATH,
    abs,
    cos,
    exp,
    log,
    log1p,
    maximum,
    minimum,
    relu,
    sigmoid,
    sin,
    sqrt,
    tan,
    tanh,
    where,
)

# ---------------------------------------------------------------- SymPy

def _sympy_const(e: Any) -> Expr:
    """A constant for a SymPy number (`zoo`, SymPy's 1/0, becomes inf)."""
    try:
        return const(float(e))
    except TypeError:
        pass
    try:
        return const(complex(e))
    except TypeError:
        return const(math.inf)  # SymPy's zoo: a division by zero


def from_sympy(expr: Any) -> Expr:
    """A rg.sym expression for a SymPy expression (symbols become variables by name)."""
    sp = load_sympy()
    expr = sp.sympify(expr)
    funcs = {sp.exp: exp, sp.log: log, sp.sin: sin, sp.cos: cos, sp.tan: tan, sp.tanh: tanh,
             sp.Abs: abs, sp.sign: lambda a: build("sign", (a,))}
    rels = {sp.StrictGreaterThan: "gt", sp.StrictLessThan: "lt", sp.GreaterThan: "ge",
            sp.LessThan: "le", sp.Equality: "eq", sp.Unequality: "ne"}
    done: dict = {}
    stack = [expr]
    while stack:
        e = stack[-1]
        if e in done:
            stack.pop()
            continue
        if e.is_Piecewise:
            kids = [a for pair in e.args for a in pair if a is not sp.true]
        else:
            kids = list(e.args)
        todo = [k for k in kids if k not in done]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        args = [done[k] for k in kids]
        if e.is_Symbol:
            r = var(e.name)
        elif e.is_Atom and e.is_number:  # numbers, pi, E, I, oo, zoo, nan
            r = _sympy_const(e)
        elif e.is_Add:
            r = args[0]
            for a in args[1:]:
                r = r + a
        elif e.is_Mul:
            num, den = [], []
            for k, a in zip(kids, args):
                if k.is_Pow and k.exp.is_Number and k.exp < 0:
                    den.append(done[k.base] if k.exp == -1 else
                               build("pow", (done[k.base], const(float(-k.exp)))))
                elif k.is_Rational and not k.is_Integer:  # x/3 is Mul(1/3, x) in SymPy
                    if k.p != 1:
                        num.append(const(float(k.p)))
                    den.append(const(float(k.q)))
                else:
                    num.append(a)
            r = num[0] if num else ONE
            for a in num[1:]:
                r = r * a
            if den:
                d = den[0]
                for a in den[1:]:
                    d = d * a
                r = r / d
        elif e.is_Pow:
            b, p = args
            r = sqrt(b) if e.exp == sp.Rational(1, 2) else b ** p
        elif e.func in funcs and len(args) == 1:
            r = funcs[e.func](args[0])
        elif e.func in (sp.Max, sp.Min):
            zero = [a for a in args if is_const(a, 0)]
            rest = [a for a in args if not is_const(a, 0)]
            if e.func is sp.Max and zero and len(rest) == 1:
                r = relu(rest[0])
            else:
                f = maximum if e.func is sp.Max else minimum
                r = args[0]
                for a in args[1:]:
                    r = f(r, a)
        elif e.func in rels:
            r = build(rels[e.func], tuple(args))
        elif e.is_Piecewise:
            pairs = list(e.args)
            if pairs[-1][1] is not sp.true:
                raise TypeError("from_sympy(): a Piecewise needs a final (value, True) branch")
            r = done[pairs[-1][0]]
            for val, cond in reversed(pairs[:-1]):
                r = where(done[cond], done[val], r)
        elif e is sp.true or e is sp.false:
            r = ONE if e is sp.true else ZERO
        else:
            raise TypeError(f"from_sympy(): cannot convert {type(e).__name__} ({e})")
        done[e] = r
    return done[expr]


# ---------------------------------------------------------------- text

_FUNCS: dict[str, Callable] = {
    "exp": exp, "log": log, "log1p": log1p, "sqrt": sqrt, "sin": sin, "cos": cos, "tan": tan,
    "tanh": tanh, "sigmoid": sigmoid, "relu": relu, "abs": abs, "max": maximum,
    "min": minimum, "maximum": maximum, "minimum": minimum,
}
_FUNCS.update(MATH)
_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow"}


def parse(text: str) -> Expr:
    """An expression from Python-syntax text such as "x*exp(y) - 2" (nothing is executed).

    Names become variables; the functions of rg.sym may be called; anything
    else raises `ValueError` saying what could not be parsed.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as err:
        raise ValueError(f"cannot parse {text!r}: {getattr(err, 'msg', err)}") from None
    done: dict = {}
    stack = [tree.body]
    while stack:
        node = stack[-1]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            kids = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            kids = [node.operand]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _FUNCS and not node.keywords:
            kids = list(node.args)
        elif isinstance(node, ast.Name):
            kids = []
        elif isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            kids = []
        else:
            what = ast.get_source_segment(text.strip(), node) or type(node).__name__
            raise ValueError(f"cannot parse {text!r}: unsupported {what!r}")
        todo = [k for k in kids if id(k) not in done]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        args = [done[id(k)] for k in kids]
        if isinstance(node, ast.BinOp):
            r = build(_BINOPS[type(node.op)], tuple(args))
        elif isinstance(node, ast.UnaryOp):
            r = -args[0] if isinstance(node.op, ast.USub) else args[0]
        elif isinstance(node, ast.Call):
            fn = _FUNCS[node.func.id]
            want = 2 if fn in (maximum, minimum) or fn in BINARY else 1
            if len(args) != want:
                raise ValueError(f"cannot parse {text!r}: {node.func.id}() takes {want} "
                                 f"argument{'s' if want > 1 else ''}, got {len(args)}")
            r = fn(*args)
        elif isinstance(node, ast.Name):
            r = var(node.id)
        else:
            r = const(node.value)
        done[id(node)] = r
    return done[id(tree.body)]
