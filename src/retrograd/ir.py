"""The graph IR shared by `rg.sym` and `rg.jit`.

A program is a DAG of `IRNode`s. A node is an op name, a tuple of input nodes and
a tuple of `(name, value)` attributes. Two leaf ops exist outside the op table:
`"var"` (a named input, attribute `name`) and `"const"` (attribute `value`, a
Python number or a NumPy array); every other op is a name in `ops.OPS`, so a
node means "call that op's NumPy `forward` on the inputs' values with these
attributes", and its derivative is that op's rule in the same table.

Nodes are made through a `Graph`, which hash-conses them: asking twice for the
same op on the same inputs with equal attributes returns the same node, so
structurally identical subexpressions are stored once (common subexpression
elimination for free) and structural equality is identity. A node's inputs
always exist before it, so its creation number `seq` orders every graph
topologically: every walk here is a loop over that order, never recursion.

Provided here, for any op in the table: `toposort`, `schedule`, `users`,
`depends_on`, `evaluate` (an
interpreter), `to_source`/`compile` (straight-line NumPy code generation) and
`dump` (a flat, printable program).
"""

from __future__ import annotations

import builtins
import math
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import count
from operator import attrgetter
from typing import Any

import numpy as np

from . import ops
from .primitive import ArgumentError

VAR = "var"
CONST = "const"
LEAF_OPS = frozenset((VAR, CONST))

next_seq = count().__next__
_seq = attrgetter("seq")


class IRNode:
    """One operation in a graph: `op`, `inputs` (nodes), `attrs` ((name, value) pairs).

    Nodes are immutable and compared by identity; a `Graph` guarantees that
    identity is structural equality. `seq` is the creation number (inputs are
    always older than their users).
    """

    __slots__ = ("op", "inputs", "attrs", "seq", "__weakref__")

    def __init__(self, op: str, inputs: tuple, attrs: tuple) -> None:
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.seq = next_seq()

    def attr(self, name: str, default: Any = None) -> Any:
        """The value of attribute `name` (or `default`)."""
        for k, v in self.attrs:
            if k == name:
                return v
        return default

    @property
    def is_leaf(self) -> bool:
        return self.op in LEAF_OPS

    def __repr__(self) -> str:
        if self.op == VAR:
            return f"<var {self.attr('name')}>"
        if self.op == CONST:
            return f"<const {self.attr('value')!r}>"
        return f"<{self.op} #{self.seq}>"


# ---------------------------------------------------------------- hash-consing

def attr_key(value: Any) -> Any:
    """A hashable key for an attribute value, equal exactly when the values are interchangeable.

    Floats are keyed by their bits (so 0.0 and -0.0 differ, and every NaN
    matches itself); ints, floats and bools never match each other; lists
    and tuples are keyed element-wise; slices, which are not hashable before
    Python 3.12, by their fields; small arrays by content and large ones by
    identity (the node keeps the array alive, so the identity stays valid).
    """
    cls = value.__class__
    if cls is float:
        return (float, value.hex())
    if cls is int or cls is str or cls is bool or value is None:
        return (cls, value)
    if cls is tuple or cls is list:
        return (tuple, tuple(attr_key(v) for v in value))
    if cls is slice:
        return (slice, attr_key(value.start), attr_key(value.stop), attr_key(value.step))
    if isinstance(value, np.ndarray):
        if value.size <= 64:
            return (np.ndarray, value.dtype.str, value.shape, value.tobytes())
        return (np.ndarray, id(value))
    if isinstance(value, np.generic):
        return (np.generic, value.dtype.str, value.tobytes())
    if isinstance(value, (float, int, complex)):  # subclasses, complex
        return (cls, repr(value))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return (cls, value)


def freeze_attrs(attrs: Mapping[str, Any] | Iterable | None) -> tuple:
    """Attributes as a tuple of (name, value) pairs sorted by name."""
    if not attrs:
        return ()
    items = attrs.items() if isinstance(attrs, Mapping) else attrs
    return tuple(sorted(items, key=lambda kv: kv[0]))


class Graph:
    """A hash-consing table: `node(op, inputs, attrs)` returns the one node for that structure.

    `weak=True` keeps nodes only while something else references them (what a
    long-lived table such as rg.sym's needs); otherwise the table owns its
    nodes (what one trace of rg.jit needs). `node_type` lets a front end use a
    `IRNode` subclass with its own methods and slots.
    """

    def __init__(self, node_type: type = IRNode, weak: bool = False) -> None:
        self.node_type = node_type
        self.weak = weak
        self.table: dict = {}  # key -> node, or a weak reference to it

    def node(self, op: str, inputs: Sequence[IRNode] = (), attrs: Any = None) -> IRNode:
        """The unique node for `op` applied to `inputs` with `attrs`."""
        inputs = tuple(inputs)
        attrs = freeze_attrs(attrs)
        key = (op, tuple(map(id, inputs)),
               tuple((k, attr_key(v)) for k, v in attrs) if attrs else ())
        table = self.table
        hit = table.get(key)
        if self.weak:
            if hit is not None:
                hit = hit()
            if hit is None:
                hit = self.node_type(op, inputs, attrs)

                def forget(ref: weakref.ref, key: tuple = key) -> None:
                    if table.get(key) is ref:
                        del table[key]

                table[key] = weakref.ref(hit, forget)
        elif hit is None:
            hit = table[key] = self.node_type(op, inputs, attrs)
        return hit

    def var(self, name: str, **attrs: Any) -> IRNode:
        return self.node(VAR, (), dict(attrs, name=name))

    def const(self, value: Any) -> IRNode:
        return self.node(CONST, (), (("value", value),))

    def __len__(self) -> int:
        return len(self.table)


