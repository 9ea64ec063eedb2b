"""The autograd engine: graph nodes, recording an op, and the backward walk.

The engine knows nothing about particular ops. An op (a `primitive.Op`, registered
by the table in `ops/`) gives a NumPy forward and per-input derivative rules;
`apply` runs the forward and,
when gradients are wanted, records a `Node`. `backward` walks the nodes from
the newest down (a heap keyed by creation number; no recursion, no separate
topological sort), keeping the pending gradients in a dictionary that is
popped as it goes; along a chain it passes the gradient on directly.

No reference cycles: an output tensor points to its node, the node points to
its inputs, and nothing points back. The graph dies by reference counting.
"""

from __future__ import annotations

import threading
import weakref
from heapq import heapify, heappop, heappush
from itertools import count
from operator import attrgetter

from numpy import may_share_memory, ndarray

from .devices import CPU, as_result, mixed_error
from .devices import to as to_device
from .grad_mode import state
from .primitive import NUMPY, OPS, Op, broadcast_error, sum_to
from .tensor import Tensor

_wrap = Tensor._wrap
_counter = count()
_new = object.__new__
last_inplace = [-1]  # creation number at the latest in-place op: older nodes must check versions


_walks = threading.local()  # .walk: this thread's running walk's state, for `claim`


def claim(node):
    """The gradient pending for `node` in the running backward walk, taken from it (the walk
    then skips the node), or None when none is pending. For an op whose one backward
    serves several output nodes recorded one after another (a multi-output `Function`):
    when the walk reaches the first of them, every user of all of them has already sent
    its gradient (users are created later, and the walk goes newest first), so that
    backward can take its siblings' gradients and run once."""
    walk = getattr(_walks, "walk", None)
    if walk is None:
        return None
    pending, recorded, target_keys, captured = walk[:4]
    g = pending.get(node)
    if g is None:
        return None
    pending[node] = None  # it stays on the heap; the walk skips a pending None
    if node.hooks is not None or node.retain is not None:
        g = _node_hooks(node, g, recorded)
    if target_keys is not None and node in target_keys:
        captured[node] = _conj(g)
    return g


def mark_inplace() -> None:
    """Called by every in-place op, so that backward checks the versions of older nodes."""
    last_inplace[0] = next(_counter)


class Node:
    """One recorded op application: what `backward` needs to run its rules.

    `inputs` are the op's operands (tensors or Python numbers); `nexts[k]` is
    where the gradient of input `needs[k]` goes: the input's own node, or the
    input itself when it is a leaf. `saved` holds the versions of the inputs the
    rules read (None when all were 0) and `out_vc` the output's version counter,
    once the output has one (`Tensor._cell`), so that a value changed in place
    since it was saved is caught. `seq` is the creation number. Nodes are made
    only by `_record` and its unrolled copies in `apply1` and `apply2`, which set
    every slot themselves (calling the class costs more, and this is the hot path).
    """

    __slots__ = ("op", "inputs", "datas", "attrs", "needs", "nexts", "saved", "out", "out_vc",
                 "seq", "hooks", "retain", "__weakref__")

    @property
    def name(self) -> str:
        return _Name(self.op.name)

    @property
    def next_functions(self) -> tuple:
        """PyTorch's pairs (node, 0) per tensor input, in order: the input's own node, an
        `AccumulateGrad` holding a leaf that requires grad, or None for a constant."""
        out = []
        for i, x in enumerate(self.inputs):
            if not isinstance(x, Tensor):
                continue
            if i not in self.needs:
                out.append((None, 0))
            else:
                out.append((x.grad_fn or AccumulateGrad(x), 0))
        return tuple(out)

    def _register_grad_hook(self, fn) -> None:
        """A tensor hook of the node's output (`Tensor.register_hook` on a non-leaf):
        `fn(grad)`, a tensor it returns replaces the gradient."""
        if self.hooks is None:
            self.hooks = []
        self.hooks.append(fn)

    def register_prehook(self, fn) -> _Handle:
        """PyTorch's `Node.register_prehook`: `fn(grad_outputs)` before the node's
        backward; a tuple it returns replaces the gradients."""
        def hook(g):
            new = fn((g,))
            return None if new is None else new[0]

        self._register_grad_hook(hook)
        return _Handle(self.hooks, hook)

    def register_hook(self, fn) -> _Handle:
        """PyTorch's `Node.register_hook`: `fn(grad_inputs, grad_outputs)` after the
        node's backward (one gradient per tensor input, None where none flows); a tuple
        it returns replaces the gradients of the inputs."""
        if not isinstance(self.op, _HookedOp):
            self.op = _HookedOp(self.op)
        self.op.post.append(fn)
        return _Handle(self.op.post, fn)

    def __repr__(self) -> str:
        return f"<{self.op.name}>"


