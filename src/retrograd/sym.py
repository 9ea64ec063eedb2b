"""rg.sym: symbolic graphs. Build the graph first, bind values later, differentiate into a graph.

    import retrograd as rg
    x, y = rg.sym.var("x"), rg.sym.var("y")
    z = (12 - x * rg.sym.exp(y)) / (45 + x * y * rg.sym.exp(-x))
    dx, dy = z.grad([x, y])        # two expressions, from one reverse sweep
    dx.eval(x=3.0, y=5.0)          # -3.34729777301069
    x.value, y.value = 3.0, 5.0    # bind; `dx.value` then caches every node
    x.value = 4.0; dx.value        # recomputes only the nodes that depend on x

An expression is a node of the shared graph IR (`retrograd.ir`), hash-consed
in one table: building the same subexpression twice gives the same node, so
`a is b` is structural equality and `e.size` counts distinct nodes.
Variables are identified by their name: `var("x")` twice is one node, and its
bound value is shared by every expression that uses it.

Derivatives come from the op table (`retrograd.ops`): the reverse sweep calls
each op's vjp rule with a namespace whose functions build graph nodes, the same
rules the Tensor engine runs on arrays. Nothing in this file knows a
derivative.

Simplification happens as nodes are built. These rewrites give exactly what
plain evaluation would (up to the sign of a zero result): constant folding
(by the op's own NumPy forward), `a+0 -> a`, `a-0 -> a`, `0-a -> -a`,
`1*a -> a`, `-1*a -> -a`, `a/1 -> a`, `a**1 -> a`, `a**0 -> 1`, `1**a -> 1`,
`--a -> a`, `a+(-b) -> a-b`, `a-(-b) -> a+b`, `-(a-b) -> b-a`, `(-a)*b ->
-(a*b)`, `where(c, a, a) -> a`, operands of `+` and `*` in a canonical order,
and differentiation never enters a subgraph free of the variable.

The rule named `assume_finite` (on by default) adds rewrites that are exact
only when the values involved are finite: `0*a -> 0`, `a-a -> 0`, `0/a -> 0`,
dropping a zero cotangent in the reverse sweep, and derivatives that are
polynomials in one variable returned in Horner form (fewer nodes and
operations). With `a` NaN or infinite (say `a = log(x)` at `x = 0`), plain
evaluation gives NaN where the rewritten graph gives 0. Turn it off with
`with rg.sym.assume_finite(False): ...` to get graphs whose values equal plain
evaluation of the chain rule everywhere.

Evaluation is element-wise: a variable's value may be an array. A result that
does not depend on any array-valued variable (a derivative that simplified to
a constant, say) comes back as a scalar from `eval` and `.value`;
`compile` broadcasts every result to the shape of its arguments.
"""

from __future__ import annotations

import ast
import builtins
import gc
import math
import operator
import weakref
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from . import ir, ops
from .ir import CONST, VAR, UnboundVariableError

__all__ = [
    "Expr", "var", "const", "exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh",
    "sigmoid", "relu", "abs", "maximum", "minimum", "where", "grad", "size", "compile",
    "from_sympy", "parse", "evaluate", "assume_finite", "eval_count", "UnboundVariableError",
    "TraceEntry",
]


class _State:
    __slots__ = ("clock", "evaluated", "assume_finite")

    def __init__(self) -> None:
        self.clock = 0             # bumped by every variable binding
        self.evaluated = 0         # op nodes computed by `.value`, ever
        self.assume_finite = True  # the rule named `assume_finite`


_state = _State()

_BOOL_OPS = frozenset(("gt", "lt", "ge", "le", "eq", "ne"))
_NUMBERS = (int, float, np.number)


def _expr_op(name: str, reflected: bool = False) -> Callable:
    """An operator method of Expr: builds the simplified node `name(self, other)`."""
    def method(self: Expr, other: Any) -> Expr:
        o = _coerce(other)
        if o is None:
            return NotImplemented
        return _build(name, (o, self) if reflected else (self, o))

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


