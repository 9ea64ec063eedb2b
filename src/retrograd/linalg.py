"""`rg.linalg`: PyTorch's `torch.linalg` (names, arguments, results and errors), batched over
leading dimensions, every function differentiable in reverse and forward mode and to
higher order (the rules live in `ops/linalg_decomp.py`).

Every function takes real floating or complex input (complex gradients in PyTorch's
convention): `qr` returns LAPACK's geqrf factors (R's diagonal real), complex `slogdet` a
complex sign and a real log|det|, the LU family LAPACK's int32 pivots. `cholesky` and
`eigh` use the symmetric (complex: Hermitian) part of their input, which is the input
itself for the matrices they are defined for. Complex eigenvectors and singular vectors
are each free up to a phase: the largest-magnitude entry of each eigenvector (of each
column of U) is made real and positive, and the gradients are exact for that choice, as
`eig`'s: the same as PyTorch's for a loss free of the phases, where PyTorch refuses a loss
that depends on them (see `ops/linalg_decomp._gauge` for why no check refuses it here).
At repeated eigenvalues or singular values the gradients of eigenvectors and singular
vectors are not defined: as in PyTorch they come out inf or nan.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from . import ops
from ._values import batched, by_ops, every_value, jit_error, per_element, tracing, values_of
from .api import linalg as _products
from .api import norms as _norms
from .api._args import _t
from .api._opmath import float16_in_float32
from .api.linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve  # noqa: F401 (exported)
from .api.output_numbers import number_outputs
from .engine import apply, apply1
from .ops.linalg_decomp import LinAlgError
from .primitive import ArgumentError
from .tensor import Tensor

__all__ = ["det", "slogdet", "inv", "solve", "solve_triangular", "cholesky", "cholesky_solve",
           "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "lstsq", "matrix_norm",
           "vector_norm", "norm", "matrix_power", "matrix_exp", "cross", "multi_dot", "trace",
           "matrix_rank", "LinAlgError", "outer", "inner", "dot", "tensordot", "kron",
           "lu_factor", "lu_factor_ex", "lu", "lu_solve", "inv_ex", "cholesky_ex", "solve_ex",
           "cond", "diagonal", "matmul", "vecdot", "vander", "tensorinv", "tensorsolve",
           "householder_product", "eig", "eigvals", "ldl_factor", "ldl_factor_ex", "ldl_solve"]


class LinAlgShapeError(ValueError, RuntimeError):
    """Shapes that do not fit (a RuntimeError in PyTorch, and a ValueError)."""


class LinAlgDtypeError(TypeError, NotImplementedError):
    """A dtype the function does not take (a RuntimeError in PyTorch, and a TypeError)."""


class LinAlgValueError(ValueError, RuntimeError):
    """An argument's value out of its range (a RuntimeError in PyTorch, and a ValueError)."""


slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])
qr_result = namedtuple("qr", ["Q", "R"])
eigh_result = namedtuple("eigh", ["eigenvalues", "eigenvectors"])
svd_result = namedtuple("svd", ["U", "S", "Vh"])
lstsq_result = namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])


def _float(A, name: str, complex_ok: bool = False, half_ok: bool = False) -> Tensor:
    A = _t(A)
    kind = A.dtype.kind
    if A.dtype.itemsize == 2 and kind == "f" and not half_ok:  # LAPACK has no float16
        raise LinAlgDtypeError(f"linalg.{name}: Low precision dtypes not supported. Got "
                               f"{A.dtype}")
    if kind == "c" and not complex_ok:
        raise LinAlgDtypeError(f"linalg.{name}: complex input is not supported (only real floating "
                        f"tensors), got {A.dtype}")
    if kind not in "fc":
        raise LinAlgDtypeError(f"linalg.{name}: expected a floating point tensor as input, got "
                        f"{A.dtype}")
    return A


def _matrix(A, name: str, complex_ok: bool = False, half_ok: bool = False) -> Tensor:
    A = _float(A, name, complex_ok, half_ok)
    if A.ndim < 2:
        raise LinAlgShapeError(f"linalg.{name}: the input must have at least 2 dimensions, got "
                               f"shape {A.shape}")
    return A


def _square(A, name: str, complex_ok: bool = False, half_ok: bool = False) -> Tensor:
    A = _matrix(A, name, complex_ok, half_ok)
    if A.shape[-1] != A.shape[-2]:
        raise LinAlgShapeError(f"linalg.{name}: A must be batches of square matrices, but they "
                               f"are {A.shape[-2]} by {A.shape[-1]} matrices")
    return A


def _mT(x: Tensor) -> Tensor:
    axes = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return apply(ops.permute, x, axes=axes)


def _mH(x: Tensor) -> Tensor:
    """The conjugate transpose (the transpose of real data)."""
    return apply(ops.conj, _mT(x)) if x.dtype.kind == "c" else _mT(x)


def _reshape(x: Tensor, shape: tuple) -> Tensor:
    return x if x.shape == tuple(shape) else apply(ops.reshape, x, shape=tuple(shape))


def _expand(x: Tensor, shape: tuple) -> Tensor:
    return x if x.shape == tuple(shape) else apply(ops.expand, x, shape=tuple(shape))


def _batch_pair(A: Tensor, B: Tensor, name: str):
    """A and B (matrices) expanded to their common batch shape."""
    try:
        batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    except ValueError:
        raise LinAlgShapeError(f"linalg.{name}: the batch dimensions of A {A.shape} and B "
                               f"{B.shape} do not broadcast") from None
    return _expand(A, batch + A.shape[-2:]), _expand(B, batch + B.shape[-2:])


def _promote(A: Tensor, B: Tensor):
    dt = np.result_type(A.dtype, B.dtype)
    return (A if A.dtype == dt else A.to(dt)), (B if B.dtype == dt else B.to(dt))


def _slice(x: Tensor, rows=None, cols=None) -> Tensor:
    return apply(ops.getitem, x, idx=(Ellipsis, rows or slice(None), cols or slice(None)))


# ---------------------------------------------------------------- determinants, inverse

def det(A) -> Tensor:
    """Determinant of each square matrix."""
    return apply1(ops.det, _square(A, "det", complex_ok=True))


def slogdet(A):
    """(sign, log|det|); the gradient of logabsdet is inv(A)^T. Complex A: the sign is
    det / |det| (complex, differentiable), log|det| real, as in PyTorch."""
    A = _square(A, "slogdet", complex_ok=True)
    return number_outputs(slogdet_result(apply1(ops.slogdet_sign, A),
                                         apply1(ops.logabsdet, A)))


def inv(A) -> Tensor:
    """Inverse of each square matrix; a singular one raises `LinAlgError` naming `linalg.inv`."""
    return apply1(ops.inv, _square(A, "inv", complex_ok=True))


