"""Pieces of one tensor (split, chunk, unbind) whose gradients are joined in one buffer.

Each piece is a view recorded as its own `getitem` node. Backward through them one by
one would scatter each piece's gradient into zeros of the whole shape and add those up
(three full-size zero fills and two full-size adds for a transformer's q, k, v). The
pieces cover the tensor exactly once, so the first piece the walk reaches takes its
siblings' gradients (`engine.claim`: every user of every piece has sent its gradient by
then, since all users are newer than all pieces) and writes them side by side into one
buffer: the same sums, without the zeros and adds.

As in PyTorch, pieces made while recording cannot be written in place while recording
(nor can views of them): `refuse_piece_write`.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..devices import namespace_of
from ..engine import _NO_OUT, claim
from ..grad_mode import state
from ..primitive import NUMPY, OPS
from .output_numbers import number_outputs

_GETITEM = OPS["getitem"]


_PIECES: dict = {}  # id -> weak reference, for the pieces made while recording


def _forget(key: int):
    def gone(ref) -> None:
        if _PIECES.get(key) is ref:
            del _PIECES[key]
    return gone


def refuse_piece_write(t, fn: str) -> None:
    """Raise if `t` is, or is a view of, a piece of split/chunk/unbind made while recording
    (PyTorch refuses writes into the views of a function that returns several)."""
    while t is not None:
        r = _PIECES.get(id(t))
        if r is not None and r() is t:
            raise RuntimeError(
                f"{fn}: this tensor (shape {t.shape}) is a view made by split, chunk or "
                "unbind, a function that returns multiple views, and such views cannot be "
                "modified in place while gradients are recorded; replace the in-place "
                "operation by an out-of-place one")
        node = t.grad_fn
        if node is None or not node.op.view or not node.inputs:
            return
        t = aliased_input(node, t)


def aliased_input(node, t):
    """The input of view node `node` that its output `t` shows: the first one for a view
    op; for a custom Function (whose inputs may start with non-tensors) the tensor input
    sharing t's memory, else its first tensor input; None when it has none."""
    ins = [a for a in node.inputs if hasattr(a, "grad_fn") and hasattr(a, "data")]
    for a in ins:
        if isinstance(a.data, np.ndarray) and isinstance(t.data, np.ndarray) \
                and np.may_share_memory(a.data, t.data):
            return a
    return ins[0] if ins else None


def joined(x, idxs: list) -> tuple:
    """`x[idx]` for each index of `idxs` (basic indices that tile x exactly once)."""
    out = tuple(x[idx] for idx in idxs)
    if not x.requires_grad or not state.enabled:
        return out
    for t in out:
        _PIECES[id(t)] = weakref.ref(t, _forget(id(t)))
    if len(out) < 2 or state.tracer is not None:
        return number_outputs(out)
    nodes = [t.grad_fn for t in out]
    if any(n is None or n.op is not _GETITEM for n in nodes) \
            or any(n.nexts != nodes[0].nexts for n in nodes):
        return number_outputs(out)  # (a joined group numbers its pieces itself: `_group`)
    group = _Group([weakref.ref(n) for n in nodes], list(idxs), tuple(x.shape))
    for n in nodes:
        n.op = _Joined(n.op, group)
    return out


class _Group:
    __slots__ = ("refs", "idxs", "shape")

    def __init__(self, refs: list, idxs: list, shape: tuple) -> None:
        self.refs, self.idxs, self.shape = refs, idxs, shape


class _Joined:
    """The op of one piece's node: its backward (plain arrays only) writes every piece's
    gradient into one buffer; with a recorded backward, or when a sibling's node has been
    given hooks of its own since, each piece runs as a plain `getitem`."""

    simple = False
    tuned = False

    def __init__(self, op, group: _Group) -> None:
        self._op, self._group = op, group

    def __getattr__(self, name: str):
        return getattr(self._op, name)

    def backward(self, node, g, m, out=_NO_OUT):
        group = self._group
        nodes = [r() for r in group.refs]
        if m is not NUMPY or out is not _NO_OUT or any(
                n is not None and not (n.op.__class__ is _Joined and n.op._group is group)
                for n in nodes):
            return self._op.backward(node, g, m) if out is _NO_OUT \
                else self._op.backward(node, g, m, out)
        gs = [g if n is node else None if n is None else claim(n) for n in nodes]
        given = [a for a in gs if a is not None]
        buf = namespace_of(g).empty(group.shape, dtype=np.result_type(*given))
        for a, idx in zip(gs, group.idxs):
            buf[idx] = 0 if a is None else a
        return (buf,)
