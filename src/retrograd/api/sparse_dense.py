"""Sparse COO construction and products, stored dense.

retrograd has no sparse layout. Graph code written for PyTorch (pytorch/examples' GCN
and GAT) builds adjacency matrices with `torch.sparse_coo_tensor`, `x.to_sparse()`
and `torch.spmm`; here they give the same values in an ordinary dense tensor
(`is_sparse` stays False), with gradients flowing to `values` as in PyTorch.

The tensor a constructor returns (`sparse_coo_tensor`, `to_sparse()`, `coalesce()`)
remembers its COO form, so code that reads it back (`adj._indices()`, `adj._values()`,
`adj.coalesce().indices()` / `.values()`, `_nnz()`: sparse dropout in pygcn-style code,
pyGAT's sparse backward) gets PyTorch's arrays. Results of further ops are plain dense
tensors: asking them for indices raises rather than guessing which zeros were stored.
"""

from __future__ import annotations

import weakref

import numpy as np

from .. import creation
from .._values import by_ops
from ..tensor import Tensor, as_tensor
from ._args import _t
from ._errors import ShapeError
from .index_writes import index_put
from .indexing import index_add
from .linalg import mm

__all__ = ["sparse_coo_tensor", "sparse_csr_tensor", "spmm"]

# id(tensor) -> (weak reference to it, (indices (sparse_dims, nnz) int64 array, values
# Tensor, coalesced, version, csr)); by id, as Tensor's == is element-wise; `csr`: built
# as compressed rows (sparse_csr_tensor, to_sparse_csr), whose crow_indices() it answers
_COO: dict = {}


def _remember(t: Tensor, idx: np.ndarray, values: Tensor, coalesced: bool,
              csr: bool = False) -> None:
    key = id(t)

    def forget(ref, key=key):
        if _COO.get(key, (None,))[0] is ref:
            del _COO[key]
    _COO[key] = (weakref.ref(t, forget), (idx, values, coalesced, t._version, csr))


def _record(t: Tensor):
    entry = _COO.get(id(t))
    return entry[1] if entry is not None and entry[0]() is t else None


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
    _remember(out, idx, v, bool(is_coalesced))
    return out


def _index_array(x, what: str) -> np.ndarray:
    a = np.asarray(x.detach().numpy() if isinstance(x, Tensor) else x)
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise ShapeError(f"sparse_csr_tensor: {what} must be a 1-D integer tensor, got dtype "
                         f"{a.dtype} and shape {a.shape}")
    return a.astype(np.int64)


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants=None) -> Tensor:
    """The dense matrix whose row i holds `values[crow_indices[i]:crow_indices[i + 1]]` at
    the columns `col_indices` of that slice (compressed sparse rows); `size` defaults to
    (rows, one past the largest column) followed by the values' trailing shape. Like
    `torch.sparse_csr_tensor`, stored dense (gradients flow to `values`). The row pointers
    and the column range are always checked (a wrong one would put a value silently in
    another entry); columns sorted and distinct within each row, as PyTorch, only with
    `check_invariants=True` (the dense values do not depend on it)."""
    crow, col = _index_array(crow_indices, "crow_indices"), _index_array(col_indices,
                                                                         "col_indices")
    nnz = col.shape[0]
    rows = crow.shape[0] - 1
    if size is not None and rows != int(size[0]):
        raise ShapeError(f"sparse_csr_tensor: crow_indices.shape[-1] must be equal to the "
                         f"number of rows + 1 (={int(size[0]) + 1}), but got {crow.shape[0]}")
    if rows < 0 or crow[0] != 0 or crow[-1] != nnz or (np.diff(crow) < 0).any():
        raise ShapeError(f"sparse_csr_tensor: crow_indices must start at 0, never decrease "
                         f"and end at the number of entries {nnz}, got {crow.tolist()}")
    idx = np.stack([np.repeat(np.arange(rows, dtype=np.int64), np.diff(crow)), col])
    if size is None:
        v = _t(values)
        size = (rows, int(col.max()) + 1 if nnz else 0) + tuple(v.shape[1:])
    elif nnz and (col.min() < 0 or col.max() >= int(size[1])):
        raise ShapeError(f"sparse_csr_tensor: `0 <= col_indices < ncols` is not satisfied "
                         f"(ncols {int(size[1])}, columns {col.min()} through {col.max()})")
    if check_invariants and nnz and ((np.diff(col) <= 0) & (idx[0][1:] == idx[0][:-1])).any():
        raise ShapeError("sparse_csr_tensor: `col_indices[..., crow_indices[..., i - 1]:"
                         "crow_indices[..., i]] for all i = 1, ..., nrows are sorted and "
                         "distinct along the last dimension values` is not satisfied")
    out = sparse_coo_tensor(idx, values, size, dtype=dtype, device=device,
                            requires_grad=requires_grad)
    rec = _record(out)
    _remember(out, rec[0], rec[1], True, csr=True)
    return out


def _to_sparse_csr(self, dense_dim=None) -> Tensor:
    """A copy of the matrix (in the graph) whose compressed-row form is its nonzero
    entries. Like `torch.Tensor.to_sparse_csr`, stored dense."""
    if self.ndim != 2 or dense_dim:
        raise ShapeError(f"to_sparse_csr: retrograd's compressed-row form is for 2-D "
                         f"matrices without dense dimensions, got shape {self.shape}")
    out = _to_sparse(self)
    rec = _record(out)
    if rec is not None:
        _remember(out, rec[0], rec[1], True, csr=True)
    return out


