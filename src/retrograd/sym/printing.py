"""rg.sym expressions as readable infix text (`str(e)`), and the labels of drawn nodes.

Works on any node of the package's graph by reading `op`, `inputs`, `attrs`
(and a constant's value); it builds nothing, so it sits below `expr.py`.
Every walk is a loop with an explicit stack: a chain 10,000 deep prints.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import ir
from ..ir import CONST, VAR

LABELS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "neg": "-",
           "gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
_INFIX = {"add": " + ", "sub": " - ", "mul": "*", "div": "/", "pow": "**", "gt": " > ",
          "lt": " < ", "ge": " >= ", "le": " <= ", "eq": " == ", "ne": " != "}
_PREC = {"add": 1, "sub": 1, "mul": 2, "div": 2, "neg": 3, "pow": 4,
         "gt": 0, "lt": 0, "ge": 0, "le": 0, "eq": 0, "ne": 0}
_INLINE_LIMIT = 200


def fmt(v: Any) -> str:
    """A constant as text: whole floats without `.0`, `-0.0` kept, small arrays in full."""
    if v.__class__ is float:
        if v == 0 and math.copysign(1.0, v) < 0:
            return "-0.0"
        if v.is_integer() and -1e16 < v < 1e16:
            return str(int(v))
        return repr(v)
    if isinstance(v, np.ndarray):
        return np.array2string(v, separator=", ", threshold=8) if v.size else "[]"
    return repr(v)


def _prec(n: ir.IRNode, names: dict) -> int:
    if n in names:
        return 5
    if n.op == CONST:
        return 3 if fmt(n._val).startswith("-") else 5
    return _PREC.get(n.op, 5)


def _emit(root: ir.IRNode, names: dict, out: list) -> None:
    stack: list = [root]
    push = stack.append
    while stack:
        n = stack.pop()
        if n.__class__ is str:
            out.append(n)
            continue
        if n is not root and n in names:
            out.append(names[n])
            continue
        op = n.op
        if op == VAR:
            out.append(n.attrs[0][1])
        elif op == CONST:
            out.append(fmt(n._val))
        elif op in _INFIX and len(n.inputs) == 2:
            a, b = n.inputs
            p = _PREC[op]
            pa, pb = _prec(a, names), _prec(b, names)
            if op == "pow":
                la, rb = pa <= 4, pb <= 4
            else:
                la, rb = pa < p, pb <= p or pb == 3
            if rb:
                push(")")
            push(b)
            if rb:
                push("(")
            push(_INFIX[op])
            if la:
                push(")")
            push(a)
            if la:
                push("(")
        elif op == "neg":
            a = n.inputs[0]
            pa = _prec(a, names)
            paren = pa <= 1 or pa == 3
            if paren:
                push(")")
            push(a)
            push("-(" if paren else "-")
        else:
            push(")")
            if n.attrs:
                push("".join(f", {k}={v!r}" for k, v in n.attrs))
            args = n.inputs
            for k in range(len(args) - 1, -1, -1):
                push(args[k])
                if k:
                    push(", ")
            push(f"{op}(")


def to_str(root: ir.IRNode) -> str:
    """Infix text; when sharing would blow the text up, shared parts become `t1 = ...` lines."""
    order = ir.toposort([root])
    tree = {}
    for n in order:
        t = 1
        for i in n.inputs:
            t += tree[i]
        tree[n] = t
    out: list[str] = []
    if tree[root] <= _INLINE_LIMIT or tree[root] <= 3 * len(order):
        _emit(root, {}, out)
        return "".join(out)
    uses: dict = {}
    for n in order:
        for i in n.inputs:
            uses[i] = uses.get(i, 0) + 1
    taken = {n.attrs[0][1] for n in order if n.op == VAR}
    prefix = "t"
    while any(s.startswith(prefix) for s in taken):
        prefix = "_" + prefix
    names: dict = {}
    for n in order:
        if n is not root and n.op != VAR and n.op != CONST and uses.get(n, 0) > 1 \
                and tree[n] > 3:
            name = f"{prefix}{len(names) + 1}"
            out.append(f"{name} = ")
            _emit(n, names, out)
            out.append("\n")
            names[n] = name
    _emit(root, names, out)
    return "".join(out)


def short(e: ir.IRNode, limit: int = 200) -> str:
    """`e` as one line of text for an error message, or its size when that would be long."""
    size = len(ir.toposort([e]))
    s = to_str(e) if size < 2000 else "..."
    if len(s) > limit or "\n" in s:
        return f"<expression of size {size}>"
    return s
