"""`rg.autograd.graph`: hooks on the values backward saves, as `torch.autograd.graph`.

`saved_tensors_hooks(pack, unpack)` calls `pack(t)` on each tensor a recorded op keeps
for its backward and `unpack(packed)` when backward needs it back; the unpacked tensor
is what the gradient is computed from (offloading, compression, counting). A stash an
op keeps for itself (a norm's standardised input) is dropped under the hooks, so its
rules recompute from the unpacked inputs. `save_on_cpu` is accepted and keeps values
where they are: there is one host, and the values (so every gradient) are the same.
"""

from __future__ import annotations

from collections.abc import Callable

from ..engine import (
    _NO_OUT,
    _raw,
    _reads,
    apply,
    queue_callback,
    running_walk,
    still_to_reach,
)
from ..grad_mode import state
from ..primitive import NUMPY
from ..tensor import Tensor

__all__ = ["saved_tensors_hooks", "disable_saved_tensors_hooks", "save_on_cpu",
           "register_multi_grad_hook"]

_stack: list = []       # the active saved_tensors_hooks, innermost last
_disabled: list = []    # messages of the active disable_saved_tensors_hooks


class saved_tensors_hooks:
    """`with saved_tensors_hooks(pack_hook, unpack_hook):` ops recorded inside save
    `pack_hook(tensor)` instead of the tensor, and backward uses `unpack_hook(packed)`,
    which must return a Tensor (PyTorch's context manager; the innermost one applies)."""

    def __init__(self, pack_hook: Callable, unpack_hook: Callable) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        if _disabled:
            raise RuntimeError(_disabled[-1])
        _stack.append(self)
        state.packing = self
        return self

    def __exit__(self, *exc) -> None:
        _stack.remove(self)
        state.packing = _stack[-1] if _stack else None

    def pack(self, t: Tensor):
        """`pack_hook(t)`, refused if the hook changes `t` in place (as PyTorch)."""
        if state.tracer is not None:
            state.tracer.refuse_saved_hooks()
        version = t._version
        with _unhooked():
            packed = self.pack_hook(t)
        if t._version != version:
            raise RuntimeError(
                "A saved tensor pack hook is modifying its input in place: a tensor given to "
                "a pack hook must not be changed by in-place operations")
        return packed

    def unpack(self, packed) -> Tensor:
        with _unhooked():
            t = self.unpack_hook(packed)
        if not isinstance(t, Tensor):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but "
                            f"got result of type {type(t).__name__}")
        return t

    def node(self, node, out: Tensor) -> None:
        """Pack what `node`'s rules read (its inputs, and its output when they read it)."""
        op = node.op
        packed = [(i, self.pack(node.inputs[i]))
                  for i in _reads(op, len(node.inputs), node.needs)
                  if isinstance(node.inputs[i], Tensor)]
        so = op.save_out
        if so and (so.__class__ is not tuple or any(i in so for i in node.needs)):
            packed.append((None, self.pack(out)))
        elif op.saving is not None:
            node.out = None  # the forward's stash: recomputed from the unpacked inputs
        node.op = _Unpacking(op, packed, self)


class _unhooked:
    """No packing while a hook itself runs (its own ops are not the graph's)."""

    def __enter__(self) -> None:
        self.prev, state.packing = state.packing, None

    def __exit__(self, *exc) -> None:
        state.packing = self.prev


class _Unpacking:
    """The op of a node recorded under `saved_tensors_hooks`: its backward runs on the
    unpacked values. Every other attribute is the op's; it takes no fast path."""

    simple = False
    tuned = False

    def __init__(self, op, packed: list, hooks: saved_tensors_hooks) -> None:
        self._op, self._packed, self._hooks = op, packed, hooks

    def __getattr__(self, name: str):
        return getattr(self._op, name)

    def backward(self, node, g, m, out=_NO_OUT):
        inputs, datas, kept = list(node.inputs), list(node.datas), node.out
        got = None
        for i, p in self._packed:
            t = self._hooks.unpack(p)
            if i is None:
                got = t
            else:
                inputs[i], datas[i] = t, t.data
        before = node.inputs, node.datas
        node.inputs, node.datas = tuple(inputs), tuple(datas)
        try:
            if m is NUMPY and out is _NO_OUT:
                if got is not None:
                    node.out = got.data
                return self._op.backward(node, g, m)
            if out is not _NO_OUT and out is not None:  # recorded: the output anew
                out = got if got is not None else apply(_raw(self._op), *inputs, **node.attrs)
            return self._op.backward(node, g, m, out)
        finally:
            node.inputs, node.datas, node.out = before[0], before[1], kept


class disable_saved_tensors_hooks:
    """Inside, entering `saved_tensors_hooks` raises RuntimeError(`error_message`)."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        _disabled.append(self.error_message)

    def __exit__(self, *exc) -> None:
        _disabled.remove(self.error_message)


class save_on_cpu:
    """Accepted for `torch.autograd.graph.save_on_cpu(pin_memory, device_type)`: saved
    values stay where they are (one host; results are identical), with no hooks to run."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        self.pin_memory, self.device_type = pin_memory, device_type

    def __enter__(self) -> save_on_cpu:
        if _disabled:
            raise RuntimeError(_disabled[-1])
        return self

    def __exit__(self, *exc) -> None:
        pass


def _key(t: Tensor):
    return t.grad_fn if t.grad_fn is not None else t


class _MultiHandle:
    """`.remove()` takes off every tensor hook of one `register_multi_grad_hook`."""

    def __init__(self, handles: list) -> None:
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def register_multi_grad_hook(tensors, fn: Callable, *, mode: str = "all") -> _MultiHandle:
    """PyTorch's: with mode "all", `fn(grads)` once per backward, when every tensor of
    `tensors` that this backward reaches has its gradient (None for the others); with
    "any", `fn(grad)` with the first of them to get one."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    for k, t in enumerate(tensors):
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise AssertionError(f"register_multi_grad_hook: tensor {k} does not require grad "
                                 "(expected gradient function to be set)")
    runs: list = []  # [walk, grads, indices still awaited], one per running backward

    def run_of(walk):
        for run in runs:
            if run[0] is walk:
                return run
        return None

    def finish(run) -> None:
        if run in runs:
            runs.remove(run)
            fn(tuple(run[1]))

    def make(i: int):
        def hook(g):
            walk = running_walk()
            run = run_of(walk)
            if mode == "any":
                if run is None:
                    run = [walk]
                    runs.append(run)
                    queue_callback(lambda: runs.remove(run))
                    fn(g)
                return None
            if run is None:
                keys = [_key(t) for t in tensors]
                due = still_to_reach(keys, keys[i])
                run = [walk, [None] * len(tensors), {j for j, k in enumerate(keys) if k in due}]
                runs.append(run)
                queue_callback(lambda: finish(run))  # a reached tensor that got no gradient
            run[1][i] = g
            run[2].discard(i)
            if not run[2]:
                finish(run)
            return None
        return hook

    return _MultiHandle([t.register_hook(make(i)) for i, t in enumerate(tensors)])