class _Handle:
    """`.remove()` takes a hook off its list (torch's RemovableHandle, for node hooks)."""

    __slots__ = ("_hooks", "_fn")

    def __init__(self, hooks: list, fn) -> None:
        self._hooks, self._fn = hooks, fn

    def remove(self) -> None:
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)


_NO_OUT = object()


class _HookedOp:
    """The op of one node that has `Node.register_hook` hooks: the op's own backward,
    then each `hook(grad_inputs, grad_outputs)`, whose tuple replaces the results. Every
    other attribute is the op's; it never takes the walk's unrolled fast paths."""

    simple = False
    tuned = False

    def __init__(self, op) -> None:
        self._op, self.post = op, []

    def __getattr__(self, name: str):
        return getattr(self._op, name)

    def backward(self, node, g, m, out=_NO_OUT):
        op = self._op
        results = list(op.backward(node, g, m) if out is _NO_OUT
                       else op.backward(node, g, m, out))
        tensors = m is not NUMPY
        slots = [i for i, x in enumerate(node.inputs) if isinstance(x, Tensor)]
        for hook in list(self.post):
            ins = tuple(None if i not in node.needs or results[node.needs.index(i)] is None
                        else _as_tensor(results[node.needs.index(i)]) for i in slots)
            new = hook(ins, (_as_tensor(g),))
            if new is None:
                continue
            new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
            if len(new) != len(slots):
                raise RuntimeError(f"hook of {op.name}: returned {len(new)} gradients for "
                                   f"{len(slots)} inputs")
            for i, r in zip(slots, new):
                if i in node.needs:
                    if r is not None and not tensors:
                        r = as_result(r.data if isinstance(r, Tensor) else r)
                    results[node.needs.index(i)] = r
        return results


def _raw(op):
    """The op under a node's wrappers (`_HookedOp`, saved-tensor hooks' unpacking)."""
    while not isinstance(op, Op):
        op = op._op
    return op


class _Name(str):
    """A node's name: a string, and callable as PyTorch's `grad_fn.name()`."""

    __slots__ = ()

    def __call__(self) -> str:
        return str(self)


class AccumulateGrad:
    """What `next_functions` shows for a leaf that requires grad (`.variable` is the leaf),
    as PyTorch's node that accumulates into `.grad`."""

    __slots__ = ("variable",)
    name = _Name("AccumulateGrad")
    next_functions = ()

    def __init__(self, variable) -> None:
        self.variable = variable

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


def apply(op, *inputs, **attrs):
    """Run `op` on tensors or numbers and record it when gradients are wanted."""
    T = Tensor
    needs = None
    if len(inputs) == 1 and inputs[0].__class__ is T:  # (a rule may pass a bare array)
        x = inputs[0]
        datas = (x.data,)
        if x.requires_grad:
            needs = (0,)
    else:
        datas = []  # a plain loop: a comprehension is one more function call (Python 3.11)
        i = 0
        for x in inputs:
            if isinstance(x, T):
                datas.append(x.data)
                if x.requires_grad:
                    needs = (i,) if needs is None else needs + (i,)
            else:
                datas.append(x)
            i += 1
        datas = tuple(datas)
    st = state
    saved = None
    try:
        if op.saving is not None and needs is not None and st.enabled:
            out, saved = op.saving(*datas, **attrs)
        else:
            out = op.forward(*datas, **attrs)
    except Exception as e:
        target = mixed_error(op.name, datas)  # tensors on two devices: say so (free until then)
        if target is None:
            err = broadcast_error(op.name, datas, e)
            if err is e:
                raise
            raise err from None
        return apply(op, *_scalars_to(inputs, target), **attrs)
    if out.__class__ is not ndarray:
        out = as_result(out)
    t = _wrap(out)
    if needs is not None and st.enabled and out.dtype.kind in "fc":  # ints, bools: no grad
        _record(op, t, inputs, datas, attrs, needs)
        if saved is not None:
            t.grad_fn.out = saved
        if st.packing is not None:
            st.packing.node(t.grad_fn, t)
    if op.view and isinstance(inputs[0], T):
        p = inputs[0]
        pd = p.data
        if out.__class__ is not ndarray or pd.__class__ is not ndarray \
                or may_share_memory(out, pd):  # a copy (advanced indexing, a reshape of a
            t._vc = p._cell()                  # strided tensor) keeps a version of its own
        v = p._view if p.__class__ is T else getattr(p, "_view", None)
        t._view = v = (p, ((op, attrs),)) if v is None else (v[0], v[1] + ((op, attrs),))
        root = v[0]
        if (root.grad_fn is not None and t.grad_fn is not None) if root.requires_grad \
                else st.enabled:  # recorded, of a non-leaf (a leaf's are never rebased), or
            # of a plain tensor (a write that gives it a history gives its views one too):
            views = getattr(root, "_views", None)  # remade
            if views is None:                      # after an in-place write to the root
                root._views = [weakref.ref(t)]
            else:
                views.append(weakref.ref(t))
                if len(views) & 63 == 0:  # now and then, drop the dead ones
                    views[:] = [r for r in views if r() is not None]
    if st.tracer is not None:
        st.tracer.record(op, inputs, attrs, t)
    if st.forward is not None:
        st.forward.push(op, inputs, attrs, t)
    return t


