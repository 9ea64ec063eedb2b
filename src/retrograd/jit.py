"""`rg.jit`: trace a function of Tensors once, optimise the program, replay it fast.

Tracing runs the function eagerly on the real inputs while every op applied
(forward, and backward too: a traced backward computes with recorded ops) is
written into the shared graph IR (`ir.py`). The program then goes through a
few passes: dead code and common subexpressions vanish by construction (only
nodes reachable from the outputs are kept, and the IR hash-conses), constant
subgraphs are folded by evaluating them (never by algebraic rewrites, so NaN
and inf behave exactly as in eager mode), and element-wise chains are fused so
that each intermediate buffer is reused in place (`out=`). The result is
compiled to straight-line NumPy code with no autograd bookkeeping.

Guards: one trace per (input shapes, dtypes, non-tensor argument values,
values of Python numbers captured by closure). Anything that would silently
bake a traced value into the program raises `JitError` instead: `bool()`,
`.item()`, `.numpy()`, in-place ops, random numbers. Tensors captured from the
enclosing scope (model weights) are read afresh at every call, never frozen.
NumPy arrays passed as arguments are keyed by their contents, so a new value
retraces. Outputs are fresh arrays on every call and
carry no autograd history: to train with jit, jit the gradient computation
itself (`rg.jit(rg.func.value_and_grad(loss))`).
"""

from __future__ import annotations

import builtins
import functools
import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

from . import engine, ir
from .grad_mode import state
from .primitive import NUMPY, OPS, Op, defop, sum_to
from .tensor import Tensor

__all__ = ["jit", "JitError", "Jitted", "Program"]

def _vjp_op(op: Op, i: int) -> Op | None:
    """Input `i`'s vjp rule of a tuned op as an op of its own, `(g, out, *inputs) ->
    cotangent`, running the rule's NumPy fast path (made once per op and input)."""
    key = (op.name, i)
    if key in _VJP_OPS:
        return _VJP_OPS[key]
    rule = op.vjps[0] if op.variadic else op.vjps[i]
    if rule is None:
        vop = None
    elif not op.variadic and not op.broadcast:  # the rule itself, with m bound: no wrapper
        vop = defop(f"{op.name}_vjp{i}", functools.partial(rule, NUMPY), fresh=op.fresh_vjps)
    else:
        def forward(g, out, *xs, **attrs):
            if op.variadic:
                attrs["argnum"] = i
            r = rule(NUMPY, g, out, *xs, **attrs)
            if op.broadcast and r.shape != xs[i].shape:
                r = sum_to(NUMPY, r, xs[i].shape)
            return r

        vop = defop(f"{op.name}_vjp{i}", forward, fresh=op.fresh_vjps)
    _VJP_OPS[key] = vop
    return vop


_VJP_OPS: dict = {}


class JitError(RuntimeError):
    """Something inside a traced function cannot be captured faithfully."""