def matrix_rank(input, tol=None, hermitian: bool = False, *, atol=None,  # noqa: A002
                rtol=None) -> Tensor:
    """The number of singular values above the tolerance (`atol`, `rtol`; PyTorch's
    defaults), an int64 tensor; not differentiable. Like `torch.linalg.matrix_rank`; the
    older `tol` is an absolute tolerance (atol=tol, rtol=0), as there."""
    atol, rtol = _old_tolerance("matrix_rank", "tol", tol, atol, rtol, absolute=True)
    input = _matrix(input, "matrix_rank", complex_ok=True)
    if isinstance(atol, Tensor) or isinstance(rtol, Tensor):
        return _matrix_rank_tensor_tol(input, hermitian, atol, rtol)
    if rtol is None:
        rtol = 0.0 if atol else max(input.shape[-2:]) * np.finfo(input.dtype).eps
    if hermitian:  # |eigenvalues| of the matrix its lower triangle describes, as PyTorch
        S = eigvalsh(_square(input.detach(), "matrix_rank", complex_ok=True)).abs()
        if not S.shape[-1]:
            return apply(ops.sum, (S > 0.0).to(np.int64), axis=-1, keepdims=False)
        largest = apply(ops.max, S, axis=-1, keepdims=True)
        tol = apply(ops.maximum, largest * float(rtol), float(atol or 0.0))
        return apply(ops.sum, (S > tol).to(np.int64), axis=-1, keepdims=False)
    S = svdvals(input.detach())  # ops all the way: rg.jit replays the count for new values
    if not S.shape[-1]:
        return apply(ops.sum, (S > 0.0).to(np.int64), axis=-1, keepdims=False)
    largest = apply(ops.getitem, S, idx=(Ellipsis, slice(0, 1)))
    tol = apply(ops.maximum, largest * float(rtol), float(atol or 0.0))
    return apply(ops.sum, (S > tol).to(np.int64), axis=-1, keepdims=False)


def _matrix_rank_tensor_tol(A: Tensor, hermitian: bool, atol, rtol) -> Tensor:
    """matrix_rank with tensor tolerances, one per matrix, broadcast against the batch
    shape (torch); rtol left out is 0 where atol > 0, else max(m, n) * eps."""
    real = np.finfo(A.dtype).dtype
    a = _t(0.0 if atol is None else atol).detach().to(real)
    if rtol is None:
        eps = max(A.shape[-2:]) * np.finfo(A.dtype).eps
        r = (a <= 0).to(real) * eps  # ops: stays on a's device
    else:
        r = _t(rtol).detach().to(real)
    if hermitian:
        S = eigvalsh(_square(A.detach(), "matrix_rank", complex_ok=True)).abs()
    else:
        S = svdvals(A.detach())
    a, r = _reshape(a, a.shape + (1,)), _reshape(r, r.shape + (1,))
    if not S.shape[-1]:
        largest = S.new_zeros(S.shape[:-1] + (1,))
    else:
        largest = apply(ops.max, S, axis=-1, keepdims=True)
    tol = apply(ops.maximum, largest * r, a)
    return apply(ops.sum, (S > tol).to(np.int64), axis=-1, keepdims=False)


# ---------------------------------------------------------------- solves

def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])


def solve(A, B, *, left: bool = True) -> Tensor:
    """X with A X = B (or X A = B with `left=False`); B a (batch of) vector(s) or matrices."""
    A = _square(A, "solve", complex_ok=True)
    B = _float(B, "solve", complex_ok=True, half_ok=True)
    A, B = _promote(A, B)
    vector = _is_vector_rhs(A, B)
    if vector:
        B = _reshape(B, B.shape + (1,))
    if not left:
        if vector:
            raise LinAlgShapeError("linalg.solve: left=False needs B to be a matrix")
        return _mT(solve(_mT(A), _mT(B)))
    n = A.shape[-1]
    if B.ndim < 2 or B.shape[-2] != n:
        k = B.shape[-1] if B.ndim >= 2 else 1
        raise LinAlgShapeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                               f"AX = B ({n}x{n} and {B.shape[-2] if B.ndim >= 2 else B.shape[0]}"
                               f"x{k})")
    A, B = _batch_pair(A, B, "solve")
    X = apply(ops.solve, A, B)
    return _reshape(X, X.shape[:-1]) if vector else X


def solve_triangular(input, B, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """X with A X = B (X A = B with `left=False`) for triangular A: only the `upper` (or
    lower) triangle of A is read, and with `unitriangular` its diagonal is taken as ones."""
    input = _square(input, "solve_triangular", complex_ok=True)
    B = _matrix(B, "solve_triangular", complex_ok=True, half_ok=True)
    input, B = _promote(input, B)
    if not left:
        return _mT(solve_triangular(_mT(input), _mT(B), upper=not upper,
                                    unitriangular=unitriangular))
    if B.shape[-2] != input.shape[-1]:
        raise LinAlgShapeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                               f"equation AX = B ({input.shape[-2]}x{input.shape[-1]} and "
                               f"{B.shape[-2]}x{B.shape[-1]})")
    input, B = _batch_pair(input, B, "solve_triangular")
    return apply(ops.solve_triangular, input, B, upper=bool(upper), unit=bool(unitriangular))


def cholesky(input, *, upper: bool = False) -> Tensor:
    """Lower (or upper, L^H) Cholesky factor of each symmetric (complex: Hermitian)
    positive-definite matrix; otherwise `LinAlgError` naming the order of the leading minor
    that is not positive-definite."""
    L = apply1(ops.cholesky, _square(input, "cholesky", complex_ok=True))
    return _mH(L) if upper else L


def cholesky_solve(input, input2, upper: bool = False) -> Tensor:
    """X with (L L^H) X = B, given the Cholesky factor L (`torch.cholesky_solve`)."""
    input2 = _square(input2, "cholesky_solve", complex_ok=True)
    input = _matrix(input, "cholesky_solve", complex_ok=True, half_ok=True)
    if input.dtype != input2.dtype:  # torch promotes neither (linalg.solve does)
        raise LinAlgDtypeError(f"cholesky_solve: Expected b and A to have the same dtype, but "
                               f"found b of type {input.dtype} and A of type {input2.dtype}")
    if upper:
        input2 = _mH(input2)
    Y = solve_triangular(input2, input, upper=False)
    return solve_triangular(_mH(input2), Y, upper=True)


# ---------------------------------------------------------------- factorisations

def qr(A, mode: str = "reduced"):
    """(Q, R) with A = QR: `mode` 'reduced' (Q m x k), 'complete' (Q m x m) or 'r' (R alone,
    Q empty)."""
    if mode not in ("reduced", "complete", "r"):
        raise ArgumentError(f"linalg.qr: qr received unrecognized mode '{mode}' but expected one "
                            "of 'reduced' (default), 'r', or 'complete'")
    A = _matrix(A, "qr", complex_ok=True)
    rows, cols = A.shape[-2:]
    if mode == "complete" and rows > cols:
        if batched(A):  # inside vmap: each batch element's (no gradient: refused below)
            r = per_element(lambda a: qr(a, mode="complete"), A)
            if r is not None:
                return r
        Q, R = np.linalg.qr(values_of(A.detach(), "linalg.qr(mode='complete') with more rows "
                                      "than columns", "use mode='reduced'"), mode="complete")
        Q, R = Tensor(Q), Tensor(R)
        if A.requires_grad:  # the values, and a backward that refuses, as torch's
            Q, R = _refusing_backward(A, (Q, R), "linalg.qr: the QR decomposition is not "
                                      "differentiable when mode='complete' and nrows > ncols")
        return number_outputs(qr_result(Q, R))
    P = apply1(ops.qr, A)
    Q = _slice(P, slice(0, rows))
    R = _mT(_slice(P, slice(rows, rows + cols)))
    if mode == "r":
        return number_outputs(qr_result(Tensor(np.zeros((0,), A.dtype)), R))
    return number_outputs(qr_result(Q, R))


