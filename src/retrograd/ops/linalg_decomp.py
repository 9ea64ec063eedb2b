"""Linear algebra with derivatives: inverse, determinants, solves, factorisations, pinv,
matrix exponential. Every op works on the last two dimensions and batches over the rest.

Rules follow the published results: Giles, "An extended collection of matrix
derivative results" (inv, det, solve); Murray, "Differentiation of the Cholesky
decomposition" (cholesky, in PyTorch's form); the standard eigh / svd / qr rules
as PyTorch states them; Golub and Pereyra for pinv; the block-triangular Fréchet
derivative for matrix_exp. Written in the transpose convention of the table
(see `ops/complex.py`), so a holomorphic op (inv, det, solve, matrix_exp) needs no
conjugates; lu is holomorphic too (its pivots piecewise constant), so its real rules serve
complex data. cholesky, eigh, svd, pinv, qr and slogdet's sign also take complex data
(Hermitian input for the first two): not holomorphic, their complex rules are PyTorch's
formulas, written in its convention (a gradient G with dL = Re tr(G^H dA)) and wrapped by
`_in_torch_convention` where they take a complex cotangent, which conjugates the table's
cotangent in and the result out. Their real rules are untouched: one dtype test picks the
complex branch (slogdet's sign now saves its output and reads A, for the complex rule).

Ops with several results return them packed in one array that the public
function slices (`eigh`: eigenvalues as row 0, eigenvectors below; `svd`: U, S
as one row, V stacked by rows; `qr`: Q above R^T), so one factorisation serves
every result and the rules see all the cotangents at once.

Symmetric inputs. `cholesky` and `eigh` factor the symmetric part (A + A^T) / 2:
for symmetric input (the only input PyTorch defines them for) that is what PyTorch
computes, and their gradients are PyTorch's, which are symmetric. Repeated
eigenvalues or singular values: as in PyTorch, the eigenvector and singular-vector
gradients divide by their differences, so they come out inf or nan there (the
gradient is not defined); the eigenvalue and singular-value gradients alone stay
finite.

Tangents may carry leading batch dimensions (jacfwd, hessian, vmap): every rule
multiplies with matmul (which broadcasts over them), indexes from the end, and
masks with constant arrays shaped like the last two dimensions.

On arrays, cholesky, its rule and solve_triangular call LAPACK and BLAS directly
(`lapack_kernels`: no transposed copies, sygst for the rule's two solves), so the
cholesky rule asks `m is NUMPY`; as tensors (higher order) and on devices the rules
run as written.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import threads as _threads
from ..devices import const_like as _c
from ..devices import namespace_of as _ns
from ..primitive import NUMPY, defop
from . import lapack_kernels as _lk
from .linalg import _mT


class LinAlgError(RuntimeError):
    """A factorisation or solve failed (singular or not positive-definite input)."""


def _scipy_linalg():
    try:
        import scipy.linalg
    except ImportError:  # SciPy is optional: NumPy's general solve on the triangle instead
        return None
    return scipy.linalg


def _per_matrix(fn, arrays, flops: float):
    """fn(*arrays) for a function of matrices batched over the arrays' shared leading
    dimensions, the batch split over the intra-op threads (`threads`) when it is large
    enough (`flops`: the work per matrix). fn returns one array; the values are the same
    either way."""
    batch = arrays[0].shape[:-2]
    if not batch or any(a.__class__ is not np.ndarray or a.shape[:-2] != batch for a in arrays):
        return fn(*arrays)
    total = int(np.prod(batch))
    pieces = _threads.chunks(total, total * flops)
    if len(pieces) == 1:
        return fn(*arrays)
    flat = [a.reshape((total,) + a.shape[-2:]) for a in arrays]
    parts = _threads.run(lambda a, b: fn(*(f[a:b] for f in flat)), pieces)
    return np.concatenate(parts).reshape(batch + parts[0].shape[1:])


def _on_arrays(rule, flops):
    """A vjp rule that, on arrays (`m` is NUMPY), runs per block of matrices (`_per_matrix`)."""
    def split(m, g, out, A):
        if m is NUMPY:
            return _per_matrix(lambda *a: rule(NUMPY, *a), (g, out, A), flops(A))
        return rule(m, g, out, A)
    return split


def _batched(x, batch):
    return np.broadcast_to(x, batch + x.shape[-2:]) if x.shape[:-2] != batch else x


def _where_singular(A) -> str:
    if A.ndim <= 2:
        return ""
    bad = [i for i in np.ndindex(A.shape[:-2]) if not np.all(np.isfinite(A[i]))
           or np.linalg.matrix_rank(A[i]) < A.shape[-1]]
    return f" (batch element {bad[0]})" if bad else ""


def _mH(m, x):
    """The conjugate transpose of the last two dimensions."""
    return m.conj(_mT(m, x))


def _in_torch_convention(rule):
    """A complex vjp rule written in PyTorch's convention (its gradient G of a real loss,
    dL = Re tr(G^H dA)) as one of the table's (cotangent c = conj(G), dL = Re tr(c^T dA)):
    the cotangent is conjugated on the way in and the result on the way out."""
    def rule_c(m, g, out, *inputs, **attrs):
        return m.conj(rule(m, m.conj(g), out, *inputs, **attrs))
    return rule_c


def _gauge(m, vectors, n):
    """The cotangent of complex eigenvectors or singular vectors (the first of `vectors`,
    pairs (X, c)), plus what the forward's phase choice adds at each column's fixed entry:
    -i Im(sum of the columns' sum(c * X)) / |entry|. The rule that follows is PyTorch's,
    which assumes a loss free of the phases (Im sum(c * X) = 0, where this adds nothing);
    with it the gradient is exact for any loss, the phase being the forward's.

    PyTorch instead refuses a loss that depends on the phases. Here a check cannot tell
    such a loss: in a backward recorded with create_graph the engine recomputes the output
    for the rule, so a later backward brings the rule its cotangent in parts, each
    phase-dependent though their sum is not (the rule being linear, the parts' added terms
    cancel there)."""
    X, c = vectors[0]
    total = None
    for Y, cy in vectors:
        s = m.imag(m.sum(cy * Y, axis=-2))
        total = s if total is None else total + s
    mask, r = _phase_rows(m, X, n)
    return c + mask * _row(m, total / r) * -1j


# ---------------------------------------------------------------- inverse, determinants

def _inv(A):
    try:
        return np.linalg.inv(A)
    except np.linalg.LinAlgError:
        raise LinAlgError(f"linalg.inv: the input matrix{_where_singular(A)} is singular, so "
                          "the inversion could not be completed") from None


inv = defop(
    "inv", _inv,
    (lambda m, g, out, A: -m.matmul(m.matmul(_mT(m, out), g), _mT(m, out)),),
    (lambda m, t, out, A: -m.matmul(m.matmul(out, t), out),),
    save_out=True, reads=(), fresh=True)


def _trace_solve(m, A, t):
    """tr(A^-1 t) over the last two dims (t may carry leading batch dimensions)."""
    n = A.shape[-1]
    X = m.solve(A, t)
    return m.sum(X * _c(np.eye(n, dtype=np.result_type(A.dtype, t.dtype)), X), axis=(-2, -1))


def _col(m, g):
    return m.reshape(g, shape=g.shape + (1, 1))


def _adjugate(A):
    """adj(A) of real or complex (..., n, n) matrices, singular ones included, from the SVD
    A = U diag(s) Vh: adj(A) = det(U) det(Vh) Vh^H diag(prod of the other s) U^H (equal
    to det(A) A^-1 where A is invertible)."""
    U, s, Vh = np.linalg.svd(A)
    n = s.shape[-1]
    one = np.ones(s.shape[:-1] + (1,), s.dtype)
    left = np.cumprod(np.concatenate([one, s[..., :n - 1]], -1), -1)
    right = np.cumprod(np.concatenate([one, s[..., :0:-1]], -1), -1)[..., ::-1]
    sign = np.linalg.det(U) * np.linalg.det(Vh)
    adj = np.conj(np.swapaxes(Vh, -1, -2)) * (left * right)[..., None, :] @ np.conj(
        np.swapaxes(U, -1, -2))
    return adj * sign[..., None, None]


def _singular_mask(out):
    """Where the saved determinant is exactly 0 (a zero pivot: inv and solve would fail),
    as a (..., 1, 1) bool array; None where there is none, or the values are not arrays."""
    d = out if out.__class__ is np.ndarray else getattr(out, "data", None)
    if not isinstance(d, np.ndarray) or d.dtype.kind not in "fc" or not (d == 0).any():
        return None
    return (d == 0)[..., None, None]


def _safe_square(m, A, sing):
    """A with its singular matrices (`sing`) replaced by the identity, so inv/solve run."""
    return m.where(_c(sing, A), _c(np.eye(A.shape[-1], dtype=A.dtype), A), A)


def _adjugate_t_diff(m, A):
    """adj(A)^T of real square matrices as recorded ops (PyTorch's singular formula:
    det(U) det(V) U diag(products of the other singular values) V^T), so a gradient
    through a singular matrix can be differentiated again."""
    n = A.shape[-1]
    U, S, V = _split_svd(m, m.svd(A), n, n)
    eye = _c(np.eye(n, dtype=bool), A)
    others = m.prod(m.where(eye, 1.0, _row(m, S) + _colv(m, S) * 0.0), axis=-1)
    sign = _col(m, m.det(U) * m.det(V))
    return m.matmul(U * _row(m, others), _mT(m, V)) * sign


def _det_vjp(m, g, out, A):
    """g adj(A)^T: g det(A) A^-T where A is invertible; for a singular real or complex
    matrix (the inverse fails) the adjugate from the SVD (PyTorch's formula there; as
    recorded ops for real A under create_graph)."""
    if m is NUMPY and A.dtype.kind in "fc":
        try:
            inv = np.linalg.inv(A)
        except np.linalg.LinAlgError:
            return _col(m, g) * _mT(m, _adjugate(A))
        return _col(m, g * out) * _mT(m, inv)
    sing = _singular_mask(out)
    if sing is None or A.dtype.kind != "f":
        return _col(m, g * out) * _mT(m, m.inv(A))
    regular = _col(m, g * out) * _mT(m, m.inv(_safe_square(m, A, sing)))
    return m.where(_c(sing, A), _col(m, g) * _adjugate_t_diff(m, A), regular)


def _det_jvp(m, t, out, A):
    """det(A) tr(A^-1 t); 0 where A is exactly singular (PyTorch's value there: its rule
    multiplies by the zero determinant)."""
    sing = _singular_mask(out)
    if sing is None:
        return out * _trace_solve(m, A, t)
    return out * _trace_solve(m, _safe_square(m, A, sing), t)


det = defop(
    "det", np.linalg.det,
    (_det_vjp,),
    (_det_jvp,),
    save_out=True, fresh=True)


def _logabsdet(A):
    return np.linalg.slogdet(A)[1]


def _logabsdet_jvp(m, t, out, A):
    if A.dtype.kind == "c":  # d log|det A| = Re tr(A^-1 dA)
        return m.real(_trace_solve(m, A, t))
    return _trace_solve(m, A, t)


logabsdet = defop(
    "logabsdet", _logabsdet,
    (lambda m, g, out, A: _col(m, g) * _mT(m, m.inv(A)),),
    (_logabsdet_jvp,),
    fresh=True)
"""log|det A|, real for complex A too: its cotangent g (real) gives g A^-T in the table's
convention either way."""


def _sign_vjp(m, g, out, A):
    """Real A: zero (the sign is piecewise constant). Complex A: d sign = sign i Im tr(A^-1 dA),
    so the cotangent c gives i Im(c sign) A^-T (PyTorch's slogdet_backward, in the table's
    convention)."""
    if A.dtype.kind == "c":
        return _col(m, m.imag(g * out) * 1j) * _mT(m, m.inv(A))
    return m.expand(_col(m, g * 0.0), shape=g.shape + A.shape[-2:])


def _sign_jvp(m, t, out, A):
    if A.dtype.kind == "c":
        return out * m.imag(_trace_solve(m, A, t)) * 1j
    return m.sum(t * 0.0, axis=(-2, -1))


slogdet_sign = defop(
    "slogdet_sign", lambda A: np.linalg.slogdet(A)[0], (_sign_vjp,), (_sign_jvp,),
    save_out=True, fresh=True)
"""The sign of the determinant: for real A piecewise constant, so its derivatives are zero;
for complex A det / |det|, which moves with the determinant's phase (its rules read A, so
A's in-place version is checked)."""


# ---------------------------------------------------------------- solves

def _solve(A, B):
    A = _batched(A, B.shape[:-2])
    try:
        return np.linalg.solve(A, B)
    except np.linalg.LinAlgError:
        raise LinAlgError(f"linalg.solve: the solver failed because the input matrix"
                          f"{_where_singular(A)} is singular") from None


def _solve_vjp_B(m, g, out, A, B):
    return m.solve(_mT(m, A), g)


solve = defop(
    "solve", _solve,
    (lambda m, g, out, A, B: -m.matmul(_solve_vjp_B(m, g, out, A, B), _mT(m, out)),
     _solve_vjp_B),
    (lambda m, t, out, A, B: -m.solve(A, m.matmul(t, out)),
     lambda m, t, out, A, B: m.solve(A, t)),
    save_out=True, fresh=True)


@functools.lru_cache(maxsize=4)
def _tri_mask(n, upper, unit, dtype):
    """A read-only 0/1 triangle, kept: the rules of a loop's solves ask for the same one."""
    k = 1 if unit else 0
    mask = np.triu(np.ones((n, n), dtype), k) if upper else np.tril(np.ones((n, n), dtype), -k)
    mask.flags.writeable = False
    return mask


def _trsm(A, B, upper, unit):
    """BLAS's trsm once per matrix, on row-major arrays as they are (see `lapack_kernels`)."""
    if not unit and not np.diagonal(A, 0, -2, -1).all():  # argwhere only on failure
        bad = np.argwhere(np.diagonal(A, 0, -2, -1) == 0)
        if bad.size:
            i, k = tuple(int(j) for j in bad[0, :-1]), int(bad[0, -1])
            where = f" (batch element {i})" if i else ""
            raise LinAlgError(f"linalg.solve_triangular: the triangular matrix{where} is "
                              f"singular (its diagonal element {k + 1} is zero)")
    if B.ndim == 2:
        return _lk.solve_triangular(A, B, upper=upper, unit=unit)
    out = np.empty(B.shape, np.result_type(A.dtype, B.dtype))
    for i in np.ndindex(B.shape[:-2]):
        out[i] = _lk.solve_triangular(A[i], B[i], upper=upper, unit=unit)
    return out


def _solve_triangular(A, B, *, upper, unit=False):
    A = _batched(A, B.shape[:-2])
    if B.size and _lk.available(A, B):
        return _trsm(A, B, upper, unit)
    T = np.triu(A) if upper else np.tril(A)
    if unit:
        T = T.copy()
        T[..., _ns(T).arange(T.shape[-1]), _ns(T).arange(T.shape[-1])] = 1
    return np.linalg.solve(T, B)


def _st_vjp_B(m, g, out, A, B, *, upper, unit=False):
    if m is NUMPY and A.ndim == 2 and g.ndim == 2 and g.size and _lk.available(A, g):
        # the forward checked A's diagonal: straight to BLAS, as the forward does
        return _lk.solve_triangular(A.T, g, upper=not upper, unit=unit)
    return m.solve_triangular(_mT(m, A), g, upper=not upper, unit=unit)


def _st_vjp_A(m, g, out, A, B, *, upper, unit=False):
    gB = _st_vjp_B(m, g, out, A, B, upper=upper, unit=unit)
    mask = _tri_mask(A.shape[-1], upper, unit, A.dtype)
    if m is NUMPY and gB.__class__ is np.ndarray:  # in place: no temporaries
        gA = np.matmul(gB, np.swapaxes(out, -1, -2))
        np.multiply(gA, mask, out=gA)
        return np.negative(gA, out=gA)
    return -m.matmul(gB, _mT(m, out)) * _c(mask, gB)


def _st_jvp_A(m, t, out, A, B, *, upper, unit=False):
    tA = t * _c(_tri_mask(A.shape[-1], upper, unit, A.dtype), t)
    return -m.solve_triangular(A, m.matmul(tA, out), upper=upper, unit=unit)


solve_triangular = defop(
    "solve_triangular", _solve_triangular, (_st_vjp_A, _st_vjp_B),
    (_st_jvp_A, lambda m, t, out, A, B, *, upper, unit=False: m.solve_triangular(
        A, t, upper=upper, unit=unit)),
    save_out=True, fresh=True)


# ---------------------------------------------------------------- cholesky

_LAPACK_FROM = 32
"""From this order up, cholesky and its rule call LAPACK per matrix (`lapack_kernels`);
below it NumPy's batched routines cost less than a call per matrix."""

def _sym(m, x):
    return (x + _mT(m, x)) * 0.5


def np_cholesky(S: np.ndarray) -> np.ndarray:
    """np.linalg.cholesky that also fails on a nan pivot, as LAPACK's potrf does (its DISNAN
    check; PyTorch raises there): NumPy's routine carries on and returns nan factors."""
    L = np.linalg.cholesky(S)
    if np.isnan(np.diagonal(L, axis1=-2, axis2=-1)).any():
        raise np.linalg.LinAlgError("Matrix is not positive definite (nan pivot)")
    return L


def _failing_minor(S) -> tuple:
    """(batch index, order) of the first leading minor that is not positive-definite."""
    for idx in np.ndindex(S.shape[:-2]):
        a = S[idx]
        for k in range(1, a.shape[-1] + 1):
            try:
                np_cholesky(a[:k, :k])
            except np.linalg.LinAlgError:
                return idx, k
    return (), S.shape[-1]


def _not_pd(idx, k):
    where = f" (batch element {idx})" if idx else ""
    return LinAlgError(f"linalg.cholesky: the factorization could not be completed because "
                       f"the input{where} is not positive-definite (the leading minor of "
                       f"order {k} is not positive-definite)")


def _cholesky(A):
    if A.dtype.kind == "c":
        return _cholesky_hermitian(A)
    if A.ndim == 2 and A.shape[-1] >= _LAPACK_FROM and _lk.available(A):
        S = _lk.symmetric_part(A)
    else:
        S = (A + np.swapaxes(A, -1, -2)) * 0.5
    if S.shape[-1] >= _LAPACK_FROM and _lk.available(S):  # potrf in place, no transposes
        for i in np.ndindex(S.shape[:-2]):
            L, info = _lk.cholesky_lower(S[i])
            if info == 0:  # a nan pivot: potrf's DISNAN check, which this routine lacks
                nan = np.isnan(np.diagonal(L))
                info = int(nan.argmax()) + 1 if nan.any() else 0
            if info > 0:
                raise _not_pd(i, info)
            if not np.may_share_memory(L, S):
                S[i] = L
        return S
    try:
        return np_cholesky(S)
    except np.linalg.LinAlgError:
        raise _not_pd(*_failing_minor(S)) from None


def _cholesky_hermitian(A):
    """L L^H = (A + A^H) / 2 for complex A: the Hermitian part, as the real path takes the
    symmetric part (the input itself for the Hermitian matrices PyTorch defines it for)."""
    S = (A + np.conj(np.swapaxes(A, -1, -2))) * 0.5
    try:
        return np_cholesky(S)
    except np.linalg.LinAlgError:
        raise _not_pd(*_failing_minor(S)) from None


def _phi(m, X, n, dtype):
    """The lower triangle of X with its diagonal halved."""
    return X * _c(np.tril(np.ones((n, n), dtype), -1) + np.eye(n, dtype=dtype) * 0.5, X)


def _cholesky_vjp_lapack(g, L):
    """The rule below on arrays in 2 n^3 flops: trmm for L^T gL, sygst for the two solves."""
    if L.ndim == 2:
        return _lk.cholesky_backward(L, g)
    out = np.empty(L.shape, np.result_type(L.dtype, g.dtype))
    for i in np.ndindex(L.shape[:-2]):
        out[i] = _lk.cholesky_backward(L[i], g[i])
    return out


def _cholesky_vjp(m, g, out, A):
    """Murray (2016) as PyTorch writes it: L^-T Phi(L^T gL) L^-1, symmetrised."""
    if A.dtype.kind == "c":
        return _cholesky_vjp_c(m, g, out, A)
    n = A.shape[-1]
    L = out
    if m is NUMPY and n >= _LAPACK_FROM and g.shape == L.shape and _lk.available(L, g):
        return _cholesky_vjp_lapack(g, L)
    P = m.matmul(_mT(m, L), g) * _c(np.tril(np.ones((n, n), A.dtype)), g)
    P = (P + _mT(m, P * _c(np.tril(np.ones((n, n), A.dtype), -1), g))) * 0.5
    Z = m.solve_triangular(_mT(m, L), P, upper=True)
    return _mT(m, m.solve_triangular(_mT(m, L), _mT(m, Z), upper=True))


@_in_torch_convention
def _cholesky_vjp_c(m, G, L, A):
    """PyTorch's complex rule: L^-H P L^-1 with P = (tril(X) + tril(X, -1)^H) / 2,
    X = L^H G. As in PyTorch it is not Hermitian when X has an imaginary diagonal (the
    difference is the anti-Hermitian part, which no Hermitian direction sees)."""
    n = A.shape[-1]
    rdt = np.finfo(A.dtype).dtype
    X = m.matmul(_mH(m, L), G) * _c(np.tril(np.ones((n, n), rdt)), G)
    P = (X + _mH(m, X * _c(np.tril(np.ones((n, n), rdt), -1), X))) * 0.5
    Z = m.solve_triangular(_mH(m, L), P, upper=True)                 # L^-H P
    return _mH(m, m.solve_triangular(_mH(m, L), _mH(m, Z), upper=True))  # (L^-H Z^H)^H


def _cholesky_jvp(m, t, out, A):
    """dL = L Phi(L^-1 sym(dA) L^-T)."""
    if A.dtype.kind == "c":
        return _cholesky_jvp_c(m, t, out, A)
    n = A.shape[-1]
    L = out
    X = m.solve_triangular(L, _sym(m, t), upper=False)
    X = _mT(m, m.solve_triangular(L, _mT(m, X), upper=False))
    return m.matmul(L, _phi(m, X, n, A.dtype))


def _cholesky_jvp_c(m, t, L, A):
    """dL = L Phi(L^-1 herm(dA) L^-H), herm(dA) = (dA + dA^H) / 2 (the forward's part)."""
    n = A.shape[-1]
    X = m.solve_triangular(L, (t + _mH(m, t)) * 0.5, upper=False)      # L^-1 herm(dA)
    X = _mH(m, m.solve_triangular(L, _mH(m, X), upper=False))          # ... L^-H
    return m.matmul(L, _phi(m, X, n, np.finfo(A.dtype).dtype))


cholesky = defop("cholesky", _cholesky, (_cholesky_vjp,), (_cholesky_jvp,), save_out=True,
                 reads=(), fresh=True)


# ---------------------------------------------------------------- eigh

def _sign_fix(V):
    """Signs that make each column's largest-magnitude entry positive: a deterministic choice
    among the eigenvectors' (and singular vectors') signs, whichever LAPACK computed them."""
    if V.shape[-2] == 0:  # no entries to choose from (a 0 x n factor): every sign is +1
        return np.ones(V.shape[:-2] + (1, V.shape[-1]), dtype=V.dtype)
    big = np.argmax(np.abs(V), axis=-2)[..., None, :]
    s = np.sign(np.take_along_axis(V, big, axis=-2))
    s[s == 0] = 1
    return s


def _eigh(A):
    return _per_matrix(_eigh_block, (A,), 10.0 * A.shape[-1] ** 3)


def _phase_fix(V, *others):
    """V and `others` times the unit phases that make each column of V's largest-magnitude
    entry real and positive (exactly: that entry is set to its modulus): for complex
    eigenvectors and singular vectors the analogue of `_sign_fix` (each is free up to a
    phase e^{i phi}), a deterministic choice whichever phase LAPACK computed."""
    if V.shape[-2] == 0:  # a 0 x n factor: nothing to rotate
        return (V,) + others
    at = np.argmax(np.abs(V), axis=-2)[..., None, :]
    big = np.take_along_axis(V, at, axis=-2)
    size = np.abs(big)
    d = np.conj(big) / np.where(size == 0, 1, size) + (size == 0)
    V = V * d
    np.put_along_axis(V, at, size.astype(V.dtype), axis=-2)
    return (V,) + tuple(X * d for X in others)


def _eigh_block(A):
    if A.dtype.kind == "c":  # Hermitian part; eigenvalues (real) packed as complex
        w, V = np.linalg.eigh((A + np.conj(np.swapaxes(A, -1, -2))) * 0.5)
        return np.concatenate([w.astype(A.dtype)[..., None, :], _phase_fix(V)[0]], axis=-2)
    S = (A + np.swapaxes(A, -1, -2)) * 0.5
    w, V = np.linalg.eigh(S)
    s = _sign_fix(V)
    return np.concatenate([w[..., None, :], V * s], axis=-2)


def _split_eigh(m, P, n):
    w = m.reshape(m.getitem(P, idx=(Ellipsis, slice(0, 1), slice(None))),
                  shape=P.shape[:-2] + (n,))
    V = m.getitem(P, idx=(Ellipsis, slice(1, n + 1), slice(None)))
    return w, V


def _div0(m, num, den):
    """num / den, and 0 where num is 0: a cotangent that is zero (eigvalsh, svdvals) stays
    zero at repeated eigenvalues or zero singular values, where num / den alone is 0 / 0; a
    non-zero one still gives inf or nan there, as in PyTorch."""
    return m.where(num == 0, 0.0, num / den)


def _gaps(m, w, n, dtype):
    """E_ij = w_j - w_i off the diagonal, 1 on it."""
    eye = _c(np.eye(n, dtype=dtype), w)
    return m.reshape(w, shape=w.shape[:-1] + (1, n)) - m.reshape(w, shape=w.shape + (1,)) + eye


def _eigh_vjp(m, g, out, A):
    """V (diag(gw) + skew(V^T gV) / 2E) V^T (PyTorch's rule; inf/nan at repeated eigenvalues)."""
    n = A.shape[-1]
    if A.dtype.kind == "c":
        return _eigh_vjp_c(m, g, out, A)
    if m is NUMPY and g.__class__ is np.ndarray:
        return _eigh_vjp_arrays(g, out, n)
    eye = _c(np.eye(n, dtype=A.dtype), g)
    w, V = _split_eigh(m, out, n)
    gw, gV = _split_eigh(m, g, n)
    VtgV = m.matmul(_mT(m, V), gV)
    inner = _div0(m, (VtgV - _mT(m, VtgV)) * 0.5, _gaps(m, w, n, A.dtype)) * (1 - eye) \
        + m.reshape(gw, shape=gw.shape + (1,)) * eye
    return m.matmul(m.matmul(V, inner), _mT(m, V))


def _eigh_vjp_arrays(g, out, n):
    """The rule above on arrays, in place where it can be: the same numbers, fewer
    temporaries (the batched eigh benchmark spends a tenth of its time here)."""
    w, V = out[..., 0, :], out[..., 1:, :]
    gw, gV = g[..., 0, :], g[..., 1:, :]
    inner = np.matmul(np.swapaxes(V, -1, -2), gV)
    inner -= np.swapaxes(inner, -1, -2).copy()
    inner *= 0.5
    gaps = w[..., None, :] - w[..., :, None]
    zero = inner == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        inner /= gaps
    inner[zero] = 0.0  # _div0: a zero numerator stays zero at repeated eigenvalues
    diag = np.einsum("...ii->...i", inner)  # a writable view of the diagonals
    diag[...] = gw
    return np.matmul(np.matmul(V, inner), np.swapaxes(V, -1, -2))


def _eigh_vjp_c(m, g, out, A):
    """The phase choice's part (`_gauge`), then PyTorch's rule."""
    n = A.shape[-1]
    w, V = _split_eigh(m, out, n)
    gw, gV = _split_eigh(m, g, n)
    gV = _gauge(m, [(V, gV)], n)
    return _eigh_vjp_torch(m, m.cat(m.reshape(gw, shape=gw.shape[:-1] + (1, n)), gV, axis=-2),
                           out, A)


@_in_torch_convention
def _eigh_vjp_torch(m, G, out, A):
    """PyTorch's Hermitian rule: V (skew(V^H gV) / 2E + diag(gw)) V^H."""
    n = A.shape[-1]
    rdt = np.finfo(A.dtype).dtype
    eye = _c(np.eye(n, dtype=rdt), G)
    w, V = _split_eigh(m, out, n)
    gw, gV = _split_eigh(m, G, n)
    w, gw = m.real(w), m.real(gw)
    VhgV = m.matmul(_mH(m, V), gV)
    inner = _div0(m, (VhgV - _mH(m, VhgV)) * 0.5, _gaps(m, w, n, rdt)) * (1 - eye) \
        + m.reshape(gw, shape=gw.shape + (1,)) * eye
    return m.matmul(m.matmul(V, inner), _mH(m, V))


def _fix_phase_tangent(m, V, dV, n):
    """dV plus the part i theta_i v_i that keeps each column's fixed entry real (the forward's
    phase choice, `_phase_fix`); (dV, theta)."""
    mask, r = _phase_rows(m, V, n)
    theta = -m.imag(m.sum(dV * mask, axis=-2)) / r
    return dV + V * _row(m, theta) * 1j, theta


def _eigh_jvp_c(m, t, out, A):
    """P = V^H herm(dA) V: dw = Re diag(P), dV = V (P / E off the diagonal), plus the
    phase choice's i theta_i v_i: the tangent of the forward as it is computed."""
    n = A.shape[-1]
    rdt = np.finfo(A.dtype).dtype
    eye = _c(np.eye(n, dtype=rdt), t)
    w, V = _split_eigh(m, out, n)
    w = m.real(w)
    P = m.matmul(m.matmul(_mH(m, V), (t + _mH(m, t)) * 0.5), V)
    dw = m.cast(m.real(m.sum(P * eye, axis=-1)), dtype=A.dtype)
    dV, _ = _fix_phase_tangent(m, V, m.matmul(V, P / _gaps(m, w, n, rdt) * (1 - eye)), n)
    return m.cat(m.reshape(dw, shape=dw.shape[:-1] + (1, n)), dV, axis=-2)


def _eigh_jvp(m, t, out, A):
    """dw = diag(V^T dA V), dV = V (F o V^T dA V) with F_ij = 1 / (w_j - w_i)."""
    n = A.shape[-1]
    if A.dtype.kind == "c":
        return _eigh_jvp_c(m, t, out, A)
    eye = _c(np.eye(n, dtype=A.dtype), t)
    w, V = _split_eigh(m, out, n)
    P = m.matmul(m.matmul(_mT(m, V), _sym(m, t)), V)
    dw = m.sum(P * eye, axis=-1)
    dV = m.matmul(V, P / _gaps(m, w, n, A.dtype) * (1 - eye))
    return m.cat(m.reshape(dw, shape=dw.shape[:-1] + (1, n)), dV, axis=-2)


eigh = defop("eigh", _eigh, (_on_arrays(_eigh_vjp, lambda A: 6.0 * A.shape[-1] ** 3),),
             (_eigh_jvp,), save_out=True, reads=(), fresh=True)


# ---------------------------------------------------------------- svd

def _svd_flops(A):
    return 20.0 * max(A.shape[-2:]) * min(A.shape[-2:]) ** 2


def _svd(A):
    return _per_matrix(_svd_block, (A,), _svd_flops(A))


def _svd_block(A):
    U, S, Vh = np.linalg.svd(A, full_matrices=False)
    if A.dtype.kind == "c":  # U D, S, V D for unit phases D (`_phase_fix`): A unchanged
        U, V = _phase_fix(U, np.conj(np.swapaxes(Vh, -1, -2)))
        return np.concatenate([U, S.astype(A.dtype)[..., None, :], V], axis=-2)
    s = _sign_fix(U)
    U = U * s
    V = np.swapaxes(Vh, -1, -2) * s
    return np.concatenate([U, S[..., None, :], V], axis=-2)


def _split_svd(m, P, rows, cols):
    k = P.shape[-1]
    U = m.getitem(P, idx=(Ellipsis, slice(0, rows), slice(None)))
    S = m.reshape(m.getitem(P, idx=(Ellipsis, slice(rows, rows + 1), slice(None))),
                  shape=P.shape[:-2] + (k,))
    V = m.getitem(P, idx=(Ellipsis, slice(rows + 1, rows + 1 + cols), slice(None)))
    return U, S, V


def _row(m, s):
    return m.reshape(s, shape=s.shape[:-1] + (1, s.shape[-1]))


def _colv(m, s):
    return m.reshape(s, shape=s.shape + (1,))


def _svd_vjp(m, g, out, A):
    """PyTorch's svd_backward (real case): U (J + diag(gS)) V^T plus the parts of gU, gV
    outside the column spaces; J = (skew(U^T gU) S + S skew(V^T gV)) / (S_j^2 - S_i^2)."""
    if A.dtype.kind == "c":
        return _svd_vjp_c(m, g, out, A)
    rows, cols = A.shape[-2], A.shape[-1]
    k = min(rows, cols)
    eye = _c(np.eye(k, dtype=A.dtype), g)
    U, S, V = _split_svd(m, out, rows, cols)
    gU, gS, gV = _split_svd(m, g, rows, cols)
    UtgU = m.matmul(_mT(m, U), gU)
    VtgV = m.matmul(_mT(m, V), gV)
    UtgU = UtgU - _mT(m, UtgU)
    VtgV = VtgV - _mT(m, VtgV)
    S2 = S * S
    E = _row(m, S2) - _colv(m, S2) + eye
    J = _div0(m, UtgU * _row(m, S) + _colv(m, S) * VtgV, E) * (1 - eye) + _colv(m, gS) * eye
    return _svd_vjp_beyond_k(m, m.matmul(m.matmul(U, J), _mT(m, V)), U, S, V, gU, gV,
                             rows, cols, k, _mT)


def _svd_vjp_beyond_k(m, gA, U, S, V, gU, gV, rows, cols, k, adj):
    """gA plus the parts of the SVD's vjp outside the k = min(rows, cols) singular
    spaces; `adj` is the transpose (real) or conjugate transpose (complex)."""
    if rows > k:  # (I - U U^H) gU S^-1 V^H
        gUS = _div0(m, gU, _row(m, S))
        gA = gA + m.matmul(gUS - m.matmul(U, m.matmul(adj(m, U), gUS)), adj(m, V))
    if cols > k:  # U S^-1 gV^H (I - V V^H)
        gVS = _div0(m, gV, _row(m, S))
        gA = gA + m.matmul(U, adj(m, gVS - m.matmul(V, m.matmul(adj(m, V), gVS))))
    return gA


def _svd_vjp_c(m, g, out, A):
    """The phase choice's part (U's phases fix V's: `_gauge`), then PyTorch's rule."""
    rows, cols = A.shape[-2], A.shape[-1]
    U, S, V = _split_svd(m, out, rows, cols)
    gU, gS, gV = _split_svd(m, g, rows, cols)
    gU = _gauge(m, [(U, gU), (V, gV)], rows)
    k = S.shape[-1]
    return _svd_vjp_torch(m, m.cat(gU, m.reshape(gS, shape=gS.shape[:-1] + (1, k)), gV,
                                   axis=-2), out, A)


@_in_torch_convention
def _svd_vjp_torch(m, G, out, A):
    """PyTorch's complex svd_backward: U (J + diag(gS) + diag(i Im diag(U^H gU) / S)) V^H
    with J = (skew(U^H gU) S + S skew(V^H gV)) / (S_j^2 - S_i^2), plus the parts of gU, gV
    outside the column spaces."""
    rows, cols = A.shape[-2], A.shape[-1]
    k = min(rows, cols)
    rdt = np.finfo(A.dtype).dtype
    eye = _c(np.eye(k, dtype=rdt), G)
    U, S, V = _split_svd(m, out, rows, cols)
    gU, gS, gV = _split_svd(m, G, rows, cols)
    S, gS = m.real(S), m.real(gS)
    UhgU = m.matmul(_mH(m, U), gU)
    VhgV = m.matmul(_mH(m, V), gV)
    imU = m.imag(m.sum(UhgU * eye, axis=-1))
    UhgU = UhgU - _mH(m, UhgU)
    VhgV = VhgV - _mH(m, VhgV)
    S2 = S * S
    E = _row(m, S2) - _colv(m, S2) + eye
    J = _div0(m, UhgU * _row(m, S) + _colv(m, S) * VhgV, E) * (1 - eye) \
        + _colv(m, gS + _div0(m, imU, S) * 1j) * eye
    return _svd_vjp_beyond_k(m, m.matmul(m.matmul(U, J), _mH(m, V)), U, S, V, gU, gV,
                             rows, cols, k, _mH)


def _svd_rotations(m, t, U, S, V, A, adj):
    """The SVD tangent's shared part: dP = adj(U) dA V, and U's and V's tangents from
    its off-diagonal part (and the spaces beyond k = min(rows, cols)); `adj` is the
    transpose for real input, the conjugate transpose for complex."""
    rows, cols = A.shape[-2], A.shape[-1]
    k = min(rows, cols)
    eye = _c(np.eye(k, dtype=np.finfo(A.dtype).dtype), t)
    dP = m.matmul(m.matmul(adj(m, U), t), V)
    dPd = m.sum(dP * eye, axis=-1)
    S2 = S * S
    F = (1 - eye) / (_row(m, S2) - _colv(m, S2) + eye)
    dPa = adj(m, dP)
    dU = m.matmul(U, F * (dP * _row(m, S) + _colv(m, S) * dPa))
    dV = m.matmul(V, F * (_colv(m, S) * dP + dPa * _row(m, S)))
    if rows > k:
        tV = m.matmul(t, V) / _row(m, S)
        dU = dU + tV - m.matmul(U, m.matmul(adj(m, U), tV))
    if cols > k:
        tU = m.matmul(adj(m, t), U) / _row(m, S)
        dV = dV + tU - m.matmul(V, m.matmul(adj(m, V), tU))
    return dPd, dU, dV


def _svd_jvp_c(m, t, out, A):
    """The tangent of the forward as computed: dP = U^H dA V, dS = Re diag(dP); U's and V's
    off-diagonal rotations as in the real rule with dP^H; U's phases as the forward fixes
    them, V's then follow from Im diag(dP) = S (theta_U - theta_V)."""
    rows, cols = A.shape[-2], A.shape[-1]
    k = min(rows, cols)
    U, S, V = _split_svd(m, out, rows, cols)
    S = m.real(S)
    dPd, dU, dV = _svd_rotations(m, t, U, S, V, A, _mH)
    dU, theta = _fix_phase_tangent(m, U, dU, rows)
    dV = dV + V * _row(m, theta - m.imag(dPd) / S) * 1j
    dS = m.cast(m.real(dPd), dtype=A.dtype)
    return m.cat(dU, m.reshape(dS, shape=dS.shape[:-1] + (1, k)), dV, axis=-2)


def _svd_jvp(m, t, out, A):
    if A.dtype.kind == "c":
        return _svd_jvp_c(m, t, out, A)
    rows, cols = A.shape[-2], A.shape[-1]
    k = min(rows, cols)
    U, S, V = _split_svd(m, out, rows, cols)
    dS, dU, dV = _svd_rotations(m, t, U, S, V, A, _mT)
    return m.cat(dU, m.reshape(dS, shape=dS.shape[:-1] + (1, k)), dV, axis=-2)


svd = defop("svd", _svd, (_on_arrays(_svd_vjp, _svd_flops),), (_svd_jvp,), save_out=True,
            reads=(), fresh=True)


# ---------------------------------------------------------------- qr

def _qr(A):
    return _per_matrix(_qr_block, (A,), 4.0 * max(A.shape[-2:]) * min(A.shape[-2:]) ** 2)


def _qr_block(A):
    Q, R = np.linalg.qr(A, mode="reduced")
    return np.concatenate([Q, np.swapaxes(R, -1, -2)], axis=-2)


def _split_qr(m, P, rows, cols):
    Q = m.getitem(P, idx=(Ellipsis, slice(0, rows), slice(None)))
    R = _mT(m, m.getitem(P, idx=(Ellipsis, slice(rows, rows + cols), slice(None))))
    return Q, R


def _copyltu(m, M, k, dtype):
    """The lower triangle of M mirrored to the upper one (M = tril + tril(-1)^T)."""
    low = M * _c(np.tril(np.ones((k, k), dtype), -1), M)
    return low + _mT(m, low) + M * _c(np.eye(k, dtype=dtype), M)


def _qr_square_vjp(m, Q, R, gQ, gR, k, dtype):
    """m >= n: gA = (gQ + Q copyltu(M)) R^-T with M = R gR^T - gQ^T Q."""
    M = m.matmul(R, _mT(m, gR)) - m.matmul(_mT(m, gQ), Q)
    B = gQ + m.matmul(Q, _copyltu(m, M, k, dtype))
    return _mT(m, m.solve_triangular(R, _mT(m, B), upper=True))


def _qr_vjp_with(m, g, out, A, square, adj):
    """QR's vjp from its tall-or-square rule `square`; wide: A = [X | Y], R = [U | V]
    with X = Q U square and Y = Q V. `adj` is the transpose (real) or conjugate
    transpose (complex)."""
    rows, cols = A.shape[-2], A.shape[-1]
    k = min(rows, cols)
    Q, R = _split_qr(m, out, rows, cols)
    gQ, gR = _split_qr(m, g, rows, cols)
    if rows >= cols:
        return square(m, Q, R, gQ, gR, k, A.dtype)
    U = m.getitem(R, idx=(Ellipsis, slice(None), slice(0, k)))
    gU = m.getitem(gR, idx=(Ellipsis, slice(None), slice(0, k)))
    gV = m.getitem(gR, idx=(Ellipsis, slice(None), slice(k, cols)))
    Y = m.getitem(A, idx=(Ellipsis, slice(None), slice(k, cols)))
    gX = square(m, Q, U, gQ + m.matmul(Y, adj(m, gV)), gU, k, A.dtype)
    return m.cat(gX, m.matmul(Q, gV), axis=-1)


def _qr_vjp(m, g, out, A):
    if A.dtype.kind == "c":
        return _qr_vjp_c(m, g, out, A)
    return _qr_vjp_with(m, g, out, A, _qr_square_vjp, _mT)


def _qr_jvp(m, t, out, A):
    """Tall or square: see `_qr_square_jvp`; wide (A = [X | Y]): X's factorisation, then
    dV = Q^T (dY - dQ V) for R = [U | V]."""
    if A.dtype.kind == "c":
        return _qr_jvp_with(m, t, out, A, _qr_square_jvp_c, _mH)
    return _qr_jvp_with(m, t, out, A, _qr_square_jvp, _mT)


def _qr_jvp_with(m, t, out, A, square, adj):
    """QR's jvp from its tall-or-square rule `square`; `adj` is the transpose (real) or
    conjugate transpose (complex)."""
    rows, cols = A.shape[-2], A.shape[-1]
    k = min(rows, cols)
    Q, R = _split_qr(m, out, rows, cols)
    if rows < cols:
        X = m.getitem(t, idx=(Ellipsis, slice(None), slice(0, k)))
        tY = m.getitem(t, idx=(Ellipsis, slice(None), slice(k, cols)))
        U = m.getitem(R, idx=(Ellipsis, slice(None), slice(0, k)))
        V = m.getitem(R, idx=(Ellipsis, slice(None), slice(k, cols)))
        dQ, dU = square(m, Q, U, X, k, A.dtype)
        dV = m.matmul(adj(m, Q), tY - m.matmul(dQ, V))
        dR = m.cat(dU, dV, axis=-1)
    else:
        dQ, dR = square(m, Q, R, t, k, A.dtype)
    return m.cat(dQ, _mT(m, dR), axis=-2)


def _qr_square_jvp(m, Q, R, t, k, dtype):
    """C = Q^T dA R^-1 = Q^T dQ + dR R^-1: its strictly lower part is the skew-symmetric
    Omega = Q^T dQ's, so dR = (C - Omega) R and dQ = dA R^-1 - Q (C - Omega)."""
    # dA R^-1 by a triangular solve from the right: (R^-T dA^T)^T
    dARinv = _mT(m, m.solve_triangular(_mT(m, R), _mT(m, t), upper=False))
    C = m.matmul(_mT(m, Q), dARinv)
    low = C * _c(np.tril(np.ones((k, k), dtype), -1), C)
    omega = low - _mT(m, low)          # skew-symmetric part fixed by R's upper triangle
    dR = m.matmul(C - omega, R)
    dQ = dARinv - m.matmul(Q, C - omega)
    return dQ, dR


# Complex QR. LAPACK's geqrf makes R's diagonal real (its Householder scalars are real),
# which fixes each column's phase: Q^H dQ is skew-Hermitian and diag(dR R^-1) real, so
# the imaginary part of diag(Q^H dA R^-1) belongs to Q^H dQ. The rules are PyTorch's
# (linalg_qr_backward / linalg_qr_jvp) with conjugate transposes.

def _hermitian_from_lower(m, M, k, dtype):
    """tril(M, -1) + tril(M, -1)^H + Re diag(M): the adjoint of Omega's removal."""
    low = M * _c(np.tril(np.ones((k, k), dtype), -1), M)
    diag = m.cast(m.real(M), dtype=dtype) * _c(np.eye(k, dtype=dtype), M)
    return low + _mH(m, low) + diag


def _qr_square_vjp_c(m, Q, R, gQ, gR, k, dtype):
    """m >= n, PyTorch's convention: gA = (gQ + Q herm(M)) R^-H with M = R gR^H - gQ^H Q."""
    M = m.matmul(R, _mH(m, gR)) - m.matmul(_mH(m, gQ), Q)
    B = gQ + m.matmul(Q, _hermitian_from_lower(m, M, k, dtype))
    return _mH(m, m.solve_triangular(R, _mH(m, B), upper=True))


@_in_torch_convention
def _qr_vjp_c(m, G, out, A):
    return _qr_vjp_with(m, G, out, A, _qr_square_vjp_c, _mH)


def _qr_square_jvp_c(m, Q, R, t, k, dtype):
    """C = Q^H dA R^-1 = Q^H dQ + dR R^-1: Omega = Q^H dQ is skew-Hermitian, its strictly
    lower part C's and its diagonal i Im diag(C) (diag(dR R^-1) is real)."""
    dARinv = _mT(m, m.solve_triangular(_mT(m, R), _mT(m, t), upper=False))
    C = m.matmul(_mH(m, Q), dARinv)
    low = C * _c(np.tril(np.ones((k, k), dtype), -1), C)
    eye = _c(np.eye(k, dtype=dtype), C)
    omega = low - _mH(m, low) + m.cast(m.imag(C), dtype=dtype) * eye * 1j
    dR = m.matmul(C - omega, R)
    dQ = dARinv - m.matmul(Q, C - omega)
    return dQ, dR


qr = defop("qr", _qr, (_qr_vjp,), (_qr_jvp,), save_out=True, fresh=True)


# ---------------------------------------------------------------- pinv

def _pinv_cut(smax, A, atol, rtol):
    """max(atol, rtol * smax); the tolerances a number or (nested tuples) one per matrix,
    broadcast against the batch; rtol left out is 0 where atol > 0, else max(m, n) * eps."""
    xp = _ns(smax)

    def per_matrix(v):  # a number stays a Python float (no host array meets a device one)
        if not isinstance(v, tuple):
            return float(v)
        return xp.asarray(np.asarray(v, dtype=np.float64)[..., None])
    a = per_matrix(0.0 if atol is None else atol)
    if rtol is None:
        eps = max(A.shape[-2:]) * np.finfo(A.dtype).eps
        r = (0.0 if a > 0 else eps) if isinstance(a, float) else xp.where(a > 0, 0.0, eps)
    else:
        r = per_matrix(rtol)
    return np.maximum(a, r * smax)


def _pinv(A, *, atol=None, rtol=None, hermitian=False):
    if hermitian:  # from eigh of the lower triangle, as PyTorch: V diag(1/L) V^H
        L, V = np.linalg.eigh(A)
        S = np.abs(L)
        smax = S.max(axis=-1, keepdims=True) if S.shape[-1] else S
        keep = S > _pinv_cut(smax, A, atol, rtol)
        Linv = np.where(keep, 1.0 / np.where(keep, L, 1.0), 0.0).astype(L.dtype)
        return np.matmul(V * Linv[..., None, :], np.conj(np.swapaxes(V, -1, -2)))
    U, S, Vh = np.linalg.svd(A, full_matrices=False)
    smax = S[..., :1] if S.shape[-1] else S
    keep = S > _pinv_cut(smax, A, atol, rtol)
    Sinv = np.where(keep, 1.0 / np.where(keep, S, 1.0), 0.0).astype(S.dtype)
    if A.dtype.kind == "c":  # V S^+ U^H
        return np.matmul(np.conj(np.swapaxes(Vh, -1, -2)) * Sinv[..., None, :],
                         np.conj(np.swapaxes(U, -1, -2)))
    return np.matmul(np.swapaxes(Vh, -1, -2) * Sinv[..., None, :], np.swapaxes(U, -1, -2))


def _pinv_vjp(m, g, out, A, *, atol=None, rtol=None, hermitian=False):
    """Golub and Pereyra (constant rank): -P^T g P^T + (I - A P) g^T P P^T
    + P^T P g^T (I - P A)."""
    if A.dtype.kind == "c":
        return _pinv_vjp_c(m, g, out, A)
    P = out
    Pt = _mT(m, P)
    gt = _mT(m, g)
    r = -m.matmul(m.matmul(Pt, g), Pt)
    AP = m.matmul(A, P)
    r = r + m.matmul(gt, m.matmul(P, Pt)) - m.matmul(AP, m.matmul(gt, m.matmul(P, Pt)))
    PA = m.matmul(P, A)
    return r + m.matmul(m.matmul(Pt, P), gt) - m.matmul(m.matmul(m.matmul(Pt, P), gt), PA)


@_in_torch_convention
def _pinv_vjp_c(m, G, P, A):
    """The rule above in PyTorch's convention with conjugate transposes:
    -P^H G P^H + (I - A P) G^H P P^H + P^H P G^H (I - P A)."""
    Ph, Gh = _mH(m, P), _mH(m, G)
    PPh = m.matmul(P, Ph)
    PhP = m.matmul(Ph, P)
    r = -m.matmul(m.matmul(Ph, G), Ph)
    r = r + m.matmul(Gh, PPh) - m.matmul(m.matmul(A, P), m.matmul(Gh, PPh))
    return r + m.matmul(PhP, Gh) - m.matmul(m.matmul(PhP, Gh), m.matmul(P, A))


def _pinv_jvp_c(m, t, P, A):
    """dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P."""
    Ph, th = _mH(m, P), _mH(m, t)
    r = -m.matmul(m.matmul(P, t), P)
    PPh = m.matmul(P, Ph)
    r = r + m.matmul(PPh, th) - m.matmul(m.matmul(PPh, th), m.matmul(A, P))
    PhP = m.matmul(Ph, P)
    return r + m.matmul(th, PhP) - m.matmul(m.matmul(P, A), m.matmul(th, PhP))


def _pinv_jvp(m, t, out, A, *, atol=None, rtol=None, hermitian=False):
    if A.dtype.kind == "c":
        return _pinv_jvp_c(m, t, out, A)
    P = out
    Pt = _mT(m, P)
    tt = _mT(m, t)
    r = -m.matmul(m.matmul(P, t), P)
    r = r + m.matmul(m.matmul(P, Pt), tt) - m.matmul(m.matmul(m.matmul(P, Pt), tt),
                                                     m.matmul(A, P))
    return r + m.matmul(tt, m.matmul(Pt, P)) - m.matmul(m.matmul(P, A),
                                                        m.matmul(tt, m.matmul(Pt, P)))


pinv = defop("pinv", _pinv, (_pinv_vjp,), (_pinv_jvp,), save_out=True, fresh=True)


# ---------------------------------------------------------------- matrix_exp

def _expm(A):
    sl = _scipy_linalg() if A.__class__ is np.ndarray else None  # a device: the Pade below
    if A.__class__ is np.ndarray and A.dtype in (np.float32, np.complex64, np.float16):
        # computed in double and rounded once: SciPy's single-precision expm is ~20 ulps off
        # where torch's (a degree-18 Taylor in float32) is within about one
        return _expm(A.astype(np.complex128 if A.dtype.kind == "c" else np.float64)).astype(
            A.dtype)
    if sl is not None:
        return sl.expm(A)
    return _expm_pade(A)


def _expm_pade(A):
    """Scaling and squaring with a degree-13 Padé approximant (Higham 2005)."""
    b = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.)
    n = A.shape[-1]
    norm = np.max(np.sum(np.abs(A), axis=-2)) if A.size else 0.0
    s = max(0, int(np.ceil(np.log2(norm / 5.371920351148152))) if norm > 0 else 0)
    A = A / 2.0 ** s
    eye = np.broadcast_to(_ns(A).eye(n, dtype=A.dtype), A.shape)
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2
             + b[1] * eye)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 \
        + b[0] * eye
    R = np.linalg.solve(V - U, V + U)
    for _ in range(s):
        R = R @ R
    return R