class _Tracer:
    """Records every op applied while tracing into an IR graph."""

    def __init__(self) -> None:
        self.graph = ir.Graph()
        self.nodes: dict[int, tuple[Tensor, ir.Node]] = {}
        self.meta: dict[ir.Node, tuple] = {}
        self.captures: list[Tensor] = []
        self.grad_writes: list[tuple[Tensor, Tensor]] = []
        self.count = 0

    def add_input(self, t: Tensor, name: str) -> ir.Node:
        n = self.graph.var(name)
        self.nodes[id(t)] = (t, n)
        self.meta[n] = (t.shape, t.dtype)
        return n

    def node_of(self, x) -> ir.Node:
        if isinstance(x, Tensor):
            hit = self.nodes.get(id(x))
            if hit is not None and hit[0] is x:
                return hit[1]
            # A tensor from outside the trace (weights in a closure, or made
            # inside by a creation function): an implicit input, read at call time.
            n = self.add_input(x, f"capture{len(self.captures)}")
            self.captures.append(x)
            return n
        return self.graph.const(x)

    def record(self, op, inputs, attrs, t) -> None:
        self.count += 1
        if op.name == "reshape" and t.shape == inputs[0].shape:  # a no-op: same node
            self.nodes[id(t)] = (t, self.node_of(inputs[0]))
            return
        n = self.graph.node(op.name, [self.node_of(x) for x in inputs], attrs)
        self.nodes[id(t)] = (t, n)
        self.meta[n] = (t.shape, t.dtype)

    def constant(self, t: Tensor) -> None:
        """`t` was created inside the traced function: its value is part of the program."""
        self.nodes[id(t)] = (t, self.graph.const(t.data))

    def alias(self, new: Tensor, old: Tensor) -> None:
        """`new` holds the same value as the traced `old` (e.g. a Function's output)."""
        self.nodes[id(new)] = (new, self.node_of(old))

    def tuned_backward(self, node, g) -> tuple:
        """A tuned op's first-order backward while tracing: each input's vjp rule is
        recorded as one op running its NumPy fast path, rather than as the generic ops
        the rule would record."""
        xs = node.inputs
        out = engine.apply(node.op, *xs, **node.attrs) if node.op.save_out else None
        result = []
        for i in node.needs:
            vop = _vjp_op(node.op, i)
            result.append(None if vop is None else engine.apply(vop, g, out, *xs, **node.attrs))
        return tuple(result)

    def grad_written(self, leaf: Tensor, g: Tensor) -> None:
        self.grad_writes.append((leaf, g))

    def refuse(self, what: str) -> None:
        raise JitError(
            f"{what} inside rg.jit: while tracing, a tensor's value is only an example, so "
            "using it in Python (bool(), if/while on a tensor, .item(), .numpy()) would freeze "
            "this one value into the compiled program. Keep the computation in tensor ops "
            "(e.g. rg.where instead of if), or move it outside the jitted function, or pass "
            "the Python value as a non-tensor argument (each new value retraces).")

    def refuse_inplace(self, t: Tensor) -> None:
        raise JitError(
            f"in-place op on a tensor of shape {t.shape} inside rg.jit: in-place updates are "
            "not traced; use the out-of-place op (x = x + y) inside, and update parameters "
            "outside the jitted function")

    def refuse_labels(self, name: str) -> None:
        raise JitError(
            f"{name} with ignore_index, class weights or targets other than (N,) class indices "
            "inside rg.jit: it computes with the label values, which would be frozen into the "
            f"trace; inside rg.jit, {name} takes (N, C) scores and (N,) labels in [0, C) "
            "(with reduction and label_smoothing), or compute the loss outside")

    def check_index(self, t: Tensor) -> None:
        """A tensor used as an index: only a constant of the trace can be one."""
        hit = self.nodes.get(id(t))
        if hit is None or hit[0] is not t or hit[1].op != ir.CONST:
            raise JitError(
                f"indexing with a tensor (shape {t.shape}) inside rg.jit: the index would be "
                "frozen into the trace as its first value. Pass the indices as a NumPy array "
                "or a list (each new value retraces), use a one-hot or mask product, or index "
                "outside the jitted function")

    def refuse_random(self) -> None:
        raise JitError(
            "random numbers inside rg.jit would be frozen into the trace (the same numbers "
            "every call); draw them outside and pass them in as an argument")


class Program:
    """A traced, optimised program: IR outputs over inputs, plus its compiled form."""

    def __init__(self, inputs, outputs, ops_traced: int, meta) -> None:
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.ops_traced = ops_traced
        self.meta = meta
        self.fn: Callable | None = None
        self.source = ""
        self.fused = 0

    @property
    def ops_after(self) -> int:
        return sum(1 for n in ir.toposort(self.outputs) if not n.is_leaf)

    def __str__(self) -> str:
        head = (f"# {self.ops_traced} ops traced, {self.ops_after} after passes "
                f"(dead code, common subexpressions, constant folding); "
                f"{self.fused} fused in place\n")
        return head + ir.dump(self.outputs, self.inputs)

    def __repr__(self) -> str:
        return f"<Program: {len(self.inputs)} inputs, {self.ops_after} ops>"


# ---------------------------------------------------------------- passes

def fold_constants(graph: ir.Graph, outputs: list) -> list:
    """Evaluate every node whose inputs are all constants (no algebraic rewrites)."""
    folded: dict = {}
    for n in ir.toposort(outputs):
        if n.is_leaf:
            continue
        ins = [folded.get(i, i) for i in n.inputs]
        if all(i.op == ir.CONST for i in ins):
            value = ir.evaluate([graph.node(n.op, ins, n.attrs)], {})[0]
            folded[n] = graph.const(np.asarray(value) if isinstance(value, np.ndarray)
                                    else value)
        elif any(a is not b for a, b in zip(ins, n.inputs)):
            folded[n] = graph.node(n.op, ins, n.attrs)
    return [folded.get(o, o) for o in outputs]