def apply_many(op, *inputs, **attrs) -> tuple:
    """Run a forward-only op with several outputs (its forward returns a tuple of arrays):
    fresh tensors that do not require grad; under rg.jit, one node and an item each."""
    datas = tuple(x.data if isinstance(x, Tensor) else x for x in inputs)
    outs = tuple(_wrap(a) for a in op.forward(*datas, **attrs))
    if state.tracer is not None:
        state.tracer.record_many(op, inputs, attrs, outs)
    return outs


def apply1(op, x):
    """`apply` for an attribute-free op of one tensor, unrolled because it is the hot path."""
    xd = x.data
    out = op.forward(xd)
    if out.__class__ is not ndarray:
        out = as_result(out)
    t = _new(Tensor)  # _wrap(out), unrolled (its other two slots are set below)
    t.data = out
    t._grad = t._vc = t._hooks = t._fw = t._view = t._views = None
    st = state
    if x.requires_grad and st.enabled:  # _record, unrolled for one input
        node = _new(Node)
        node.op = op
        node.inputs = inputs = (x,)
        node.datas = (xd,)
        node.attrs = _NO_ATTRS
        node.needs = _FIRST
        node.nexts = (x.grad_fn or x,)
        node.saved = node.out = node.out_vc = node.hooks = node.retain = None
        node.seq = next(_counter)
        vc = x._vc
        if vc is not None and vc[0]:
            node.saved = _saved_versions(op, inputs, _FIRST)
        if op.save_out:
            node.out = out
        t.grad_fn = node
        t.requires_grad = True
        if st.packing is not None:
            st.packing.node(node, t)
    else:
        t.grad_fn = None
        t.requires_grad = False
    if st.tracer is not None:
        st.tracer.record(op, (x,), _NO_ATTRS, t)
    if st.forward is not None:
        st.forward.push(op, (x,), _NO_ATTRS, t)
    return t


