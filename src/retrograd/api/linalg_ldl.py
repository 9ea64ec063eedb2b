"""`rg.linalg.ldl_factor`, `ldl_factor_ex` and `ldl_solve`: PyTorch's LDL^T factorisation of
symmetric (or Hermitian) indefinite matrices, in LAPACK's compact form.

`LD` holds what LAPACK's `sytrf` (`hetrf` for complex Hermitian input) leaves in the lower
triangle, with the strict upper triangle zeroed as torch does: the multipliers of L below
the diagonal and the 1x1 and 2x2 blocks of D on and next to it; `pivots` are LAPACK's
1-based `ipiv` (int32; a negative pair marks a 2x2 block), `info` its status (k > 0: D's
k-th diagonal entry is exactly zero). Only A's lower triangle is read. `ldl_solve` runs
LAPACK's `sytrs`/`hetrs` on them. The kernels are SciPy's LAPACK wrappers (the optional
`[special]` extra), one matrix at a time over the batch.

As in torch, neither function has a derivative: an output computed from a tensor that
requires grad requires grad too, and a backward through it raises RuntimeError (forward
mode raises as well). The pivots are read in Python, so `rg.jit` and `rg.func.vmap` refuse
both (values computed outside the op table).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import devices
from .._values import batched, per_element, values_of
from ..ops.linalg_decomp import LinAlgError
from ..tensor import Tensor
from ._args import _t
from ._no_derivative import no_derivative

__all__ = ["ldl_factor", "ldl_factor_ex", "ldl_solve"]

ldl_factor_result = namedtuple("linalg_ldl_factor", ["LD", "pivots"])
ldl_factor_ex_result = namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])

_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}


def _lapack():
    """`scipy.linalg.lapack`, or an ImportError naming the extra that installs it."""
    try:
        import scipy.linalg.lapack as lapack
    except ImportError as e:  # pragma: no cover - CI installs the extra
        raise ImportError("rg.linalg.ldl_factor / ldl_solve need SciPy's LAPACK, which is not "
                          "installed: pip install 'retrograd[special]' (or pip install "
                          "scipy)") from e
    return lapack


def _matrices(A, fn: str, what: str = "A") -> Tensor:
    A = _t(A)
    if A.ndim < 2:
        raise RuntimeError(f"torch.linalg.{fn}: The input tensor {what} must have at least 2 "
                           f"dimensions, got shape {A.shape}")
    if A.dtype.kind not in "fc":
        raise RuntimeError(f"torch.linalg.{fn}: Expected a floating point or complex tensor "
                           f"as input. Got {A.dtype}")
    if A.dtype not in _PREFIX:
        raise NotImplementedError(f"torch.linalg.{fn}: not implemented for {A.dtype} (float32, "
                                  "float64, complex64 and complex128 are)")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.{fn}: {what} must be batches of square matrices, "
                           f"but they are {A.shape[-2]} by {A.shape[-1]} matrices")
    return A


def _kernel(dtype: np.dtype, hermitian: bool, name: str):
    """The LAPACK routine `name` ('trf', 'trf_lwork' or 'trs') for `dtype`: he* for complex
    Hermitian, sy* otherwise."""
    p = _PREFIX[dtype]
    kind = "he" if hermitian and p in "cz" else "sy"
    return getattr(_lapack(), f"{p}{kind}{name}")


def _result(array: np.ndarray, ref: Tensor, name: str, inputs: tuple) -> Tensor:
    return no_derivative(Tensor._wrap(devices.like(array, ref.data)), name, inputs)


def ldl_factor_ex(input, *, hermitian: bool = False, check_errors: bool = False
                  ) -> ldl_factor_ex_result:
    """(LD, pivots, info): the compact LDL^T factorisation of the symmetric (Hermitian with
    `hermitian=True`) matrices A, batched; LAPACK's sytrf/hetrf, as `torch.linalg.
    ldl_factor_ex`. A zero pivot is reported in `info` (int32, A's batch shape), raised as
    LinAlgError only with `check_errors`."""
    input = _matrices(input, "ldl_factor_ex")
    if batched(input):  # inside vmap: each batch element's, as torch.func.vmap's fallback
        r = per_element(lambda x: ldl_factor_ex(x, hermitian=hermitian,
                                                check_errors=check_errors), input)
        if r is not None:
            return r
    a = devices.host(values_of(input, "linalg.ldl_factor_ex()", "factorise outside the function"))
    n = a.shape[-1]
    batch = a.shape[:-2]
    LD = np.zeros(a.shape, dtype=a.dtype)
    pivots = np.zeros(batch + (n,), dtype=np.int32)
    info = np.zeros(batch, dtype=np.int32)
    if n:
        trf = _kernel(a.dtype, hermitian, "trf")
        # the optimal workspace, as torch queries it: the blocked algorithm beyond the block
        # size (a workspace of n would make LAPACK fall back to the unblocked one)
        optimal = _kernel(a.dtype, hermitian, "trf_lwork")(n, lower=1)[0]
        lwork = max(int(np.real(optimal)), n)
        for k in np.ndindex(*batch):
            ldu, ipiv, status = trf(a[k], lower=1, lwork=lwork)
            LD[k] = np.tril(ldu)
            pivots[k], info[k] = ipiv, status
    if check_errors and info.any():
        where = np.argwhere(info > 0)[0]
        at = f" (batch element {tuple(int(i) for i in where)})" if batch else ""
        raise LinAlgError(f"torch.linalg.ldl_factor_ex{at}: the factorization could not be "
                          f"completed because D[{int(info[tuple(where)]) - 1}, "
                          f"{int(info[tuple(where)]) - 1}] is exactly zero (the matrix is "
                          "singular)")
    return ldl_factor_ex_result(_result(LD, input, "linalg_ldl_factor_ex", (input,)),
                                Tensor._wrap(devices.like(pivots, input.data)),
                                Tensor._wrap(devices.like(info, input.data)))


def ldl_factor(input, *, hermitian: bool = False) -> ldl_factor_result:
    """(LD, pivots): the compact LDL^T factorisation of the symmetric (Hermitian with
    `hermitian=True`) matrices A, as `torch.linalg.ldl_factor`; a matrix with an exactly
    zero pivot raises LinAlgError (a RuntimeError)."""
    input = _matrices(input, "ldl_factor")
    LD, pivots, info = ldl_factor_ex(input, hermitian=hermitian)
    if devices.host(info.data).any():
        bad = devices.host(info.data)
        k = int(bad[np.nonzero(bad)][0])
        raise LinAlgError(f"torch.linalg.ldl_factor: the factorization could not be completed "
                          f"because D[{k - 1}, {k - 1}] is exactly zero (the matrix is "
                          "singular); use ldl_factor_ex to get info instead of an error")
    return ldl_factor_result(LD, pivots)


def ldl_solve(LD, pivots, B, *, hermitian: bool = False) -> Tensor:
    """X with A X = B, for A given by `ldl_factor`'s (LD, pivots) (pass the same
    `hermitian`); batch dimensions broadcast. LAPACK's sytrs/hetrs, as
    `torch.linalg.ldl_solve`."""
    LD = _matrices(LD, "ldl_solve")
    piv, B = _t(pivots), _t(B)
    if piv.dtype.kind not in "iu":
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected pivots to be integers. Got "
                           f"{piv.dtype}")
    if piv.shape != LD.shape[:-1]:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD.shape[:-1] and pivots.shape "
                           f"to be the same, but got pivots with shape {list(piv.shape)} "
                           f"for LD of shape {list(LD.shape)}")
    if B.ndim < 2:
        raise IndexError(f"torch.linalg.ldl_solve: B must have at least 2 dimensions (n, k), "
                         f"got shape {B.shape}")
    if B.dtype != LD.dtype:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected B and LD to have the same "
                           f"dtype, but found B of type {B.dtype} and LD of type {LD.dtype}")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A "
                           f"matrix is {n} by {n} but each b matrix is {B.shape[-2]} by "
                           f"{B.shape[-1]}")
    try:
        batch = np.broadcast_shapes(LD.shape[:-2], B.shape[:-2])
    except ValueError:
        raise RuntimeError(f"torch.linalg.ldl_solve: the batch dimensions of LD "
                           f"{LD.shape[:-2]} and B {B.shape[:-2]} do not broadcast") from None
    if batched(LD, piv, B):  # inside vmap: each batch element's, as torch.func.vmap's
        r = per_element(lambda ld, p, b: ldl_solve(ld, p, b, hermitian=hermitian), LD, piv, B)
        if r is not None:
            return r
    instead = "solve outside the function"
    ld = devices.host(values_of(LD, "linalg.ldl_solve()", instead))
    p = devices.host(values_of(piv, "linalg.ldl_solve()", instead))
    b = devices.host(values_of(B, "linalg.ldl_solve()", instead))
    if p.size and (np.abs(p).max() > n):
        raise RuntimeError("torch.linalg.ldl_solve: Pivots given to ldl_solve must all satisfy "
                           f"|pivot| <= LD.size(-2) = {n}. Did you properly pass the result of "
                           "ldl_factor?")
    if p.size and (np.abs(p).min() < 1):
        raise RuntimeError("torch.linalg.ldl_solve: Pivots given to ldl_solve must all satisfy "
                           "|pivot| >= 1. Did you properly pass the result of ldl_factor?")
    X = np.zeros(batch + B.shape[-2:], dtype=ld.dtype)
    if n and B.shape[-1]:
        trs = _kernel(ld.dtype, hermitian, "trs")
        ld = np.broadcast_to(ld, batch + (n, n))
        p = np.broadcast_to(p.astype(np.int32), batch + (n,))
        b = np.broadcast_to(b, batch + B.shape[-2:])
        for k in np.ndindex(*batch):
            X[k] = trs(ld[k], p[k], b[k], lower=1)[0]
    return _result(X, LD, "linalg_ldl_solve", (LD, B))
