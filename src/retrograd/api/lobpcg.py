"""`rg.lobpcg`: the k largest (or smallest) eigenpairs of a symmetric positive-definite
matrix, or of the generalized problem A x = lambda B x, with PyTorch's `torch.lobpcg`
arguments and results.

torch iterates LOBPCG to a tolerance; retrograd's matrices are dense, so this solves the
problem exactly with `rg.linalg.eigh` (after the Cholesky change of basis L^-1 A L^-T for B)
and returns the eigenpairs LOBPCG converges to. The iteration's own arguments (X as the
starting block, n, iK, niter, tol, method, tracker, ortho_*) are accepted and checked as
torch does but steer nothing. Gradients, forward mode, vmap and `rg.jit` are those of eigh,
cholesky and the triangular solve; eigenvectors are defined up to sign, as torch's are.
"""

from __future__ import annotations

from ..primitive import ArgumentError
from ..tensor import Tensor
from ._args import _t

__all__ = ["lobpcg"]


def lobpcg(A, k: int | None = None, B=None, X=None, n: int | None = None, iK=None,  # noqa: N803
           niter: int | None = None, tol: float | None = None, largest: bool | None = None,
           method: str | None = None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None) -> tuple[Tensor, Tensor]:
    """(E, X): the k largest eigenvalues (descending; the smallest, ascending, with
    largest=False) of the symmetric matrices A, of A x = E B x when B is given, and their
    eigenvectors (B-orthonormal), batched over leading dimensions; at most n (X's columns)
    pairs, and m >= 3 n is required, as torch asks. Like `torch.lobpcg`, solved exactly (see
    the module)."""
    from ..linalg import cholesky, eigh, solve_triangular
    A = _t(A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ArgumentError(f"lobpcg(): A must be a square matrix or a batch of them, got shape "
                            f"{A.shape}")
    if A.dtype.kind != "f":
        raise ArgumentError(f"lobpcg(): A must be a floating tensor, got {A.dtype}")
    m = A.shape[-1]
    if X is not None:  # torch's block size: X's columns, else n (default k)
        X = _t(X)
        if X.ndim < 2 or X.shape[-2] != m:
            raise ArgumentError(f"lobpcg(): X must have shape (*, {m}, n), got {X.shape}")
        block = X.shape[-1]
        k = block if k is None else int(k)
    else:
        k = 1 if k is None else int(k)
        block = k if n is None else int(n)
    if k < 1 or block < 1:
        raise ArgumentError(f"lobpcg(): k and n must be positive, got k={k}, n={block}")
    if m < 3 * block:
        raise ArgumentError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) "
                            f"is smaller than 3 x the number of requested eigenpairs (={block})")
    k = min(k, block)  # torch returns at most the block's eigenpairs
    largest = True if largest is None else bool(largest)
    if B is None:
        E, V = eigh(A)
    else:
        B = _t(B)
        if B.shape[-2:] != (m, m):
            raise ArgumentError(f"lobpcg(): B must be {m} x {m} like A, got shape {B.shape}")
        L = cholesky(B)
        C = solve_triangular(L, solve_triangular(L, A, upper=False).mT, upper=False)
        E, W = eigh(C)
        V = solve_triangular(L.mT, W, upper=True)
    if largest:
        return E[..., m - k:].flip(-1), V[..., m - k:].flip(-1)
    return E[..., :k], V[..., :k]