def _frechet(m, A, E):
    """The Fréchet derivative of exp at A in direction E: the upper-right block of
    exp([[A, E], [0, A]]), itself made of ops (so it differentiates again)."""
    n = A.shape[-1]
    if E.ndim > A.ndim:
        A = m.expand(A, shape=E.shape[:-2] + A.shape[-2:])
    top = m.cat(A, E, axis=-1)
    bottom = m.cat(m.zeros_like(A), A, axis=-1)
    big = m.matrix_exp(m.cat(top, bottom, axis=-2))
    return m.getitem(big, idx=(Ellipsis, slice(0, n), slice(n, 2 * n)))


matrix_exp = defop(
    "matrix_exp", _expm,
    (lambda m, g, out, A: _frechet(m, _mT(m, A), g),),
    (lambda m, t, out, A: _frechet(m, A, t),), fresh=True)


# ---------------------------------------------------------------- lu

def perm_from_pivots(piv, m: int):
    """LAPACK's pivots (0-based row swaps, (..., k)) as the permutation they make: rows[i]
    is the row of A that becomes row i of P^T A."""
    piv = np.asarray(piv)
    if not piv.size:  # no swaps (an empty matrix or batch): the identity order
        return np.broadcast_to(np.arange(m), piv.shape[:-1] + (m,)).copy()
    flat = piv.reshape(-1, piv.shape[-1])
    rows = np.tile(np.arange(m), (flat.shape[0], 1))
    ar = np.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        p = flat[:, j]
        a, b = rows[ar, j].copy(), rows[ar, p]
        rows[ar, j], rows[ar, p] = b, a
    return rows.reshape(piv.shape[:-1] + (m,))


