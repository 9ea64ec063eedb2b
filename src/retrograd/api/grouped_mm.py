"""`F.grouped_mm`: PyTorch's grouped matrix product for mixture-of-experts layers, where
each expert (group) multiplies its own jagged slice of tokens.

The four forms of torch's CPU kernel, with `offs` (int32, increasing) marking where each
group ends along the jagged dimension of the 2-D operand:
- 2-D a (M, K) x 3-D b (G, K, N): rows offs[g-1]:offs[g] of a times b[g] -> (M, N);
- 3-D a (G, M, K) x 2-D b (K, N): a[g] times columns offs[g-1]:offs[g] of b -> (M, N);
- 2-D a (M, K) x 2-D b (K, N): a[:, s:e] times b[s:e] for each group -> (G, M, N);
- 3-D a x 3-D b (no offs): the batched product -> (G, M, N).
Rows (columns) past offs[-1] are zeros here (torch leaves them uninitialised). Each group
is a product of slices, so gradients are those of `matmul`; the offsets are read in
Python, so `rg.jit` and `rg.func.vmap` refuse a traced or batched `offs`. As torch's CPU
kernel, only float32 and float16 (bfloat16 has no NumPy dtype) are taken, without bias.
"""

from __future__ import annotations

import numpy as np

from .._values import values_of
from ..tensor import Tensor
from ._args import _t
from .shape import cat, stack

__all__ = ["grouped_mm"]


def _offsets(offs, total: int, groups: int | None, what: str) -> list[int]:
    o = _t(offs)
    if o.dtype != np.int32:
        raise RuntimeError(f"grouped_mm(): Offsets have to be int32, got {o.dtype}")
    if o.ndim != 1:
        raise RuntimeError(f"grouped_mm(): offs must be 1-D, got shape {o.shape}")
    if groups is not None and o.shape[0] != groups:
        raise RuntimeError(f"grouped_mm(): matrix batch sizes have to match: {o.shape[0]} "
                           f"offsets for {groups} groups")
    ends = [int(v) for v in values_of(o, "F.grouped_mm() with offs", "pass offs as a Python-"
                                      "built tensor outside the function")]
    prev = 0
    for e in ends:
        if e < prev or e > total:
            raise RuntimeError(f"grouped_mm(): offs {ends} must increase and stay within the "
                               f"{total} {what} of the jagged operand")
        prev = e
    return ends


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None) -> Tensor:
    """The grouped product of mat_a and mat_b (see the module for the four forms), for
    mixture-of-experts layers. Like `torch.nn.functional.grouped_mm` on CPU."""
    a, b = _t(mat_a), _t(mat_b)
    if a.dtype not in (np.float32, np.float16):
        raise RuntimeError(f"grouped_mm(): Expected mat_a to be Float32, BFloat16 or Float16 "
                           f"matrix, got {a.dtype}")
    if b.dtype != a.dtype:
        raise RuntimeError(f"grouped_mm(): mat_b has dtype {b.dtype} but mat_a has {a.dtype}; "
                           "they must match")
    if out_dtype is not None and np.dtype(out_dtype) != a.dtype:
        raise RuntimeError("grouped_mm(): Grouped gemm output dtype must match `mat_a` dtype")
    if bias is not None:
        raise RuntimeError("grouped_mm(): Bias not supported yet")
    if a.ndim not in (2, 3) or b.ndim not in (2, 3):
        raise RuntimeError(f"grouped_mm(): mat_a and mat_b must be 2-D or 3-D, got shapes "
                           f"{a.shape} and {b.shape}")
    if (offs is None) != (a.ndim == 3 and b.ndim == 3):
        raise RuntimeError("grouped_mm(): Have to provide offsets if there is a 2d matrix, or "
                           "no offset if both matrices are 3d")
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"grouped_mm(): contraction dimension of mat_a and mat_b must "
                           f"match, got shapes {a.shape} and {b.shape}")
    if a.ndim == 3 and b.ndim == 3:
        if a.shape[0] != b.shape[0]:
            raise RuntimeError(f"grouped_mm(): matrix batch sizes have to match, got "
                               f"{a.shape[0]} and {b.shape[0]}")
        return a @ b
    if a.ndim == 2 and b.ndim == 3:
        m = a.shape[0]
        ends = _offsets(offs, m, b.shape[0], "rows")
        pieces, start = [], 0
        for g, end in enumerate(ends):
            pieces.append(a[start:end] @ b[g])
            start = end
        pieces.append(a.new_zeros((m - start, b.shape[-1])))
        return cat(pieces, 0)
    if a.ndim == 3 and b.ndim == 2:
        n = b.shape[1]
        ends = _offsets(offs, n, a.shape[0], "columns")
        pieces, start = [], 0
        for g, end in enumerate(ends):
            pieces.append(a[g] @ b[:, start:end])
            start = end
        pieces.append(a.new_zeros((a.shape[1], n - start)))
        return cat(pieces, 1)
    ends = _offsets(offs, a.shape[1], None, "columns")  # both 2-D: K is jagged
    pieces, start = [], 0
    for end in ends:
        pieces.append(a[:, start:end] @ b[start:end])
        start = end
    if not pieces:
        return a.new_zeros((0, a.shape[0], b.shape[1]))
    return stack(pieces, 0)