def eigh(input, UPLO: str = "L"):
    """(eigenvalues ascending, real; eigenvectors as columns) of each symmetric (complex:
    Hermitian) matrix, read from its lower (UPLO='L') or upper triangle as PyTorch reads it;
    each eigenvector's largest-magnitude entry is made positive (complex: real and positive,
    the phase being free). The gradient reaching A is PyTorch's symmetric one."""
    if UPLO not in ("L", "U"):
        raise ArgumentError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    input = _square(input, "eigh", complex_ok=True)
    n = input.shape[-1]
    input = _from_triangle(input, UPLO)
    P = apply1(ops.eigh, input)
    w = _reshape(_slice(P, slice(0, 1)), input.shape[:-2] + (n,))
    if input.dtype.kind == "c":  # packed as complex: the eigenvalues are real
        w = apply1(ops.real, w)
    # row-major, as torch's
    return number_outputs(eigh_result(w.contiguous(), _slice(P, slice(1, n + 1))))


def _refusing_backward(A: Tensor, outs: tuple, message: str) -> tuple:
    """`outs` (computed from A's values) on A's graph, with a backward that raises
    `message`: PyTorch gives such results and refuses only when differentiated."""
    from .autograd._core import Function  # autograd imports this module

    class _Refuse(Function):
        @staticmethod
        def forward(ctx, a, *ts):
            return tuple(t.clone() for t in ts)

        @staticmethod
        def backward(ctx, *grads):
            raise RuntimeError(message)

    return _Refuse.apply(A, *outs)


def _from_triangle(A: Tensor, uplo: str) -> Tensor:
    """The symmetric (Hermitian) matrix that A's lower (uplo 'L') or upper triangle spells,
    as LAPACK and PyTorch read it (the other triangle is ignored; a complex diagonal's
    imaginary part too), carrying A's gradient as it is: PyTorch's eigh hands the
    symmetric gradient to A itself, not folded onto the triangle."""
    from .api.indexing import diag_embed, diagonal, tril, triu

    strict = tril(A, -1) if uplo == "L" else triu(A, 1)
    d = diagonal(A, 0, -2, -1)
    if A.dtype.kind == "c":
        d = apply1(ops.real, d).to(A.dtype)
    T = strict + _mH(strict) + diag_embed(d)
    return A + (T - A).detach()


eig_result = namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])


def eig(input):
    """(eigenvalues, eigenvectors) of a general square matrix, complex (complex64 for
    float32), in LAPACK's order as PyTorch's; A = V diag(w) V^-1. Each eigenvector has unit
    norm and, as its phase is free, its largest-magnitude entry real and positive: the same
    vectors as PyTorch's up to that phase, and differentiable for any loss (PyTorch refuses a
    loss that depends on the phase; for one that does not, the gradients agree)."""
    input = _square(input, "eig", complex_ok=True)
    n = input.shape[-1]
    P = apply1(ops.eig, input)
    w = _reshape(_slice(P, slice(0, 1)), input.shape[:-2] + (n,))
    # row-major, as torch's
    return number_outputs(eig_result(w.contiguous(), _slice(P, slice(1, n + 1))))


def eigvals(input) -> Tensor:
    """The eigenvalues of a general square matrix, complex, in LAPACK's order (`eig`'s)."""
    return eig(input).eigenvalues


def eigvalsh(input, UPLO: str = "L") -> Tensor:
    """Eigenvalues of each symmetric matrix, ascending."""
    return eigh(input, UPLO).eigenvalues


def _old_tolerance(name: str, arg: str, value, atol, rtol, absolute: bool):
    """(atol, rtol) from PyTorch's older single tolerance (`tol`/`rcond`), which excludes
    the newer keywords."""
    if value is None:
        return atol, rtol
    if atol is not None or rtol is not None:
        raise TypeError(f"linalg.{name}: `{arg}` cannot be combined with atol= or rtol=")
    return (value, 0.0) if absolute else (0.0, value)


def _no_driver(name: str, driver) -> None:
    if driver is not None:
        raise RuntimeError(f"linalg.{name}: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend; on the CPU it must be None")


