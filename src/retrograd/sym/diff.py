"""rg.sym's differentiation: one reverse sweep calling the op table's vjp rules on graph nodes.

The rules of `retrograd.ops` are written against a namespace `m` of
functions and operators on their inputs. Called with `SYM` for `m` and
expressions wrapped in `_R` for the values, the very rules the Tensor engine
runs on arrays build graph nodes instead; nothing here knows a derivative.
Every node is made through `expr.build`, so it is simplified as it is made,
and a subgraph that does not depend on the variables is never entered.
Under `assume_finite`, a zero cotangent is dropped and one-variable
polynomial results come back in Horner form (`simplify.horner`).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from typing import Any

from .. import ir, ops
from ..ir import CONST, VAR
from .expr import ONE, ZERO, Expr, as_expr, build, is_const, register_sweep
from .simplify import horner
from .state import STATE

# ---------------------------------------------------------------- the rule namespace

def _rule_op(name: str, reflected: bool = False) -> Callable:
    """An operator method of _R: the node `name(self, other)`, wrapped again."""
    def method(self: _R, o: Any) -> _R:
        return _R(build(name, (_un(o), self.n) if reflected else (self.n, _un(o))))

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


class _R:
    """An expression as the op table's rules see it: operators, comparisons included, build nodes.

    Rules are written with `==` (e.g. `pow`'s `x == 0`), which on `Expr`
    itself means structural equality; this wrapper makes it a graph node.
    """

    __slots__ = ("n",)

    def __init__(self, n: Expr) -> None:
        self.n = n

    __add__, __radd__ = _rule_op("add"), _rule_op("add", reflected=True)
    __sub__, __rsub__ = _rule_op("sub"), _rule_op("sub", reflected=True)
    __mul__, __rmul__ = _rule_op("mul"), _rule_op("mul", reflected=True)
    __truediv__, __rtruediv__ = _rule_op("div"), _rule_op("div", reflected=True)
    __pow__, __rpow__ = _rule_op("pow"), _rule_op("pow", reflected=True)
    __eq__, __ne__ = _rule_op("eq"), _rule_op("ne")  # type: ignore[assignment]
    __gt__, __ge__, __lt__, __le__ = (_rule_op("gt"), _rule_op("ge"), _rule_op("lt"),
                                      _rule_op("le"))

    def __neg__(self) -> _R:
        return _R(build("neg", (self.n,)))

    __hash__ = None  # type: ignore[assignment]


def _un(v: Any) -> Expr:
    """A rule's value back as an expression (rules may return plain numbers)."""
    if v.__class__ is _R:
        return v.n
    return as_expr(v)


class _SymNamespace:
    """`m` for the op table's rules: `m.<op>(inputs..., attr=...)` builds a simplified node."""

    def __getattr__(self, name: str) -> Callable:
        if name not in ops.OPS:
            raise AttributeError(f"no op named {name!r} in the op table")

        def fn(*inputs: Any, **attrs: Any) -> _R:
            return _R(build(name, tuple(_un(i) for i in inputs), ir.freeze_attrs(attrs)))

        fn.__name__ = name
        setattr(self, name, fn)
        return fn


SYM = _SymNamespace()


def sweep(root: Expr, wrt: list[Expr]) -> list[Expr]:
    """d root / d w for each w in `wrt`, by one reverse sweep over the nodes that depend on them.

    The sweep allocates many small objects and no reference cycles, so the
    cyclic garbage collector, which would only rescan the graph, is paused.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        return _sweep_nodes(root, wrt)
    finally:
        if paused:
            gc.enable()


def _sweep_nodes(root: Expr, wrt: list[Expr]) -> list[Expr]:
    """The sweep: cotangent nodes `ct` handed from each node to the inputs that depend on `wrt`."""
    order = ir.toposort([root])
    dep = ir.depends_on(order, wrt)
    if root not in dep:
        return [ONE if w is root else ZERO for w in wrt]
    finite = STATE.assume_finite
    table = ops.OPS
    ct = {root: ONE}
    get = ct.get
    for n in reversed(order):
        g = get(n)
        if g is None or n.op == VAR or n.op == CONST:
            continue
        op = table[n.op]
        rules = op.vjps
        if rules is None:  # comparisons and other steps: derivative zero
            continue
        ins = n.inputs
        wrapped = None
        for i, x in enumerate(ins):
            if x not in dep:
                continue
            if op.variadic:
                rule = rules[0]
                kw = dict(n.attrs, argnum=i)
            else:
                rule = rules[i]
                if rule is None:
                    continue
                kw = dict(n.attrs) if n.attrs else {}
            if wrapped is None:
                wrapped = [_R(v) for v in ins]
                gw, ow = _R(g), _R(n)
            r = _un(rule(SYM, gw, ow, *wrapped, **kw))
            if finite and is_const(r, 0):
                continue
            old = get(x)
            ct[x] = r if old is None else build("add", (old, r))
    out = [get(w, ZERO) for w in wrt]
    return [horner(r) for r in out] if finite else out


register_sweep(sweep)


def grad(expr: Expr, wrt: Iterable[Expr]) -> list[Expr]:
    """`expr.grad(wrt)`: every first derivative from one reverse sweep."""
    return as_expr(expr).grad(wrt)
