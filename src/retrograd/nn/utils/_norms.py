"""The arithmetic shared by weight norm and spectral norm (both the parametrizations and
the old hook forms): norms over all dimensions but one, and the power iteration."""

from __future__ import annotations

from ... import api as _f
from ...tensor import Tensor


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of `v` over every dimension except `dim`, kept with size 1 there
    (`dim=-1`: the norm of the whole tensor, 0-d), as torch.norm_except_dim."""
    if dim == -1:
        return _f.vector_norm(v)
    d = dim % v.ndim
    axes = tuple(i for i in range(v.ndim) if i != d)
    if not axes:
        return _f.abs(v)
    return _f.vector_norm(v, 2, axes, True)


def weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """v * (g / ||v||), the norm taken over every dimension except `dim`."""
    return v * (g / norm_except_dim(v, dim))


def to_matrix(weight: Tensor, dim: int) -> Tensor:
    """`weight` with dimension `dim` moved first and the rest flattened: (size(dim), -1)."""
    if dim != 0:
        perm = (dim,) + tuple(d for d in range(weight.ndim) if d != dim)
        weight = _f.permute(weight, perm)
    return _f.reshape(weight, (weight.shape[0], -1))