def _getrf(A):
    """(LU packed, 0-based pivots) by partial pivoting, batched: LAPACK's getrf per matrix
    when SciPy is there, else the same elimination (the first largest pivot, as idamax)
    vectorised over the batch in NumPy."""
    m, n = A.shape[-2:]
    k = min(m, n)
    if not A.size:  # nothing to eliminate (torch returns the empty factors too)
        return np.array(A, copy=True), np.zeros(A.shape[:-2] + (k,), np.int64)
    sl = _scipy_linalg()
    if sl is not None:
        getrf = sl.get_lapack_funcs("getrf", (A,))
        LU = np.empty(A.shape, getrf.dtype)
        piv = np.empty(A.shape[:-2] + (k,), np.int64)
        for i in np.ndindex(A.shape[:-2]):
            LU[i], p, _ = getrf(A[i])
            piv[i] = p[:k]
        return LU, piv
    LU = np.array(A, copy=True).reshape((-1, m, n))
    piv = np.zeros((LU.shape[0], k), np.int64)
    ar = np.arange(LU.shape[0])
    size = (lambda x: np.abs(x.real) + np.abs(x.imag)) if A.dtype.kind == "c" else np.abs
    for j in range(k):
        p = j + np.argmax(size(LU[:, j:, j]), axis=1)  # complex: |Re| + |Im|, as izamax
        piv[:, j] = p
        a, b = LU[ar, j].copy(), LU[ar, p]
        LU[ar, j], LU[ar, p] = b, a
        d = LU[:, j, j][:, None]
        LU[:, j + 1:, j] = np.where(d != 0, LU[:, j + 1:, j] / np.where(d != 0, d, 1), 0)
        LU[:, j + 1:, j + 1:] -= LU[:, j + 1:, j, None] * LU[:, None, j, j + 1:]
    return LU.reshape(A.shape), piv.reshape(A.shape[:-2] + (k,))


