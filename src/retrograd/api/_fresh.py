"""`fresh`: the result of a layer as a tensor of its own, not a view of a temporary.

Several functions end with a reshape or permute of an intermediate (conv's matrix
product, pixel_shuffle, embedding's rows). PyTorch returns new tensors there, so code
follows them with in-place ops (`nn.ReLU(inplace=True)`, `nn.LeakyReLU(0.2, True)`),
which retrograd refuses on a recorded view. A copy in the graph makes the result
an ordinary tensor; it is only made while the view is being recorded.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..engine import apply
from ..tensor import Tensor


def fresh(t: Tensor) -> Tensor:
    """`t`, or a copy of it (in the graph) when `t` is a recorded view."""
    node = t.grad_fn
    if node is None or not node.op.view:
        return t
    return apply(ops.cast, t, dtype=t.data.dtype)


def row_major(t: Tensor) -> Tensor:
    """`t`, or its row-major copy (in the graph) where NumPy left it in another order:
    PyTorch allocates these results contiguous, and ported code `.view`s them."""
    d = t.data
    if d.__class__ is np.ndarray and d.ndim > 1 and not d.flags.c_contiguous:
        return apply(ops.contiguous, t)
    return t