class Expr(ir.Node):
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
        return _build("neg", (self,))

    def __pos__(self) -> Expr:
        return self

    def __abs__(self) -> Expr:
        return _build("abs", (self,))

    def __eq__(self, other: object) -> bool:
        """Structural equality (identity, thanks to hash-consing); a number equals its constant."""
        if isinstance(other, Expr):
            return self is other
        if isinstance(other, _NUMBERS) and not isinstance(other, bool):
            return self.op == CONST and self._val.__class__ is float and self._val == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    __hash__ = ir.Node.__hash__

    def __bool__(self) -> bool:
        if self.op in _BOOL_OPS:
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
            return _result(self._val)
        return _result(_refresh(self))

    @value.setter
    def value(self, v: Any) -> None:
        if self.op != VAR:
            raise AttributeError(f"only variables can be assigned a value, not {self.label!r} "
                                 f"in {_short(self)}")
        if v is None:
            self._val = None
        else:  # a private, read-only copy: changing the caller's array cannot stale the caches
            a = _as_value(v)
            if a is v:
                a = a.copy()
            a.setflags(write=False)
            self._val = a
        _state.clock += 1
        self._t = _state.clock

    def eval(self, **values: Any) -> Any:
        """Evaluate with `values` by variable name (NumPy arrays element-wise).

        Variables not given fall back to their bound values; names the
        expression does not use are ignored; a variable with no value at all
        raises `UnboundVariableError` naming it. Does not touch bindings or caches.
        """
        return evaluate([self], **values)[0]

    # -------------------------------------------------------------- derivatives
    def diff(self, wrt: Expr) -> Expr:
        """The derivative with respect to `wrt`, as a new simplified expression."""
        return _sweep(self, [_check_wrt(wrt)])[0]

    def grad(self, wrt: Iterable[Expr]) -> list[Expr]:
        """All derivatives with respect to `wrt`, from one reverse sweep sharing subexpressions."""
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
        return sorted((n for n in ir.toposort([self]) if n.op == VAR), key=_name)

    @property
    def label(self) -> str:
        """A short label for drawing: the variable's name, the constant, or the operator."""
        op = self.op
        if op == VAR:
            return self.attrs[0][1]
        if op == CONST:
            return _fmt(self._val)
        return _LABELS.get(op, op)

    @property
    def cached(self) -> Any:
        """The value cached by the last `.value` (None if never computed); no recomputation."""
        return None if self._val is None else _result(self._val)

    def trace(self, **values: Any) -> list[TraceEntry]:
        """Every node with its value and the gradient of this expression with respect to it.

        What a picture of the lesson's graph shows. Values as for `eval`;
        gradients by one numeric reverse sweep with the op table's rules.
        """
        return _trace(self, values)

    def to_sympy(self) -> Any:
        """The same expression as a SymPy expression (needs the `[sym]` extra)."""
        return _to_sympy([self])[0]

    def __str__(self) -> str:
        return _to_str(self)

    def __repr__(self) -> str:
        return f"Expr({_short(self)})"


class TraceEntry(NamedTuple):
    """One node of `Expr.trace`: the node, its value, d(expression)/d(node)."""

    node: Expr
    value: Any
    grad: Any


_GRAPH = ir.Graph(node_type=Expr, weak=True)


# ---------------------------------------------------------------- leaves

