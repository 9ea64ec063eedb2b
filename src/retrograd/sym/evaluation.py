"""Numbers from rg.sym graphs: plain evaluation, cached incremental `.value`, and `trace`.

Every op node is computed by its op's NumPy `forward` from the op table, and
`trace` runs the table's vjp rules on arrays, so nothing here knows an op.
The functions work on any node of the package's graph (`op`, `inputs`,
`attrs` and the slots `_val`, `_t`); they never build one, so this module sits
below `expr.py`, which calls them.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import ir, ops
from ..ir import CONST, VAR, UnboundVariableError
from .state import STATE


def as_value(v: Any) -> Any:
    """A value bound to a variable, as a float or complex NumPy array."""
    a = np.asarray(v)
    if a.dtype.kind in "biu":
        a = a.astype(np.float64)
    elif a.dtype.kind not in "fc":
        raise TypeError(f"a value must be a number or a numeric array, got {type(v).__name__}")
    return a


def result(v: Any) -> Any:
    """A value as handed to the user: a NumPy scalar for 0-d, else the array."""
    if v is None:
        return None
    if v.__class__ is float:
        return np.float64(v)
    a = np.asarray(v)
    return a[()] if a.ndim == 0 else a


def _bindings(order: Sequence[ir.IRNode], values: Mapping[str, Any]) -> dict:
    """Each variable in `order` mapped to its value: from `values` by name, else its binding."""
    env = {}
    for n in order:
        if n.op == VAR:
            name = n.attrs[0][1]
            if name in values:
                env[n] = as_value(values[name])
            elif n._val is not None:
                env[n] = n._val
            else:
                raise UnboundVariableError(
                    f"no value for variable '{name}': pass {name}=... or bind {name}.value")
    return env


def evaluate_nodes(exprs: Sequence[ir.IRNode], values: Mapping[str, Any]) -> list:
    """The values of `exprs` (shared nodes computed once); bindings and caches untouched."""
    env = _bindings(ir.toposort(exprs), values)
    return [result(v) for v in ir.evaluate(exprs, env)]


# ---------------------------------------------------------------- incremental `.value`

_ORDERS: dict[int, tuple] = {}
_ORDERS_MAX = 32


def _order_for(root: ir.IRNode) -> list[ir.IRNode]:
    """The topological order of `root`'s graph, cached for the last few roots (weakly)."""
    hit = _ORDERS.get(id(root))
    if hit is not None and hit[0]() is root:
        return hit[1]
    order = ir.toposort([root])
    if len(_ORDERS) >= _ORDERS_MAX:
        del _ORDERS[next(iter(_ORDERS))]
    key = id(root)

    def forget(_ref: Any, key: int = key) -> None:
        entry = _ORDERS.get(key)
        if entry is not None and entry[0] is _ref:
            del _ORDERS[key]

    _ORDERS[key] = (weakref.ref(root, forget), order[:-1])
    return order[:-1]


def refresh(root: ir.IRNode) -> Any:
    """Bring `root`'s cached value up to date, recomputing only nodes whose inputs changed.

    A node's `_t` is the binding clock when its value was computed; it is
    recomputed only when one of its inputs is newer.
    """
    clock = STATE.clock
    if root._t == clock:
        return root._val
    table = ops.OPS
    computed = 0
    try:
        for n in _order_for(root) + [root]:
            op = n.op
            if op == CONST:
                continue
            if op == VAR:
                if n._val is None:
                    name = n.attrs[0][1]
                    raise UnboundVariableError(
                        f"no value for variable '{name}': bind {name}.value or use eval()")
                continue
            t = n._t
            if t >= 0:
                for i in n.inputs:
                    if i._t > t:
                        break
                else:
                    continue
            fn = table[op].forward
            args = [i._val for i in n.inputs]
            v = fn(*args, **dict(n.attrs)) if n.attrs else fn(*args)
            if v.__class__ is np.ndarray:
                v.setflags(write=False)  # handed out by `.value`: must not change under the cache
            n._val = v
            n._t = clock
            computed += 1
    finally:
        STATE.evaluated += computed
    return root._val


# ---------------------------------------------------------------- trace

class TraceEntry(NamedTuple):
    """One node of `Expr.trace`: the node (an `Expr`), its value, d(expression)/d(node)."""

    node: ir.IRNode
    value: Any
    grad: Any


def trace(root: ir.IRNode, values: Mapping[str, Any]) -> list[TraceEntry]:
    """Every node of `root` with its value and d(root)/d(node), by one numeric reverse sweep."""
    order = ir.toposort([root])
    vals = _bindings(order, values)
    for n in order:
        if n.op == CONST:
            vals[n] = np.asarray(n._val)
        elif n.op != VAR:
            fn = ops.OPS[n.op].forward
            vals[n] = np.asarray(fn(*[vals[i] for i in n.inputs], **dict(n.attrs)))
    m = ops.NUMPY
    grads = {root: np.ones_like(vals[root], dtype=np.result_type(vals[root], np.float64))}
    for n in reversed(order):
        g = grads.get(n)
        if g is None or n.op == VAR or n.op == CONST:
            continue
        op = ops.OPS[n.op]
        if op.vjps is None:
            continue
        xs = [vals[i] for i in n.inputs]
        for i, x in enumerate(n.inputs):
            rule = op.vjps[0] if op.variadic else op.vjps[i]
            if rule is None:
                continue
            kw = dict(n.attrs, argnum=i) if op.variadic else dict(n.attrs)
            r = np.asarray(rule(m, g, vals[n], *xs, **kw))
            if r.shape != xs[i].shape:
                r = ops.sum_to(m, r, xs[i].shape)
            grads[x] = r if x not in grads else grads[x] + r
    zero = np.float64(0.0)
    return [TraceEntry(n, result(vals[n]), result(grads.get(n, zero))) for n in order]
