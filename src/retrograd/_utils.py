"""`rg._utils`: the two helpers of `torch._utils` that training code imports by that path
(improved-diffusion's and guided-diffusion's fp16_util keep a flat float32 master copy
of the parameters with them)."""

from __future__ import annotations

from collections.abc import Sequence

from .api.shape import cat
from .tensor import Tensor

__all__ = ["_flatten_dense_tensors", "_unflatten_dense_tensors"]


def _flatten_dense_tensors(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors flattened and concatenated into one 1-d tensor (differentiable; one
    tensor gives a view of it, as in PyTorch)."""
    tensors = list(tensors)
    if len(tensors) == 1:
        return tensors[0].contiguous().view(-1)
    return cat([t.contiguous().view(-1) for t in tensors])


def _unflatten_dense_tensors(flat: Tensor, tensors: Sequence[Tensor]) -> tuple:
    """Views of `flat` shaped like each of `tensors` in turn, the inverse of
    `_flatten_dense_tensors`; too short a `flat` raises RuntimeError naming the sizes."""
    outputs, offset = [], 0
    for t in tensors:
        n = t.numel()
        if offset + n > flat.shape[0]:
            raise RuntimeError(f"start ({offset}) + length ({n}) exceeds dimension size "
                               f"({flat.shape[0]}).")
        outputs.append(flat.narrow(0, offset, n).view_as(t))
        offset += n
    return tuple(outputs)