def apply2(op, x, y):
    """`apply` for the binary arithmetic operators, unrolled because it is the hot path."""
    T = Tensor
    # Tensors (subclasses too: nn.Parameter) or constants (Python numbers, and the
    # 0-d arrays Tensor's operators make of them, which skip the isinstance).
    if x.__class__ is T or (x.__class__ is not ndarray and isinstance(x, T)):
        xd = x.data
        xr = x.requires_grad
        xv = x._vc
    else:
        xd = x
        xr = False
        xv = None
    if y.__class__ is T or (y.__class__ is not ndarray and isinstance(y, T)):
        yd = y.data
        yr = y.requires_grad
        yv = y._vc
    else:
        yd = y
        yr = False
        yv = None
    try:
        out = op.forward(xd, yd)
    except Exception as e:
        target = mixed_error(op.name, (xd, yd))  # operands on two devices: say so
        if target is None:
            err = broadcast_error(op.name, (xd, yd), e)
            if err is e:
                raise
            raise err from None
        return apply(op, *_scalars_to((x, y), target))
    if out.__class__ is not ndarray:
        out = as_result(out)
    t = _new(Tensor)  # _wrap(out), unrolled (its other two slots are set below)
    t.data = out
    t._grad = t._vc = t._hooks = t._fw = t._view = t._views = None
    st = state
    if (xr or yr) and st.enabled:  # _record, unrolled for two inputs
        node = _new(Node)
        node.op = op
        node.inputs = inputs = (x, y)
        node.datas = (xd, yd)
        node.attrs = _NO_ATTRS
        if xr and yr:
            node.needs = needs = _BOTH
            node.nexts = (x.grad_fn or x, y.grad_fn or y)
        elif xr:
            node.needs = needs = _FIRST
            node.nexts = (x.grad_fn or x,)
        else:
            node.needs = needs = _SECOND
            node.nexts = (y.grad_fn or y,)
        node.saved = node.out = node.out_vc = node.hooks = node.retain = None
        node.seq = next(_counter)
        if (xv is not None and xv[0]) or (yv is not None and yv[0]):
            node.saved = _saved_versions(op, inputs, needs)
        if op.save_out:
            node.out = out
        t.grad_fn = node
        t.requires_grad = True
        if st.packing is not None:
            st.packing.node(node, t)
    else:
        t.grad_fn = None
        t.requires_grad = False
    if st.tracer is not None:
        st.tracer.record(op, (x, y), _NO_ATTRS, t)
    if st.forward is not None:
        st.forward.push(op, (x, y), _NO_ATTRS, t)
    return t


def _scalars_to(inputs, target) -> list:
    """The inputs with their host 0-d values moved to device `target` (a recorded op for a
    tensor, so gradients and rg.jit see the move), as PyTorch lets CPU scalars meet device
    tensors."""
    moved = []
    for x in inputs:
        if isinstance(x, Tensor) and x.data.__class__ is ndarray and x.data.ndim == 0:
            x = apply(OPS["to_device"], x, device=target, src=CPU)
        elif x.__class__ is ndarray and x.ndim == 0:
            x = to_device(x, target)
        moved.append(x)
    return moved


_NO_ATTRS: dict = {}
_FIRST, _SECOND, _BOTH = (0,), (1,), (0, 1)


def _reads(op, n, needs) -> tuple:
    """Indices of the inputs whose values this op's rules will read (cached per op, by
    `needs` alone when the op's arity is fixed)."""
    key = (n, needs) if op.variadic else needs
    r = op.read_cache.get(key)
    if r is None:
        reads = op.reads
        if reads is None:
            r = tuple(range(n))
        elif reads == "others":
            r = tuple(range(n)) if len(needs) > 1 else tuple(i for i in range(n) if i != needs[0])
        elif reads.__class__ is dict:  # per input: the inputs its own rule reads
            r = tuple(sorted({j for i in needs for j in reads[i]}))
        else:
            r = tuple(reads)
        op.read_cache[key] = r
    return r


def _record(op, t, inputs, datas, attrs, needs) -> None:
    """Make `t`'s node: `apply`'s way; apply1 and apply2 unroll the same steps."""
    if len(needs) == 1:
        x = inputs[needs[0]]
        nexts = (x.grad_fn or x,)
    else:
        nexts = ()
        for i in needs:
            x = inputs[i]
            nexts += (x.grad_fn or x,)
    node = _new(Node)  # Node(...) without the cost of calling the class: the hot path
    node.op = op
    node.inputs = inputs
    node.datas = datas
    node.attrs = attrs
    node.needs = needs
    node.nexts = nexts
    node.saved = node.out = node.out_vc = node.hooks = node.retain = None
    node.seq = next(_counter)
    for x in inputs:
        if isinstance(x, Tensor) and x._vc is not None and x._vc[0]:
            node.saved = _saved_versions(op, inputs, needs)
            break
    if op.save_out:
        node.out = t.data
    t.grad_fn = node
    t.requires_grad = True


def _saved_versions(op, inputs, needs):
    """The versions of the inputs the rules read, for `_check_versions`; None when all are 0
    (then nothing is stored: in-place ops are rare)."""
    reads = op.reads
    if reads.__class__ is not tuple:
        reads = _reads(op, len(inputs), needs)
    saved = ()
    for i in reads:
        x = inputs[i]
        saved += (x._vc[0] if isinstance(x, Tensor) and x._vc is not None else 0,)
    return saved if any(saved) else None


