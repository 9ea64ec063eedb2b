"""PyTorch's top-level spellings of linear algebra: `rg.det`, `rg.svd`, `rg.qr`, `rg.lu`, ...

Older PyTorch code calls these instead of `torch.linalg`'s (some are aliases there, some
keep older conventions: `svd` returns V rather than Vh, `qr` takes `some`, `lu` returns
LAPACK's packed factors, `triangular_solve` takes b first and returns a copy of A). Each
is written with `rg.linalg` and other differentiable functions, so gradients, forward mode,
vmap and `rg.jit` come from those. Only the names `torch` 2.13 still has are here: its
removed ones (`symeig`, `eig`, `lstsq`, `solve`, `matrix_rank`) raise there, and have
`rg.linalg` counterparts.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from . import linalg as _la
from . import ops
from ._values import batched, per_element, values_of
from .api._args import _t
from .api.indexing import tril, triu
from .engine import apply
from .grad_mode import state as _state
from .primitive import ArgumentError
from .tensor import Tensor

__all__ = ["det", "logdet", "slogdet", "inverse", "pinverse", "matrix_power", "matrix_exp",
           "cholesky", "cholesky_inverse", "qr", "svd", "lu", "lu_unpack", "lu_solve",
           "triangular_solve", "nuclear_norm", "frobenius_norm", "chain_matmul", "ger",
           "cross", "geqrf", "orgqr", "ormqr", "adjoint", "addmv_", "svd_lowrank",
           "pca_lowrank"]

slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])
qr_result = namedtuple("qr", ["Q", "R"])
svd_result = namedtuple("svd", ["U", "S", "V"])
lu_with_info_result = namedtuple("_lu_with_info", ["LU", "pivots", "info"])
lu_unpack_result = namedtuple("lu_unpack", ["P", "L", "U"])
triangular_solve_result = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])
geqrf_result = namedtuple("geqrf", ["a", "tau"])


# ---------------------------------------------------------------- determinants, inverses

def det(input) -> Tensor:  # noqa: A002
    """The determinant of each square matrix (`rg.linalg.det`)."""
    return _la.det(input)


def logdet(input) -> Tensor:  # noqa: A002
    """log(det(A)) of each square matrix: nan where the determinant is negative, -inf where
    it is zero, as `torch.logdet`; the gradient is inv(A)^T."""
    from .api.elementwise import where
    A = _la._square(input, "logdet", complex_ok=True)
    if A.dtype.kind == "c":
        from .api.elementwise import log
        return log(_la.det(A))
    sign, logabs = _la.slogdet(A)
    return where(sign < 0, np.nan, logabs)


def slogdet(input):  # noqa: A002
    """(sign, logabsdet) of each square matrix (`rg.linalg.slogdet`)."""
    return slogdet_result(*_la.slogdet(input))


def inverse(input) -> Tensor:  # noqa: A002
    """The inverse of each square matrix (`rg.linalg.inv`)."""
    return _la.inv(input)


def pinverse(input, rcond: float = 1e-15) -> Tensor:  # noqa: A002
    """The pseudo-inverse; singular values below rcond * the largest count as zero
    (`rg.linalg.pinv` with rtol=rcond)."""
    return _la.pinv(input, rtol=rcond)


def matrix_power(input, n: int) -> Tensor:  # noqa: A002
    """A^n of each square matrix (`rg.linalg.matrix_power`)."""
    return _la.matrix_power(input, n)


def matrix_exp(input) -> Tensor:  # noqa: A002
    """exp(A) of each square matrix (`rg.linalg.matrix_exp`)."""
    return _la.matrix_exp(input)


# ---------------------------------------------------------------- Cholesky

def cholesky(input, upper: bool = False) -> Tensor:  # noqa: A002
    """The lower (or, with `upper`, upper) Cholesky factor, `upper` positional as in
    `torch.cholesky`."""
    return _la.cholesky(input, upper=upper)


def cholesky_inverse(input, upper: bool = False) -> Tensor:  # noqa: A002
    """inv(L L^H) (inv(U^H U) with `upper`) from a Cholesky factor, real or complex; only its
    triangle is read, as LAPACK's potri does."""
    L = _la._square(input, "cholesky_inverse", complex_ok=True)
    n = L.shape[-1]
    eye = Tensor(np.broadcast_to(np.eye(n, dtype=L.dtype), L.shape).copy())
    return _la.cholesky_solve(eye, triu(L) if upper else tril(L), upper=upper)


