"""Reinterpreting memory: `bitcast`, the bytes of a tensor read as another dtype (PyTorch's
`Tensor.view(dtype)`). Not differentiable; the output shares the input's memory."""

from __future__ import annotations

import numpy as np

from ..primitive import defop


def _bitcast(x, *, dtype):
    """The last axis scales by the ratio of the item sizes, as in PyTorch and NumPy."""
    return x.view(np.dtype(dtype))


bitcast = defop("bitcast", _bitcast, view=True)