def _lu(A, *, check=False):
    """[LU | rows | pivots]: the packed factors (m x n), then the permutation as column n
    and LAPACK's 1-based pivots in the first k rows of column n + 1 (floats, exact). With
    `check`, a zero on U's diagonal raises (`rg.linalg.lu_factor`)."""
    host = A if A.__class__ is np.ndarray else _host(A)
    m, n = A.shape[-2:]
    k = min(m, n)
    LU, piv = _getrf(host)
    if check and k:
        zero = np.diagonal(LU[..., :k, :k], axis1=-2, axis2=-1) == 0
        if zero.any():
            where = np.argwhere(zero)[0]
            at = f" (batch element {tuple(int(i) for i in where[:-1])})" if A.ndim > 2 else ""
            j = int(where[-1]) + 1
            raise LinAlgError(f"linalg.lu_factor: U[{j},{j}] of the input{at} is zero, and "
                              "lu_solve would divide by it; to factor a singular matrix call "
                              "linalg.lu or linalg.lu_factor_ex")
    out = np.zeros(A.shape[:-2] + (m, n + 2), A.dtype)
    out[..., :n] = LU
    out[..., n] = perm_from_pivots(piv, m)
    out[..., :k, n + 1] = piv + 1
    return out if A.__class__ is np.ndarray else _c(out, A)


