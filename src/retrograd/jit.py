"""`rg.jit`: trace a function of Tensors once, optimise the program, replay it fast.

Tracing runs the function eagerly, for real, on the call's own tensors (the
first call's results and side effects are eager mode's), while every op applied
(forward, and backward too: a traced backward computes with recorded ops) is
written into the shared graph IR (`ir.py`). The program then goes through a
few passes: dead code and common subexpressions vanish by construction (only
nodes reachable from the outputs are kept, and the IR hash-conses), constant
subgraphs are folded by evaluating them (never by algebraic rewrites, so NaN
and inf behave exactly as in eager mode), and element-wise chains are fused so
that each intermediate buffer is reused in place (`out=`). The result is
compiled to straight-line NumPy code with no autograd bookkeeping.

Soundness: a replay gives what eager mode would give now, or the call raises
`JitError`. The rules:

- Inputs. The arguments' tensors, and every tensor the function reads that is
  not an argument (closures, globals, module parameters and buffers, optimizer
  state, a parameter's `.grad`), are read at every call, never frozen.
- Effects. In-place updates of those tensors (`p.sub_(...)`, `buf.mul_(m)`,
  `x += 1`, `t[i] = v`) and assignments of `.grad` (`backward()`,
  `zero_grad()`) are outputs of the program: each replay writes them back (in
  place, bumping version counters) as the eager call would. So a PyTorch-style
  step, `opt.zero_grad(); loss.backward(); opt.step()`, trains under jit.
- Guards. One trace per: the arguments' shapes, dtypes, `requires_grad` and
  Python values (NumPy arrays passed as arguments are keyed by their contents);
  grad mode and the default dtype; and a fingerprint of the Python state the
  function can reach: its closure cells, defaults and the globals its code
  names (recursively through the functions, their code objects, bound methods
  and objects found there: a Module's `training` flag and registered
  parameters, an optimizer's `param_groups` and `state`, an object's
  attributes). Python numbers,
  strings, containers and the identity of every tensor found are part of the
  fingerprint, so changing a global number, an attribute, `train()`/`eval()`,
  a learning rate, or rebinding a captured tensor retraces. Whether each
  `.grad` the trace read was None is guarded too. NumPy arrays found in that
  state are keyed by contents up to 64 elements and by identity above (a large
  array changed in place is not seen: pass it as an argument). Module
  attributes (`mod.X`) and state reachable only through C objects are not
  fingerprinted. Once two calls in a row see the same fingerprint, a guard is
  generated from it: straight-line code checking that every object the walk
  would reach is the same object, with the same contents, numbers and tensor
  shapes; while it holds, the walk is skipped, and when it fails the next call
  walks in full (so a call costs a few checks per object, not a walk).
- Refusals (`JitError`, at trace time): reading a traced tensor's values in
  Python (`.data`, `.item()`, `float()`, `bool()`, `if t:`, `str()`, `repr()`,
  `format()`, `.tolist()`, `.numpy()`, `np.asarray`), assigning `.data`,
  random numbers, tensor indices computed in the trace, in-place writes into a
  view, using a view of a tensor after that tensor was written in place, and a
  function that stores a tensor it made into outside state at every call (a
  first call that creates state, such as an optimizer's moment buffers, runs
  eagerly and is not cached; the next call traces the steady state).
- Outputs are fresh tensors on every call (Python values come back as they
  were at trace time: they depend only on guarded state). An output that eager
  mode would give `requires_grad=True` has it, but its history is not
  recorded: backward through it raises `JitError` (differentiate inside the
  jitted function instead).
"""

from __future__ import annotations

import builtins
import functools
import gc
import hashlib
import itertools
import operator
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _script_names, engine, ir
from .devices import as_result
from .dtypes import get_default_dtype
from .grad_mode import state
from .primitive import NUMPY, OPS, Op, defop, sum_to
from .tensor import Tensor

__all__ = ["jit", "JitError", "Jitted", "Program"]

_DATA = Tensor.__dict__["data"]  # the slots themselves, read past the traced class's properties
_GRAD = Tensor.__dict__["_grad"]
_get_data = _DATA.__get__
_get_grad = _GRAD.__get__
_set_grad = _GRAD.__set__


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


def _saving_op(op: Op) -> Op:
    """An op whose forward hands its backward an intermediate (`Op.saving`), as an op of
    its own returning `(output, saved)`: traced once, the replay computes both together."""
    name = f"{op.name}_saving"
    return OPS.get(name) or defop(name, op.saving)


_ITEM = defop("item", lambda pair, *, index: pair[index])


class JitError(RuntimeError):
    """Something inside a traced function cannot be captured faithfully."""


def _internal() -> bool:
    """Whether the code reading an attribute (two frames up) is retrograd's own."""
    name = sys._getframe(2).f_globals.get("__name__", "")
    return name.startswith("retrograd.") or name == "retrograd"


def _refuse_values(what: str):
    raise JitError(
        f"{what} of a traced tensor inside rg.jit: while tracing, a tensor's value is only an "
        "example, so using it in Python (.data, .item(), bool(), if/while on a tensor, str(), "
        "np.asarray, .tolist(), .numpy()) would freeze this one value into the compiled "
        "program. Keep the computation in tensor ops (e.g. rg.where instead of if), or move "
        "it outside the jitted function, or pass the Python value as a non-tensor argument "
        "(each new value retraces).")


def _traced_data(self):
    if _internal():
        return _get_data(self)
    _refuse_values("reading .data")


def _traced_set_data(self, value):
    raise JitError("assigning .data of a traced tensor inside rg.jit is not replayed; use an "
                   "in-place op (t.copy_(value)) or assign outside the jitted function")


def _traced_grad(self):
    g = _get_grad(self)
    tracer = state.tracer
    if tracer is not None:
        tracer.read_grad(self, g)
    return g


def _traced_set_grad(self, value):
    tracer = state.tracer
    if tracer is not None:
        tracer.wrote_grad(self)
    _set_grad(self, value)


def _traced_str(self, *spec):
    _refuse_values("str(), repr() or format()")


_TRACED: dict = {}


def _traced_class(cls: type) -> type:
    """`cls` with `.data`, `.grad`, `str` and `repr` watched: the class a tensor the tracer
    knows has while tracing (no new slots, so `__class__` can be switched both ways)."""
    tc = _TRACED.get(cls)
    if tc is None:
        tc = _TRACED[cls] = type(f"Traced{cls.__name__}", (cls,), {
            "__slots__": (), "_traced_base": cls, "__module__": cls.__module__,
            "data": property(_traced_data, _traced_set_data),
            "grad": property(_traced_grad, _traced_set_grad),
            "__repr__": _traced_str, "__str__": _traced_str, "__format__": _traced_str})
    return tc