def _fusion_plan(outputs, inputs, meta) -> dict:
    """Element-wise nodes that may write into a dying input's buffer: node -> input."""
    order = ir.toposort(outputs)
    users = ir.users(order)
    last = {}
    for k, n in enumerate(order):
        for i in n.inputs:
            last[i] = k
    keep = set(outputs) | set(inputs)
    plan = {}
    for k, n in enumerate(order):
        op = OPS.get(n.op)
        if op is None or op.into is None or n not in meta or meta[n][0] == ():
            continue  # 0-d results come back as NumPy scalars, which cannot be written
        for i in n.inputs:
            if (i.op in OPS and OPS[i.op].fresh and i not in keep and last.get(i) == k and i in meta
                    and meta[i] == meta[n] and len(users[i]) == 1
                    and n.inputs.count(i) == 1 and i not in plan.values()):
                plan[n] = i
                break
    return plan


def compile_program(prog: Program) -> Callable:
    """Straight-line NumPy code; fused element-wise ops reuse a dying input's buffer."""
    plan = _fusion_plan(prog.outputs, prog.inputs, prog.meta)

    def emit(node, args, env):
        reuse = plan.get(node)
        if reuse is None:
            return None
        name = f"_into_{node.op}"
        env[name] = OPS[node.op].into
        return f"{name}({', '.join(args)}, out={args[node.inputs.index(reuse)]})"

    fn = ir.compile(prog.outputs, prog.inputs, name="jitted", emit=emit)
    prog.source = fn.source
    prog.fused = len(plan)
    return fn


# ---------------------------------------------------------------- pytrees

def _flatten(obj, leaves: list):
    """Replace each Tensor in nested tuples/lists/dicts by a placeholder index."""
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return _Leaf(len(leaves) - 1)
    if isinstance(obj, (tuple, list)):
        items = [_flatten(o, leaves) for o in obj]
        return type(obj)(items) if not hasattr(obj, "_fields") else type(obj)(*items)
    if isinstance(obj, dict):
        return {k: _flatten(v, leaves) for k, v in obj.items()}
    return obj


def _unflatten(obj, values):
    if isinstance(obj, _Leaf):
        return values[obj.index]
    if isinstance(obj, (tuple, list)):
        items = [_unflatten(o, values) for o in obj]
        return type(obj)(items) if not hasattr(obj, "_fields") else type(obj)(*items)
    if isinstance(obj, dict):
        return {k: _unflatten(v, values) for k, v in obj.items()}
    return obj


class _Leaf:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


# ---------------------------------------------------------------- the wrapper