def _host(A):
    from ..devices import host
    return host(A)


def _split_lu(m, P, rows, cols):
    """(L, U, permutation matrix) of a packed `lu` output: A = P L U."""
    k = min(rows, cols)
    dt = P.dtype
    LU = m.getitem(P, idx=(Ellipsis, slice(None), slice(0, cols)))
    L = m.getitem(LU, idx=(Ellipsis, slice(None), slice(0, k)))
    L = L * _c(np.tril(np.ones((rows, k), dt), -1), L) + _c(np.eye(rows, k, dtype=dt), L)
    U = m.getitem(LU, idx=(Ellipsis, slice(0, k), slice(None)))
    U = U * _c(np.triu(np.ones((k, cols), dt)), U)
    perm = m.getitem(P, idx=(Ellipsis, slice(None), slice(cols, cols + 1)))
    perm = m.reshape(perm, shape=perm.shape[:-2] + (1, rows))
    Pm = m.cast(m.eq(perm, _c(np.arange(rows, dtype=dt).reshape(rows, 1), perm)), dtype=dt)
    return L, U, Pm


def _right_solve(m, X, U):
    """X U^-1 for upper triangular U (a left solve with U^T)."""
    return _mT(m, m.solve_triangular(_mT(m, U), _mT(m, X), upper=False))