def svd(A, full_matrices: bool = True, *, driver=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending; each column of U has its
    largest-magnitude entry positive (complex: real and positive, V's columns taking the
    same phases). With `full_matrices` U and Vh are completed to square orthogonal (unitary)
    matrices; as in PyTorch, the completing columns carry no gradient. `driver` is CUDA's
    (None here, as on PyTorch's CPU)."""
    _no_driver("svd", driver)
    A = _matrix(A, "svd", complex_ok=True)
    rows, cols = A.shape[-2:]
    k = min(rows, cols)
    P = apply1(ops.svd, A)
    U = _slice(P, slice(0, rows))
    S = _reshape(_slice(P, slice(rows, rows + 1)), A.shape[:-2] + (k,))
    if A.dtype.kind == "c":  # packed as complex: the singular values are real
        S = apply1(ops.real, S)
    S = S.contiguous()  # row-major, as torch's (a ported S.view(-1) works)
    Vh = _mH(_slice(P, slice(rows + 1, rows + 1 + cols)))
    if full_matrices and rows != cols:
        def completing(a):  # U's (or Vh's) columns beyond k, constants (no gradient)
            Uf, _, Vhf = np.linalg.svd(a, full_matrices=True)
            return np.ascontiguousarray(Uf[..., :, k:] if rows > k else Vhf[..., k:, :])

        extra = per_element(lambda a: Tensor(completing(a.data)), A.detach()) \
            if batched(A) else None  # inside vmap: each batch element's
        if extra is None:
            extra = Tensor(completing(values_of(
                A, "linalg.svd() of a non-square matrix with full_matrices=True (the "
                "completing columns)", "pass full_matrices=False")))
        if rows > k:
            U = apply(ops.cat, U, extra, axis=-1)
        else:
            Vh = apply(ops.cat, Vh, extra, axis=-2)
    return number_outputs(svd_result(U, S, Vh))


def svdvals(A, *, driver=None) -> Tensor:
    """Singular values, descending."""
    _no_driver("svdvals", driver)
    return svd(A, full_matrices=False).S


def pinv(input, rcond=None, hermitian: bool = False, *, atol=None,  # noqa: A002
         rtol=None) -> Tensor:
    """Moore-Penrose pseudo-inverse; singular values below max(atol, rtol * largest) count as
    zero (rtol defaults to max(m, n) * eps, as in PyTorch; the older `rcond` is rtol with
    atol=0). The gradient assumes the rank does not change nearby (Golub and Pereyra).
    Complex input too (V S^+ U^H)."""
    atol, rtol = _old_tolerance("pinv", "rcond", rcond, atol, rtol, absolute=False)
    input = _matrix(input, "pinv", complex_ok=True)
    atol, rtol = _tol_attr(atol), _tol_attr(rtol)
    if hermitian:  # from eigh (the lower triangle), as PyTorch; the gradient is pinv's own
        return apply(ops.pinv, _square(input, "pinv", complex_ok=True),
                     atol=atol, rtol=rtol, hermitian=True)
    return apply(ops.pinv, input, atol=atol, rtol=rtol)


def _tol_attr(v):
    """A tolerance as an op attribute: None, a float, or nested tuples (a tensor of
    tolerances, one per matrix, as torch takes them)."""
    if v is None:
        return None
    arr = np.asarray(v.detach().numpy() if isinstance(v, Tensor) else v, dtype=np.float64)
    if arr.ndim == 0:
        return float(arr)

    def tup(a):
        return tuple(tup(x) for x in a) if a.ndim > 1 else tuple(float(x) for x in a)
    return tup(arr)


def lstsq(input, b, rcond=None, *, driver=None):
    """Least-squares solution of A X = B, as PyTorch's named tuple (solution, residuals,
    rank, singular_values); as on PyTorch's CPU, the default driver 'gelsy' leaves residuals
    and singular values empty, 'gelsd'/'gelss' compute them (residuals when m > n and A has
    full rank); 'gels' (QR, full rank assumed) gives no rank nor singular values and the
    residuals whenever m > n. The solution is pinv(A) B, differentiable in A and B."""
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise ArgumentError(f"linalg.lstsq: parameter `driver` should be one of (gels, gelsy, "
                            f"gelsd, gelss), got {driver!r}")
    input = _matrix(input, "lstsq", complex_ok=True)
    b = _float(b, "lstsq", complex_ok=True, half_ok=True)
    if input.dtype != b.dtype:  # torch promotes neither
        raise LinAlgDtypeError(f"linalg.lstsq: Expected input and other to have the same dtype, "
                               f"but got input's dtype {input.dtype} and other's dtype {b.dtype}")
    vector = b.ndim == input.ndim - 1
    if vector:
        b = _reshape(b, b.shape + (1,))
    if b.shape[-2] != input.shape[-2]:
        raise LinAlgShapeError(f"linalg.lstsq: input.size(-2) should match other.size(-2), got "
                               f"A of shape {input.shape} and B of shape {b.shape}")
    A0 = input  # rank and singular values have A's own batch shape, as in PyTorch
    input, b = _batch_pair(input, b, "lstsq")
    rtol = None if rcond is None else float(rcond)
    X = pinv(input, rtol=rtol)
    X = apply(ops.matmul, X, b)
    rank = matrix_rank(A0, rtol=rtol)
    rows, cols = input.shape[-2:]
    empty = Tensor(np.zeros((0,), np.finfo(input.dtype).dtype))  # real, complex A too
    residuals, sv = empty, empty
    if driver == "gels":  # QR, full rank assumed: no rank; residuals whenever m > n (torch)
        rank = Tensor(np.zeros((0,), np.int64))
        if rows > cols:
            r = apply(ops.matmul, input, X) - b
            if r.dtype.kind == "c":
                r = apply1(ops.cabs, r)
            residuals = apply(ops.sum, r * r, axis=-2, keepdims=False)
    elif driver in ("gelsd", "gelss"):
        sv = svdvals(A0.detach())  # torch's singular values here carry no gradient
        if rows > cols and tracing():
            raise jit_error(f"linalg.lstsq(driver={driver!r}) (residuals only at full rank)",
                            "use the default driver and compute the residuals from the "
                            "solution")
        # inside vmap, every batch element's rank: residuals where all are full (as torch)
        if rows > cols and bool(np.all(every_value(rank) == cols)):
            r = apply(ops.matmul, input, X) - b
            if r.dtype.kind == "c":  # |r|^2, real as in PyTorch
                r = apply1(ops.cabs, r)
            residuals = apply(ops.sum, r * r, axis=-2, keepdims=False)
    if residuals is empty and X.requires_grad:  # torch's empty residuals are on the graph
        flat = _reshape(X, (int(np.prod(X.shape)),))[:0]
        residuals = apply1(ops.cabs, flat) if flat.dtype.kind == "c" else flat
    if vector:
        X = _reshape(X, X.shape[:-1])
    return lstsq_result(X, residuals, rank, sv)


# ---------------------------------------------------------------- norms

@float16_in_float32("input")
def vector_norm(input, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """(sum |x|^ord)^(1/ord) over `dim` (all by default); inf/-inf max/min |x|; 0 counts."""
    return _norms.vector_norm(input, ord, dim, keepdim, dtype=dtype)


def matrix_norm(input, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """'fro', 'nuc', 2 / -2 (largest / smallest singular value), 1 / -1 (max / min column
    sum of |A|), inf / -inf (max / min row sum) over the two dims `dim`."""
    input = _t(input)
    _norms.check_norm_dtype(input, dtype, "matrix_norm")
    if ord in ("nuc", 2, -2):  # these need an SVD: no float16, as torch
        _float(input, "matrix_norm", complex_ok=True)
    return _matrix_norm(input, ord, dim, keepdim, dtype=dtype)


@float16_in_float32("A")
def _matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    from .api import reductions as R
    from .api.elementwise import abs as _abs
    A = _float(A, "matrix_norm", complex_ok=True, half_ok=True)
    if dtype is not None:
        A = A.to(dtype)
    if A.ndim < 2:
        raise LinAlgShapeError(f"linalg.matrix_norm: the input tensor A must have at least 2 "
                               f"dimensions, got shape {A.shape}")
    d = tuple(int(a) % A.ndim for a in dim)
    if len(d) != 2 or d[0] == d[1]:
        raise ArgumentError(f"linalg.matrix_norm: dim must be a 2-tuple of different dims, got "
                            f"{dim}")
    if ord == "fro":
        return _norms.vector_norm(A, 2, d, keepdim)
    if ord not in ("nuc", 2, -2, 1, -1, math.inf, -math.inf):
        raise ArgumentError(f"linalg.matrix_norm: Order {ord} not supported.")
    rest = [i for i in range(A.ndim) if i not in d]
    M = apply(ops.permute, A, axes=tuple(rest) + d)
    if ord in ("nuc", 2, -2):
        S = svdvals(M)
        out = (R.sum(S, -1) if ord == "nuc" else _empty_max(S) if ord == 2 and S.shape[-1] == 0
               else R.amax(S, -1) if ord == 2 else R.amin(S, -1))  # ties share (torch)
    else:
        along = -2 if ord in (1, -1) else -1
        sums = R.sum(_abs(M), along)
        # the largest of no sums is 0 (as torch); the smallest of none raises
        out = (_empty_max(sums) if ord in (1, math.inf) and sums.shape[-1] == 0
               else R.amax(sums, -1) if ord in (1, math.inf) else R.amin(sums, -1))
    if keepdim:
        shape = list(A.shape)
        shape[d[0]] = shape[d[1]] = 1
        out = _reshape(out, tuple(shape))
    return out


def _empty_max(x: Tensor) -> Tensor:
    """The largest of no values along the last dim, as torch's matrix norms take it: 0, a
    constant (no gradient recorded)."""
    return Tensor(np.zeros(x.shape[:-1], x.dtype))


def norm(input, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """`vector_norm` for one dim (or a flattened tensor when ord and dim are None),
    `matrix_norm` for two dims or a string ord."""
    input = _float(input, "norm", complex_ok=True, half_ok=True)
    if dim is None and ord is None:
        return vector_norm(input, 2, None, keepdim, dtype=dtype)
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None:
        if input.ndim == 2:
            dim = (-2, -1)
        elif input.ndim == 1:
            dim = (-1,)
        else:
            raise LinAlgShapeError(f"linalg.norm: if dim=None, the input must be 1-D or 2-D when "
                                   f"ord is given, got shape {input.shape}")
    if len(dim) == 2 or isinstance(ord, str):
        return matrix_norm(input, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    return vector_norm(input, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


# ---------------------------------------------------------------- products and powers

def matrix_power(input, n: int) -> Tensor:
    """A^n by repeated squaring; n = 0 gives the identity, n < 0 powers of inv(A) (floating
    A only; integer matrices take n >= 0, as in PyTorch)."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {type(n).__name__}")
    n = int(n)
    input = _t(input)
    if input.dtype.kind not in "iu" or n < 0:  # integer matrices: non-negative powers, as torch
        input = _square(input, "matrix_power", complex_ok=True, half_ok=True)
    elif input.ndim < 2 or input.shape[-1] != input.shape[-2]:
        raise LinAlgShapeError(f"linalg.matrix_power: A must be batches of square matrices, "
                               f"got shape {input.shape}")
    if n == 0:  # the identity, still on A's graph with a zero gradient, as torch's
        eye = np.broadcast_to(np.eye(input.shape[-1], dtype=input.dtype), input.shape).copy()
        return apply(ops.where, np.ones(input.shape, dtype=bool), eye, input)
    if n < 0:
        input = inv(input)
        n = -n
    result = None
    base = input
    while n:
        if n & 1:
            result = base if result is None else apply(ops.matmul, result, base)
        n >>= 1
        if n:
            base = apply(ops.matmul, base, base)
    return result


@float16_in_float32("input")
def matrix_exp(input) -> Tensor:
    """exp(A) for each square matrix (scaling and squaring; SciPy's expm when installed);
    float16 runs in float32 and comes back as float16, as torch's."""
    return apply1(ops.matrix_exp, _square(input, "matrix_exp", complex_ok=True))


def cross(input, other, *, dim: int = -1) -> Tensor:  # noqa: A002
    """Cross product of 3-vectors along `dim` (broadcast); one dtype for both operands (as in
    PyTorch, integers too)."""
    from .api.indexing import roll
    a, b = _t(input), _t(other)
    _products._same_dtype("linalg.cross", (a, b))
    _products._no_bool("linalg.cross", (a, b))
    if a.ndim != b.ndim:  # torch broadcasts only between equal ranks here
        raise LinAlgShapeError(f"linalg.cross: inputs must have the same number of dimensions, "
                               f"got shapes {a.shape} and {b.shape}")
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise LinAlgShapeError(f"linalg.cross: shapes {a.shape} and {b.shape} do not "
                               "broadcast") from None
    if not -max(len(shape), 1) <= dim < max(len(shape), 1) or not shape:
        raise _CrossDimError(f"linalg.cross: dimension {dim} out of range for shapes {a.shape} "
                             f"and {b.shape}")
    if a.shape[dim] != 3 or b.shape[dim] != 3:  # both: torch does not broadcast along dim
        raise LinAlgShapeError(f"linalg.cross: inputs dimension {dim} must have length 3, got "
                               f"shapes {a.shape} and {b.shape}")
    a, b = _expand(a, shape), _expand(b, shape)
    return roll(a, -1, dim) * roll(b, -2, dim) - roll(a, -2, dim) * roll(b, -1, dim)


def multi_dot(tensors) -> Tensor:
    """The product of a chain of matrices (the first may be a row vector, the last a column
    vector), multiplied in the cheapest order."""
    ts = [_t(t) for t in tensors]
    for k, t in enumerate(ts):  # integers multiply too, as in PyTorch; one dtype for all
        if t.dtype.kind not in "iufc":
            raise LinAlgDtypeError(f"linalg.multi_dot: expected numeric tensors, got {t.dtype}")
        if t.dtype != ts[0].dtype:
            raise LinAlgDtypeError(f"linalg.multi_dot: all tensors must have the same dtype, "
                                   f"but tensor 0 is {ts[0].dtype} and tensor {k} is {t.dtype}")
    if len(ts) < 2:
        raise ArgumentError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    first, last = ts[0].ndim == 1, ts[-1].ndim == 1
    if first:
        ts[0] = _reshape(ts[0], (1,) + ts[0].shape)
    if last:
        ts[-1] = _reshape(ts[-1], ts[-1].shape + (1,))
    for k, t in enumerate(ts):
        if t.ndim != 2:
            raise LinAlgShapeError(f"multi_dot(): tensor {k} must be 2-D (1-D allowed first and "
                                   f"last), got shape {t.shape}")
    for k in range(len(ts) - 1):
        if ts[k].shape[1] != ts[k + 1].shape[0]:
            raise LinAlgShapeError(f"multi_dot(): tensors {k} and {k + 1} of shapes "
                                   f"{ts[k].shape} and {ts[k + 1].shape} cannot be multiplied")
    dims = [ts[0].shape[0]] + [t.shape[1] for t in ts]
    out = _chain_product(ts, _chain_order(dims), 0, len(ts) - 1)
    if first and last:
        return _reshape(out, ())
    if first:
        return _reshape(out, out.shape[1:])
    if last:
        return _reshape(out, out.shape[:1])
    return out


def _chain_product(ts: list, order, i: int, j: int) -> Tensor:
    """ts[i] @ ... @ ts[j] split as `order` says (a plain function: a closure calling itself
    would be a reference cycle keeping the intermediate tensors alive until a collection,
    which rg.jit would take for tensors stored outside)."""
    if i == j:
        return ts[i]
    k = order[i][j]
    return apply(ops.matmul, _chain_product(ts, order, i, k), _chain_product(ts, order, k + 1, j))


def _chain_order(dims):
    """The matrix-chain split points (dynamic programming over the chain)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def trace(input, offset: int = 0) -> Tensor:
    """Sum of the diagonal of a matrix (`torch.trace`: exactly 2-D, a batch is refused as
    there; NumPy's `offset=` taken)."""
    from .api.indexing import diagonal
    input = _t(input)
    if input.ndim != 2:
        raise LinAlgShapeError(f"trace: expected a matrix, but got tensor with dim {input.ndim} "
                               f"(shape {input.shape})")
    if input.dtype.kind in "biu":
        input = input.to(np.int64)
    d = diagonal(input, offset, -2, -1)
    return apply(ops.sum, d, axis=-1, keepdims=False)



# ---------------------------------------------------------------- rg.outer, inner, ...

def outer(input, vec2) -> Tensor:
    """a_i b_j of two vectors."""
    a, b = _t(input), _t(vec2)
    if a.ndim != 1 or b.ndim != 1:
        raise LinAlgShapeError(f"outer: expected two 1-D tensors, got shapes {a.shape} and "
                               f"{b.shape}")
    return _reshape(a, a.shape + (1,)) * b


def dot(input, other) -> Tensor:
    """Inner product of two 1-D tensors of the same length (PyTorch's `dot`)."""
    a, b = _t(input), _t(other)
    _products._same_dtype("dot", (a, b))
    if a.ndim != 1 or b.ndim != 1:
        raise LinAlgShapeError(f"dot: 1D tensors expected, but got {a.ndim}D and {b.ndim}D "
                               "tensors")
    if a.shape != b.shape:
        raise LinAlgShapeError(f"dot: inconsistent tensor size, expected tensor [{a.shape[0]}] "
                               f"and src [{b.shape[0]}] to have the same number of elements")
    return apply(ops.sum, a * b, axis=None, keepdims=False)


def inner(input, other) -> Tensor:
    """Sum over the last dims of both (a scalar operand multiplies)."""
    a, b = _t(input), _t(other)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise LinAlgShapeError(f"inner: the last dimensions of shapes {a.shape} and {b.shape} "
                               "differ")
    return tensordot(a, b, dims=([-1], [-1]))


def tensordot(a, b, dims=2, *, axes=None) -> Tensor:
    """Contract `dims` trailing dims of `a` with leading dims of `b`, or the listed pairs.
    `axes=` is NumPy's name for `dims` (HIPS autograd and JAX code passes it)."""
    if axes is not None:
        if dims != 2:
            raise TypeError("tensordot(): got both 'dims' and 'axes' (NumPy's name for dims)")
        dims = axes
    a, b = _t(a), _t(b)
    if isinstance(dims, (int, np.integer)):
        n = int(dims)
        if n < 0 or n > min(a.ndim, b.ndim):
            raise ArgumentError(f"tensordot: dims={n} is out of range for shapes {a.shape} and "
                                f"{b.shape}")
        da, db = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        da, db = ([dims[0]] if isinstance(dims[0], int) else list(dims[0]),
                  [dims[1]] if isinstance(dims[1], int) else list(dims[1]))
        da, db = [d % a.ndim for d in da], [d % b.ndim for d in db]
    if len(da) != len(db) or any(a.shape[i] != b.shape[j] and 1 not in (a.shape[i], b.shape[j])
                                 for i, j in zip(da, db)):
        raise LinAlgShapeError(f"tensordot: contracted dims {da} of {a.shape} and {db} of "
                               f"{b.shape} do not match")
    # as PyTorch: a contracted pair of sizes 1 and n sums the size-n side over that dim first
    sum_a = tuple(i for i, j in zip(da, db) if a.shape[i] != b.shape[j] and b.shape[j] == 1)
    sum_b = tuple(j for i, j in zip(da, db) if a.shape[i] != b.shape[j] and a.shape[i] == 1)
    if sum_a:
        a = apply(ops.sum, a, axis=sum_a, keepdims=True)
    if sum_b:
        b = apply(ops.sum, b, axis=sum_b, keepdims=True)
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(da, db):
        sb[j] = sa[i]
    out = [c for k, c in enumerate(sa) if k not in da] + [c for k, c in enumerate(sb)
                                                          if k not in db]
    return _products.einsum("".join(sa) + "," + "".join(sb) + "->" + "".join(out), a, b)


def kron(input, other) -> Tensor:
    """Kronecker product (the operand with fewer dims gets leading ones)."""
    a, b = _t(input), _t(other)
    nd = max(a.ndim, b.ndim)
    a = _reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = _reshape(b, (1,) * (nd - b.ndim) + b.shape)
    if nd == 0:
        return a * b
    ea = _reshape(a, tuple(x for s in a.shape for x in (s, 1)))
    eb = _reshape(b, tuple(x for s in b.shape for x in (1, s)))
    return _reshape(ea * eb, tuple(p * q for p, q in zip(a.shape, b.shape)))


# ---------------------------------------------------------------- LU

lu_factor_result = namedtuple("linalg_lu_factor", ["LU", "pivots"])
lu_factor_ex_result = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
lu_result = namedtuple("linalg_lu", ["P", "L", "U"])


def _pivot_only(name: str, pivot: bool) -> None:
    if not pivot:
        raise RuntimeError(f"linalg.{name}: LU without pivoting is not implemented (as on "
                           "PyTorch's CPU); pass pivot=True")


def _lu_packed(A, name: str, check: bool = False):
    """(LU, pivots, rows): the packed factors, LAPACK's 1-based int32 pivots, and the
    permutation (row i of P^T A is row rows[i] of A, as floats)."""
    A = _matrix(A, name, complex_ok=True)
    m, n = A.shape[-2:]
    k = min(m, n)
    out = apply(ops.lu, A, check=bool(check))
    const = out.detach()
    if const.dtype.kind == "c":  # the permutation and pivots are the real parts
        const = apply(ops.real, const)
    pivots = apply(ops.getitem, const, idx=(Ellipsis, slice(0, k), n + 1)).to(np.int32)
    return _slice(out, cols=slice(0, n)), pivots, apply(ops.getitem, const, idx=(Ellipsis,
                                                                                   slice(None), n))


def _lu_info(LU: Tensor) -> Tensor:
    """LAPACK's getrf info: the 1-based index of the first zero on U's diagonal, else 0."""
    from .api.elementwise import where
    from .api.indexing import diagonal
    from .api.math import any as _any
    from .api.reductions import argmax
    k = min(LU.shape[-2:])
    if k == 0:
        return Tensor(np.zeros(LU.shape[:-2], np.int32))
    zero = diagonal(_slice(LU.detach(), slice(0, k), slice(0, k)), 0, -2, -1) == 0.0
    first = argmax(zero.to(np.int32), -1) + 1
    return where(_any(zero, -1), first, 0).to(np.int32)


def _perm_matrix(rows: Tensor, dtype) -> Tensor:
    """P with P[r, i] = 1 where rows[i] == r (so P^T A takes row rows[i] of A to row i)."""
    m = rows.shape[-1]
    r = _reshape(rows, rows.shape[:-1] + (1, m))
    return (r == Tensor(np.arange(m, dtype=r.dtype).reshape(m, 1))).to(dtype)


def lu_factor(A, *, pivot: bool = True):
    """(LU, pivots) of A = P L U by partial pivoting: L (unit lower) and U packed in one
    matrix, LAPACK's 1-based int32 pivots; raises `LinAlgError` when U has a zero on its
    diagonal (use `lu_factor_ex` or `lu` to factor a singular matrix). Differentiable in A."""
    _pivot_only("lu_factor", pivot)
    LU, pivots, _ = _lu_packed(A, "lu_factor", check=True)
    return lu_factor_result(LU, pivots)


def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False):
    """(LU, pivots, info) as `lu_factor`, with LAPACK's info (the index of the first zero on
    U's diagonal, 0 if none) instead of an error, unless `check_errors`."""
    _pivot_only("lu_factor_ex", pivot)
    LU, pivots, _ = _lu_packed(A, "lu_factor_ex", check=check_errors)
    return lu_factor_ex_result(LU, pivots, _lu_info(LU))


def lu(A, *, pivot: bool = True):
    """(P, L, U) with A = P L U: P a permutation matrix, L (m x k) unit lower triangular,
    U (k x n) upper triangular, k = min(m, n); differentiable in A (PyTorch's rule)."""
    from .api.indexing import tril, triu
    _pivot_only("lu", pivot)
    A = _matrix(A, "lu", complex_ok=True)
    LU, _, rows = _lu_packed(A, "lu")
    m, n = A.shape[-2:]
    k = min(m, n)
    L = tril(_slice(LU, cols=slice(0, k)), -1) + Tensor(np.eye(m, k, dtype=A.dtype))
    return lu_result(_perm_matrix(rows, A.dtype), L, triu(_slice(LU, slice(0, k))))


def _pivot_rows(pivots, m: int, name: str) -> Tensor:
    """The permutation rows (int64) that LAPACK's 1-based pivots make, for m rows: in NumPy
    eagerly, by ops (one swap per pivot) under rg.jit or a vmap over the pivots."""
    from .api.elementwise import where
    from .api.indexing import take_along_dim
    from .ops.checks import check_within
    from .ops.linalg_decomp import perm_from_pivots
    piv = _t(pivots)
    if piv.dtype.kind not in "iu":
        raise LinAlgDtypeError(f"{name}: pivots must be an integer tensor (LAPACK's, from "
                               f"lu_factor), got {piv.dtype}")
    if piv.ndim < 1 or piv.shape[-1] > m:
        raise LinAlgShapeError(f"{name}: pivots of shape {piv.shape} do not fit a matrix of "
                               f"{m} rows")
    message = f"{name}: pivots must be between 1 and {m} (LAPACK's, from lu_factor)"
    if not by_ops(piv):
        p = piv.data
        if p.size and (p.min() < 1 or p.max() > m):
            raise LinAlgShapeError(message + f", got values from {p.min()} to {p.max()}")
        return Tensor(perm_from_pivots(p.astype(np.int64) - 1, m))
    one = apply(check_within, piv.detach(), lo=1, hi=m, open_lo=False, message=message)
    p = (piv * one).to(np.int64) - 1
    rows = Tensor(np.broadcast_to(np.arange(m), piv.shape[:-1] + (m,)).copy())
    at = Tensor(np.arange(m))
    for j in range(piv.shape[-1]):
        pj = apply(ops.getitem, p, idx=(Ellipsis, slice(j, j + 1)))
        a = apply(ops.getitem, rows, idx=(Ellipsis, slice(j, j + 1)))
        rows = where(at == j, take_along_dim(rows, pj, -1), where(at == pj, a, rows))
    return rows


def lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """X with A X = B from A's `lu_factor` (X A = B with `left=False`, A^H for `adjoint`);
    batches broadcast; differentiable in LU and B."""
    LU = _square(LU, "lu_solve", complex_ok=True)
    B = _matrix(B, "lu_solve", complex_ok=True, half_ok=True)
    if LU.dtype != B.dtype:
        raise LinAlgDtypeError(f"linalg.lu_solve: expected LU and B of the same dtype, got "
                               f"{LU.dtype} and {B.dtype}")
    n = LU.shape[-1]
    if B.shape[-2 if left else -1] != n:
        shapes = (f"{n}x{n} and {B.shape[-2]}x{B.shape[-1]}" if left else
                  f"{B.shape[-2]}x{B.shape[-1]} and {n}x{n}")
        raise LinAlgShapeError(f"linalg.lu_solve: Incompatible shapes of A and B for the "
                               f"equation {'AX = B' if left else 'XA = B'} ({shapes})")
    P = _perm_matrix(_pivot_rows(pivots, n, "linalg.lu_solve"), LU.dtype)
    if not left:  # X A = B is A^H X^H = B^H
        return _mH(lu_solve(LU, pivots, _mH(B), adjoint=not adjoint))
    if adjoint:  # A^H = U^H L^H P^T
        Y = solve_triangular(_mH(LU), B, upper=False)
        return apply(ops.matmul, P, solve_triangular(_mH(LU), Y, upper=True,
                                                     unitriangular=True))
    Y = solve_triangular(LU, apply(ops.matmul, _mT(P), B), upper=False, unitriangular=True)
    return solve_triangular(LU, Y, upper=True)


# ---------------------------------------------------------------- the _ex forms

inv_ex_result = namedtuple("linalg_inv_ex", ["inverse", "info"])
cholesky_ex_result = namedtuple("linalg_cholesky_ex", ["L", "info"])
solve_ex_result = namedtuple("linalg_solve_ex", ["result", "info"])


def _getrf_info(a: np.ndarray) -> np.ndarray:
    from .ops.linalg_decomp import _getrf
    LU, _ = _getrf(a)
    d = np.diagonal(LU, axis1=-2, axis2=-1) == 0
    return np.where(d.any(-1), d.argmax(-1) + 1, 0).astype(np.int32)


def _potrf_info(a: np.ndarray) -> np.ndarray:
    from .ops.linalg_decomp import np_cholesky
    at = np.swapaxes(a, -1, -2)
    S = (a + (np.conj(at) if a.dtype.kind == "c" else at)) * 0.5
    info = np.zeros(a.shape[:-2], np.int32)
    for i in np.ndindex(a.shape[:-2]):
        for k in range(1, a.shape[-1] + 1):
            try:
                np_cholesky(S[i][:k, :k])
            except np.linalg.LinAlgError:
                info[i] = k
                break
    return info


def _ex(fn, A: Tensor, check_errors: bool, info_of, name: str, core: int = 2):
    """(fn(A), info): where a batch element fails (singular, not positive-definite) its
    result is nan and its info LAPACK's, instead of an error (unless `check_errors`); the
    other elements are computed (and differentiated) as usual. `core`: the result's own
    dimensions after the batch."""
    from .api.elementwise import where
    try:
        return fn(A), Tensor(np.zeros(A.shape[:-2], np.int32))
    except LinAlgError:
        if check_errors:
            raise
    info = info_of(values_of(A, f"linalg.{name} of a failing matrix",
                             f"call linalg.{name.removesuffix('_ex')} (which raises)"))
    bad = np.asarray(info != 0)
    eye = Tensor(np.eye(A.shape[-1], dtype=A.dtype))
    out = fn(where(Tensor(bad.reshape(bad.shape + (1, 1))), eye, A))
    return where(Tensor(bad.reshape(bad.shape + (1,) * core)), math.nan, out), Tensor(info)


def inv_ex(A, *, check_errors: bool = False):
    """(inverse, info): `inv` that reports a singular matrix in `info` (LAPACK's getrf
    index, nan inverse) instead of raising, unless `check_errors`."""
    A = _square(A, "inv_ex", complex_ok=True)
    return inv_ex_result(*_ex(inv, A, check_errors, _getrf_info, "inv_ex"))


def cholesky_ex(input, *, upper: bool = False, check_errors: bool = False):
    """(L, info): `cholesky` that reports a matrix that is not positive-definite in `info`
    (the order of its first failing leading minor, nan factor) instead of raising."""
    input = _square(input, "cholesky_ex", complex_ok=True)
    return cholesky_ex_result(*_ex(lambda a: cholesky(a, upper=upper), input, check_errors,
                                   _potrf_info, "cholesky_ex"))


def solve_ex(A, B, *, left: bool = True, check_errors: bool = False):
    """(result, info): `solve` that reports a singular A in `info` (nan result) instead of
    raising, unless `check_errors`."""
    A = _square(A, "solve_ex", complex_ok=True)
    B = _float(B, "solve_ex", complex_ok=True, half_ok=True)
    core = 1 if left and _is_vector_rhs(A, B) else 2
    return solve_ex_result(*_ex(lambda a: solve(a, B, left=left), A, check_errors,
                                _getrf_info, "solve_ex", core))


# ---------------------------------------------------------------- more torch.linalg names

def cond(input, p=None) -> Tensor:
    """The condition number: largest / smallest singular value for p None or 2 (-2: the
    inverse), else matrix_norm(A, p) * matrix_norm(inv(A), p) for square A ('fro', 'nuc',
    inf, -inf, 1, -1), inf for a singular matrix there, as `torch.linalg.cond`."""
    from .api.elementwise import where
    if p in ("fro", "nuc"):
        input = _square(input, f"cond(ord={p})", complex_ok=True)
    elif p not in (None, 2, -2, math.inf, -math.inf, 1, -1):
        raise LinAlgValueError(f"linalg.cond: got an invalid norm type: {p!r}")
    input = _matrix(input, "cond", complex_ok=True)
    if input.numel() == 0:  # no matrices, or 0 x 0 / empty ones: 0, unrecorded (as torch)
        return Tensor(np.zeros(input.shape[:-2], np.finfo(input.dtype).dtype))
    if p in (None, 2, -2):
        S = svdvals(input)
        big = apply(ops.getitem, S, idx=(Ellipsis, 0))
        small = apply(ops.getitem, S, idx=(Ellipsis, -1))
        return big / small if p in (None, 2) else small / big
    input = _square(input, f"cond(ord={p})", complex_ok=True)
    Ainv, info = inv_ex(input)
    r = matrix_norm(input, p) * matrix_norm(where(Ainv == Ainv, Ainv, 0.0), p)
    return where(info > 0, math.inf, r)


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The `offset` diagonal of each matrix (dims dim1, dim2) as the last dimension."""
    from .api.indexing import diagonal as _diagonal
    return _diagonal(A, offset, dim1, dim2)


def matmul(input, other) -> Tensor:  # noqa: A002
    """`rg.matmul` (as `torch.linalg.matmul`)."""
    return _products.matmul(input, other)


def vecdot(x, y, *, dim: int = -1) -> Tensor:
    """sum(conj(x) * y) along `dim`, broadcast; floating or complex, one dtype, as
    `torch.linalg.vecdot`."""
    from .api.reductions import sum as _sum
    a, b = _float(x, "vecdot", True, True), _float(y, "vecdot", True, True)
    if a.dtype != b.dtype:
        raise LinAlgDtypeError(f"linalg.vecdot: expected x and y of the same dtype, got "
                               f"{a.dtype} and {b.dtype}")
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise LinAlgShapeError(f"linalg.vecdot: shapes {a.shape} and {b.shape} do not "
                               "broadcast") from None
    if a.dtype.kind == "c":
        a = apply(ops.conj, a)
    return _sum(a * b, dim)


def vander(x, *, N: int | None = None) -> Tensor:  # noqa: N803 - PyTorch's name
    """Powers x^0, x^1, ..., x^(N-1) of the last dimension, as a new last dimension (N
    defaults to its length, at least 2), by a cumulative product: right at x = 0 too."""
    from .api.cumulative import cumprod
    x = _t(x)
    if x.ndim == 0:  # PyTorch reads a 0-d x as one element: one row of powers
        x = _reshape(x, (1,))
    N = x.shape[-1] if N is None else N
    if not isinstance(N, (int, np.integer)) or N <= 1:
        raise LinAlgValueError(f"linalg.vander: N must be greater than 1, got {N!r}")
    if x.dtype.kind == "b" or (x.dtype.kind == "f" and x.dtype.itemsize == 2):
        raise LinAlgDtypeError(f"linalg.vander supports floating point, complex, and integer "
                               f"tensors, but got {x.dtype}")
    col = _reshape(x, x.shape + (1,))
    ones = apply(ops.ones_like, col)
    return cumprod(apply(ops.cat, ones, _expand(col, x.shape + (int(N) - 1,)), axis=-1), -1)


def tensorinv(input, ind: int = 2) -> Tensor:
    """The inverse of A seen as a linear map from its last dims to its first `ind` dims (the
    result maps back: shape A.shape[ind:] + A.shape[:ind])."""
    input = _float(input, "tensorinv", True)
    if not isinstance(ind, (int, np.integer)) or ind <= 0:
        raise LinAlgValueError(f"linalg.tensorinv: ind must be a positive int, got {ind!r}")
    rows, cols = math.prod(input.shape[:ind]), math.prod(input.shape[ind:])
    if rows != cols:
        raise LinAlgShapeError(f"linalg.tensorinv: prod(A.shape[ind:]) must equal "
                               f"prod(A.shape[:ind]), got {cols} != {rows} for shape {input.shape}"
                               f" and ind={ind}")
    return _reshape(inv(_reshape(input, (rows, rows))), input.shape[ind:] + input.shape[:ind])


def tensorsolve(input, other, dims=None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B: the dims `dims` of A moved to the end first, A's
    leading B.ndim dims hold B's elements (in order) and its trailing dims are X's shape."""
    input, other = _float(input, "tensorsolve", True), _float(other, "tensorsolve", True)
    if dims is not None:
        d = [int(k) % input.ndim for k in dims]
        rest = tuple(k for k in range(input.ndim) if k not in d)
        input = apply(ops.permute, input, axes=rest + tuple(d))
    rows, cols = math.prod(input.shape[:other.ndim]), math.prod(input.shape[other.ndim:])
    if rows != other.numel() or cols != other.numel():  # PyTorch checks element counts only
        raise LinAlgShapeError(f"linalg.tensorsolve: A's leading dims must hold as many elements "
                               f"as B of shape {other.shape} and as its trailing ones, got A of "
                               f"shape {input.shape}")
    input, other = _promote(input, other)
    X = solve(_reshape(input, (rows, cols)), _reshape(other, (rows,)))
    return _reshape(X, input.shape[other.ndim:])


def householder_product(input, tau) -> Tensor:
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H with v_i column i of
    A below the diagonal and a 1 on it (geqrf's reflectors), as
    `torch.linalg.householder_product`; a composition, differentiable in A and tau."""
    input = _matrix(input, "householder_product", True)
    tau = _float(tau, "householder_product", True)
    m, n = input.shape[-2:]
    if m < n:
        raise LinAlgShapeError(f"linalg.householder_product: A must have at least as many rows "
                               f"as columns, got shape {input.shape}")
    if tau.ndim < 1 or tau.shape[-1] > n or tau.shape[:-1] != input.shape[:-2]:
        raise LinAlgShapeError(f"linalg.householder_product: tau of shape {tau.shape} does not "
                               f"fit A of shape {input.shape} (batch {input.shape[:-2]}, "
                               f"at most {n})")
    if tau.dtype != input.dtype:
        raise LinAlgDtypeError(f"linalg.householder_product: tau dtype {tau.dtype} does not "
                               f"match A's {input.dtype}")
    if tau.shape[-1] == 0:  # no reflectors: the identity, batched, on A's graph (as torch)
        eye = np.broadcast_to(np.eye(m, n, dtype=input.dtype), input.shape).copy()
        return apply(ops.where, np.ones(input.shape, dtype=bool), eye, input)
    return _apply_reflectors(input, tau, Tensor(np.eye(m, n, dtype=input.dtype)), left=True,
                             transpose=False)


def _apply_reflectors(A: Tensor, tau: Tensor, C: Tensor, *, left: bool,
                      transpose: bool) -> Tensor:
    """Q C (Q^H C with `transpose`; C Q or C Q^H with left=False), Q = H_1 ... H_k the
    reflectors stored in A and tau, one rank-one update per reflector."""
    from .api.indexing import tril
    m = A.shape[-2]
    k = tau.shape[-1]
    V = tril(A, -1) + Tensor(np.eye(m, A.shape[-1], dtype=A.dtype))
    conj = A.dtype.kind == "c"
    # Q C applies H_k first; Q^H C applies H_1^H first; C Q applies H_1 first.
    first_to_last = transpose if left else not transpose
    for i in (range(k) if first_to_last else range(k - 1, -1, -1)):
        v = apply(ops.getitem, V, idx=(Ellipsis, slice(None), slice(i, i + 1)))   # (.., m, 1)
        t = apply(ops.getitem, tau, idx=(Ellipsis, slice(i, i + 1)))
        t = _reshape(t, t.shape + (1,))                                           # (.., 1, 1)
        if conj and transpose:
            t = apply(ops.conj, t)
        vh = _mT(apply(ops.conj, v) if conj else v)
        if left:   # H C = C - tau v (v^H C)
            C = C - apply(ops.matmul, v, apply(ops.matmul, vh, C)) * t
        else:      # C H = C - tau (C v) v^H
            C = C - apply(ops.matmul, apply(ops.matmul, C, v), vh) * t
    return C


_norms.MATRIX_NORM[0] = matrix_norm  # torch.norm(p='nuc') (api/norms.py) calls it


class _CrossDimError(IndexError, LinAlgShapeError):
    """linalg.cross's dim out of range (0-d inputs included): PyTorch's IndexError."""
