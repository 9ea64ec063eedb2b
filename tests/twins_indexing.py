"""PyTorch twins of the indexing family's ops (merged into test_ops.TORCH)."""

import torch


def _diag_scatter(v, offset, axis1, axis2, shape):
    z = torch.zeros(shape, dtype=v.dtype)
    z.diagonal(offset, axis1, axis2).copy_(v)
    return z


def _scatter_reduce(x, index, src, axis, reduce, include_self=True):
    if reduce != "prod":
        return torch.scatter_reduce(x, axis, index, src, reduce, include_self=include_self)
    # torch.func.jvp of scatter_reduce(..., "prod") is zero (a PyTorch bug), so the product
    # is spelled out over a one-hot of the targets (last axis, as in the samples)
    assert axis in (-1, x.ndim - 1)
    n = x.shape[-1]
    rows = index.shape[:-1]
    cut = tuple(slice(0, r) for r in rows)
    xs, src = x[cut], src[cut + (slice(0, index.shape[-1]),)]
    hit = index[..., :, None] == torch.arange(n)
    p = torch.where(hit, src[..., :, None], torch.ones((), dtype=x.dtype)).prod(-2)
    if not include_self:
        xs = torch.where(hit.any(-2), torch.ones((), dtype=x.dtype), xs)
    out = x.clone()
    out[cut] = xs * p
    return out


TWINS = {
    "gather": lambda x, index, axis: torch.gather(x, axis, index),
    "scatter_add_dim": lambda x, index, src, axis: torch.scatter_add(x, axis, index, src),
    "scatter_dim": lambda x, index, src, axis: torch.scatter(x, axis, index, src),
    "scatter_reduce": _scatter_reduce,
    "index_select": lambda x, index, axis: torch.index_select(x, axis, index),
    "index_add": lambda x, index, src, axis: torch.index_add(x, axis, index, src),
    "diagonal": lambda x, offset, axis1, axis2: torch.diagonal(x, offset, axis1, axis2),
    "diag_scatter": _diag_scatter,
}