def var(name: str, value: Any = None) -> Expr:
    """The variable called `name`, optionally (re)binding its value.

    Variables are identified by name: `var("x")` always returns the same node
    while it is alive, carrying whatever value was last bound to it.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"a variable name must be a non-empty string, got {name!r}")
    node = _GRAPH.node(VAR, (), (("name", name),))
    if value is not None:
        node.value = value
    return node


def const(c: Any) -> Expr:
    """A constant: a number (stored as a float) or a NumPy array."""
    if isinstance(c, Expr):
        if c.op != CONST:
            raise TypeError(f"const() needs a number or array, got the expression {_short(c)}")
        return c
    if isinstance(c, bool) or not isinstance(c, (_NUMBERS, np.ndarray, list, tuple)):
        raise TypeError(f"const() needs a number or a NumPy array, got {type(c).__name__}")
    if isinstance(c, (np.ndarray, list, tuple)):
        a = np.array(c)
        if a.dtype.kind in "biu":
            a = a.astype(np.float64)
        if a.ndim == 0:
            return _const(a[()].item())
        a.setflags(write=False)
        return _const(a)
    if isinstance(c, complex) or (isinstance(c, np.number) and np.iscomplexobj(c)):
        return _const(complex(c))
    return _const(float(c))


def _const(v: Any) -> Expr:
    if v.__class__ is float:
        hit = _CONSTS.get(v.hex())
        if hit is not None:
            return hit
    node = _GRAPH.node(CONST, (), (("value", v),))
    if node._t < 0:
        node._val = v
        node._t = 0
    return node


_CONSTS: dict[str, Expr] = {}
ZERO = _const(0.0)
ONE = _const(1.0)
_CONSTS.update({v.hex(): _const(v) for v in (0.0, 1.0, -1.0, 0.5, 2.0)})


def _coerce(v: Any) -> Expr | None:
    if isinstance(v, Expr):
        return v
    if v.__class__ is float:
        return _const(v)
    if isinstance(v, (_NUMBERS, np.ndarray)) and not isinstance(v, bool):
        return const(v)
    return None


def _as_expr(v: Any) -> Expr:
    e = _coerce(v)
    if e is None:
        raise TypeError(f"expected a rg.sym expression or a number, got {type(v).__name__}")
    return e


def _check_wrt(w: Any) -> Expr:
    if not isinstance(w, Expr):
        raise TypeError(f"can only differentiate with respect to a rg.sym variable, "
                        f"got {type(w).__name__}")
    return w


def _name(n: Expr) -> str:
    return n.attrs[0][1]


# ---------------------------------------------------------------- building and simplifying

def _is(n: Expr, v: float) -> bool:
    return n.op == CONST and n._val.__class__ is float and n._val == v


def _boolish(n: Expr) -> bool:
    return n.op in _BOOL_OPS


_PY_FOLD = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
            "neg": operator.neg}


def _fold(op: str, args: tuple, attrs: tuple) -> Expr:
    """A constant op computed now, exactly as evaluation would (IEEE float64)."""
    py = _PY_FOLD.get(op)
    if py is not None and all(a._val.__class__ is float for a in args) and not (
            op == "div" and args[1]._val == 0):
        return _const(py(*[a._val for a in args]))  # Python floats: the same IEEE operations
    fn = ops.OPS[op].forward
    vals = [np.asarray(a._val) for a in args]
    with np.errstate(all="ignore"):
        r = fn(*vals, **dict(attrs)) if attrs else fn(*vals)
    r = np.asarray(r)
    if r.dtype.kind == "b":
        r = r.astype(np.float64)
    if r.ndim == 0:
        return _const(r.item() if r.dtype.kind != "c" else complex(r))
    r.setflags(write=False)
    return _const(r)


def _rw_add(a: Expr, b: Expr) -> Expr | None:
    if _is(b, 0) and not _boolish(a):
        return a
    if _is(a, 0) and not _boolish(b):
        return b
    if b.op == "neg":
        return _build("sub", (a, b.inputs[0]))
    if a.op == "neg":
        return _build("sub", (b, a.inputs[0]))
    return None


def _rw_sub(a: Expr, b: Expr) -> Expr | None:
    if _is(b, 0) and not _boolish(a):
        return a
    if _is(a, 0) and not _boolish(b):
        return _build("neg", (b,))
    if a is b and _state.assume_finite:
        return ZERO
    if b.op == "neg":
        return _build("add", (a, b.inputs[0]))
    return None


def _rw_mul_const(c: float, y: Expr) -> Expr | None:
    if c == 1 and not _boolish(y):
        return y
    if c == -1 and not _boolish(y):
        return _build("neg", (y,))
    if c == 0 and _state.assume_finite:
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
            return _build("mul", (a.inputs[0], b.inputs[0]))
        return _build("neg", (_build("mul", (a.inputs[0], b)),))
    if b.op == "neg":
        return _build("neg", (_build("mul", (a, b.inputs[0])),))
    return None


def _rw_div(a: Expr, b: Expr) -> Expr | None:
    if _is(b, 1) and not _boolish(a):
        return a
    if _is(b, -1) and not _boolish(a):
        return _build("neg", (a,))
    if _is(a, 0) and _state.assume_finite:
        return ZERO
    if a.op == "neg":
        if b.op == "neg":
            return _build("div", (a.inputs[0], b.inputs[0]))
        return _build("neg", (_build("div", (a.inputs[0], b)),))
    if b.op == "neg":
        return _build("neg", (_build("div", (a, b.inputs[0])),))
    return None


def _rw_pow(a: Expr, b: Expr) -> Expr | None:
    if _is(b, 1) and not _boolish(a):
        return a
    if _is(b, 0) or _is(a, 1):
        return ONE
    return None


def _rw_neg(a: Expr) -> Expr | None:
    if a.op == "neg":
        return a.inputs[0]
    if a.op == "sub":
        return _build("sub", (a.inputs[1], a.inputs[0]))
    return None


def _rw_where(c: Expr, a: Expr, b: Expr) -> Expr | None:
    if a is b:
        return a
    if c.op == CONST and np.ndim(c._val) == 0:
        return a if c._val else b
    return None


_REWRITES: dict[str, Callable] = {
    "add": _rw_add, "sub": _rw_sub, "mul": _rw_mul, "div": _rw_div, "pow": _rw_pow,
    "neg": _rw_neg, "where": _rw_where,
}


def _build(op: str, args: tuple, attrs: tuple = ()) -> Expr:
    """The simplified, hash-consed node for `op(*args, **attrs)`."""
    for a in args:
        if a.op != CONST:
            break
    else:
        if args:
            return _fold(op, args, attrs)
    rw = _REWRITES.get(op)
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
    return _GRAPH.node(op, args, attrs)


# ---------------------------------------------------------------- functions

def _unary(opname: str, doc: str) -> Callable[[Any], Expr]:
    def fn(x: Any) -> Expr:
        return _build(opname, (_as_expr(x),))

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
    return _build("maximum", (_as_expr(x), _as_expr(y)))


def minimum(x: Any, y: Any) -> Expr:
    """Element-wise minimum (ties share the gradient)."""
    return _build("minimum", (_as_expr(x), _as_expr(y)))


def where(cond: Any, x: Any, y: Any) -> Expr:
    """`x` where `cond` holds (is nonzero), else `y`."""
    return _build("where", (_as_expr(cond), _as_expr(x), _as_expr(y)))


# ---------------------------------------------------------------- the rule namespace

def _rule_op(name: str, reflected: bool = False) -> Callable:
    """An operator method of _R: the node `name(self, other)`, wrapped again."""
    def method(self: _R, o: Any) -> _R:
        return _R(_build(name, (_un(o), self.n) if reflected else (self.n, _un(o))))

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
        return _R(_build("neg", (self.n,)))

    __hash__ = None  # type: ignore[assignment]


def _un(v: Any) -> Expr:
    if v.__class__ is _R:
        return v.n
    return _as_expr(v)


class _SymNamespace:
    """`m` for the op table's rules: `m.<op>(inputs..., attr=...)` builds a simplified node."""

    def __getattr__(self, name: str) -> Callable:
        if name not in ops.OPS:
            raise AttributeError(f"no op named {name!r} in the op table")

        def fn(*inputs: Any, **attrs: Any) -> _R:
            return _R(_build(name, tuple(_un(i) for i in inputs), ir.freeze_attrs(attrs)))

        fn.__name__ = name
        setattr(self, name, fn)
        return fn


