"""Sparse COO construction and products, stored dense.

retrograd has no sparse layout. Graph code written for PyTorch (pytorch/examples' GCN
and GAT) builds adjacency matrices with `torch.sparse_coo_tensor`, `x.to_sparse()`
and `torch.spmm`; here they give the same values in an ordinary dense tensor
(`is_sparse` stays False), with gradients flowing to `values` as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from .. import creation
from ..tensor import Tensor, as_tensor
from ._args import _t
from ._errors import ShapeError
from .index_writes import index_put
from .linalg import mm

__all__ = ["sparse_coo_tensor", "spmm"]


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants=None, is_coalesced=None) -> Tensor:
    """The dense tensor with `values[j]` added at `indices[:, j]` (repeated indices add
    up, as in a coalesced COO tensor); `size` defaults to one past the largest index in
    each sparse dimension followed by the values' own trailing shape. Like
    `torch.sparse_coo_tensor`, stored dense."""
    idx = np.asarray(indices.detach().numpy() if isinstance(indices, Tensor) else indices)
    if idx.ndim != 2 or (idx.size and idx.dtype.kind not in "iu"):
        raise ShapeError(f"sparse_coo_tensor: indices must be an integer array of shape "
                         f"(sparse_dims, nnz), got dtype {idx.dtype} and shape {idx.shape}")
    idx = idx.astype(np.int64)
    v = _t(values)
    if dtype is not None:
        v = v.to(dtype)
    k, nnz = idx.shape
    if v.ndim < 1 or v.shape[0] != nnz:
        raise ShapeError(f"sparse_coo_tensor: indices have {nnz} entries but values have "
                         f"shape {v.shape}")
    if size is None:
        lead = tuple(int(m) + 1 for m in idx.max(axis=1)) if nnz else (0,) * k
        size = lead + tuple(v.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != k + v.ndim - 1 or size[k:] != tuple(v.shape[1:]):
        raise ShapeError(f"sparse_coo_tensor: size {size} does not fit {k} sparse dims and "
                         f"values of shape {v.shape}")
    if nnz and ((idx < 0).any() or (idx >= np.array(size[:k])[:, None]).any()):
        raise ShapeError(f"sparse_coo_tensor: size {size} is inconsistent with indices "
                         f"(largest {idx.max(axis=1).tolist()}, smallest "
                         f"{idx.min(axis=1).tolist()})")
    out = creation.zeros(*size, dtype=v.dtype)
    if device is not None:
        out, v = out.to(device), v.to(device)
    if nnz:
        out = index_put(out, tuple(as_tensor(r) for r in idx), v, accumulate=True)
    if requires_grad:
        out.requires_grad_()
    return out


def spmm(input, mat2) -> Tensor:
    """The matrix product of a (sparse, here dense) matrix and a dense one. Like
    `torch.spmm`."""
    return mm(input, mat2)


def _to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None) -> Tensor:
    """A copy of the tensor (in the graph): PyTorch's sparse conversion, stored dense."""
    return self.clone()


def _coalesce(self) -> Tensor:
    """The tensor itself: a dense tensor has one entry per position, so it is already
    coalesced (repeated COO indices were summed when it was built)."""
    return self


def _is_coalesced(self) -> bool:
    """Always True (see `coalesce`)."""
    return True


def bind(cls) -> None:
    """`x.to_sparse()`, `x.to_sparse_coo()`: copies, as retrograd stores every tensor dense;
    `x.coalesce()` (graph code's `adj = adj.coalesce()`) is the tensor itself."""
    cls.to_sparse = _to_sparse
    cls.to_sparse_coo = _to_sparse
    cls.coalesce = _coalesce
    cls.is_coalesced = _is_coalesced
