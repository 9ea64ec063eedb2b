"""`rg.sparse`: `torch.sparse`'s products and sums for code written against sparse
adjacency matrices (GCNs call `torch.sparse.mm(adj, x)`).

retrograd stores sparse tensors dense (`api.sparse_dense`), so these are the dense
operations, with gradients flowing to a sparse tensor's `values` as in PyTorch.
`softmax`/`log_softmax` are refused: PyTorch's treat entries never specified as -inf,
and a dense tensor no longer knows which those were.
"""

from __future__ import annotations

from .api.linalg import addmm as _addmm
from .api.reductions import sum as _sum
from .api.sparse_dense import sparse_coo_tensor, spmm
from .creation import zeros
from .tensor import Tensor

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax", "spmm", "sparse_coo_tensor",
           "FloatTensor", "DoubleTensor", "LongTensor", "IntTensor"]


def mm(mat1, mat2, reduce: str | None = None) -> Tensor:
    """The product of a (sparse, here dense) matrix and a dense one. Like
    `torch.sparse.mm` without `reduce` (its "sum" reduction is the product)."""
    if reduce not in (None, "sum"):
        raise NotImplementedError(f"rg.sparse.mm(reduce={reduce!r}): only the plain product "
                                  "(reduce='sum') is supported")
    return spmm(mat1, mat2)


def addmm(mat, mat1, mat2, *, beta: float = 1.0, alpha: float = 1.0) -> Tensor:
    """beta * mat + alpha * (mat1 @ mat2). Like `torch.sparse.addmm`."""
    return _addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input, dim=None, dtype=None) -> Tensor:  # noqa: A001
    """The sum over `dim` (all entries by default). Like `torch.sparse.sum`, whose result's
    `to_dense()` this is."""
    return _sum(input, dim, dtype=dtype)


def _refuse(name: str):
    raise NotImplementedError(
        f"rg.sparse.{name}: PyTorch's sparse {name} treats entries never specified as -inf, "
        "and retrograd's sparse tensors are stored dense, so it cannot tell them from zeros; "
        f"use rg.{name} with a mask (masked_fill(~mask, -inf)) instead")


def softmax(input, dim: int, *, dtype=None) -> Tensor:
    """Refused (see the module docstring)."""
    _refuse("softmax")


def log_softmax(input, dim: int, *, dtype=None) -> Tensor:
    """Refused (see the module docstring)."""
    _refuse("log_softmax")


def _legacy(name: str, dtype: str):
    def construct(*args, size=None) -> Tensor:
        if args and all(isinstance(a, int) for a in args):  # FloatTensor(2, 3): all zeros
            return zeros(*args, dtype=dtype)
        if len(args) not in (2, 3):
            raise TypeError(f"rg.sparse.{name}(): expected (indices, values[, size]) or "
                            f"sizes, got {len(args)} arguments")
        return sparse_coo_tensor(args[0], args[1], args[2] if len(args) == 3 else size)
    construct.__name__ = construct.__qualname__ = name
    construct.__doc__ = (f"The legacy constructor `torch.sparse.{name}(indices, values, size)` "
                         "(pygcn's adjacency), which keeps the values' dtype: "
                         f"`sparse_coo_tensor`; with sizes alone, zeros of {dtype}.")
    return construct


FloatTensor = _legacy("FloatTensor", "float32")
DoubleTensor = _legacy("DoubleTensor", "float64")
LongTensor = _legacy("LongTensor", "int64")
IntTensor = _legacy("IntTensor", "int32")
