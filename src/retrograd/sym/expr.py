"""The rg.sym expression: one hash-consed node of the graph IR, its leaves and its builder.

`Expr` is the node every other module of the package works on. This module
holds the table that hash-conses the nodes (`GRAPH`), the leaves (`var`,
`const`) and `build`, through which every op node is made: constants are
folded there and the rewrites of `simplify.py` applied. The evaluation,
printing and SymPy-export layers below it work on nodes without making them;
simplification and differentiation, above it, make nodes through `build`, so
this module cannot import them: they register their work here when the
package is imported (`REWRITES`, `register_sweep`), as the op table's rows
register into `ops.OPS`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .. import ir, ops
from ..ir import CONST, VAR
from . import evaluation, export, printing
from .state import STATE

BOOL_OPS = frozenset(("gt", "lt", "ge", "le", "eq", "ne"))
NUMBERS = (int, float, np.number)


# ---------------------------------------------------------------- registered from above

REWRITES: dict[str, Callable[..., Any]] = {}
"""Op name -> rewrite rule `rule(*inputs) -> simpler equal node, or None`, tried by `build`.
Filled by `simplify.py`."""


def _sweep_not_registered(root: Expr, wrt: list[Expr]) -> list[Expr]:
    raise RuntimeError("rg.sym's differentiation (retrograd.sym.diff) is not loaded")


_sweep: Callable[[Expr, list[Expr]], list[Expr]] = _sweep_not_registered


def register_sweep(fn: Callable[[Expr, list[Expr]], list[Expr]]) -> None:
    """Make `fn(root, variables) -> derivatives` the reverse sweep behind `diff` and `grad`
    (`diff.py` registers its own)."""
    global _sweep
    _sweep = fn


def _expr_op(name: str, reflected: bool = False) -> Callable:
    """An operator method of Expr: builds the simplified node `name(self, other)`."""
    def method(self: Expr, other: Any) -> Expr:
        o = coerce(other)
        if o is None:
            return NotImplemented
        return build(name, (o, self) if reflected else (self, o))

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


class Expr(ir.IRNode):
    """A symbolic expression: one hash-consed node of the graph IR.

    `op` is "var", "const" or an op name of `ops.OPS`; `inputs` are Exprs.
    Build with operators and `rg.sym` functions, never with the constructor.
    """

    __slots__ = ("_val", "_t")
    __array_ufunc__ = None  # `ndarray + expr` defers to Expr.__radd__

    def __init__(self, op: str, inputs: tuple, attrs: tuple) -> None:
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.seq = ir.next_seq()
        self._val = None  # var: bound value; const: the value; op: cached value
        self._t = -1      # clock when `_val` was set (-1: never)

    # -------------------------------------------------------------- operators
    __add__, __radd__ = _expr_op("add"), _expr_op("add", reflected=True)
    __sub__, __rsub__ = _expr_op("sub"), _expr_op("sub", reflected=True)
    __mul__, __rmul__ = _expr_op("mul"), _expr_op("mul", reflected=True)
    __truediv__, __rtruediv__ = _expr_op("div"), _expr_op("div", reflected=True)
    __pow__, __rpow__ = _expr_op("pow"), _expr_op("pow", reflected=True)
    __gt__, __ge__, __lt__, __le__ = (_expr_op("gt"), _expr_op("ge"), _expr_op("lt"),
                                      _expr_op("le"))

    def __neg__(self) -> Expr:
        return build("neg", (self,))

    def __pos__(self) -> Expr:
        return self

    def __abs__(self) -> Expr:
        return build("abs", (self,))

    def __eq__(self, other: object) -> bool:
        """Structural equality (identity, thanks to hash-consing); a number equals its constant."""
        if isinstance(other, Expr):
            return self is other
        if isinstance(other, NUMBERS) and not isinstance(other, bool):
            return self.op == CONST and self._val.__class__ is float and self._val == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    __hash__ = ir.IRNode.__hash__

    def __bool__(self) -> bool:
        if self.op in BOOL_OPS:
            raise TypeError(f"the truth value of the symbolic comparison {self} is unknown "
                            "until it is evaluated; use .value or .eval(...)")
        return True

    def __float__(self) -> float:
        return float(self.value)

    # -------------------------------------------------------------- values
    @property
    def name(self) -> str | None:
        """The variable's name (None for other nodes)."""
        return self.attrs[0][1] if self.op == VAR else None

    @property
    def value(self) -> Any:
        """The value under the current bindings, recomputing only what changed since last time.

        For a variable: its bound value, or None when unbound.
        """
        op = self.op
        if op == VAR or op == CONST:
            return evaluation.result(self._val)
        return evaluation.result(evaluation.refresh(self))

    @value.setter
    def value(self, v: Any) -> None:
        if self.op != VAR:
            raise AttributeError(f"only variables can be assigned a value, not {self.label!r} "
                                 f"in {printing.short(self)}")
        if v is None:
            self._val = None
        else:  # a private, read-only copy: changing the caller's array cannot stale the caches
            a = evaluation.as_value(v)
            if a is v:
                a = a.copy()
            a.setflags(write=False)
            self._val = a
        STATE.clock += 1
        self._t = STATE.clock

    def eval(self, **values: Any) -> Any:
        """Evaluate with `values` by variable name (NumPy arrays element-wise).

        Variables not given fall back to their bound values; names the
        expression does not use are ignored; a variable with no value at all
        raises `UnboundVariableError` naming it. Does not touch bindings or caches.
        """
        return evaluation.evaluate_nodes([self], values)[0]

    # -------------------------------------------------------------- derivatives
    def diff(self, wrt: Expr) -> Expr:
        """The derivative with respect to the variable `wrt`, as a new simplified expression."""
        return _sweep(self, [_check_wrt(wrt)])[0]

    def grad(self, wrt: Iterable[Expr]) -> list[Expr]:
        """All derivatives with respect to the variables `wrt`, from one reverse sweep
        sharing subexpressions."""
        if isinstance(wrt, Expr):
            raise TypeError(f"grad() takes a list of variables, got the single expression "
                            f"{printing.short(wrt)}; use diff() for one")
        return _sweep(self, [_check_wrt(w) for w in wrt])

    # -------------------------------------------------------------- structure
    @property
    def size(self) -> int:
        """The number of distinct nodes (variables and constants included)."""
        return len(ir.toposort([self]))

    def nodes(self) -> list[Expr]:
        """Every distinct node, inputs before users (each has `op`, `inputs`, `label`)."""
        return ir.toposort([self])

    @property
    def free_vars(self) -> list[Expr]:
        """The variables the expression uses, sorted by name."""
        return sorted((n for n in ir.toposort([self]) if n.op == VAR), key=var_name)

    @property
    def label(self) -> str:
        """A short label for drawing: the variable's name, the constant, or the operator."""
        op = self.op
        if op == VAR:
            return self.attrs[0][1]
        if op == CONST:
            return printing.fmt(self._val)
        return printing.LABELS.get(op, op)

    @property
    def cached(self) -> Any:
        """The value cached by the last `.value` (None if never computed); no recomputation."""
        return None if self._val is None else evaluation.result(self._val)

    def trace(self, **values: Any) -> list[evaluation.TraceEntry]:
        """Every node with its value and the gradient of this expression with respect to it.

        What a picture of the lesson's graph shows. Values as for `eval`;
        gradients by one numeric reverse sweep with the op table's rules.
        """
        return evaluation.trace(self, values)

    def to_sympy(self) -> Any:
        """The same expression as a SymPy expression (needs the `[sym]` extra)."""
        return export.to_sympy([self])[0]

    def __str__(self) -> str:
        return printing.to_str(self)

    def __repr__(self) -> str:
        return f"Expr({printing.short(self)})"


