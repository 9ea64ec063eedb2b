"""The autograd engine: graph nodes, recording an op, and the backward walk.

The engine knows nothing about particular ops. An op (see `ops.py`) gives a
NumPy forward and per-input derivative rules; `apply` runs the forward and,
when gradients are wanted, records a `Node`. `backward` walks the nodes in
reverse topological order with an explicit stack (no recursion), keeping the
pending gradients in a dictionary that is popped as it goes.

No reference cycles: an output tensor points to its node, the node points to
its inputs, and nothing points back. The graph dies by reference counting.
"""

from __future__ import annotations

from numpy import asarray, ndarray

from .grad_mode import state

Tensor = None  # set by tensor.py (avoids an import cycle)


class Node:
    """One recorded op application: what `backward` needs to run its rules.

    `inputs` are the op's operands (tensors or Python numbers); `nexts[k]` is
    where the gradient of input `needs[k]` goes: the input's own node, or the
    input itself when it is a leaf. `saved` holds (version cell, version) pairs
    for the values the rules read, so in-place changes are caught.
    """

    __slots__ = ("op", "inputs", "attrs", "needs", "nexts", "saved", "out", "hooks",
                 "retain", "__weakref__")

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def next_functions(self) -> tuple:
        return self.nexts

    def register_hook(self, fn) -> None:
        if self.hooks is None:
            self.hooks = []
        self.hooks.append(fn)

    def __repr__(self) -> str:
        return f"<{self.op.name}>"


def apply(op, *inputs, **attrs):
    """Run `op` on tensors or numbers and record it when gradients are wanted."""
    T = Tensor
    datas = [x.data if isinstance(x, T) else x for x in inputs]
    out = op.forward(*datas, **attrs)
    if out.__class__ is not ndarray:
        out = asarray(out)
    t = T.__new__(T)
    t.data = out
    t.grad = None
    t.grad_fn = None
    t.requires_grad = False
    t._vc = None
    t._hooks = None
    st = state
    if st.enabled:
        needs = tuple([i for i, x in enumerate(inputs) if isinstance(x, T) and x.requires_grad])
        if needs:
            _record(op, t, inputs, attrs, needs)
    if op.view and isinstance(inputs[0], T):
        t._vc = inputs[0]._cell()
    if st.tracer is not None:
        st.tracer.record(op, inputs, attrs, t)
    if st.forward is not None:
        st.forward.push(op, inputs, attrs, t)
    return t


def _record(op, t, inputs, attrs, needs) -> None:
    node = Node.__new__(Node)
    node.op = op
    node.inputs = inputs
    node.attrs = attrs
    node.needs = needs
    node.nexts = tuple([inputs[i].grad_fn or inputs[i] for i in needs])
    node.hooks = None
    node.retain = None
    reads = op.reads
    if reads is None:
        reads = range(len(inputs))
    elif reads == "others":
        reads = range(len(inputs)) if len(needs) > 1 else [i for i in range(len(inputs))
                                                           if i != needs[0]]
    saved = [(x._cell(), x._vc[0]) for x in (inputs[i] for i in reads) if isinstance(x, Tensor)]
    if op.save_out:
        node.out = t.data
        cell = t._vc = [0]
        saved.append((cell, 0))
    else:
        node.out = None
    node.saved = saved
    t.grad_fn = node
    t.requires_grad = True


def _check_versions(node) -> None:
    for cell, version in node.saved:
        if cell[0] != version:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"in-place operation: a value saved by '{node.op.name}' is at version {cell[0]}; "
                f"expected version {version}. Avoid the in-place op or clone the tensor first."
            )


def toposort(roots) -> list:
    """Nodes reachable from `roots`, outputs first, found without recursion."""
    order = []
    seen = set()
    stack = [(n, False) for n in roots]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        for nxt in node.nexts:
            if nxt.__class__ is Node and nxt not in seen:
                stack.append((nxt, False))
    order.reverse()
    return order