# ---------------------------------------------------------------- walks

def toposort(roots: Iterable[IRNode]) -> list[IRNode]:
    """Every node reachable from `roots`, inputs before users, found without recursion."""
    seen = set()
    stack = []
    for r in roots:
        if r not in seen:
            seen.add(r)
            stack.append(r)
    add = seen.add
    push = stack.append
    pop = stack.pop
    while stack:
        for i in pop().inputs:
            if i not in seen:
                add(i)
                push(i)
    return sorted(seen, key=_seq)


def schedule(roots: Iterable[IRNode]) -> list[IRNode]:
    """A topological order that computes each input just before its first use.

    Depth-first post-order from the roots (no recursion): like evaluating
    the expression as written, it keeps few intermediate values alive at once,
    which is what evaluation and generated code want.
    """
    order: list[IRNode] = []
    done: set[IRNode] = set()
    add = done.add
    emit = order.append
    for r in roots:
        if r in done:
            continue
        stack = [[r, 0]]
        while stack:
            top = stack[-1]
            n, i = top
            ins = n.inputs
            if i < len(ins):
                top[1] = i + 1
                c = ins[i]
                if c not in done:
                    stack.append([c, 0])
            else:
                stack.pop()
                if n not in done:
                    add(n)
                    emit(n)
    return order


def users(order: Sequence[IRNode]) -> dict[IRNode, list[IRNode]]:
    """For each node of `order`, the nodes of `order` that take it as an input."""
    out = {n: [] for n in order}
    for n in order:
        for i in n.inputs:
            lst = out.get(i)
            if lst is not None and (not lst or lst[-1] is not n):
                lst.append(n)
    return out


def depends_on(order: Sequence[IRNode], sources: Iterable[IRNode]) -> set[IRNode]:
    """The nodes of `order` (topologically sorted) that are or use one of `sources`."""
    dep = set(sources)
    for n in order:
        if n not in dep:
            for i in n.inputs:
                if i in dep:
                    dep.add(n)
                    break
    return dep


def _last_use(order: Sequence[IRNode]) -> dict[IRNode, int]:
    last = {}
    for k, n in enumerate(order):
        for i in n.inputs:
            last[i] = k
    return last


# ---------------------------------------------------------------- interpreter

class UnboundVariableError(ValueError):
    """A `var` node was reached without a value for it; the message names it."""


def evaluate(outputs: Sequence[IRNode], env: Mapping[IRNode, Any]) -> list:
    """Values of `outputs`: each op's NumPy `forward` in topological order.

    `env` maps each reachable `var` node to its value. A value is dropped as
    soon as its last user has run, so memory stays at the live set.
    """
    order = schedule(outputs)
    keep = set(outputs)
    last = _last_use(order)
    vals: dict = {}
    table = ops.OPS
    for k, n in enumerate(order):
        op = n.op
        if op == CONST:
            v = n.attrs[0][1]
        elif op == VAR:
            try:
                v = env[n]
            except KeyError:
                raise UnboundVariableError(f"no value for variable '{n.attr('name')}'") from None
        else:
            args = [vals[i] for i in n.inputs]
            fn = table[op].forward
            v = fn(*args, **dict(n.attrs)) if n.attrs else fn(*args)
            for i in n.inputs:
                if last[i] == k and i not in keep:
                    vals.pop(i, None)
        vals[n] = v
    return [vals[o] for o in outputs]


# ---------------------------------------------------------------- code generation

_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**",
          "gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
_LITERALS = (int, str, bool, type(None))


def _literal(v: Any) -> str | None:
    """Python source for a value that can be written inline, or None."""
    if v.__class__ is float:
        return repr(v) if math.isfinite(v) else None
    if v.__class__ in _LITERALS:
        return repr(v)
    if v.__class__ is tuple and all(_literal(e) is not None for e in v):
        return repr(v)
    return None