def _check_versions(node) -> None:
    """Raise if a value the rules read was changed in place after it was saved."""
    reads = node.op.reads
    if reads.__class__ is not tuple:
        reads = _reads(node.op, len(node.inputs), node.needs)
    saved = node.saved or (0,) * len(reads)
    for i, version in zip(reads, saved):
        x = node.inputs[i]
        if isinstance(x, Tensor) and x._vc is not None and x._vc[0] != version:
            _modified(node, f"input {i} (shape {x.shape})", x._vc[0], version)
    if node.out_vc is not None and node.out_vc[0] != 0:
        if node.op.saving is not None and not node.op.save_out:
            # the output changed in place and the forward's stash may share its memory
            # (batch/instance norm's xhat under nn.ReLU(inplace=True)): the rules
            # recompute from the inputs, whose versions were checked above, as torch does
            node.out = None
            return
        so = node.op.save_out  # True, or the inputs whose rules read the output
        if so.__class__ is not tuple or any(i in so for i in node.needs):
            _modified(node, "its output", node.out_vc[0], 0)


def _modified(node, what, now, then):
    raise RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an "
        f"in-place operation: {what} of '{node.op.name}' is at version {now}; expected "
        f"version {then}. Avoid the in-place op, or clone() the tensor before changing it."
    )


def queue_callback(fn) -> None:
    """Run `fn()` once the running backward walk has written its gradients (PyTorch's
    `Variable._execution_engine.queue_callback`)."""
    walk = getattr(_walks, "walk", None)
    if walk is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    walk[5].append(fn)


def running_walk():
    """The running backward walk's state (compare with `is`), or None outside one."""
    return getattr(_walks, "walk", None)


def still_to_reach(keys, current) -> set:
    """Of `keys` (tensors' nodes, or leaves themselves), those the running walk has sent
    or may still send a gradient to, while the key `current` is being given its own (its
    node has not yet sent to its inputs)."""
    pending, target_keys, leaves, live = (_walks.walk[i] for i in (0, 2, 4, 6))
    roots = [n for n, g in pending.items() if g is not None]
    if current.__class__ is Node:
        roots.append(current)
    nodes = set(_reachable(roots))
    ends = {x for n in nodes for x in n.nexts if x.__class__ is not Node}
    out = {current}
    for k in keys:
        if k.__class__ is Node:
            if k in nodes and (live is None or k in live):
                out.add(k)
        elif k in leaves or k in ends and (target_keys is None or k in target_keys):
            out.add(k)
    return out


def _reachable(roots) -> list:
    """Nodes reachable from `roots`, outputs first, found without recursion.

    Every node carries its creation number, and an op's inputs are always
    created before it, so sorting by that number is a topological order.
    """
    seen = set(roots)
    stack = list(seen)
    while stack:
        for nxt in stack.pop().nexts:
            if nxt.__class__ is Node and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return sorted(seen, key=_seq, reverse=True)


_seq = attrgetter("seq")


def _live(roots, targets) -> set:
    """The nodes reachable from `roots` from which a target is reachable."""
    live = set()
    for node in reversed(_reachable(roots)):  # inputs before outputs
        if node in targets or any(n in live or n in targets for n in node.nexts):
            live.add(node)
    return live