def _prune(order, targets) -> list:
    """Keep only the nodes from which a target is reachable."""
    live = set()
    for node in reversed(order):  # inputs before outputs
        if node in targets or any(n in live or n in targets for n in node.nexts):
            live.add(node)
    return [n for n in order if n in live]


def backward(roots, grads, create_graph: bool = False, targets=None, accumulate: bool = True):
    """Propagate `grads` from `roots` to the leaves.

    With `targets` (tensors), return their gradients instead of writing `.grad`.
    Gradients are NumPy arrays during the walk, or Tensors when `create_graph`
    records the walk itself for higher-order derivatives.
    """
    from . import ops

    m = ops.TENSOR if create_graph else ops.NUMPY
    pending = {}
    leaves = {}
    target_keys = None
    if targets is not None:
        target_keys = {(t.grad_fn if t.grad_fn is not None else t) for t in targets}
    for t, g in zip(roots, grads):
        key = t.grad_fn if t.grad_fn is not None else t
        _add(pending if key.__class__ is Node else leaves, key, g)
    order = toposort([k for k in pending])
    live = None
    if target_keys is not None:
        order = _prune(order, target_keys)
        live = set(order)
    captured = {}
    prev = state.enabled
    state.enabled = create_graph
    try:
        for node in order:
            g = pending.pop(node, None)
            if g is None:
                continue
            if node.hooks is not None:
                g = _run_hooks(node.hooks, g, create_graph)
            if node.retain is not None:
                owner = node.retain()
                if owner is not None:
                    _accumulate_grad(owner, g)
            if target_keys is not None and node in target_keys:
                captured[node] = g
            if node.saved:
                _check_versions(node)
            results = node.op.backward(node, g, m)
            if state.anomaly:
                _check_finite(node, results)
            for nxt, gi in zip(node.nexts, results):
                if gi is None:
                    continue
                if nxt.__class__ is Node:
                    if live is not None and nxt not in live:
                        continue
                    old = pending.get(nxt)
                    pending[nxt] = gi if old is None else old + gi
                else:
                    if target_keys is not None and nxt not in target_keys:
                        continue
                    _add(leaves, nxt, gi)
        for leaf, g in leaves.items():
            if leaf._hooks is not None:
                g = _run_hooks(leaf._hooks, g, create_graph)
            if target_keys is not None:
                captured[leaf] = g
            elif accumulate and leaf.requires_grad:
                _accumulate_grad(leaf, g)
    finally:
        state.enabled = prev
    if targets is not None:
        return [captured.get(t.grad_fn if t.grad_fn is not None else t) for t in targets]
    return None


def _add(table, key, g) -> None:
    old = table.get(key)
    table[key] = g if old is None else old + g


def _as_tensor(g):
    return g if isinstance(g, Tensor) else Tensor._wrap(asarray(g))


def _run_hooks(hooks, g, create_graph):
    for hook in hooks:
        new = hook(_as_tensor(g))
        if new is not None:
            g = new if create_graph else asarray(new.data if isinstance(new, Tensor) else new)
    return g


def _accumulate_grad(t, g) -> None:
    if not isinstance(g, Tensor):
        g = asarray(g)
        if g.dtype != t.data.dtype:
            g = g.astype(t.data.dtype)
        if g.shape != t.data.shape:
            raise RuntimeError(
                f"gradient of shape {g.shape} does not match tensor of shape {t.data.shape}")
        g = Tensor._wrap(g)
    if t.grad is None:
        t.grad = g
    elif isinstance(t.grad, Tensor) and (g.requires_grad or t.grad.requires_grad):
        t.grad = t.grad + g
    else:
        t.grad = Tensor._wrap(t.grad.data + g.data)


def _check_finite(node, results) -> None:
    import numpy as np

    for k, gi in enumerate(results):
        if gi is None:
            continue
        arr = gi.data if isinstance(gi, Tensor) else asarray(gi)
        if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
            bad = "nan" if np.any(np.isnan(arr)) else "inf"
            raise RuntimeError(
                f"Function '{node.op.name}' returned {bad} values in its gradient for input "
                f"{node.needs[k]} (detected by detect_anomaly)"
            )