SYM = _SymNamespace()


# ---------------------------------------------------------------- differentiation

def _sweep(root: Expr, wrt: list[Expr]) -> list[Expr]:
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
    order = ir.toposort([root])
    dep = ir.depends_on(order, wrt)
    if root not in dep:
        return [ONE if w is root else ZERO for w in wrt]
    finite = _state.assume_finite
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
            if finite and _is(r, 0):
                continue
            old = get(x)
            ct[x] = r if old is None else _build("add", (old, r))
    out = [get(w, ZERO) for w in wrt]
    return [_horner(r) for r in out] if finite else out


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


def _horner(e: Expr) -> Expr:
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
    h = _const(terms[high])
    for k in range(high - 1, low - 1, -1):
        h = _build("mul", (h, x))
        if k in terms:
            h = _build("add", (h, _const(terms[k])))
    if low:
        h = _build("mul", (h, _build("pow", (x, _const(float(low))))))
    return h if h.size < e.size else e


def grad(expr: Expr, wrt: Iterable[Expr]) -> list[Expr]:
    """`expr.grad(wrt)`: every first derivative from one reverse sweep."""
    return _as_expr(expr).grad(wrt)


# ---------------------------------------------------------------- evaluation

def _as_value(v: Any) -> Any:
    a = np.asarray(v)
    if a.dtype.kind in "biu":
        a = a.astype(np.float64)
    elif a.dtype.kind not in "fc":
        raise TypeError(f"a value must be a number or a numeric array, got {type(v).__name__}")
    return a


