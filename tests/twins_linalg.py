"""PyTorch twins of the linear-algebra family (`ops/linalg_decomp.py`), for the generated
tests: the packed results (eigh, svd, qr) and the sign convention rebuilt from torch.linalg."""

import torch


def _sign_fix(V):
    """Each column's largest-magnitude entry positive (a constant, as in the op)."""
    with torch.no_grad():
        big = V.abs().argmax(dim=-2, keepdim=True)
        s = torch.sign(torch.gather(V, -2, big))
        s[s == 0] = 1
    return s


def _sym(A):
    return (A + A.mT) / 2


def _eigh(A):
    w, V = torch.linalg.eigh(_sym(A))
    return torch.cat([w.unsqueeze(-2), V * _sign_fix(V)], dim=-2)


def _svd(A):
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    s = _sign_fix(U)
    return torch.cat([U * s, S.unsqueeze(-2), Vh.mT * s], dim=-2)


def _det(A):
    """det as sign * exp(logabsdet): torch.linalg.det's float32 backward fails under a float64
    default dtype (the generated tests' setting)."""
    sign, logabs = torch.linalg.slogdet(A)
    return sign * torch.exp(logabs)


def _qr(A):
    Q, R = torch.linalg.qr(A)
    return torch.cat([Q, R.mT], dim=-2)


def _lu(A):
    """[LU | rows of P^T A | 1-based pivots] as the op packs them."""
    LU, piv = torch.linalg.lu_factor(A)
    rows = torch.linalg.lu(A.detach())[0].argmax(dim=-2).to(A.dtype)
    k = min(A.shape[-2:])
    pv = torch.zeros(A.shape[:-1], dtype=A.dtype)
    pv[..., :k] = piv.to(A.dtype)
    return torch.cat([LU, rows.unsqueeze(-1), pv.unsqueeze(-1)], dim=-1)


def _eig(A):
    """Eigenvalues above eigenvectors, each with its largest entry made real positive (the
    phase factor taken from the vector itself, so the result is phase-free, as the op's)."""
    w, V = torch.linalg.eig(A)
    with torch.no_grad():
        big = V.abs().argmax(dim=-2, keepdim=True)
    p = torch.gather(V, -2, big)
    return torch.cat([w.unsqueeze(-2), V * (p.conj() / p.abs())], dim=-2)


TWINS = {
    "inv": torch.linalg.inv, "det": _det,
    "logabsdet": lambda A: torch.linalg.slogdet(A)[1],
    "slogdet_sign": lambda A: torch.linalg.slogdet(A)[0] + 0 * A.sum((-2, -1)),
    "solve": torch.linalg.solve,
    "solve_triangular": lambda A, B, upper, unit: torch.linalg.solve_triangular(
        A, B, upper=upper, unitriangular=unit),
    "cholesky": lambda A: torch.linalg.cholesky(_sym(A)),
    "eigh": _eigh, "svd": _svd, "qr": _qr,
    "pinv": lambda A, atol, rtol: torch.linalg.pinv(A, atol=atol, rtol=rtol),
    "matrix_exp": torch.linalg.matrix_exp, "lu": _lu, "eig": _eig,
}
