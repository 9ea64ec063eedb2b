"""Linear algebra: `rg.matmul`, `rg.einsum`."""

from __future__ import annotations

from .. import ops
from ..engine import apply
from ..grad_mode import state as _state
from ..ops.linalg import _einsum_parse
from ..tensor import Tensor
from ._args import _t


def einsum(spec: str, *operands) -> Tensor:
    """Einstein summation, e.g. `rg.einsum('ij,jk->ik', a, b)` for `a @ b`; differentiable in
    every operand. Like `torch.einsum` and `np.einsum`."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ts = [_t(t) for t in operands]
    _einsum_parse(spec, [t.shape for t in ts])  # validate before recording
    _same_dtype("einsum", ts)
    return apply(ops.einsum, *ts, spec=spec)


def matmul(x, y) -> Tensor:
    """Matrix product with NumPy's rules (vectors, batches broadcast). Like `torch.matmul`
    and the `@` operator: `rg.matmul(rg.ones(2, 3), rg.ones(3))` is `tensor([3., 3.])`."""
    x, y = _t(x), _t(y)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError(f"matmul(): both operands need at least one dimension, got shapes "
                         f"{x.shape} and {y.shape}")
    kx = x.shape[-1]
    ky = y.shape[-2] if y.ndim > 1 else y.shape[0]
    if kx != ky:
        raise ValueError(f"matmul(): shapes {x.shape} and {y.shape} do not align "
                         f"({kx} != {ky})")
    if x.data.dtype is not y.data.dtype:
        _same_dtype("matmul", (x, y))
    return apply(ops.matmul, x, y)


def _same_dtype(name: str, ts) -> None:
    """Products do not promote, as in PyTorch: operands of different dtypes are refused
    (but for a complex-step gradient check, which perturbs one real input at a time)."""
    dts = {t.data.dtype for t in ts}
    if len(dts) > 1 and not (_state.complex_step and {d.kind for d in dts} == {"f", "c"}):
        raise RuntimeError(f"{name}(): expected operands of the same dtype, got "
                           f"{', '.join(str(t.data.dtype) for t in ts)}; convert one with "
                           ".to(dtype) first")


