"""LAPACK and BLAS calls on NumPy arrays, laid out so that nothing is copied or transposed.

SciPy's wrappers want column-major (Fortran) arrays; handing them NumPy's row-major
arrays makes each call transpose its inputs first, which at n = 1024 costs as much as
the factorisation. A row-major matrix is the column-major storage of its transpose, so
each kernel here asks LAPACK for the transposed problem instead (a solve from the
left becomes one from the right, a lower factor an upper one) and reads the answer
back as a row-major view. SciPy is optional: `available()` says whether these run,
and the callers keep their NumPy way otherwise. Arrays are 2-D; callers loop over
batches.
"""

from __future__ import annotations

import functools

import numpy as np

_MODULES = []


def _scipy():
    if not _MODULES:
        try:
            from scipy.linalg import blas, lapack
        except ImportError:  # SciPy is optional
            _MODULES.append(None)
        else:
            _MODULES.append((blas, lapack))
    return _MODULES[0]


@functools.lru_cache(maxsize=64)
def _routine(kind: str, name: str, char: str):
    """SciPy's wrapper of BLAS (kind "blas") or LAPACK routine `name` for dtype `char`;
    looking one up costs more than a small call to it."""
    blas, lapack = _scipy()
    find = blas.get_blas_funcs if kind == "blas" else lapack.get_lapack_funcs
    return find(name, dtype=np.dtype(char))


def _char(*arrays) -> str:
    return np.result_type(*arrays).char


@functools.lru_cache(maxsize=8)
def _lower_mask(n: int):
    mask = np.tri(n, dtype=bool)
    mask.flags.writeable = False
    return mask


def available(*arrays) -> bool:
    """Whether the kernels can take these arrays: SciPy present, host arrays, BLAS dtypes."""
    return (_scipy() is not None
            and all(a.__class__ is np.ndarray and a.dtype.char in "fdFD" for a in arrays))


def _column_major(A, lower: bool):
    """(F, lower, trans): a column-major array F with op(F) = A, and whether F is lower."""
    if A.flags.c_contiguous:
        return A.T, not lower, 1
    if not A.flags.f_contiguous:
        A = np.ascontiguousarray(A)
        return A.T, not lower, 1
    return A, lower, 0


def cholesky_lower(S):
    """(L, info): S = L L^T for symmetric S (overwritten); info > 0 is potrf's failing minor."""
    potrf = _routine("lapack", "potrf", S.dtype.char)
    S = np.ascontiguousarray(S)
    U, info = potrf(S.T, lower=0, clean=1, overwrite_a=1)  # S^T = S: U^T U = S, U^T = L
    return U.T, info


def solve_triangular(A, B, *, upper: bool, unit: bool = False):
    """op(A)^-1 B for triangular A (n, n) and B (n, k), as the transposed solve from the right."""
    trsm = _routine("blas", "trsm", _char(A, B))
    F, f_lower, trans = _column_major(A, not upper)
    # X^T = B^T A^-T: solve Y A^T = B^T, where A^T is op(F) transposed
    Y = trsm(1.0, F, B.T, side=1, lower=f_lower, trans_a=1 - trans, diag=int(unit))
    return Y.T


def triangular_times(L, G, alpha: float = 1.0):
    """alpha L^T G for lower-triangular L (n, n) and G (n, n), from the right: (G^T L)^T."""
    trmm = _routine("blas", "trmm", _char(L, G))
    F, f_lower, trans = _column_major(L, True)
    return trmm(alpha, F, G.T, side=1, lower=f_lower, trans_a=trans).T


def fill_upper(X, panel: int = 128):
    """Copy X's lower triangle onto its upper one, in place, a panel at a time (a whole
    transposed read is several times slower: it walks memory across the cache)."""
    n = X.shape[-1]
    if n <= panel:
        return np.where(_lower_mask(n), X, X.T)
    for i in range(0, n, panel):
        X[i:i + panel, i + panel:] = X[i + panel:, i:i + panel].T
        blk = X[i:i + panel, i:i + panel]
        np.copyto(blk, blk.T.copy(), where=~_lower_mask(blk.shape[0]))
    return X


def symmetric_part(A, panel: int = 128):
    """(A + A^T) / 2 of a square A, a panel of rows at a time (see `fill_upper`)."""
    S = np.empty(A.shape, A.dtype)
    for i in range(0, A.shape[-1], panel):
        np.add(A[i:i + panel], A[:, i:i + panel].T, out=S[i:i + panel])
    S *= 0.5
    return S


_SYGST_FROM = 128
"""From this order up, sygst beats two triangular solves (measured: 0.7x their time at
n = 64, 1.0x at 128, 0.8x at 256); below it LAPACK runs sygst unblocked."""


def cholesky_backward(L, G):
    """The gradient in A of L = cholesky(A) given gL = G: L^-T S L^-1 (Murray, 2016) with S
    the symmetric matrix whose lower triangle is Phi(L^T G) / 2, halved diagonal included.

    trmm gives L^T G; LAPACK's sygst then does both solves in n^3 flops (two triangular
    solves take 2 n^3), though it computes K^-1 S K^-T for a lower K: with J the reversal
    and K = J L^T J, L^-T S L^-1 = J K^-1 (J S J) K^-T J. Every reversal is a view or a
    row-major copy read forwards."""
    P = triangular_times(L, G, 0.5)  # row-major; only its lower triangle is used
    if L.shape[-1] < _SYGST_FROM:  # LAPACK's unblocked sygst: two solves cost less
        Z = solve_triangular(L.T, fill_upper(P), upper=True)
        return solve_triangular(L.T, Z.T, upper=True).T
    sygst = _routine("lapack", "sygst", _char(L, P))
    K = np.ascontiguousarray(L[::-1, ::-1]).T  # column-major J L^T J
    A = np.ascontiguousarray(P[::-1, ::-1]).T  # column-major; lower triangle that of J S J
    R, info = sygst(A, K, itype=1, lower=1, overwrite_a=1)
    if info < 0:  # an argument LAPACK rejected: a bug here, not the user's input
        raise RuntimeError(f"sygst rejected argument {-info}")
    return fill_upper(np.ascontiguousarray(R.T[::-1, ::-1]))  # J R J = J R^T J; lower valid
