"""`rg.hash_tensor` (and `Tensor.hash_tensor`): PyTorch 2.13's xor hash of a tensor's elements.

Each element is widened to its 64-bit kind (floats to float64, integers and bools to int64),
its bits read as uint64, and the bits are xor-ed over the reduced dimensions. The fold is
written with existing rows (`view` to uint64, `bitwise_xor` of two halves, `cat` with zeros
to an even length), so `rg.jit` and `rg.func.vmap` trace it like any reduction. The result
is uint64 and carries no gradient.
"""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ._args import _t
from .math import bitwise_xor
from .reductions import _check_extreme_input, _reduce_dims
from .shape import cat

__all__ = ["hash_tensor"]


def _xor_last(bits: Tensor) -> Tensor:
    """The xor of `bits` (uint64) along its last dimension, which has at least one entry."""
    while bits.shape[-1] > 1:
        n = bits.shape[-1]
        if n % 2:
            bits = cat([bits, bits.new_zeros(bits.shape[:-1] + (1,))], -1)
            n += 1
        bits = bitwise_xor(bits[..., : n // 2], bits[..., n // 2:])
    return bits[..., 0]


def hash_tensor(input, dim=None, *, keepdim: bool = False, mode: int = 0  # noqa: A002
                ) -> Tensor:
    """The xor of the 64-bit patterns of input's elements (floats as float64, integers and
    bools as int64) over `dim` (an int, a tuple, or None/() for every dimension); uint64.
    Like `torch.hash_tensor` (mode 0, the only one torch has)."""
    x = _t(input)
    if mode != 0:
        raise RuntimeError(f"hash_tensor(): Unknown hash_tensor mode: {mode} (only mode=0, the "
                           "xor reduction, exists)")
    kind = x.dtype.kind
    if kind == "c" or (kind == "u" and x.dtype.itemsize > 1):
        raise NotImplementedError(f"hash_tensor(): not implemented for {x.dtype}, as in torch "
                                  "(floating, signed integer, uint8 and bool tensors are)")
    if kind not in "fiub":
        raise TypeError(f"hash_tensor(): unsupported dtype {x.dtype}")
    ax = _reduce_dims(dim, x.ndim, "hash_tensor")
    _check_extreme_input(x, ax, "hash_tensor")
    wide = x.detach().to(np.float64 if kind == "f" else np.int64)
    bits = wide.view(np.uint64)
    if bits.ndim == 0:
        return bits.clone()
    axes = tuple(range(x.ndim)) if ax is None else (ax if isinstance(ax, tuple) else (ax,))
    keep = [k for k in range(x.ndim) if k not in axes]
    moved = bits.permute(*keep, *axes)
    flat = moved.reshape(tuple(x.shape[k] for k in keep) + (-1,))
    out = _xor_last(flat)
    if keepdim:
        out = out.reshape(tuple(1 if k in axes else s for k, s in enumerate(x.shape)))
    return out