def backward(roots, grads, create_graph: bool = False, targets=None, accumulate: bool = True):
    """Propagate `grads` from `roots` to the leaves.

    With `targets` (tensors), return their gradients instead of writing `.grad`.
    Gradients are NumPy arrays during the walk, or Tensors when `create_graph`
    records the walk itself for higher-order derivatives.

    The walk takes the pending node with the highest creation number next: an
    op's inputs are created before it, so every node runs after all its users
    have sent their gradients, with no separate topological sort.
    """
    tracer = state.tracer
    # A traced backward (rg.jit) computes with recorded ops, so it is part of the trace.
    m = TENSOR if create_graph or tracer is not None else NUMPY
    recorded = m is TENSOR
    pending, leaves, target_keys, live = _seed(roots, grads, targets, recorded)
    if state.flops is not None:  # rg.utils.flop_counter: refuse what it cannot count
        state.flops.check_backward(_reachable(list(pending)))
    heap = [(-node.seq, node) for node in pending]  # seq is unique: nodes are never compared
    heapify(heap)
    captured = {}
    prev = state.enabled
    state.enabled = create_graph
    anomaly = state.anomaly
    pop = pending.pop
    get = pending.get
    node = None  # the next node, when it is known without the heap

    outer = getattr(_walks, "walk", None)  # this thread's running walk, for `claim`
    callbacks = []  # queue_callback's, run once the walk is done
    _walks.walk = (pending, recorded, target_keys, captured, leaves, callbacks, live)
    try:
        while True:
            if node is None:
                if not heap:
                    break
                node = heappop(heap)[1]
                g = pop(node)
                if g is None:  # claimed by a sibling's backward
                    node = None
                    continue
            if node.hooks is not None or node.retain is not None:
                g = _node_hooks(node, g, recorded)
            if target_keys is not None and node in target_keys:
                captured[node] = _conj(g)
            if node.seq < last_inplace[0]:
                _check_versions(node)
            op = node.op
            needs = node.needs
            if not recorded and op.simple and len(needs) == 1 and not node.attrs:
                # Op.backward's commonest case, unrolled: one input wanted, no attributes.
                xs = node.datas
                i = needs[0]
                if len(xs) == 1:
                    r = op.vjps[0](m, g, node.out, xs[0])
                else:
                    r = op.vjps[i](m, g, node.out, xs[0], xs[1])
                    if op.broadcast and r.shape != xs[i].shape:
                        r = sum_to(m, r, xs[i].shape)
                    if r.dtype.kind == "c" and xs[i].dtype.kind != "c":  # real input: real
                        r = r.real
                results = (r,)
            elif not recorded:
                results = op.backward(node, g, m)
            elif op.tuned and tracer is not None and not create_graph:
                results = tracer.tuned_backward(node, g)
            else:
                out = apply(_raw(op), *node.inputs, **node.attrs) if op.save_out else None
                results = op.backward(node, g, m, out)
            if anomaly:
                _check_finite(node, results)
            nexts = node.nexts
            if not heap and len(nexts) == 1:
                # Nothing else is pending, so no other node can send to this one's
                # input: it is next, with no heap or table (a chain of ops).
                node = nexts[0]
                g = results[0]
                if g is not None and node.__class__ is Node and (live is None or node in live):
                    continue
            node = None
            for nxt, gi in zip(nexts, results):
                if gi is None:
                    continue
                if nxt.__class__ is Node:
                    if live is not None and nxt not in live:
                        continue
                    old = get(nxt)
                    if old is None:
                        pending[nxt] = gi
                        heappush(heap, (-nxt.seq, nxt))
                    else:
                        pending[nxt] = old + gi
                elif target_keys is None or nxt in target_keys:
                    old = leaves.get(nxt)
                    leaves[nxt] = gi if old is None else old + gi
        _write_leaves(leaves, captured, target_keys, accumulate, recorded)
        while callbacks:  # a callback may queue another
            callbacks.pop(0)()
    finally:
        _walks.walk = outer  # a walk inside a hook returns the outer one's
        state.enabled = prev
    if targets is not None:
        return [captured.get(t.grad_fn if t.grad_fn is not None else t) for t in targets]
    return None


def _seed(roots, grads, targets, recorded: bool):
    """The walk's starting state: pending gradients by node, gradients already at leaves,
    and, with `targets`, their keys and the nodes that lead to them (others are skipped)."""
    if recorded:
        grads = [_as_tensor(g) for g in grads]
    grads = [_conj(g) for g in grads]
    pending = {}
    leaves = {}
    for t, g in zip(roots, grads):
        key = t.grad_fn if t.grad_fn is not None else t
        _add(pending if key.__class__ is Node else leaves, key, g)
    if targets is None:
        return pending, leaves, None, None
    target_keys = {(t.grad_fn if t.grad_fn is not None else t) for t in targets}
    live = _live(list(pending), target_keys)
    for node in list(pending):
        if node not in live:
            del pending[node]
    return pending, leaves, target_keys, live