def _static_key(value) -> Any:
    if isinstance(value, Tensor):
        return ("T", value.shape, value.dtype.str, value.requires_grad)
    if isinstance(value, np.ndarray):  # a constant of the trace: keyed by its contents
        data = np.ascontiguousarray(value).view(np.uint8)
        return ("A", value.shape, value.dtype.str, hashlib.blake2b(data).digest())
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(_static_key(v) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple((k, _static_key(v)) for k, v in sorted(value.items()))
    return ("V", ir.attr_key(value))


_PLAIN = {int, float, complex, str, bool, type(None)}


def _closure_key(cells: tuple) -> tuple:
    """Python numbers, strings and bools captured by closure: a change retraces."""
    out = []
    for c in cells:
        try:
            v = c.cell_contents
        except ValueError:  # empty cell
            continue
        if v.__class__ in _PLAIN or isinstance(v, (int, float, complex, str, np.generic)):
            out.append(ir.attr_key(v))
    return tuple(out)


class Jitted:
    """A traced-and-compiled version of `fn`; call it like `fn`."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.cells = getattr(fn, "__closure__", None) or ()
        self.cache: dict = {}
        self.by_tensors: dict = {}  # the common call, Tensors only: a cheaper key
        self.trace_count = 0
        self.graph: Program | None = None
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        if state.tracer is not None:  # inside another trace: just trace through
            return self.fn(*args, **kwargs)
        closure = _closure_key(self.cells) if self.cells else ()
        fast = None
        if not kwargs:
            sig = []
            for a in args:
                if a.__class__ is not Tensor:
                    break
                d = a.data
                sig.append((d.shape, d.dtype, a.requires_grad))
            else:
                fast = (*sig, closure)
                entry = self.by_tensors.get(fast)
                if entry is not None:
                    self.graph = entry[0]
                    return _replay(entry, args)
        key = (tuple(_static_key(a) for a in args),
               tuple(sorted((k, _static_key(v)) for k, v in kwargs.items())), closure)
        entry = self.cache.get(key)
        if entry is None:
            entry = self._trace(args, kwargs)
            self.cache[key] = entry
        if fast is not None:
            self.by_tensors[fast] = entry
        self.graph = entry[0]
        leaves: list = []
        _flatten((list(args), kwargs), leaves)
        return _replay(entry, leaves)

    def _trace(self, args, kwargs):
        tracer = _Tracer()
        leaves: list = []
        tree = _flatten((list(args), kwargs), leaves)
        arg_tensors = []
        inputs = []
        for k, x in enumerate(leaves):
            t = Tensor._wrap(x.data)  # a stand-in with the same value and flags
            t.requires_grad = x.requires_grad
            arg_tensors.append(t)
            inputs.append(tracer.add_input(t, f"arg{k}"))
        call_args, call_kwargs = _unflatten(tree, arg_tensors)
        prev = state.tracer
        state.tracer = tracer
        try:
            result = self.fn(*call_args, **call_kwargs)
        finally:
            state.tracer = prev
        out_leaves: list = []
        out_tree = _flatten(result, out_leaves)
        outputs = [tracer.node_of(t) for t in out_leaves]
        writes = []
        for leaf, g in tracer.grad_writes:
            target = arg_tensors.index(leaf) if any(leaf is a for a in arg_tensors) else None
            writes.append((target, leaf if target is None else None))
            outputs.append(tracer.node_of(g))
        inputs += [tracer.nodes[id(c)][1] for c in tracer.captures]
        outputs = fold_constants(tracer.graph, outputs)
        prog = Program(inputs, outputs, tracer.count, tracer.meta)
        prog.fn = compile_program(prog)
        self.trace_count += 1
        build = _output_builder(out_tree, [o.is_leaf for o in outputs],
                                [tracer.meta.get(o, ((),))[0] == () for o in outputs])
        return prog, build, len(out_leaves), writes, list(tracer.captures)

    def __repr__(self) -> str:
        return f"<rg.jit of {getattr(self.fn, '__name__', self.fn)!r}: {self.trace_count} traces>"


def _replay(entry, leaves):
    """Run the compiled program on the tensors `leaves` (the arguments, flattened)."""
    prog, build, n_out, writes, captures = entry
    arrays = [t.data for t in leaves]
    if captures:
        arrays += [c.data for c in captures]
    values = prog.fn(*arrays)
    if writes:
        for (target, leaf), g in zip(writes, values[n_out:]):
            owner = leaves[target] if target is not None else leaf
            engine._accumulate_grad(owner, g)
    return build(values)


def _output_builder(tree, copy: list, scalar: list) -> Callable:
    """A generated function: the program's output values -> the traced function's result
    structure, with each value a fresh Tensor (constants copied, NumPy scalars as arrays)."""
    env: dict[str, Any] = {"_W": Tensor._wrap, "_copy": np.array, "_asarray": np.asarray}

    def const(value) -> str:
        name = f"_k{len(env)}"
        env[name] = value
        return name

    def source(obj) -> str:
        if isinstance(obj, _Leaf):
            v = f"v[{obj.index}]"
            if copy[obj.index]:
                v = f"_copy({v}, copy=True)"
            elif scalar[obj.index]:
                v = f"_asarray({v})"
            return f"_W({v})"
        if isinstance(obj, (tuple, list)):
            items = "".join(source(o) + ", " for o in obj)
            if obj.__class__ is tuple:
                return f"({items})"
            if obj.__class__ is list:
                return f"[{items}]"
            if hasattr(obj, "_fields"):  # a named tuple
                return f"{const(type(obj))}({items})"
            return f"{const(type(obj))}([{items}])"
        if isinstance(obj, dict):
            return "{" + ", ".join(f"{const(k)}: {source(v)}" for k, v in obj.items()) + "}"
        return const(obj)

    code = f"def build(v):\n    return {source(tree)}\n"
    exec(builtins.compile(code, "<retrograd.jit outputs>", "exec"), env)
    return env["build"]


def jit(fn: Callable) -> Jitted:
    """Trace `fn` (a function of Tensors) once per input signature and replay it compiled."""
    if isinstance(fn, Jitted):
        return fn
    return Jitted(fn)
