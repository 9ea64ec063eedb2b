"""`rg.sym.compile`: expressions as a plain, vectorised NumPy function (generated source).

The straight-line code comes from `ir.to_source`; this module adds what rg.sym
promises on top: arguments by variable, integer arguments as floats, and
every result broadcast to the arguments' shape.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import ir
from ..ir import VAR
from .expr import Expr, as_expr, var, var_name


def _in(a: Any) -> Any:
    """An argument of a compiled function as a float (or complex) array."""
    if a.__class__ is np.ndarray and a.dtype.kind in "fc":
        return a
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype.kind in "biu" else a


def _out(r: Any, shape: tuple) -> Any:
    """A result that does not use every argument, broadcast to the arguments' shape."""
    r = np.asarray(r)
    if r.shape != shape:
        r = np.broadcast_to(r, np.broadcast_shapes(r.shape, shape)).copy()
    return r[()] if r.ndim == 0 else r


def compile(exprs: Expr | Sequence[Expr], vars: Sequence[Expr | str]) -> Callable:  # noqa: A001
    """A plain NumPy function of the `vars`' values (positional) computing `exprs`.

    Vectorised: arguments may be arrays (broadcast together), and every result
    has the broadcast shape. One expression gives one result; a sequence gives
    a tuple. The generated source is in `fn.source`.
    """
    single = isinstance(exprs, Expr)
    outs = [exprs] if single else [as_expr(e) for e in exprs]
    vs = [var(v) if isinstance(v, str) else v for v in vars]
    for v in vs:
        if not isinstance(v, Expr) or v.op != VAR:
            raise TypeError(f"compile() takes variables as inputs, got {v!r}")
    names = [var_name(v) for v in vs]
    if len(set(names)) != len(names):
        raise ValueError(f"compile(): a variable is listed twice in {names}")
    free = {n for n in ir.toposort(outs) if n.op == VAR}
    missing = sorted(var_name(n) for n in free if n not in set(vs))
    if missing:
        raise ValueError(f"compile(): no input for variable(s) {', '.join(missing)}; "
                         f"add them to the list of variables")
    k = len(vs)
    # Element-wise ops only: a result using every input already has the broadcast shape;
    # the others (a constant derivative, say) are broadcast to it on the way out.
    bits = {v: 1 << i for i, v in enumerate(vs)}
    for n in ir.toposort(outs):
        if n.op != VAR:
            b = 0
            for i in n.inputs:
                b |= bits[i]
            bits[n] = b
    full = (1 << k) - 1
    partial = {o for o in outs if bits[o] != full}
    prologue = [f"# {', '.join(f'a{i} = {n}' for i, n in enumerate(names))}"] if k else []
    prologue += [f"a{i} = _in(a{i})" for i in range(k)]
    if partial:
        shapes = ", ".join(f"a{i}.shape" for i in range(k))
        prologue.append(f"_shape = np.broadcast_shapes({shapes})" if k else "_shape = ()")

    def wrap(text: str, node: Expr) -> str:
        return f"_out({text}, _shape)" if node in partial else text

    src, env = ir.to_source(outs, vs, name="f", prologue=prologue, epilogue=wrap,
                            single=single)
    env["_in"] = _in
    env["_out"] = _out
    code = builtins.compile(src, "<retrograd.sym.compile>", "exec")
    exec(code, env)
    fn = env["f"]
    fn.source = src
    fn.__doc__ = f"Compiled from rg.sym: f({', '.join(names)})."
    return fn