def to_source(outputs: Sequence[IRNode], inputs: Sequence[IRNode], name: str = "f",
              prologue: Sequence[str] = (),
              epilogue: Callable[[str, IRNode], str] | None = None,
              free: bool = True, single: bool = False,
              emit: Callable[[IRNode, list, dict], str | None] | None = None,
              traced_order: bool = False) -> tuple[str, dict]:
    """Straight-line Python source of a NumPy function computing `outputs` from `inputs`.

    Returns the source and the globals it needs (op forwards and constants
    that have no literal form). Arithmetic uses Python operators on arrays;
    every other op calls its `forward` from the op table. One line per node,
    so arbitrarily deep graphs compile without recursion. `prologue` lines run
    first (the parameters are `a0, a1, ...`); `epilogue(text, node)` wraps each
    returned expression; `free` reuses a temporary's name once its value is dead (the
    old array is freed at once, and few arrays are alive at any time); `single`
    returns the one output itself rather than a 1-tuple; `emit(node, args,
    env)` may return a custom right-hand side for a node (adding what it needs to
    `env`), e.g. rg.jit's in-place fused ops; `traced_order` computes the nodes in the
    order they were made (`toposort`) rather than each just before its first use.
    """
    index = {n: k for k, n in enumerate(inputs)}
    order = toposort(outputs) if traced_order else schedule(outputs)
    missing = [n for n in order if n.op == VAR and n not in index]
    if missing:
        names = ", ".join(repr(n.attr("name")) for n in missing)
        raise ArgumentError(f"no input given for variable(s) {names}")
    env: dict[str, Any] = {"np": np}
    names: dict[IRNode, str] = {}
    lines = [f"def {name}({', '.join(f'a{k}' for k in range(len(inputs)))}):"]
    lines += [f"    {line}" for line in prologue]
    last = _last_use(order)
    keep = set(outputs)
    counter = count()
    temps = count()
    spare: list[str] = []

    def constant(v: Any) -> str:
        lit = _literal(v)
        if lit is not None:
            return lit if not lit.startswith("-") else f"({lit})"
        key = f"_c{next(counter)}"
        env[key] = v
        return key

    for k, n in enumerate(order):
        op = n.op
        if op == VAR:
            names[n] = f"a{index[n]}"
            continue
        if op == CONST:
            names[n] = constant(n.attrs[0][1])
            continue
        args = [names[i] for i in n.inputs]
        sym = _INFIX.get(op)
        custom = emit(n, args, env) if emit is not None else None
        if custom is not None:
            rhs = custom
        elif sym is not None and len(args) == 2 and not n.attrs:
            rhs = f"{args[0]} {sym} {args[1]}"
        elif op == "neg" and not n.attrs:
            rhs = f"-{args[0]}"
        else:
            fn = f"_{op}"
            env[fn] = ops.OPS[op].forward
            kw = [f"{a}={constant(v)}" for a, v in n.attrs]
            rhs = f"{fn}({', '.join(args + kw)})"
        if free:  # names of values used for the last time are reused: the old array dies
            for i in dict.fromkeys(n.inputs):
                if last[i] == k and i not in keep and i.op not in LEAF_OPS:
                    spare.append(names[i])
        var = spare.pop() if spare else f"t{next(temps)}"
        names[n] = var
        lines.append(f"    {var} = {rhs}")
    wrap = epilogue or (lambda s, n: s)
    outs = ", ".join(wrap(names[o], o) for o in outputs)
    lines.append(f"    return {outs}" if single else f"    return ({outs},)" if outs
                 else "    return ()")
    return "\n".join(lines) + "\n", env


def compile(outputs: Sequence[IRNode], inputs: Sequence[IRNode], name: str = "f",
            **kw: Any) -> Callable:
    """A Python function of the `inputs`' values returning a tuple of the `outputs`' values."""
    src, env = to_source(outputs, inputs, name=name, **kw)
    code = builtins.compile(src, f"<retrograd.ir {name}>", "exec")
    exec(code, env)
    fn = env[name]
    fn.source = src
    return fn


# ---------------------------------------------------------------- printing

def dump(outputs: Sequence[IRNode], inputs: Sequence[IRNode] = ()) -> str:
    """A flat, readable listing of the program: one line per node, then the outputs."""
    order = toposort(outputs)
    names: dict[IRNode, str] = {}
    lines = []
    for k, n in enumerate(inputs):
        names[n] = f"%{k}" if n.op != VAR else f"%{n.attr('name')}"
    for n in order:
        if n in names:
            continue
        if n.op == VAR:
            names[n] = f"%{n.attr('name')}"
            continue
        if n.op == CONST:
            v = n.attrs[0][1]
            names[n] = repr(v) if _literal(v) is not None else f"const{np.shape(v)}"
            continue
        names[n] = f"%t{len(lines)}"
        args = " ".join(names[i] for i in n.inputs)
        kw = "".join(f" {a}={v!r}" for a, v in n.attrs)
        lines.append(f"{names[n]} = {n.op} {args}{kw}".rstrip())
    lines.append("return " + ", ".join(names[o] for o in outputs))
    return "\n".join(lines)