def _right_solve_T(m, X, U):
    """X U^-T for upper triangular U (a left solve with U)."""
    return _mT(m, m.solve_triangular(U, _mT(m, X), upper=True))


def _lu_vjp(m, g, out, A, *, check=False):
    """PyTorch's linalg_lu_backward (Giles' rule for A = P L U, square, wide or tall): for
    square A, gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T; a wide A's extra columns
    of U and a tall A's extra rows of L add their own terms."""
    rows, cols = A.shape[-2], A.shape[-1]
    k = min(rows, cols)
    dt = A.dtype
    L, U, Pm = _split_lu(m, out, rows, cols)
    G = m.getitem(g, idx=(Ellipsis, slice(None), slice(0, cols)))
    gL = m.getitem(G, idx=(Ellipsis, slice(None), slice(0, k)))
    gL = gL * _c(np.tril(np.ones((rows, k), dt), -1), gL)
    gU = m.getitem(G, idx=(Ellipsis, slice(0, k), slice(None)))
    gU = gU * _c(np.triu(np.ones((k, cols), dt)), gU)
    low = _c(np.tril(np.ones((k, k), dt), -1), G)
    up = _c(np.triu(np.ones((k, k), dt)), G)
    if rows == cols:
        M = m.matmul(_mT(m, L), gL) * low + m.matmul(gU, _mT(m, U)) * up
        gA = m.solve_triangular(_mT(m, L), _right_solve_T(m, M, U), upper=True,
                                unit=True)
    elif rows < cols:  # A = L [U1 | U2]
        U1 = m.getitem(U, idx=(Ellipsis, slice(None), slice(0, k)))
        U2 = m.getitem(U, idx=(Ellipsis, slice(None), slice(k, cols)))
        gU1 = m.getitem(gU, idx=(Ellipsis, slice(None), slice(0, k)))
        gU2 = m.getitem(gU, idx=(Ellipsis, slice(None), slice(k, cols)))
        M = (m.matmul(_mT(m, L), gL) - m.matmul(gU2, _mT(m, U2))) * low \
            + m.matmul(gU1, _mT(m, U1)) * up
        gA = m.cat(_right_solve_T(m, M, U1), gU2, axis=-1)
        gA = m.solve_triangular(_mT(m, L), gA, upper=True, unit=True)
    else:  # A = [L1; L2] U
        L1 = m.getitem(L, idx=(Ellipsis, slice(0, k), slice(None)))
        L2 = m.getitem(L, idx=(Ellipsis, slice(k, rows), slice(None)))
        gL1 = m.getitem(gL, idx=(Ellipsis, slice(0, k), slice(None)))
        gL2 = m.getitem(gL, idx=(Ellipsis, slice(k, rows), slice(None)))
        M = m.matmul(_mT(m, L1), gL1) * low \
            + (m.matmul(gU, _mT(m, U)) - m.matmul(_mT(m, L2), gL2)) * up
        gA = m.cat(m.solve_triangular(_mT(m, L1), M, upper=True, unit=True), gL2, axis=-2)
        gA = _right_solve_T(m, gA, U)
    return m.matmul(Pm, gA)


