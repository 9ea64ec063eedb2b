"""The bilinear form of `torch.nn.functional.bilinear`: out[..., o] = x1 W[o] x2 + b[o],
one `einsum` (a recorded op, so every derivative comes from the op table)."""

from __future__ import annotations

from ..tensor import Tensor
from ._args import _t
from ._errors import DtypeError, ShapeError
from .linalg import einsum

__all__ = ["bilinear"]


def bilinear(input1, input2, weight, bias=None) -> Tensor:
    """y = x1^T A x2 + b for inputs (*, in1) and (*, in2) with the same leading
    dimensions, weight A (out, in1, in2) and bias (out,): output (*, out). Like
    `torch.nn.functional.bilinear` (all tensors of one dtype, no broadcasting)."""
    a, b, w = _t(input1), _t(input2), _t(weight)
    bias = None if bias is None else _t(bias)
    dtypes = {t.dtype for t in (a, b, w, bias) if t is not None}
    if len(dtypes) > 1:
        raise DtypeError(f"bilinear(): all tensors must have the same dtype, got input1: "
                         f"{a.dtype}, input2: {b.dtype}, weight: {w.dtype}"
                         + ("" if bias is None else f", bias: {bias.dtype}"))
    if w.ndim != 3:
        raise ShapeError(f"bilinear(): weight must be 3-D (out_features, in1_features, "
                         f"in2_features), got shape {w.shape}")
    if a.ndim != b.ndim or a.ndim == 0:
        raise ShapeError(f"bilinear(): input1 and input2 must have the same number of "
                         f"dimensions (at least 1), got shapes {a.shape} and {b.shape}")
    if a.shape[:-1] != b.shape[:-1]:
        raise ShapeError(f"bilinear(): input batch dimensions do not match: input1 of shape "
                         f"{a.shape}, input2 of shape {b.shape}")
    if a.shape[-1] != w.shape[1] or b.shape[-1] != w.shape[2]:
        raise ShapeError(f"bilinear(): input sizes do not match weight size: input1 of shape "
                         f"{a.shape} and input2 of shape {b.shape} need a weight of shape "
                         f"(out_features, {a.shape[-1]}, {b.shape[-1]}), got {w.shape}")
    if bias is not None and bias.shape != (w.shape[0],):
        raise ShapeError(f"bilinear(): bias size does not match weight size: bias of shape "
                         f"{bias.shape}, expected ({w.shape[0]},)")
    out = einsum("...i,oij,...j->...o", a, w, b)
    return out if bias is None else out + bias