# ---------------------------------------------------------------- factorisations

def qr(input, some: bool = True):  # noqa: A002
    """(Q, R); `some=False` gives the complete Q (`rg.linalg.qr` with mode 'reduced' or
    'complete')."""
    return qr_result(*_la.qr(input, "reduced" if some else "complete"))


def svd(input, some: bool = True, compute_uv: bool = True):  # noqa: A002
    """(U, S, V) with A = U diag(S) V^H: V, not Vh, as in `torch.svd`. `some=False` completes
    U and V to square matrices; with `compute_uv=False` U and V are zero matrices (m x m,
    n x n) and only S is computed."""
    A = _la._matrix(input, "svd", complex_ok=True)
    m, n = A.shape[-2:]
    if not compute_uv:
        return svd_result(Tensor(np.zeros(A.shape[:-2] + (m, m), A.dtype)), _la.svdvals(A),
                          Tensor(np.zeros(A.shape[:-2] + (n, n), A.dtype)))
    U, S, Vh = _la.svd(A, full_matrices=not some)
    return svd_result(U, S, _la._mH(Vh))


def lu(A, pivot: bool = True, get_infos: bool = False):
    """(LU, pivots), or (LU, pivots, info) with `get_infos`: `rg.linalg.lu_factor_ex` (a
    singular matrix factors without an error, as in `torch.lu`)."""
    LU, pivots, info = _la.lu_factor_ex(A, pivot=pivot)
    return lu_with_info_result(LU, pivots, info) if get_infos else (LU, pivots)


def lu_unpack(LU_data, LU_pivots, unpack_data: bool = True,  # noqa: N803 - PyTorch's names
              unpack_pivots: bool = True):
    """(P, L, U) from `lu_factor`'s packed result: A = P L U. What is not unpacked comes back
    empty. Differentiable in LU_data."""
    LU = _la._matrix(LU_data, "lu_unpack", complex_ok=True)
    m, n = LU.shape[-2:]
    k = min(m, n)
    empty = Tensor(np.zeros((0,), LU.dtype))
    P = L = U = empty
    if unpack_pivots:
        P = _la._perm_matrix(_la._pivot_rows(LU_pivots, m, "lu_unpack"), LU.dtype)
    if unpack_data:
        L = tril(_la._slice(LU, cols=slice(0, k)), -1) + Tensor(np.eye(m, k, dtype=LU.dtype))
        U = triu(_la._slice(LU, slice(0, k)))
    return lu_unpack_result(P, L, U)


def lu_solve(input, LU_data, LU_pivots) -> Tensor:  # noqa: N803 - PyTorch's names
    """X with A X = b from A's `lu_factor`, b first as in `torch.lu_solve`
    (`rg.linalg.lu_solve(LU, pivots, b)`)."""
    return _la.lu_solve(LU_data, LU_pivots, input)


def triangular_solve(input, A, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False):
    """(solution, cloned_coefficient): X with op(A) X = b for triangular A (upper by
    default; A^T with `transpose`), and A itself (broadcast to the batch), as
    `torch.triangular_solve`."""
    A = _la._square(A, "triangular_solve", complex_ok=True)
    input = _la._matrix(input, "triangular_solve", complex_ok=True)
    A, input = _la._batch_pair(A, input, "triangular_solve")
    if transpose:
        X = _la.solve_triangular(_la._mT(A), input, upper=not upper, unitriangular=unitriangular)
    else:
        X = _la.solve_triangular(A, input, upper=upper, unitriangular=unitriangular)
    return triangular_solve_result(X, A.clone())


# ---------------------------------------------------------------- norms

def nuclear_norm(input, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A002
    """The sum of the singular values of the matrices in dims `dim` (the last two by
    default); `nuclear_norm(A, keepdim=True)` as PyTorch also takes it."""
    if isinstance(dim, bool):  # nuclear_norm(A, True): keepdim, PyTorch's other overload
        dim, keepdim = None, dim
    return _la.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)