def _root(a):
    """The array that owns `a`'s memory (views chain to it through `.base`)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


_ORIG_WRAP = Tensor.__dict__["_wrap"]


class _Tracer:
    """Records every op applied while tracing into an IR graph, with the state it reads
    (external tensors, `.grad` cells) and the effects it has (in-place writes, `.grad`
    assignments)."""

    def __init__(self) -> None:
        self.graph = ir.Graph()
        self.nodes: dict[int, tuple[Tensor, ir.Node]] = {}
        self.meta: dict[ir.Node, tuple] = {}
        self.ext: list[Tensor] = []          # external tensors: the arguments, then captures
        self.ext_ids: dict[int, int] = {}
        self.inputs: list[tuple] = []        # ("data", k) or ("grad", k): how to read each input
        self.input_nodes: list[ir.Node] = []
        self.switched: list[tuple] = []
        self.writes: dict[int, Tensor] = {}  # tensors written in place
        self.bumps: dict[int, int] = {}
        self.cells: dict[int, list] = {}     # id(owner) -> [owner, ext index, read first, initial]
        self.grad_inputs: dict[int, Tensor] = {}
        self.roots: dict[int, list] = {}     # id(owning array) -> known tensors over it
        self.poisoned: set[int] = set()
        self.fresh: dict[int, Tensor] = {}   # made by Tensor._wrap while tracing
        self.pending: dict[int, list] = {}   # id(owning array) -> external tensors not met yet
        self.finals: set[int] = set()        # the .grad tensors left at the end
        self.saved: dict[int, tuple] = {}    # id(saved array) -> (array, its IR node)
        self.count = 0

    # ------------------------------------------------------------ knowing tensors

    def switch(self, t: Tensor) -> None:
        cls = t.__class__
        if "_traced_base" in cls.__dict__:
            return
        try:
            t.__class__ = _traced_class(cls)
        except TypeError:
            raise JitError(f"rg.jit cannot trace a tensor of class {cls.__name__} (its layout "
                           "differs from Tensor's)") from None
        self.switched.append((t, cls))

    def restore(self) -> None:
        for t, cls in reversed(self.switched):
            t.__class__ = cls
        self.switched.clear()

    def _know(self, t: Tensor, n: ir.Node) -> None:
        self.nodes[id(t)] = (t, n)
        self.switch(t)
        arr = _get_data(t)
        if hasattr(arr, "base"):  # not what a forward saved for its backward (a tuple, ...)
            self.roots.setdefault(id(_root(arr)), []).append(t)

    def ext_index(self, t: Tensor) -> int:
        k = self.ext_ids.get(id(t))
        if k is None:
            k = self.ext_ids[id(t)] = len(self.ext)
            self.ext.append(t)
            self.switch(t)
        return k

    def add_input(self, t: Tensor) -> ir.Node:
        """`t`'s value as an input of the program (a var named by its place among the
        external tensors: the IR hash-conses vars by name, so names must not repeat)."""
        k = self.ext_index(t)
        n = self.graph.var(f"capture{k}")
        self.inputs.append(("data", k))
        self.input_nodes.append(n)
        arr = _get_data(t)
        self.meta[n] = (arr.shape, arr.dtype)
        self._know(t, n)
        return n

    def node_of(self, x) -> ir.Node:
        if isinstance(x, Tensor):
            hit = self.nodes.get(id(x))
            if hit is not None and hit[0] is x:
                if self.poisoned and id(x) in self.poisoned:
                    raise JitError(
                        f"a view (shape {x.shape}) of a tensor that was changed in place is "
                        "used afterwards inside rg.jit; take the view again after the change")
                return hit[1]
            return self.capture(x)
        return self.graph.const(x)

    def capture(self, x: Tensor) -> ir.Node:
        """A tensor the trace has not met: an alias of a known one, a constant made inside,
        or an external tensor read at every call."""
        arr = _get_data(x)
        same = self.roots.get(id(_root(arr)), ())
        for t in same:
            if _get_data(t) is arr:
                n = self.nodes[id(t)][1]
                self._know(x, n)
                return n
        made = self.fresh.get(id(x)) is x
        for t in self.pending.get(id(_root(arr)), ()):
            if t is not x and _get_data(t) is arr:  # a fresh alias (a detached copy)
                n = self.node_of(t)
                self._know(x, n)
                return n
        for t in same:
            if made or id(t) in self.writes:
                raise JitError(
                    f"a tensor (shape {x.shape}) sharing memory with a traced tensor was made "
                    "outside the op table inside rg.jit, or after that tensor changed in "
                    "place; its values cannot be replayed")
        if made:  # made inside from Python values: a constant of the program
            return self.constant(x)
        return self.add_input(x)

    def record(self, op, inputs, attrs, t) -> None:
        self.count += 1
        if op.name == "reshape" and t.shape == inputs[0].shape:  # a no-op: same node
            self._know(t, self.node_of(inputs[0]))
            return
        node = t.grad_fn
        if op.saving is not None and node is not None and node.op is op \
                and node.out is not None and node.out is not _get_data(t):
            # the recorded forward also saved intermediates for its tuned backward (an array,
            # a tuple of arrays, an object: carried through the program as they are)
            pair = self.graph.node(_saving_op(op).name, [self.node_of(x) for x in inputs],
                                   attrs)
            n = self.graph.node("item", [pair], {"index": 0})
            self.saved[id(node.out)] = (node.out, self.graph.node("item", [pair],
                                                                  {"index": 1}))
        else:
            n = self.graph.node(op.name, [self.node_of(x) for x in inputs], attrs)
        arr = _get_data(t)
        self.meta[n] = (arr.shape, arr.dtype)
        self._know(t, n)

    def record_many(self, op, inputs, attrs, outs) -> None:
        """A several-output op (`engine.apply_many`): one node, and an item per output."""
        self.count += 1
        node = self.graph.node(op.name, [self.node_of(x) for x in inputs], attrs)
        for k, t in enumerate(outs):
            n = self.graph.node("item", [node], {"index": k})
            arr = _get_data(t)
            self.meta[n] = (arr.shape, arr.dtype)
            self._know(t, n)

    def constant(self, t: Tensor) -> ir.Node:
        """`t` was created inside the traced function: its value is part of the program
        (a copy, so that an in-place change of `t` later in the trace cannot alter it)."""
        hit = self.nodes.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        arr = _get_data(t)
        n = self.graph.const(arr.copy())
        self.meta[n] = (arr.shape, arr.dtype)
        self._know(t, n)
        return n

    def alias(self, new: Tensor, old: Tensor) -> None:
        """`new` holds the same value as the traced `old` (a detached copy, a Function's
        output)."""
        self._know(new, self.node_of(old))

    def copied(self, new: Tensor, old: Tensor) -> None:
        """`new` is a copy of `old` made by the Tensor constructor."""
        n = self.node_of(old)
        arr = _get_data(new)
        if arr.dtype != self.meta.get(n, (None, arr.dtype))[1]:
            n = self.graph.node("cast", [n], {"dtype": arr.dtype})
        self.meta[n] = (arr.shape, arr.dtype)
        self._know(new, n)

    def wrap(self, arr) -> Tensor:
        """`Tensor._wrap` while tracing: remembers what was made outside the op table."""
        t = _ORIG_WRAP.__func__(arr)
        self.fresh[id(t)] = t
        return t

    # ------------------------------------------------------------ effects

    def inplace(self, t: Tensor, op, other, attrs, new) -> None:
        """`t` is about to be overwritten with `new` = op(t, other): the new value is a
        node, and `t` (and any tensor over the same array) stands for it from now on."""
        arr = _get_data(t)
        node = self.node_of(t)
        if id(t) not in self.ext_ids and id(t) not in self.grad_inputs and (
                arr.base is not None or id(_root(arr)) in self.roots and any(
                    id(u) in self.ext_ids and np.may_share_memory(_get_data(u), arr)
                    for u in self.roots[id(_root(arr))])):
            raise JitError(
                f"in-place '{op.name}' on a view (shape {t.shape}) inside rg.jit: the write "
                "would reach another tensor's memory, which is not replayed; clone() the view, "
                "or write into the tensor itself")
        if (op.name == "setitem" and attrs.get("idx") is Ellipsis and isinstance(other, Tensor)
                and _get_data(other).shape == arr.shape and _get_data(other).dtype == arr.dtype):
            n = self.node_of(other)  # t.copy_(same shape and dtype): t stands for the value
        else:
            n = self.graph.node(op.name, [node, self.node_of(other)], attrs)
        dtype = np.result_type(new)
        self.meta[n] = (arr.shape, dtype)
        if dtype != arr.dtype:
            n = self.graph.node("cast", [n], {"dtype": arr.dtype})
            self.meta[n] = (arr.shape, arr.dtype)
        for u in self.roots.get(id(_root(arr)), ()):
            if u is t or not np.may_share_memory(_get_data(u), arr):
                continue
            if _get_data(u) is arr:
                self.nodes[id(u)] = (u, n)
                self.writes[id(u)] = u
                self.bumps[id(u)] = self.bumps.get(id(u), 0) + 1
            else:
                self.poisoned.add(id(u))
        self.nodes[id(t)] = (t, n)
        self.writes[id(t)] = t
        self.bumps[id(t)] = self.bumps.get(id(t), 0) + 1

    def _external(self, owner: Tensor) -> bool:
        """Whether `owner` existed before the trace (its `.grad` is state to read and
        write back) rather than being made inside it."""
        if id(owner) in self.ext_ids:
            return True
        hit = self.nodes.get(id(owner))
        return hit is None or hit[0] is not owner

    def read_grad(self, owner: Tensor, g) -> None:
        if id(owner) in self.cells or not self._external(owner):
            return
        k = self.ext_index(owner)
        self.cells[id(owner)] = [owner, k, True, g]
        if g is not None and self.nodes.get(id(g), (None,))[0] is not g:
            arr = _get_data(g)
            n = self.graph.var(f"grad{k}")
            self.inputs.append(("grad", k))
            self.input_nodes.append(n)
            self.meta[n] = (arr.shape, arr.dtype)
            self.grad_inputs[id(g)] = g
            self._know(g, n)

    def wrote_grad(self, owner: Tensor) -> None:
        if id(owner) in self.cells or not self._external(owner):
            return
        self.cells[id(owner)] = [owner, self.ext_index(owner), False, None]

    # ------------------------------------------------------------ the rest of the engine

    def tuned_backward(self, node, g) -> tuple:
        """A tuned op's first-order backward while tracing: each input's vjp rule is
        recorded as one op running its NumPy fast path, rather than as the generic ops
        the rule would record."""
        xs = node.inputs
        out = None
        if node.op.save_out:
            out = engine.apply(node.op, *xs, **node.attrs)
        elif node.op.saving is not None and id(node.out) in self.saved:
            arr, n = self.saved[id(node.out)]  # what the traced forward saved, in a tensor
            if arr is node.out:
                out = Tensor._wrap(arr)
                self._know(out, n)
        result = []
        for i in node.needs:
            vop = _vjp_op(node.op, i)
            result.append(None if vop is None else engine.apply(vop, g, out, *xs, **node.attrs))
        return tuple(result)

    def refuse(self, what: str) -> None:
        _refuse_values(what)

    def refuse_labels(self, name: str) -> None:
        raise JitError(
            f"{name} with ignore_index, class weights or targets other than (N,) class indices "
            "inside rg.jit: it computes with the label values, which would be frozen into the "
            f"trace; inside rg.jit, {name} takes (N, C) scores and (N,) labels in [0, C) "
            "(with reduction and label_smoothing), or compute the loss outside")

    def check_index(self, t: Tensor) -> None:
        """A tensor used as an index: only a constant of the trace can be one."""
        hit = self.nodes.get(id(t))
        if hit is None or hit[0] is not t:
            if self.fresh.get(id(t)) is t:
                self.capture(t)
                hit = self.nodes.get(id(t))
        if hit is None or hit[0] is not t or hit[1].op != ir.CONST:
            raise JitError(
                f"indexing with a tensor (shape {t.shape}) inside rg.jit: the index would be "
                "frozen into the trace as its first value. Pass the indices as a NumPy array "
                "or a list (each new value retraces), use a one-hot or mask product, or index "
                "outside the jitted function")

    def refuse_tensor_lr(self) -> None:
        raise JitError(
            "a learning rate given as a Tensor inside rg.jit: its value would be frozen into "
            "the compiled step, so filling it later would change nothing; pass a float "
            "(a scheduler's new float lr retraces)")

    def refuse_saved_hooks(self) -> None:
        raise JitError(
            "saved_tensors_hooks inside rg.jit: the compiled program keeps its own saved "
            "values and would not call the pack and unpack hooks; use the hooks outside "
            "rg.jit")

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
        self.donated: dict = {}

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


def _donation_plan(outputs, meta, donors: dict) -> dict:
    """Write-backs computed in the written array's own buffer: node -> program input.

    `donors` maps a program input (a tensor's array as the call passes it) to the node
    whose value is written back into that array after the call. When that node's op can
    write into a given array (`into`), reads the input once, and is the input's last
    reader in the program's order (the order the trace ran, so every read of the old
    value comes before), the op writes straight into the input's buffer and the copy
    back has nothing left to do. The input must not be an output itself, and the node
    must be nothing but that write-back (not returned, not a `.grad`), so that no other
    result can see the buffer change. Whether the arrays of one call alias each other is
    checked at each call (`_donation_safe`)."""
    if not donors:
        return {}
    order = ir.toposort(outputs)
    last = {}
    for n in order:
        for i in n.inputs:
            last[i] = n
    counts: dict = {}
    for o in outputs:
        counts[o] = counts.get(o, 0) + 1
    plan: dict = {}
    for a, o in donors.items():
        if a in counts or counts.get(o) != 1 or a not in meta or meta.get(o) != meta[a] \
                or meta[a][0] == ():
            continue
        writer, k = o, None
        if o.op == "item":  # output k of a several-output op written into input donates[k]
            writer, k = o.inputs[0], o.attr("index")
        op = OPS.get(writer.op)
        if op is None or op.into is None or last.get(a) is not writer \
                or writer.inputs.count(a) != 1:
            continue
        if k is None:
            if writer not in plan:
                plan[writer] = a
        elif op.donates is not None and k < len(op.donates) and \
                writer.inputs[op.donates[k]] is a:
            plan.setdefault(writer, {})[k] = a
    return plan


def _donated_inputs(plan: dict) -> list:
    """The inputs a plan writes into (a several-output op's entry maps outputs to them)."""
    out = []
    for v in plan.values():
        out.extend(v.values() if isinstance(v, dict) else (v,))
    return out


def _fusion_plan(outputs, inputs, meta, plan: dict | None = None) -> dict:
    """Element-wise nodes that may write into a dying input's buffer: node -> input
    (added to `plan`, the donations)."""
    order = ir.toposort(outputs)
    users = ir.users(order)
    last = {}
    for k, n in enumerate(order):
        for i in n.inputs:
            last[i] = k
    keep = set(outputs) | set(inputs)
    plan = {} if plan is None else dict(plan)
    taken = set(_donated_inputs(plan))
    for k, n in enumerate(order):
        op = OPS.get(n.op)
        if (op is None or op.into is None or n in plan or n.attrs or n not in meta
                or meta[n][0] == ()):
            continue  # 0-d results come back as NumPy scalars, which cannot be written
        for i in n.inputs:
            if (i.op in OPS and OPS[i.op].fresh and i not in keep and last.get(i) == k and i in meta
                    and meta[i] == meta[n] and len(users[i]) == 1
                    and n.inputs.count(i) == 1 and i not in taken):
                plan[n] = i
                taken.add(i)
                break
    return plan


def _add_into_plan(outputs, inputs, meta) -> tuple[dict, set]:
    """`x + op(g)` where the op has `add_into`, x dies there and is a fresh array of the
    sum's shape and dtype: the sum -> (x's position, the op's node), run as
    `op.add_into(x, g)`; the op's node itself is then only its input (a split's backward
    adds each piece onto one array, not a full-size array per piece and a sum)."""
    order = ir.toposort(outputs)
    users = ir.users(order)
    keep = set(outputs) | set(inputs)
    plan: dict = {}
    passed: set = set()
    for n in order:
        if n.op != "add" or len(n.inputs) != 2 or n.attrs or n.inputs[0] is n.inputs[1]:
            continue
        for pos in (0, 1):
            x, s = n.inputs[pos], n.inputs[1 - pos]
            op_s, op_x = OPS.get(s.op), OPS.get(x.op)
            if (op_s is None or op_s.add_into is None or len(s.inputs) != 1 or s in keep
                    or len(users[s]) != 1 or s in passed or s in plan):
                continue
            if (op_x is None or not op_x.fresh) and x not in plan:
                continue
            if x in keep or len(users[x]) != 1 or x in passed:
                continue
            if not (meta.get(x) == meta.get(s) == meta.get(n) and meta.get(n) is not None
                    and meta[n][0] != ()):
                continue
            plan[n] = (pos, s)
            passed.add(s)
            break
    return plan, passed


def _tile_plan(adds: dict) -> tuple[set, set]:
    """Chains of `add_into` sums (`_add_into_plan`) whose pieces tile their array exactly
    (`Op.tile`): the chain's first array is made without zeroing it and each sum writes
    its piece instead of adding it (a split's backward, a concatenation)."""
    base_of = {n: n.inputs[pos] for n, (pos, _) in adds.items()}
    chains: dict = {}
    for n in adds:
        root = base_of[n]
        while root in base_of:
            root = base_of[root]
        chains.setdefault(root, []).append(n)
    first, into = set(), set()
    for root, chain in chains.items():
        op = OPS.get(root.op)
        if op is None or op.tile is None or len(root.inputs) != 1 or root in adds:
            continue
        if any(adds[n][1].op != root.op for n in chain):
            continue
        pieces = [dict(root.attrs)] + [dict(adds[n][1].attrs) for n in chain]
        if op.tile[0](pieces):
            first.add(root)
            into.update(chain)
    return first, into


def _same_casts(outputs, inputs, meta) -> set:
    """Casts to the dtype their input already has, of a fresh array that only the cast
    reads: the copy would give nobody a separate array, so the cast is its input (a
    gradient cast to its parameter's dtype, say)."""
    order = ir.toposort(outputs)
    users = ir.users(order)
    keep = set(outputs) | set(inputs)
    same = set()
    for n in order:
        if n.op != "cast" or len(n.inputs) != 1:
            continue
        i = n.inputs[0]
        op = OPS.get(i.op)
        if (op is not None and op.fresh and i not in keep and len(users[i]) == 1
                and meta.get(i) is not None and meta.get(i) == meta.get(n)):
            same.add(n)
    return same


def compile_program(prog: Program, donors: dict | None = None) -> Callable:
    """Straight-line NumPy code; fused element-wise ops reuse a dying input's buffer, and
    write-backs are computed in place where `donors` allows (`_donation_plan`)."""
    adds, passed = _add_into_plan(prog.outputs, prog.inputs, prog.meta)
    prog.donated = _donation_plan(prog.outputs, prog.meta, donors or {})
    plan = _fusion_plan(prog.outputs, prog.inputs, prog.meta, prog.donated)
    same = _same_casts(prog.outputs, prog.inputs, prog.meta)
    tile_first, tile_into = _tile_plan(adds)

    def emit(node, args, env):
        if node in passed or node in same:  # computed by the sum it feeds; a cast to its
            return args[0]                  # own dtype of an array no one else holds
        if node in tile_first:
            name = f"_tile_{node.op}"
            env[name] = OPS[node.op].tile[1]
            kw = "".join(f", {k}={_attr_const(env, v)}" for k, v in node.attrs)
            return f"{name}({args[0]}{kw})"
        hit = adds.get(node)
        if hit is not None:
            pos, s = hit
            tiled = node in tile_into
            name = f"_setto_{s.op}" if tiled else f"_addto_{s.op}"
            env[name] = OPS[s.op].tile[2] if tiled else OPS[s.op].add_into
            kw = "".join(f", {k}={_attr_const(env, v)}" for k, v in s.attrs)
            return f"{name}({args[pos]}, {args[1 - pos]}{kw})"
        reuse = plan.get(node)
        if reuse is None:
            return None
        name = f"_into_{node.op}"
        env[name] = OPS[node.op].into
        kw = "".join(f", {k}={_attr_const(env, v)}" for k, v in node.attrs)
        if isinstance(reuse, dict):  # a several-output op: a buffer (or None) per output
            n_out = len(OPS[node.op].donates)
            outs = [args[node.inputs.index(reuse[k])] if k in reuse else "None"
                    for k in range(n_out)]
            return f"{name}({', '.join(args)}{kw}, out=({', '.join(outs)},))"
        return f"{name}({', '.join(args)}{kw}, out={args[node.inputs.index(reuse)]})"

    fn = ir.compile(prog.outputs, prog.inputs, name="jitted", emit=emit, traced_order=True)
    prog.source = fn.source
    prog.fused = len(plan)
    return fn


def _attr_const(env: dict, value) -> str:
    """A name in `env` bound to `value`, for generated code."""
    name = f"_a{len(env)}"
    env[name] = value
    return name


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


# ---------------------------------------------------------------- guards: the Python state reached

_LIBRARY_TOPS = frozenset({"retrograd", "numpy", "torch", "scipy", "jax"}) \
    | frozenset(sys.stdlib_module_names)
_ATOMS = frozenset({int, float, complex, str, bytes, bool, type(None)})
_NAMES: dict = {}


def _library(module_name) -> bool:
    return isinstance(module_name, str) and module_name.partition(".")[0] in _LIBRARY_TOPS


def _code_names(fn: types.FunctionType) -> tuple:
    """The global (and attribute) names a user function's code, and the code nested in it,
    use; () for library functions (their module state is not user state). Cached per code
    object and globals dict (kept alive in the cache, so their ids stay valid)."""
    code, g = fn.__code__, fn.__globals__
    hit = _NAMES.get((id(code), id(g)))
    if hit is not None:
        return hit[2]
    found: list = []
    if not _library(g.get("__name__")):
        stack = [code]
        while stack:
            c = stack.pop()
            found.extend(c.co_names)
            stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    names = tuple(dict.fromkeys(found))
    _NAMES[(id(code), id(g))] = (code, g, names)
    return names


(_SEQ, _DICT, _SET, _TENSOR, _ARRAY, _GENERIC, _FUNC, _METHOD, _PARTIAL, _IDENT, _JITTED,
 _OBJECT, _OTHER) = range(13)
_KINDS: dict = {}


def _kind(cls: type) -> int:
    k = _KINDS.get(cls)
    if k is not None:
        return k
    if issubclass(cls, Tensor):
        k = _TENSOR
    elif issubclass(cls, (list, tuple)):
        k = _SEQ
    elif issubclass(cls, dict):
        k = _DICT
    elif issubclass(cls, (set, frozenset)):
        k = _SET
    elif issubclass(cls, np.ndarray):
        k = _ARRAY
    elif issubclass(cls, np.generic):
        k = _GENERIC
    elif cls is types.FunctionType:
        k = _FUNC
    elif cls is types.MethodType:
        k = _METHOD
    elif issubclass(cls, functools.partial):
        k = _PARTIAL
    elif issubclass(cls, Jitted):
        k = _JITTED
    elif issubclass(cls, (type, types.ModuleType, types.BuiltinFunctionType, np.ufunc,
                          types.CodeType, Program, weakref.ref)):
        k = _IDENT
    elif hasattr(cls, "__dict__") and "__dict__" in dir(cls):
        k = _OBJECT
    else:
        k = _OTHER
    _KINDS[cls] = k
    return k


def _user_class(v) -> bool:
    """A class defined outside the libraries (its attributes are user state)."""
    return isinstance(v, type) and not _library(getattr(v, "__module__", None))


def _user_module(v) -> bool:
    """A module of the user's (not a library's): its plain values are user state."""
    return isinstance(v, types.ModuleType) and not _library(v.__name__)


def _module_atoms(m) -> list:
    """A user module's numbers, strings, bools and Nones (by name), for the fingerprint."""
    return [(name, attr) for name, attr in vars(m).items()
            if attr.__class__ in _ATOMS and not (name.startswith("__") and name.endswith("__"))]


class _Walk:
    """A fingerprint of the Python state a function can reach: a flat list of values,
    structure marks and tensor identities, equal between two calls exactly when nothing
    the walk sees has changed."""

    __slots__ = ("out", "seen", "tensors")

    def __init__(self) -> None:
        self.out: list = []
        self.seen: dict = {}
        self.tensors: list = []

    def visit(self, v) -> None:
        out = self.out
        cls = v.__class__
        if cls in _ATOMS:
            out.append(cls)
            out.append(v if v == v else "nan")
            return
        i = id(v)
        mark = self.seen.get(i)
        if mark is not None:
            out.append(mark)
            return
        self.seen[i] = ~len(self.seen)  # a bare negative int: where the walk met it first
        k = _KINDS.get(cls)
        if k is None:
            k = _kind(cls)
        if k == _TENSOR:
            d = _get_data(v)
            out.append((i, d.shape, d.dtype, v.requires_grad, _hooks_of(v)))
            self.tensors.append(v)
        elif k == _SEQ:
            out.append(cls)
            out.append(len(v))
            for e in v:
                self.visit(e)
        elif k == _DICT:
            out.append(cls)
            out.append(len(v))
            for key, e in v.items():
                self.visit(key)
                self.visit(e)
        elif k == _FUNC:
            out.append(v)
            out.append(v.__code__)  # it can be replaced
            cells = v.__closure__
            if cells is not None:
                for c in cells:
                    try:
                        e = c.cell_contents
                    except ValueError:
                        out.append("<empty>")
                    else:
                        self.visit(e)
            if v.__defaults__:
                self.visit(v.__defaults__)
            if v.__kwdefaults__:
                self.visit(v.__kwdefaults__)
            names = _code_names(v)
            if names:
                g = v.__globals__
                for name in names:
                    if name in g:
                        out.append(name)
                        self.visit(g[name])
        elif k == _OBJECT:
            out.append(cls)
            self._class(cls)
            self.visit(vars(v))
        elif k == _IDENT:
            out.append(v)
            if _user_class(v):
                self._class(v, met=True)  # Cfg.scale read through a global class
            elif _user_module(v):
                for name, attr in _module_atoms(v):  # cfg.scale through an imported module
                    out.append(name)
                    out.append(attr)
        elif k == _ARRAY:
            out.append((v.shape, v.dtype, v.tobytes() if v.size <= 64 else i))
        elif k == _GENERIC:
            out.append((v.dtype, v.tobytes()))
        elif k == _METHOD:
            self.visit(v.__self__)
            self.visit(v.__func__)
        elif k == _PARTIAL:
            self.visit(v.func)
            self.visit(v.args)
            self.visit(v.keywords)
        elif k == _JITTED:
            self.visit(v.fn)
        elif k == _SET:
            try:
                out.append(frozenset(v))
            except TypeError:
                out.append(len(v))
        else:
            out.append(cls)
            try:
                hash(v)
                out.append(v)
            except TypeError:
                out.append(i)

    def _class(self, cls: type, met: bool = False) -> None:
        """A user class's own attributes and methods (what its methods' code reads);
        `met`: the walk has just met the class itself (so it is marked seen already)."""
        if not met:
            if id(cls) in self.seen:
                return
            self.seen[id(cls)] = ~len(self.seen)
        for c in cls.__mro__:
            if c is object or _library(c.__module__):
                continue
            for name, attr in vars(c).items():
                if not (name.startswith("__") and name.endswith("__")):
                    self.out.append(name)
                    self.visit(attr)


def _cell_empty(cell) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:
        return True
    return False


_HEAPTYPE = 1 << 9  # instances of such classes can have `__class__` reassigned


class _GuardWriter:
    """Writes a guard for a `_Walk` of `root`: straight-line code that returns True only if
    a new walk would give the same fingerprint, because every object it would reach is the
    same object, every container holds the same things in the same order, every number or
    string is equal and every tensor has the same shape, dtype and requires_grad. It is
    stricter than the fingerprint (identity where the walk compares contents): when it says
    False the caller walks in full. It mirrors `_Walk.visit` step by step and rebuilds the
    walk's output as it goes, which the caller compares with a real walk's before use."""

    def __init__(self) -> None:
        self.walk = _Walk()
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self.values: list = []
        self.locals = 0

    def const(self, v) -> str:
        name = self.names.get(id(v))
        if name is None:
            name = self.names[id(v)] = f"k{len(self.values)}"
            self.values.append(v)
        return name

    def fail(self, cond: str) -> None:
        self.lines.append(f"        if {cond}: return False")

    def bind(self, expr: str) -> str:
        name = f"v{self.locals}"
        self.locals += 1
        self.lines.append(f"        {name} = {expr}")
        return name

    def visit(self, v, expr: str, fixed: bool = False) -> None:
        """Mirror `_Walk.visit` for `v`, found at `expr` (already known to be `v` when
        `fixed`: a constant, or an element of an immutable object checked before)."""
        w = self.walk
        out = w.out
        cls = v.__class__
        if cls in _ATOMS:
            out.append(cls)
            out.append(v if v == v else "nan")
            if not fixed:
                x = self.bind(expr)
                same = f"{x} != {self.const(v)}" if v == v else f"{x} == {x}"
                self.fail(f"{x}.__class__ is not {self.const(cls)} or {same}")
            return
        i = id(v)
        mark = w.seen.get(i)
        if mark is not None:
            out.append(mark)
            if not fixed:
                self.fail(f"{expr} is not {self.const(v)}")
            return
        w.seen[i] = ~len(w.seen)
        k = _KINDS.get(cls)
        if k is None:
            k = _kind(cls)
        x = self.const(v)  # once `expr` is checked to be `v`, the constant stands for it
        if not fixed:
            self.fail(f"{expr} is not {x}")
        if k == _OBJECT or cls.__flags__ & _HEAPTYPE and k != _TENSOR:
            self.fail(f"{x}.__class__ is not {self.const(cls)}")
        if k == _TENSOR:
            d = _get_data(v)
            hooks = _hooks_of(v)
            out.append((i, d.shape, d.dtype, v.requires_grad, hooks))
            w.tensors.append(v)
            a = self.bind(f"{x}.data")
            self.fail(f"{a}.shape != {self.const(d.shape)} or {a}.dtype != "
                      f"{self.const(d.dtype)} or {x}.requires_grad is not {v.requires_grad!r}")
            self.fail(f"hooks_of({x}) != {self.const(hooks)}")
        elif k == _SEQ:
            out.append(cls)
            out.append(len(v))
            frozen = isinstance(v, tuple)
            if not frozen:
                self.fail(f"len({x}) != {len(v)}" if v else x)
            for n, e in enumerate(v):
                self.visit(e, self.const(e) if frozen else f"{x}[{n}]", frozen)
        elif k == _DICT:
            out.append(cls)
            out.append(len(v))
            keys = list(v)
            named = all(key.__class__ is str for key in keys)  # equal strings: the same key
            if not keys:
                self.fail(x)
            elif named:
                self.fail(f"list({x}) != {self.const(keys)}")
            else:  # other keys by identity (a tensor's == is element-wise)
                self.fail(f"len({x}) != {len(v)} or not all(map(is_, {x}, "
                          f"{self.const(tuple(keys))}))")
            vs = None if named or not v else self.bind(f"list({x}.values())")
            for n, (key, e) in enumerate(v.items()):
                self.visit(key, self.const(key), True)
                self.visit(e, f"{x}[{key!r}]" if named else f"{vs}[{n}]")
        elif k == _FUNC:
            out.append(v)
            out.append(v.__code__)
            self.fail(f"{x}.__code__ is not {self.const(v.__code__)} or {x}.__defaults__ is not "
                      f"{self.const(v.__defaults__)} or {x}.__kwdefaults__ is not "
                      f"{self.const(v.__kwdefaults__)}")
            cells = v.__closure__
            if cells is not None:
                for c in cells:
                    try:
                        e = c.cell_contents
                    except ValueError:
                        out.append("<empty>")
                        self.fail(f"not cell_empty({self.const(c)})")
                    else:
                        self.visit(e, f"{self.const(c)}.cell_contents")
            if v.__defaults__:
                self.visit(v.__defaults__, self.const(v.__defaults__), True)
            if v.__kwdefaults__:
                self.visit(v.__kwdefaults__, self.const(v.__kwdefaults__), True)
            names = _code_names(v)
            if names:
                g = v.__globals__
                gname = self.const(g)
                for name in names:
                    if name in g:
                        out.append(name)
                        self.visit(g[name], f"{gname}.get({name!r}, MISS)")
                    else:
                        self.fail(f"{name!r} in {gname}")
        elif k == _OBJECT:
            out.append(cls)
            self._class(cls)
            self.visit(vars(v), f"{x}.__dict__")
        elif k == _IDENT:
            out.append(v)
            if _user_class(v):
                self._class(v, met=True)
            elif _user_module(v):
                d = self.const(vars(v))
                for name, attr in _module_atoms(v):
                    out.append(name)
                    out.append(attr)
                    self.fail(f"{d}.get({name!r}, MISS) is not {self.const(attr)}")
                self.fail(f"len({d}) != {len(vars(v))}")  # (an atom added: walk again)
        elif k == _ARRAY:
            small = v.size <= 64
            out.append((v.shape, v.dtype, v.tobytes() if small else i))
            self.fail(f"{x}.shape != {self.const(v.shape)} or {x}.dtype != {self.const(v.dtype)}"
                      + (f" or {x}.tobytes() != {self.const(v.tobytes())}" if small else ""))
        elif k == _GENERIC:
            out.append((v.dtype, v.tobytes()))
        elif k == _METHOD:
            self.visit(v.__self__, self.const(v.__self__), True)
            self.visit(v.__func__, self.const(v.__func__), True)
        elif k == _PARTIAL:
            self.visit(v.func, f"{x}.func")
            self.visit(v.args, f"{x}.args")
            self.visit(v.keywords, f"{x}.keywords")
        elif k == _JITTED:
            self.visit(v.fn, f"{x}.fn")
        elif k == _SET:
            try:
                out.append(frozenset(v))
            except TypeError:
                out.append(len(v))
                self.fail(f"len({x}) != {len(v)}")
            else:
                if cls is not frozenset:
                    self.fail(f"frozenset({x}) != {self.const(out[-1])}" if v else x)
        else:
            out.append(cls)
            try:
                hash(v)
                out.append(v)
            except TypeError:
                out.append(i)

    def _class(self, cls: type, met: bool = False) -> None:
        """Mirror `_Walk._class`: a user class's attributes, each the same object."""
        w = self.walk
        if not met:
            if id(cls) in w.seen:
                return
            w.seen[id(cls)] = ~len(w.seen)
        c = self.const(cls)
        self.fail(f"{c}.__mro__ is not {self.const(cls.__mro__)}")
        for base in cls.__mro__:
            if base is object or _library(base.__module__):
                continue
            b = self.const(base)
            attrs = vars(base)
            self.fail(f"len({b}.__dict__) != {len(attrs)} or not all(map(is_, {b}.__dict__, "
                      f"{self.const(tuple(attrs))})) or not all(map(is_, "
                      f"{b}.__dict__.values(), {self.const(tuple(attrs.values()))}))")
            for name, attr in attrs.items():
                if not (name.startswith("__") and name.endswith("__")):
                    w.out.append(name)
                    self.visit(attr, self.const(attr), True)

    def build(self, root) -> Callable:
        """The guard: `guard(root) -> bool`."""
        self.visit(root, "root")
        params = ", ".join(f"k{n}" for n in range(len(self.values)))
        body = "\n".join(self.lines) or "        pass"
        code = (f"def make({params}):\n"
                f"    def guard(root):\n{body}\n        return True\n"
                f"    return guard\n")
        env = {"MISS": _MISS, "get_data": _get_data, "is_": operator.is_,
               "cell_empty": _cell_empty, "hooks_of": _hooks_of}
        exec(builtins.compile(code, "<retrograd.jit guard>", "exec"), env)
        return env["make"](*self.values)


# ---------------------------------------------------------------- the wrapper

def _hooks_of(t) -> tuple | None:
    """A tensor's gradient hooks (`register_hook`, `register_post_accumulate_grad_hook`) as a
    key: None without any. A trace ran them, so adding or removing one retraces."""
    h = t._hooks
    post = engine.POST_ACCUMULATE.get(id(t)) if engine.POST_ACCUMULATE else None
    if not h and not post:
        return None
    return (tuple(h or ()), tuple(post or ()))


def _static_key(value) -> Any:
    if isinstance(value, Tensor):
        d = value.data
        return ("T", d.shape, d.dtype.str, value.requires_grad, _hooks_of(value))
    if isinstance(value, np.ndarray):  # a constant of the trace: keyed by its contents
        data = np.ascontiguousarray(value).view(np.uint8)
        return ("A", value.shape, value.dtype.str, hashlib.blake2b(data).digest())
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(_static_key(v) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple((k, _static_key(v)) for k, v in sorted(value.items()))
    return ("V", ir.attr_key(value))


def _no_backward(m, g, out, *xs, argnum):
    raise JitError(
        "backward through the output of a rg.jit function: the compiled program records no "
        "graph. Differentiate inside the jitted function (loss.backward() or "
        "rg.autograd.grad there, or jit rg.func.value_and_grad(loss)), or call the function "
        "without rg.jit")


_JIT_OUTPUT = Op("jit_output", lambda *xs: None, (_no_backward,), variadic=True, reads=())
_ANCHOR = Tensor(np.zeros(()), requires_grad=True)  # the input of an output with no other
_MISS = object()
_CACHE_LIMIT = 16


class _Fingerprint:
    """A walk's output as part of a cache key: hashed once, and equal to itself at once."""

    __slots__ = ("items", "hash")

    def __init__(self, items: list) -> None:
        self.items = tuple(items)
        self.hash = hash(self.items)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other) -> bool:
        return self is other or (other.__class__ is _Fingerprint and self.hash == other.hash
                                 and self.items == other.items)


class _Entry:
    """One traced program and how to run it: where its inputs come from, which guards it
    needs, which effects it writes back, and how its outputs are built."""

    __slots__ = ("prog", "fn", "build", "n_out", "caps", "cap_meta", "fetch", "guards",
                 "writes", "grad_writes", "grad_sets", "out_rg", "copy", "scalar", "replay")


class Jitted:
    """A traced-and-compiled version of `fn`; call it like `fn`."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.cache: dict = {}
        self.trace_count = 0
        self.graph: Program | None = None
        self._escaped = False
        self._guard: Callable | None = None  # see `_reach`
        self._guarded: tuple = ()
        self._guard_hits = self._guard_fails = 0
        self._last: _Fingerprint | None = None
        self._alias: tuple = (None, None, None)  # the last argument ids, walked ids, alias
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        if state.flops is not None:
            raise JitError("rg.utils.flop_counter.FlopCounterMode cannot see the ops of a "
                           "function compiled by rg.jit (a replay runs none of them): count "
                           "the function itself, uncompiled")
        if state.tracer is not None:  # inside another trace: just trace through
            return self.fn(*args, **kwargs)
        tree = leaves = None
        if not kwargs:
            for a in args:
                if a.__class__ is not Tensor:
                    break
            else:  # the common call, tensors only: no pytree to flatten
                leaves = list(args)
                sig = tuple([(a.data.shape, a.data.dtype, a.requires_grad, _hooks_of(a))
                             for a in args])
                fingerprint, walked, walked_ids = self._reach()
        if leaves is None:
            walk = _Walk()
            walk.visit(self.fn)
            leaves = []
            tree = _flatten((list(args), kwargs), leaves)
            for a in (*args, *kwargs.values()):
                if not isinstance(a, (Tensor, np.ndarray)) and a.__class__ not in _ATOMS:
                    walk.visit(a)
            sig = (tuple(_static_key(a) for a in args),
                   tuple(sorted((k, _static_key(v)) for k, v in kwargs.items())))
            fingerprint, walked = _Fingerprint(walk.out), walk.tensors
            walked_ids = {id(t) for t in walked}
        ids = [id(t) for t in leaves]
        alias = None
        if ids == self._alias[0] and walked_ids is self._alias[1]:  # as at the last call
            alias = self._alias[2]
        elif walked or len(set(ids)) != len(ids):  # arguments that are the same tensor
            alias = (tuple(ids.index(i) for i in ids),
                     tuple(k for k, i in enumerate(ids) if i in walked_ids))
            self._alias = (ids, walked_ids, alias)
        key = (sig, alias, state.enabled, get_default_dtype(), fingerprint)
        entries = self.cache.get(key)
        if entries is not None:
            for entry in entries:
                got = _replay(entry, leaves)
                if got is not _MISS:
                    self.graph = entry.prog
                    return got
        if tree is None:
            tree = _flatten((list(args), kwargs), [])
        result, entry = self._trace(tree, leaves, walked)
        if entry is not None:
            if entries is None:
                if len(self.cache) >= _CACHE_LIMIT:
                    del self.cache[next(iter(self.cache))]
                entries = self.cache[key] = []
            entries.insert(0, entry)
            del entries[4:]
        return result

    def _reach(self) -> tuple:
        """The fingerprint of the Python state `fn` reaches, the tensors found there and
        their ids. A full `_Walk` costs a visit per object at every call, so once two walks
        in a row agree, a guard is written (`_GuardWriter`): while it holds, the state is
        what that walk saw. One that fails is dropped and the next call walks in full; a
        function whose guards keep failing at once (its state changes at every call) stops
        getting them."""
        guard = self._guard
        if guard is not None:
            try:
                if guard(self.fn):
                    self._guard_hits += 1
                    return self._guarded
            except Exception:  # noqa: BLE001 - a cell emptied, a `.data` gone: walk in full
                pass
            if self._guard_hits < 8:
                self._guard_fails += 1
            self._guard = None
        walk = _Walk()
        walk.visit(self.fn)
        reach = (_Fingerprint(walk.out), walk.tensors, {id(t) for t in walk.tensors})
        if reach[0] == self._last and self._guard_fails < 4:
            writer = _GuardWriter()
            guard = writer.build(self.fn)
            if writer.walk.out == walk.out and guard(self.fn):
                self._guard, self._guarded, self._guard_hits = guard, reach, 0
            else:
                self._guard_fails += 1
        self._last = reach[0]
        return reach

    def _trace(self, tree, leaves, walked):
        tracer = _Tracer()
        tracer.ext = list(leaves)
        for k, x in enumerate(leaves):
            if id(x) not in tracer.ext_ids:
                tracer.ext_ids[id(x)] = k
                n = tracer.graph.var(f"arg{k}")
                tracer.inputs.append(("data", k))
                tracer.input_nodes.append(n)
                arr = _get_data(x)
                tracer.meta[n] = (arr.shape, arr.dtype)
                tracer._know(x, n)
        for t in walked:
            tracer.switch(t)
            tracer.pending.setdefault(id(_root(_get_data(t))), []).append(t)
        call_args, call_kwargs = _unflatten(tree, leaves)
        prev = state.tracer
        state.tracer = tracer
        Tensor._wrap = staticmethod(tracer.wrap)
        try:
            try:
                result = self.fn(*call_args, **call_kwargs)
            finally:
                Tensor._wrap = _ORIG_WRAP
                state.tracer = prev
            first, entry = _finish(tracer, result, len(leaves))
            del result
        finally:
            tracer.restore()
        self.trace_count += 1
        self.graph = entry.prog
        refs = [weakref.ref(t) for t, _ in tracer.nodes.values()
                if id(t) not in tracer.ext_ids and id(t) not in tracer.grad_inputs
                and id(t) not in tracer.finals]
        refs += [weakref.ref(t) for t in tracer.fresh.values()
                 if id(t) not in tracer.finals and id(t) not in tracer.ext_ids]
        tracer.nodes.clear()
        tracer.fresh.clear()
        tracer.writes.clear()
        tracer.roots.clear()
        tracer.pending.clear()
        escaped = any(r() is not None for r in refs)
        if escaped:  # or only held by a reference cycle (y.add_(y) links y and its node)
            gc.collect()
            escaped = any(r() is not None for r in refs)
        if escaped:
            if self._escaped:
                self._escaped = False
                raise JitError(
                    "the function traced by rg.jit stored a tensor it made into outside state "
                    "(a list, an attribute, a dict) on two calls in a row; that store is not "
                    "replayed. Return the tensor instead, or keep it in an in-place updated "
                    "tensor (buf.copy_(value))")
            self._escaped = True
            return first, None  # a first call that made state: run eagerly, not cached
        self._escaped = False
        return first, entry

    def __repr__(self) -> str:
        return f"<rg.jit of {getattr(self.fn, '__name__', self.fn)!r}: {self.trace_count} traces>"


def _finish(tracer: _Tracer, result, n_args: int):
    """After the traced call: the program (outputs, then write-backs, then `.grad`
    assignments), the entry that replays it, and this first call's own result."""
    out_leaves: list = []
    out_tree = _flatten(result, out_leaves)
    outputs = [tracer.node_of(t) for t in out_leaves]
    out_rg = [t.requires_grad for t in out_leaves]
    values = [_get_data(t) for t in out_leaves]
    entry = _Entry()
    entry.writes, entry.grad_writes, entry.grad_sets, entry.guards = [], [], [], []
    grad_owner = {id(cell[3]): cell[1] for cell in tracer.cells.values()
                  if cell[3] is not None}
    extra, grad_extra = [], []  # in the order `_replay` reads them: writes, then .grad writes
    for t in tracer.writes.values():
        k = tracer.ext_ids.get(id(t))
        if k is not None:
            entry.writes.append((k, tracer.bumps[id(t)]))
            extra.append(tracer.nodes[id(t)][1])
        elif id(t) in grad_owner:
            entry.grad_writes.append((grad_owner[id(t)], tracer.bumps[id(t)]))
            grad_extra.append(tracer.nodes[id(t)][1])
    extra += grad_extra
    tracer.finals = set()
    seen_arrays: set = set()
    for owner, k, read_first, initial in tracer.cells.values():
        if read_first:
            entry.guards.append((k, None if initial is None else
                                 (_get_data(initial).shape, _get_data(initial).dtype)))
        final = _get_grad(owner)
        if final is None:
            if initial is not None or not read_first:
                entry.grad_sets.append((k, False))
            continue
        tracer.finals.add(id(final))
        if final is initial:
            continue
        arr = _get_data(final)
        if id(arr) in seen_arrays or any(arr is v for v in values):
            _set_grad(owner, Tensor._wrap(arr.copy()))  # .grad never aliases another array
        seen_arrays.add(id(arr))
        entry.grad_sets.append((k, True))
        extra.append(tracer.node_of(final))
    prog_outputs = fold_constants(tracer.graph, outputs + extra)
    prog = Program(tracer.input_nodes, prog_outputs, tracer.count, tracer.meta)
    n = len(outputs)
    prog.fn = compile_program(prog, _donors(tracer, entry, prog_outputs[n:]))
    entry.prog = prog
    entry.fn = prog.fn
    entry.n_out = n
    entry.caps = tracer.ext[n_args:]
    entry.cap_meta = [(_get_data(c).shape, _get_data(c).dtype, c.requires_grad, _hooks_of(c))
                      for c in entry.caps]
    entry.fetch = [(kind == "grad", k) for kind, k in tracer.inputs]
    entry.out_rg = out_rg if any(out_rg) else None
    entry.copy = [o.is_leaf for o in prog_outputs[:n]]
    entry.scalar = [tracer.meta.get(o, ((),))[0] == () for o in prog_outputs[:n]]
    # a .grad set from a constant or an input gets its own array at each call
    entry.grad_sets = [(k, (o.is_leaf or o in prog_outputs[:n]) if full else None)
                       for (k, full), o in zip(entry.grad_sets, _set_nodes(entry, prog_outputs))]
    entry.build = _output_builder(out_tree)
    entry.replay = _write_replay(entry, n_args)
    first = _outputs(entry, values, tracer.ext)
    return first, entry


def _donors(tracer: _Tracer, entry: _Entry, written: list) -> dict:
    """Program input -> the node written back into that input's array after the call
    (the tensor writes, then the `.grad` writes, as `written` lists their values)."""
    input_of = {(kind == "grad", k): node
                for (kind, k), node in zip(tracer.inputs, tracer.input_nodes)}
    targets = [(False, k) for k, _ in entry.writes] + [(True, k) for k, _ in entry.grad_writes]
    donors = {}
    for key, node in zip(targets, written):
        a = input_of.get(key)
        if a is not None:
            donors[a] = node
    return donors


_BASE = operator.attrgetter("base")
_WRITEABLE = operator.attrgetter("flags.writeable")


def _donation_safe(donated: tuple, others: tuple) -> bool:
    """Whether a call may let its program write into the `donated` arrays: each owns its
    memory and is writeable, none is passed twice, and no other array of the call is one
    of them or a view into one (an input read after the write must not see it). Runs at
    every call, so the common case (arrays that own their memory) stays in C loops."""
    n = len(donated)
    if not all(map(operator.is_, map(_BASE, donated), itertools.repeat(None))) \
            or not all(map(_WRITEABLE, donated)):
        return False
    ids = set(map(id, donated))
    if len(ids) != n or not ids.isdisjoint(map(id, others)):
        return False
    for a in others:
        a = getattr(a, "base", None)
        while a is not None:  # a view: none of the arrays it views may be donated
            if id(a) in ids:
                return False
            a = getattr(a, "base", None)
    return True


def _set_nodes(entry, prog_outputs):
    """The program outputs holding each `.grad` assignment's value (None for `= None`)."""
    pos = entry.n_out + len(entry.writes) + len(entry.grad_writes)
    for _, full in entry.grad_sets:
        if full:
            yield prog_outputs[pos]
            pos += 1
        else:
            yield None


def _replay(entry: _Entry, leaves):
    """Run the compiled program for one call (or `_MISS` when a guard fails)."""
    return entry.replay(leaves)


def _write_replay(entry: _Entry, n_args: int) -> Callable:
    """The per-call work around one entry's program, as straight-line code: check the
    captured tensors and `.grad` guards (`_MISS` if one fails), fetch the inputs, run the
    program, write its in-place effects back (bumping version counters), assign `.grad`s
    and build the outputs as `_outputs` does."""
    env: dict[str, Any] = {"MISS": _MISS, "fn": entry.fn, "build": entry.build,
                           "wrap": Tensor._wrap, "as_result": as_result, "state": state,
                           "mark_inplace": engine.mark_inplace, "record": engine._record,
                           "OUT": _JIT_OUTPUT, "ANCHOR": _ANCHOR, "safe": _donation_safe,
                           "POST": engine.POST_ACCUMULATE, "hooks_of": _hooks_of}

    def const(value) -> str:
        name = f"_k{len(env)}"
        env[name] = value
        return name

    names = [f"e{k}" for k in range(n_args)] + [const(c) for c in entry.caps]
    lines = ["def replay(leaves):"]
    if n_args:
        lines.append(f"    {', '.join(names[:n_args])}, = leaves")
    for c, (shape, dtype, rg, hooks) in zip(names[n_args:], entry.cap_meta):
        lines += [f"    d = {c}.data",
                  f"    if d.shape != {const(shape)} or d.dtype != {const(dtype)} or "
                  f"{c}.requires_grad != {rg!r}: return MISS"]
        if hooks is None:  # the common case, cheap: no hook then, none now
            lines.append(f"    if {c}._hooks or POST and POST.get(id({c})): return MISS")
        else:
            lines.append(f"    if hooks_of({c}) != {const(hooks)}: return MISS")
    for k, want in entry.guards:
        if want is None:
            lines.append(f"    if {names[k]}.grad is not None: return MISS")
        else:
            lines += [f"    g = {names[k]}.grad",
                      f"    if g is None or g.data.shape != {const(want[0])} or g.data.dtype != "
                      f"{const(want[1])}: return MISS"]
    args = [f"{names[k]}.grad.data" if grad else f"{names[k]}.data" for grad, k in entry.fetch]
    index = {node: i for i, node in enumerate(entry.prog.inputs)}
    donated = sorted(index[a] for a in _donated_inputs(entry.prog.donated))
    if donated:  # the program writes into these arrays unless the call's arrays alias
        others = [i for i in range(len(args)) if i not in set(donated)]
        lines += [f"    args = [{', '.join(args)}]",
                  f"    if not safe(({''.join(f'args[{i}], ' for i in donated)}), "
                  f"({''.join(f'args[{i}], ' for i in others)})):",
                  f"        for i in {tuple(donated)!r}:",
                  "            args[i] = args[i].copy()",
                  "    values = fn(*args)"]
    else:
        lines.append(f"    values = fn({', '.join(args)})")
    pos = entry.n_out
    for k, bumps in entry.writes:  # a value computed in the array itself needs no copy
        lines += [f"    t = {names[k]}", f"    v = values[{pos}]",
                  "    if v is not t.data:", "        t.data[...] = v",
                  f"    t._cell()[0] += {bumps}"]
        pos += 1
    for k, bumps in entry.grad_writes:
        lines += [f"    g = {names[k]}.grad", f"    v = values[{pos}]",
                  "    if v is not g.data:", "        g.data[...] = v",
                  f"    g._cell()[0] += {bumps}"]
        pos += 1
    if entry.writes or entry.grad_writes:
        lines.append("    mark_inplace()")
    for k, copy in entry.grad_sets:
        if copy is None:
            lines.append(f"    {names[k]}.grad = None")
        else:
            value = f"values[{pos}].copy()" if copy else f"as_result(values[{pos}])"
            lines.append(f"    {names[k]}.grad = wrap({value})")
            pos += 1
    outs = []
    for i in range(entry.n_out):
        value = (f"values[{i}].copy()" if entry.copy[i] else
                 f"as_result(values[{i}])" if entry.scalar[i] else f"values[{i}]")
        lines.append(f"    o{i} = wrap({value})")
        outs.append(f"o{i}")
    if entry.out_rg is not None:
        lines += ["    if state.enabled:",
                  f"        inputs = tuple([t for t in ({''.join(n + ', ' for n in names)}) "
                  "if t.requires_grad]) or (ANCHOR,)",
                  "        needs = tuple(range(len(inputs)))",
                  "        datas = tuple([t.data for t in inputs])"]
        for i, rg in enumerate(entry.out_rg):
            if rg:
                lines.append(f"        if o{i}.data.dtype.kind in 'fc': "
                             f"record(OUT, o{i}, inputs, datas, {{}}, needs)")
    lines.append(f"    return build([{', '.join(outs)}])")
    exec(builtins.compile("\n".join(lines) + "\n", "<retrograd.jit replay>", "exec"), env)
    return env["replay"]


def _outputs(entry: _Entry, values, ext):
    """The call's result: fresh tensors (copies of constants and inputs), marked as
    requiring grad where eager mode's would."""
    wrap = Tensor._wrap
    outs = []
    for i in range(entry.n_out):
        v = values[i]
        if entry.copy[i]:
            v = v.copy()
        elif entry.scalar[i]:
            v = as_result(v)
        outs.append(wrap(v))
    if entry.out_rg is not None and state.enabled:
        inputs = tuple(t for t in ext if isinstance(t, Tensor) and t.requires_grad) \
            or (_ANCHOR,)
        needs = tuple(range(len(inputs)))
        datas = tuple(t.data for t in inputs)
        for t, rg in zip(outs, entry.out_rg):
            if rg and t.data.dtype.kind in "fc":
                engine._record(_JIT_OUTPUT, t, inputs, datas, {}, needs)
    return entry.build(outs)


def _output_builder(tree) -> Callable:
    """A generated function: the call's output tensors -> the traced function's result
    structure (Python values in it as they were at trace time)."""
    env: dict[str, Any] = {}

    def const(value) -> str:
        name = f"_k{len(env)}"
        env[name] = value
        return name

    def source(obj) -> str:
        if isinstance(obj, _Leaf):
            return f"v[{obj.index}]"
        if isinstance(obj, (tuple, list)):
            items = "".join(source(o) + ", " for o in obj)
            if obj.__class__ is tuple:
                return f"({items})"
            if obj.__class__ is list:
                return f"[{items}]"
            if hasattr(obj, "_fields"):  # a named tuple
                return f"{const(type(obj))}({items})"
            return f"{const(type(obj))}([{items}])"
        if obj.__class__ is dict:
            return "{" + "".join(f"{const(k)}: {source(v)}, " for k, v in obj.items()) + "}"
        return const(obj)

    code = f"def build(v):\n    return {source(tree)}\n"
    exec(builtins.compile(code, "<retrograd.jit outputs>", "exec"), env)
    return env["build"]


def jit(fn: Callable) -> Jitted:
    """Trace `fn` (a function of Tensors) once per input signature and state, and replay it
    compiled; see the module's docstring for what is read, guarded, written back and
    refused."""
    if isinstance(fn, Jitted):
        return fn
    if not callable(fn):
        raise TypeError(f"rg.jit needs a callable, got {type(fn).__name__}")
    return Jitted(fn)


# torch.jit's eager-mode names (is_scripting, unused, annotate, ...) as attributes of rg.jit,
# for PyTorch model code written against torch.jit.
_script_names.attach(jit)
