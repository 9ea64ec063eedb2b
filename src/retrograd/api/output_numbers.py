"""PyTorch's output numbers (`Tensor.output_nr`) for functions PyTorch records as one node
with several outputs (split, chunk, unbind, aminmax, var_mean, linalg.qr, ...), where
retrograd records one node per output: such a function passes its outputs through
`number_outputs`, and `output_nr` reads the number back while the tensor's grad_fn is the
one it was numbered with. Imports nothing above the Tensor class, so any api module can
number its outputs."""

from __future__ import annotations

import weakref

from ..tensor import Tensor

_NUMBERED: dict = {}
"""id(tensor) -> (weak reference to it, to its grad_fn then, its output number): the
outputs after the first of a function PyTorch records as one node with several outputs
(split, chunk, unbind, aminmax, var_mean, linalg.qr, ...), where retrograd records one
node per output."""


def _forget(key: int):
    def gone(ref) -> None:
        if _NUMBERED.get(key, (None,))[0] is ref:
            del _NUMBERED[key]
    return gone


def number_outputs(outs):
    """`outs` (a tuple of tensors), each remembered as output k of one PyTorch node, for
    `output_nr`; only outputs that were recorded (have a grad_fn) are numbered."""
    for k, t in enumerate(outs):
        if k and isinstance(t, Tensor) and t.grad_fn is not None:
            key = id(t)
            _NUMBERED[key] = (weakref.ref(t, _forget(key)), weakref.ref(t.grad_fn), k)
    return outs


def output_nr(self) -> int:
    """Which output of its grad_fn this tensor is, numbered as PyTorch numbers them: k for
    the k-th piece of split/chunk/unbind or the k-th result of aminmax, var_mean,
    std_mean, linalg.qr/svd/eigh/eig/slogdet; 0 otherwise (a leaf, a one-output op, or
    after an in-place op gave the tensor a new grad_fn). Like `torch.Tensor.output_nr`."""
    node = self.grad_fn
    group = getattr(node.op, "_group", None) if node is not None else None
    if group is not None:  # a piece of a joined split/chunk/unbind: its place in the group
        for k, r in enumerate(group.refs):
            if r() is node:
                return k
    entry = _NUMBERED.get(id(self))
    if entry is None or node is None or entry[0]() is not self or entry[1]() is not node:
        return 0
    return entry[2]