def _result(v: Any) -> Any:
    if v is None:
        return None
    if v.__class__ is float:
        return np.float64(v)
    a = np.asarray(v)
    return a[()] if a.ndim == 0 else a


def evaluate(exprs: Sequence[Expr], **values: Any) -> list:
    """Evaluate several expressions at once (shared nodes computed once); see `Expr.eval`."""
    exprs = [_as_expr(e) for e in exprs]
    env = {}
    for n in ir.toposort(exprs):
        if n.op == VAR:
            name = n.attrs[0][1]
            if name in values:
                env[n] = _as_value(values[name])
            elif n._val is not None:
                env[n] = n._val
            else:
                raise UnboundVariableError(
                    f"no value for variable '{name}': pass {name}=... or bind {name}.value")
    return [_result(v) for v in ir.evaluate(exprs, env)]


_ORDERS: dict[int, tuple] = {}
_ORDERS_MAX = 32


def _order_for(root: Expr) -> list[Expr]:
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


def _refresh(root: Expr) -> Any:
    """Bring `root`'s cached value up to date, recomputing only nodes whose inputs changed."""
    clock = _state.clock
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
        _state.evaluated += computed
    return root._val


def eval_count() -> int:
    """How many op nodes `.value` has computed so far (a counter for tests and curiosity)."""
    return _state.evaluated