def _lu_jvp(m, t, out, A, *, check=False):
    """With t' = P^T dA and X = L1^-1 t'_1 U1^-1 on the square block: dL1 = L1 tril(X, -1),
    dU1 = triu(X) U1; a wide A's dU2 = L^-1 (t'_2 - dL U2), a tall A's
    dL2 = (t'_2 - L2 dU) U^-1. Packed like the output, zero for the permutation."""
    rows, cols = A.shape[-2], A.shape[-1]
    k = min(rows, cols)
    dt = A.dtype
    L, U, Pm = _split_lu(m, out, rows, cols)
    tp = m.matmul(_mT(m, Pm), t)
    low = _c(np.tril(np.ones((k, k), dt), -1), t)
    up = _c(np.triu(np.ones((k, k), dt)), t)
    L1 = m.getitem(L, idx=(Ellipsis, slice(0, k), slice(None)))
    U1 = m.getitem(U, idx=(Ellipsis, slice(None), slice(0, k)))
    t1 = m.getitem(tp, idx=(Ellipsis, slice(0, k), slice(0, k)))
    X = _right_solve(m, m.solve_triangular(L1, t1, upper=False, unit=True), U1)
    dL1 = m.matmul(L1, X * low)
    dU1 = m.matmul(X * up, U1)
    packed = dL1 + dU1
    if cols > k:
        U2 = m.getitem(U, idx=(Ellipsis, slice(None), slice(k, cols)))
        t2 = m.getitem(tp, idx=(Ellipsis, slice(None), slice(k, cols)))
        dU2 = m.solve_triangular(L, t2 - m.matmul(dL1, U2), upper=False, unit=True)
        packed = m.cat(packed, dU2, axis=-1)
    elif rows > k:
        L2 = m.getitem(L, idx=(Ellipsis, slice(k, rows), slice(None)))
        t2 = m.getitem(tp, idx=(Ellipsis, slice(k, rows), slice(None)))
        dL2 = _right_solve(m, t2 - m.matmul(L2, dU1), U)
        packed = m.cat(packed, dL2, axis=-2)
    zeros = m.getitem(packed, idx=(Ellipsis, slice(None), slice(0, 1))) * 0.0
    return m.cat(packed, zeros, zeros, axis=-1)