def frobenius_norm(input, dim, keepdim: bool = False) -> Tensor:  # noqa: A002
    """sqrt(sum |x|^2) over one or two dims `dim` (all of them for `dim=()`)."""
    x = _la._float(input, "frobenius_norm", complex_ok=True, half_ok=True)
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"frobenius_norm(): expected at most 2 dims, got dim={dim}")
    return _la.vector_norm(x, 2, dims or None, keepdim)


# ---------------------------------------------------------------- products

def chain_matmul(*matrices) -> Tensor:
    """The product of 2-D matrices in the cheapest order (`rg.linalg.multi_dot`, which
    `torch.chain_matmul` is deprecated for)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): expected one or more matrices")
    ts = [_t(m) for m in matrices]
    for k, t in enumerate(ts):
        if t.ndim != 2:
            raise RuntimeError(f"chain_matmul(): matrix {k} must be 2-D, got shape {t.shape}")
    from .api.linalg import _same_dtype
    _same_dtype("chain_matmul", ts)
    return ts[0] * 1 if len(ts) == 1 else _la.multi_dot(ts)


def ger(input, vec2) -> Tensor:  # noqa: A002
    """The outer product of two vectors (`rg.outer`; `torch.ger` is its old name)."""
    return _la.outer(input, vec2)


def cross(input, other, dim: int | None = None) -> Tensor:  # noqa: A002
    """Cross product of 3-vectors along `dim`; without `dim`, along the first dimension of
    `input` of size 3, as `torch.cross` (which warns that its default will become -1,
    `rg.linalg.cross`'s)."""
    a = _t(input)
    if dim is None:
        sizes = [d for d, s in enumerate(a.shape) if s == 3]
        if not sizes:
            raise RuntimeError(f"cross(): no dimension of size 3 in input of shape {a.shape}")
        dim = sizes[0]
    return _la.cross(a, other, dim=dim)


# ---------------------------------------------------------------- Householder

def geqrf(input):  # noqa: A002
    """(a, tau): LAPACK's geqrf QR factorisation, R on and above the diagonal of `a`, the
    Householder vectors below it and their scales in `tau` (for `orgqr`, `ormqr`). Not
    differentiable (as in PyTorch): refused for an input that requires grad."""
    A = _la._matrix(input, "geqrf", complex_ok=True)
    if A.requires_grad and _state.enabled:
        raise NotImplementedError("geqrf(): the derivative of geqrf is not implemented (as in "
                                  "PyTorch); pass input.detach(), or use rg.linalg.qr")
    if batched(A):  # inside vmap: each batch element's, as torch.func.vmap's fallback
        r = per_element(geqrf, A)
        if r is not None:
            return r
    a = values_of(A, "geqrf()", "use rg.linalg.qr")
    m, n = a.shape[-2:]
    h, tau = np.linalg.qr(np.asarray(a), mode="raw")
    h = np.ascontiguousarray(np.swapaxes(h, -1, -2)).astype(a.dtype, copy=False)
    return geqrf_result(Tensor(h), Tensor(tau.astype(a.dtype, copy=False)[..., :min(m, n)]))


def orgqr(input, tau) -> Tensor:  # noqa: A002
    """The first n columns of the Q that `geqrf`'s (input, tau) stand for
    (`rg.linalg.householder_product`)."""
    return _la.householder_product(input, tau)


def ormqr(input, tau, other, left: bool = True, transpose: bool = False) -> Tensor:  # noqa: A002
    """Q @ other (other @ Q with left=False; Q^H with `transpose`) for the m x m Q of
    `geqrf`'s (input, tau), without forming Q; differentiable in all three."""
    A = _la._matrix(input, "ormqr", complex_ok=True)
    tau = _la._float(tau, "ormqr", complex_ok=True)
    C = _la._matrix(other, "ormqr", complex_ok=True)
    m = A.shape[-2]
    if C.shape[-2 if left else -1] != m:
        raise RuntimeError(f"ormqr(): other of shape {C.shape} does not fit Q ({m} x {m}) "
                           f"on the {'left' if left else 'right'}")
    k = min(C.shape[-2 if left else -1], A.shape[-1])
    if tau.ndim < 1 or tau.shape[-1] != k:
        raise RuntimeError(f"ormqr(): tau must hold min(other.shape[{-2 if left else -1}], "
                           f"input.shape[-1]) = {k} reflectors (as PyTorch asks), got tau of "
                           f"shape {tau.shape} for input {A.shape} and other {C.shape}")
    if len({A.dtype, tau.dtype, C.dtype}) > 1:
        raise RuntimeError(f"ormqr(): input, tau and other must have one dtype, got {A.dtype}, "
                           f"{tau.dtype} and {C.dtype}")
    return _la._apply_reflectors(A, tau, C, left=left, transpose=transpose)



# ---------------------------------------------------------------- adjoint, in-place addmv

def adjoint(input) -> Tensor:  # noqa: A002
    """The conjugate transpose of each matrix (the last two dims swapped, conjugated), as
    `torch.adjoint` and `Tensor.mH`; a 0-d tensor is its own conjugate."""
    from .api.complex import conj
    x = _t(input)
    if x.ndim == 1:
        raise RuntimeError(f"adjoint() is only supported on matrices or batches of matrices, "
                           f"got shape {x.shape}")
    return conj(x if x.ndim == 0 else _la._mT(x))


def addmv_(input, mat, vec, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """In-place `addmv`: beta * input + alpha * (mat @ vec) written into input, which is
    returned (`torch.addmv_`)."""
    return input.addmv_(mat, vec, beta=beta, alpha=alpha)


# ---------------------------------------------------------------- randomized low-rank SVD

def _random_basis(A: Tensor, q: int, niter: int, M) -> Tensor:
    """An orthonormal basis of (nearly) A's range: Halko et al.'s randomized range finder
    with `niter` subspace iterations, as PyTorch's `get_approximate_basis`."""
    from .creation import randn

    def product(X, Y, Mx):
        P = apply(ops.matmul, X, Y)
        return P if Mx is None else P - apply(ops.matmul, Mx, Y)
    R = randn(A.shape[-1], q, dtype=A.dtype)
    Q = _la.qr(product(A, R, M)).Q
    for _ in range(niter):
        Q = _la.qr(product(adjoint(A), Q, None if M is None else adjoint(M))).Q
        Q = _la.qr(product(A, Q, M)).Q
    return Q


def svd_lowrank(A, q: int | None = 6, niter: int = 2, M=None):
    """(U, S, V) of a rank-q approximation of A - M by a randomized SVD (Halko, Martinsson
    and Tropp 2009, Algorithm 5), as `torch.svd_lowrank`: exact when A - M has rank <= q;
    otherwise it depends on the random draws (`rg.manual_seed`; rg.jit and vmap refuse
    them). Differentiable, as a composition of qr, svd and products."""
    A = _la._matrix(A, "svd_lowrank", complex_ok=True)
    q = 6 if q is None else int(q)
    m, n = A.shape[-2:]
    if M is not None:
        M = _la._expand(_t(M), A.shape)
    if m < n:
        A, M = adjoint(A), None if M is None else adjoint(M)
    Q = _random_basis(A, q, 2 if niter is None else int(niter), M)
    B = apply(ops.matmul, adjoint(Q), A)
    if M is not None:
        B = B - apply(ops.matmul, adjoint(Q), M)
    U, S, Vh = _la.svd(B, full_matrices=False)
    U, V = apply(ops.matmul, Q, U), adjoint(Vh)
    return (V, S, U) if m < n else (U, S, V)


def pca_lowrank(A, q: int | None = None, center: bool = True, niter: int = 2):
    """(U, S, V) of a randomized low-rank SVD of A with its columns centred (the principal
    directions in V), as `torch.pca_lowrank`; q defaults to min(6, m, n)."""
    A = _la._matrix(A, "pca_lowrank", complex_ok=True)
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    if not 0 <= q <= min(m, n):
        raise ArgumentError(f"pca_lowrank(): q={q} must be between 0 and min(m, n) = {min(m, n)}")
    if niter < 0:
        raise ArgumentError(f"pca_lowrank(): niter={niter} must be non-negative")
    if not center:
        return svd_lowrank(A, q, niter=niter)
    from .api.reductions import mean
    return svd_lowrank(A - mean(A, -2, True), q, niter=niter)