class assume_finite:
    """The rewrite rule that is exact only for finite values: `0*a -> 0`, `a-a -> 0`, `0/a -> 0`.

    On by default. `with rg.sym.assume_finite(False): ...` builds (and
    differentiates into) graphs that keep those terms, so their values equal
    plain evaluation even where `a` is NaN or infinite. Also callable as a
    plain setter: `rg.sym.assume_finite(False).set()`.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = bool(enabled)
        self._prev: list[bool] = []

    def __enter__(self) -> assume_finite:
        self._prev.append(_state.assume_finite)
        _state.assume_finite = self.enabled
        return self

    def __exit__(self, *exc: Any) -> None:
        _state.assume_finite = self._prev.pop()

    def set(self) -> None:
        """Set the rule globally (no restoring)."""
        _state.assume_finite = self.enabled

    @staticmethod
    def enabled_now() -> bool:
        """Whether the rule is on."""
        return _state.assume_finite


# ---------------------------------------------------------------- size, compile, trace

def size(exprs: Expr | Iterable[Expr]) -> int:
    """Distinct nodes in one expression or in several together (shared nodes counted once)."""
    if isinstance(exprs, Expr):
        return exprs.size
    return len(ir.toposort([_as_expr(e) for e in exprs]))


def _in(a: Any) -> Any:
    if a.__class__ is np.ndarray and a.dtype.kind in "fc":
        return a
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype.kind in "biu" else a


def _out(r: Any, shape: tuple) -> Any:
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
    outs = [exprs] if single else [_as_expr(e) for e in exprs]
    vs = [var(v) if isinstance(v, str) else v for v in vars]
    for v in vs:
        if not isinstance(v, Expr) or v.op != VAR:
            raise TypeError(f"compile() takes variables as inputs, got {v!r}")
    names = [_name(v) for v in vs]
    if len(set(names)) != len(names):
        raise ValueError(f"compile(): a variable is listed twice in {names}")
    free = {n for n in ir.toposort(outs) if n.op == VAR}
    missing = sorted(_name(n) for n in free if n not in set(vs))
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


def _trace(root: Expr, values: dict) -> list[TraceEntry]:
    order = ir.toposort([root])
    env = {}
    for n in order:
        if n.op == VAR:
            name = n.attrs[0][1]
            if name in values:
                env[n] = _as_value(values[name])
            elif n._val is not None:
                env[n] = n._val
            else:
                raise UnboundVariableError(f"no value for variable '{name}'")
    vals = {}
    for n in order:
        if n.op == VAR:
            vals[n] = env[n]
        elif n.op == CONST:
            vals[n] = np.asarray(n._val)
        else:
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
    return [TraceEntry(n, _result(vals[n]), _result(grads.get(n, zero))) for n in order]


# ---------------------------------------------------------------- printing

_LABELS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "neg": "-",
           "gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
_INFIX = {"add": " + ", "sub": " - ", "mul": "*", "div": "/", "pow": "**", "gt": " > ",
          "lt": " < ", "ge": " >= ", "le": " <= ", "eq": " == ", "ne": " != "}
_PREC = {"add": 1, "sub": 1, "mul": 2, "div": 2, "neg": 3, "pow": 4,
         "gt": 0, "lt": 0, "ge": 0, "le": 0, "eq": 0, "ne": 0}
_INLINE_LIMIT = 200


def _fmt(v: Any) -> str:
    if v.__class__ is float:
        if v == 0 and math.copysign(1.0, v) < 0:
            return "-0.0"
        if v.is_integer() and -1e16 < v < 1e16:
            return str(int(v))
        return repr(v)
    if isinstance(v, np.ndarray):
        return np.array2string(v, separator=", ", threshold=8) if v.size else "[]"
    return repr(v)


def _prec(n: Expr, names: dict) -> int:
    if n in names:
        return 5
    if n.op == CONST:
        return 3 if _fmt(n._val).startswith("-") else 5
    return _PREC.get(n.op, 5)


def _emit(root: Expr, names: dict, out: list) -> None:
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
            out.append(_fmt(n._val))
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


def _to_str(root: Expr) -> str:
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


def _short(e: Expr, limit: int = 200) -> str:
    s = _to_str(e) if e.size < 2000 else "..."
    if len(s) > limit or "\n" in s:
        return f"<expression of size {e.size}>"
    return s


# ---------------------------------------------------------------- SymPy

def _sympy() -> Any:
    try:
        import sympy
    except ImportError:
        raise ImportError("rg.sym's SymPy conversion needs SymPy: "
                          "pip install 'retrograd[sym]'") from None
    return sympy


def _sympy_number(sp: Any, v: Any) -> Any:
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


def _to_sympy(exprs: Sequence[Expr]) -> list:
    sp = _sympy()

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


def _sympy_const(e: Any) -> Expr:
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
    sp = _sympy()
    expr = sp.sympify(expr)
    funcs = {sp.exp: exp, sp.log: log, sp.sin: sin, sp.cos: cos, sp.tan: tan, sp.tanh: tanh,
             sp.Abs: abs, sp.sign: lambda a: _build("sign", (a,))}
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
                               _build("pow", (done[k.base], const(float(-k.exp)))))
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
            zero = [a for a in args if _is(a, 0)]
            rest = [a for a in args if not _is(a, 0)]
            if e.func is sp.Max and zero and len(rest) == 1:
                r = relu(rest[0])
            else:
                f = maximum if e.func is sp.Max else minimum
                r = args[0]
                for a in args[1:]:
                    r = f(r, a)
        elif e.func in rels:
            r = _build(rels[e.func], tuple(args))
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


# ---------------------------------------------------------------- parsing

_FUNCS: dict[str, Callable] = {
    "exp": exp, "log": log, "log1p": log1p, "sqrt": sqrt, "sin": sin, "cos": cos, "tan": tan,
    "tanh": tanh, "sigmoid": sigmoid, "relu": relu, "abs": abs, "max": maximum,
    "min": minimum, "maximum": maximum, "minimum": minimum,
}
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
            r = _build(_BINOPS[type(node.op)], tuple(args))
        elif isinstance(node, ast.UnaryOp):
            r = -args[0] if isinstance(node.op, ast.USub) else args[0]
        elif isinstance(node, ast.Call):
            fn = _FUNCS[node.func.id]
            want = 2 if fn in (maximum, minimum) else 1
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