def _write_leaves(leaves, captured, target_keys, accumulate: bool, recorded: bool) -> None:
    """Run leaf hooks, then hand each leaf's gradient to `captured` (targets) or `.grad`."""
    owned = set()
    for leaf, g in leaves.items():
        g = _conj(g)
        if leaf._hooks is not None:
            g = _run_hooks(leaf._hooks, g, recorded)
        if target_keys is not None:
            captured[leaf] = g
        elif accumulate and leaf.requires_grad:
            if not recorded:
                if g.base is not None or id(g) in owned:
                    g = g.copy()  # .grad never aliases another array
                owned.add(id(g))
                d = leaf.data
                if leaf.grad is None and g.__class__ is ndarray and g.dtype == d.dtype \
                        and g.shape == d.shape and state.tracer is None:
                    leaf.grad = _wrap(g)  # the common case of _accumulate_grad
                    if POST_ACCUMULATE:
                        _post_accumulate(leaf)
                    continue
            _accumulate_grad(leaf, g)
            if POST_ACCUMULATE:
                _post_accumulate(leaf)


POST_ACCUMULATE: dict = {}  # id(leaf) -> hooks (Tensor.register_post_accumulate_grad_hook)


def _post_accumulate(leaf) -> None:
    for hook in list(POST_ACCUMULATE.get(id(leaf), ())):
        hook(leaf)


def _node_hooks(node, g, tensors: bool):
    """A non-leaf's hooks and retain_grad; `tensors`: gradients are Tensors, not arrays."""
    g = _conj(g)
    if node.hooks is not None:
        g = _run_hooks(node.hooks, g, tensors)
    if node.retain is not None:
        owner = node.retain()
        if owner is not None:
            _accumulate_grad(owner, g if tensors else g.copy())
    return _conj(g)


def _conj(g):
    """Between the walk's cotangents and PyTorch's gradients of complex values: the
    conjugate (see `ops/complex.py`); real ones pass unchanged."""
    if g.dtype.kind != "c":
        return g
    return apply(OPS["conj"], g) if isinstance(g, Tensor) else g.conj()


def _add(table, key, g) -> None:
    old = table.get(key)
    table[key] = g if old is None else old + g


def _as_tensor(g):
    return g if isinstance(g, Tensor) else _wrap(as_result(g))


def _run_hooks(hooks, g, tensors: bool):
    for hook in hooks:
        new = hook(_as_tensor(g))
        if new is not None:
            g = _as_tensor(new) if tensors else as_result(new.data if isinstance(new, Tensor)
                                                          else new)
    return g


def _accumulate_grad(t, g) -> None:
    if state.tracer is not None:  # rg.jit: .grad is state the program reads and writes
        g = _as_tensor(g)
        old = t.grad
        t.grad = apply(OPS["cast"], g, dtype=t.dtype) if old is None else old + g
        return
    if not isinstance(g, Tensor):
        g = as_result(g)
        if g.dtype != t.data.dtype:
            g = g.astype(t.data.dtype)
        if g.shape != t.data.shape:
            raise RuntimeError(
                f"gradient of shape {g.shape} does not match tensor of shape {t.data.shape}")
        g = _wrap(g)
    old = t.grad
    if old is None:
        t.grad = g
    elif isinstance(old, Tensor) and (g.requires_grad or old.requires_grad):
        t.grad = old + g
    else:
        new = old.data + g.data  # into the same .grad object, as PyTorch accumulates in
        if new.dtype == old.data.dtype and old.__class__ is Tensor:  # place: a reference
            old.data = new                                           # held to it sees it
        else:
            t.grad = _wrap(new)


class _TensorNamespace:
    """Rules computing on tensors: `TENSOR.<name>(...)` applies that op, recorded, so a
    backward run with it can itself be differentiated. Made from the registry on first
    use of each name."""

    def __getattr__(self, name: str):
        op = OPS.get(name)
        if op is None:
            raise AttributeError(f"no op named '{name}' in the table")

        def fn(*inputs, **attrs):
            return apply(op, *inputs, **attrs)

        fn.__name__ = name
        setattr(self, name, fn)
        return fn


TENSOR = _TensorNamespace()


def _check_finite(node, results) -> None:
    import numpy as np

    for k, gi in enumerate(results):
        if gi is None:
            continue
        arr = gi.data if isinstance(gi, Tensor) else as_result(gi)
        if arr.dtype.kind in "fc" and not bool(np.all(np.isfinite(arr))):
            bad = "nan" if bool(np.any(np.isnan(arr))) else "inf"
            raise RuntimeError(
                f"Function '{node.op.name}' returned {bad} values in its gradient for input "
                f"{node.needs[k]} (detected by detect_anomaly)"
            )