GRAPH = ir.Graph(node_type=Expr, weak=True)


# ---------------------------------------------------------------- leaves

def var(name: str, value: Any = None) -> Expr:
    """The variable called `name`, optionally (re)binding its value.

    Variables are identified by name: `var("x")` always returns the same node
    while it is alive, carrying whatever value was last bound to it.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"a variable name must be a non-empty string, got {name!r}")
    node = GRAPH.node(VAR, (), (("name", name),))
    if value is not None:
        node.value = value
    return node


def const(c: Any) -> Expr:
    """A constant: a number (stored as a float) or a NumPy array."""
    if isinstance(c, Expr):
        if c.op != CONST:
            raise TypeError(f"const() needs a number or array, "
                            f"got the expression {printing.short(c)}")
        return c
    if isinstance(c, bool) or not isinstance(c, (NUMBERS, np.ndarray, list, tuple)):
        raise TypeError(f"const() needs a number or a NumPy array, got {type(c).__name__}")
    if isinstance(c, (np.ndarray, list, tuple)):
        a = np.array(c)
        if a.dtype.kind in "biu":
            a = a.astype(np.float64)
        if a.ndim == 0:
            return const_node(a[()].item())
        a.setflags(write=False)
        return const_node(a)
    if isinstance(c, complex) or (isinstance(c, np.number) and np.iscomplexobj(c)):
        return const_node(complex(c))
    return const_node(float(c))


def const_node(v: Any) -> Expr:
    """The constant node for `v`, a float, complex or read-only array (`const` checks and
    converts; this is the fast path for values that are already right)."""
    if v.__class__ is float:
        hit = _CONSTS.get(v.hex())
        if hit is not None:
            return hit
    node = GRAPH.node(CONST, (), (("value", v),))
    if node._t < 0:
        node._val = v
        node._t = 0
    return node


_CONSTS: dict[str, Expr] = {}
ZERO = const_node(0.0)
ONE = const_node(1.0)
_CONSTS.update({v.hex(): const_node(v) for v in (0.0, 1.0, -1.0, 0.5, 2.0)})


def coerce(v: Any) -> Expr | None:
    """`v` as an expression (numbers and arrays become constants), or None if it is neither."""
    if isinstance(v, Expr):
        return v
    if v.__class__ is float:
        return const_node(v)
    if isinstance(v, (NUMBERS, np.ndarray)) and not isinstance(v, bool):
        return const(v)
    return None


def as_expr(v: Any) -> Expr:
    """`v` as an expression, or a TypeError naming its type."""
    e = coerce(v)
    if e is None:
        raise TypeError(f"expected a rg.sym expression or a number, got {type(v).__name__}")
    return e


def _check_wrt(w: Any) -> Expr:
    """`w` if it is a variable; differentiating with respect to anything else is refused."""
    if not isinstance(w, Expr):
        raise TypeError(f"can only differentiate with respect to a rg.sym variable, "
                        f"got {type(w).__name__}")
    if w.op != VAR:
        what = "the constant" if w.op == CONST else "the expression"
        raise TypeError(f"can only differentiate with respect to a rg.sym variable, "
                        f"got {what} {printing.short(w)}")
    return w


def var_name(n: Expr) -> str:
    """A variable's name."""
    return n.attrs[0][1]