lu = defop("lu", _lu, (_lu_vjp,), (_lu_jvp,), save_out=True, reads=(), fresh=True)
"""A = P L U by partial pivoting, packed as `_lu` says; `rg.linalg.lu_factor` and kin slice it.
The permutation is piecewise constant: it carries no derivative."""


# ---------------------------------------------------------------- eig

def _eig(A):
    """[eigenvalues; eigenvectors] (complex, (n + 1) x n) by LAPACK's geev, as PyTorch's
    order; each eigenvector of unit norm with its largest-magnitude entry real positive (a
    smooth choice of the free phase, so every output has a derivative)."""
    host = A if A.__class__ is np.ndarray else _host(A)
    cdt = np.result_type(A.dtype, np.complex64)
    w, V = np.linalg.eig(host)
    V = V.astype(cdt, copy=False)
    if V.shape[-1] == 0:  # 0 x 0 matrices: nothing to normalise
        out = np.zeros(V.shape[:-2] + (1, 0), cdt)
        return out if A.__class__ is np.ndarray else _c(out, A)
    big = np.take_along_axis(V, np.argmax(np.abs(V), axis=-2)[..., None, :], axis=-2)
    size = np.abs(big)
    V = V * (np.conj(big) / np.where(size == 0, 1, size))
    out = np.concatenate([w.astype(cdt, copy=False)[..., None, :], V], axis=-2)
    return out if A.__class__ is np.ndarray else _c(out, A)


def _split_eig(m, P, n):
    w = m.reshape(m.getitem(P, idx=(Ellipsis, slice(0, 1), slice(None))),
                  shape=P.shape[:-2] + (n,))
    return w, m.getitem(P, idx=(Ellipsis, slice(1, n + 1), slice(None)))


def _phase_rows(m, V, n):
    """(mask of each column's largest-magnitude entry, that entry, real) of the eigenvectors
    (piecewise constant: the phase is fixed there)."""
    rdt = np.finfo(V.dtype).dtype
    if V.shape[-2] == 0:  # vectors with no entries (empty matrices): an empty mask
        return m.real(V), m.sum(m.real(V), axis=-2)
    big = m.argmax(m.cabs(V), axis=-2, keepdims=True)
    mask = m.cast(m.eq(big, _c(np.arange(n).reshape(n, 1), V)), dtype=rdt)
    return mask, m.sum(m.real(V) * mask, axis=-2)


def _eig_vjp(m, g, out, A):
    """PyTorch's linalg_eig_backward in the table's convention, after the phase choice:
    c_A = V^-T (M) V^T, M = (V^T c_V - V^T conj(V) diag(Re diag(V^T c_V))) / E off the
    diagonal (E_ij = w_j - w_i), c_w on it; c_V first gets the part the phase choice
    adds at each column's fixed entry (-i Im(sum_j c_ji v_ji) / |v_ki|)."""
    n = A.shape[-1]
    eye = _c(np.eye(n, dtype=A.dtype), g)
    w, V = _split_eig(m, out, n)
    cw, cV = _split_eig(m, g, n)
    mask, r = _phase_rows(m, V, n)
    s = m.sum(cV * V, axis=-2)
    cV = cV + mask * _row(m, m.imag(s) / r) * -1j
    VtcV = m.matmul(_mT(m, V), cV)
    re = m.real(m.sum(VtcV * eye, axis=-1))
    M = VtcV - m.matmul(_mT(m, V), m.conj(V) * _row(m, re))
    E = _row(m, w) - _colv(m, w) + eye
    M = M / E * (1 - eye) + _row(m, cw) * eye
    cA = m.solve(_mT(m, V), m.matmul(M, _mT(m, V)))
    return cA if A.dtype.kind == "c" else m.real(cA)  # a real A's cotangent is real


def _eig_jvp(m, t, out, A):
    """dP = V^-1 dA V: dw = diag(dP); dV = V C, C = dP / E off the diagonal and
    C_ii = -Re(V^H V C)_ii (unit norm); then the phase choice's -i v_i Im(dv_ki) / |v_ki|."""
    n = A.shape[-1]
    eye = _c(np.eye(n, dtype=A.dtype), t)
    w, V = _split_eig(m, out, n)
    dP = m.solve(V, m.matmul(t, V))
    dw = m.sum(dP * eye, axis=-1)
    C = dP * (1 - eye) / (_row(m, w) - _colv(m, w) + eye)
    VhV = m.matmul(_mT(m, m.conj(V)), V)
    C = C - eye * _row(m, m.real(m.sum(m.matmul(VhV, C) * eye, axis=-2)))
    dV = m.matmul(V, C)
    mask, r = _phase_rows(m, V, n)
    dV = dV - V * _row(m, m.imag(m.sum(dV * mask, axis=-2)) / r) * 1j
    return m.cat(m.reshape(dw, shape=dw.shape[:-1] + (1, n)), dV, axis=-2)


eig = defop("eig", _eig, (_eig_vjp,), (_eig_jvp,), save_out=True, reads=(), fresh=True)
"""A = V diag(w) V^-1 for a general square matrix, complex results packed as `_eig` says."""