def _csr(self, fn: str):
    rec = _coo(self, fn)
    if not rec[4]:
        raise RuntimeError(f"{fn}: expected a sparse row compressed tensor (from "
                           "sparse_csr_tensor() or to_sparse_csr()), got a sparse coordinate "
                           "or dense one")
    return rec


def _crow_indices(self) -> Tensor:
    """Where each row's entries start in `col_indices()` and `values()`, then the number of
    entries. Like `torch.Tensor.crow_indices`."""
    rows = _csr(self, "crow_indices()")[0][0]
    counts = np.bincount(rows, minlength=self.shape[0])
    return as_tensor(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))


def _col_indices(self) -> Tensor:
    """The column of each entry, row by row. Like `torch.Tensor.col_indices`."""
    return as_tensor(_csr(self, "col_indices()")[0][1].copy())


def spmm(input, mat2) -> Tensor:
    """The matrix product of a (sparse, here dense) matrix and a dense one. Like
    `torch.spmm`."""
    return mm(input, mat2)


def _to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None) -> Tensor:
    """A copy of the tensor (in the graph): PyTorch's sparse conversion, stored dense; its
    COO form is the nonzero entries, in row-major order (coalesced)."""
    if not args and str(layout).endswith("sparse_csr"):
        return _to_sparse_csr(self, dense_dim)
    out = self.clone()
    if not args and dense_dim is None and str(layout).endswith(("None", "sparse_coo")) \
            and self.ndim and not by_ops(self):  # (traced or vmapped: no values to read)
        idx = np.stack(np.nonzero(self.detach().numpy())).astype(np.int64)
        _remember(out, idx, self[tuple(as_tensor(r) for r in idx)], True)
    return out


def _coo(self, fn: str):
    rec = _record(self)
    if rec is None or rec[3] != self._version:
        raise RuntimeError(
            f"{fn}: retrograd stores sparse tensors dense, and only the tensor that "
            "sparse_coo_tensor(), to_sparse() or coalesce() returned (not modified in place) "
            "keeps its COO indices and values; this one does not")
    return rec


def _coalesce(self) -> Tensor:
    """The coalesced tensor: repeated indices summed into one entry, indices sorted
    row-major (the dense values are the same). A tensor without a COO form (the result of
    an op) is itself: dense storage has one entry per position."""
    rec = _record(self)
    if rec is None or rec[2] or rec[3] != self._version:
        return self
    idx, v = rec[0], rec[1]
    size = self.shape[:idx.shape[0]]
    keys, inverse = np.unique(np.ravel_multi_index(idx, size) if idx.size else
                              np.zeros(0, np.int64), return_inverse=True)
    new_idx = np.stack(np.unravel_index(keys, size)).astype(np.int64).reshape(len(size), -1)
    summed = index_add(creation.zeros(len(keys), *v.shape[1:], dtype=v.dtype).to(v.device),
                       0, as_tensor(inverse.reshape(-1).astype(np.int64)), v)
    return sparse_coo_tensor(new_idx, summed, tuple(self.shape), is_coalesced=True)


def _is_coalesced(self) -> bool:
    """Whether the COO form has no repeated indices (True for a tensor without one)."""
    rec = _record(self)
    return True if rec is None else rec[2]


def _indices_raw(self) -> Tensor:
    """The COO indices as built (uncoalesced allowed). Like `torch.Tensor._indices`."""
    return as_tensor(_coo(self, "_indices()")[0].copy())


def _values_raw(self) -> Tensor:
    """The COO values as built, outside the graph. Like `torch.Tensor._values`."""
    return _coo(self, "_values()")[1].detach()


def _coalesced(self, fn: str):
    rec = _coo(self, fn)
    if not rec[2]:
        raise RuntimeError(f"Cannot get {fn[:-2]} on an uncoalesced tensor, please call "
                           ".coalesce() first")
    return rec


def _indices(self) -> Tensor:
    """The coalesced COO indices. Like `torch.Tensor.indices`."""
    if _coo(self, "indices()")[4]:
        raise RuntimeError("indices expected sparse coordinate tensor layout but got a sparse "
                           "row compressed one (use crow_indices() and col_indices())")
    return as_tensor(_coalesced(self, "indices()")[0].copy())


def _values(self) -> Tensor:
    """The coalesced COO values, in the graph. Like `torch.Tensor.values`."""
    return _coalesced(self, "values()")[1]


def _nnz(self) -> int:
    """How many entries the COO form stores. Like `torch.Tensor._nnz`."""
    return int(_coo(self, "_nnz()")[0].shape[1])


def _sparse_dim(self) -> int:
    """The number of sparse dimensions (0 for a tensor without a COO form)."""
    rec = _record(self)
    return 0 if rec is None else int(rec[0].shape[0])


def _dense_dim(self) -> int:
    """The number of dense dimensions (all of them for a tensor without a COO form)."""
    return self.ndim - _sparse_dim(self)


def bind(cls) -> None:
    """`x.to_sparse()`, `x.to_sparse_coo()`: copies, as retrograd stores every tensor dense;
    `x.coalesce()` (graph code's `adj = adj.coalesce()`) is the tensor itself."""
    cls.to_sparse = _to_sparse
    cls.to_sparse_coo = _to_sparse
    cls.coalesce = _coalesce
    cls.is_coalesced = _is_coalesced
    cls._indices, cls._values, cls.indices, cls.values = (_indices_raw, _values_raw,
                                                           _indices, _values)
    cls._nnz, cls.sparse_dim, cls.dense_dim = _nnz, _sparse_dim, _dense_dim
    cls.to_sparse_csr, cls.crow_indices, cls.col_indices = (_to_sparse_csr, _crow_indices,
                                                            _col_indices)