def is_const(n: Expr, v: float) -> bool:
    """Whether `n` is the float constant `v`."""
    return n.op == CONST and n._val.__class__ is float and n._val == v


# ---------------------------------------------------------------- building

_PY_FOLD = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
            "neg": operator.neg}


def _fold(op: str, args: tuple, attrs: tuple) -> Expr:
    """A constant op computed now, exactly as evaluation would (IEEE float64)."""
    py = _PY_FOLD.get(op)
    if py is not None and all(a._val.__class__ is float for a in args) and not (
            op == "div" and args[1]._val == 0):
        return const_node(py(*[a._val for a in args]))  # Python floats: the same IEEE operations
    fn = ops.OPS[op].forward
    vals = [np.asarray(a._val) for a in args]
    with np.errstate(all="ignore"):
        r = fn(*vals, **dict(attrs)) if attrs else fn(*vals)
    r = np.asarray(r)
    if r.dtype.kind == "b":
        r = r.astype(np.float64)
    if r.ndim == 0:
        return const_node(r.item() if r.dtype.kind != "c" else complex(r))
    r.setflags(write=False)
    return const_node(r)


def build(op: str, args: tuple, attrs: tuple = ()) -> Expr:
    """The simplified, hash-consed node for `op(*args, **attrs)`.

    Constant inputs are folded; otherwise the op's rewrite in `REWRITES` may
    return a simpler node; otherwise `+` and `*` put their operands in one
    canonical order and the table returns the one node for that structure.
    """
    for a in args:
        if a.op != CONST:
            break
    else:
        if args:
            return _fold(op, args, attrs)
    rw = REWRITES.get(op)
    if rw is not None:
        r = rw(*args)
        if r is not None:
            return r
    if op == "mul" or op == "add":  # commutative: one canonical order (exact in IEEE)
        a, b = args
        if op == "mul":  # constants first in products: `2*x`
            swap = (b.op != CONST, b.seq) < (a.op != CONST, a.seq)
        else:  # constants last in sums: `x + 1`
            swap = (b.op == CONST, b.seq) < (a.op == CONST, a.seq)
        if swap:
            args = (b, a)
    return GRAPH.node(op, args, attrs)


# ---------------------------------------------------------------- several expressions at once

def evaluate(exprs: Sequence[Expr], **values: Any) -> list:
    """Evaluate several expressions at once (shared nodes computed once); see `Expr.eval`."""
    return evaluation.evaluate_nodes([as_expr(e) for e in exprs], values)


def size(exprs: Expr | Iterable[Expr]) -> int:
    """Distinct nodes in one expression or in several together (shared nodes counted once)."""
    if isinstance(exprs, Expr):
        return exprs.size
    return len(ir.toposort([as_expr(e) for e in exprs]))
