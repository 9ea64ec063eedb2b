"""Samples for the linear-algebra family (`ops/linalg_decomp.py`): well-conditioned
matrices, symmetric positive-definite ones for cholesky, symmetric ones with well-separated
eigenvalues for eigh, and matrices with well-separated singular values for svd."""

from __future__ import annotations

import numpy as np


def _well(rng, shape):
    """A matrix (batch) close to a multiple of the identity: well-conditioned."""
    n = shape[-1]
    return rng.uniform(-0.5, 0.5, shape) + np.eye(n) * 2.0


def _spd(rng, shape):
    x = rng.uniform(-1, 1, shape)
    return x @ np.swapaxes(x, -1, -2) + np.eye(shape[-1]) * shape[-1]


def _spread(rng, shape, values):
    """Q diag(values) Q^T (square) or U diag(values) V^T: known, separated spectra."""
    rows, cols = shape[-2:]
    k = min(rows, cols)
    U = np.linalg.qr(rng.standard_normal(shape[:-2] + (rows, rows)))[0][..., :k]
    V = np.linalg.qr(rng.standard_normal(shape[:-2] + (cols, cols)))[0][..., :k]
    return (U * np.asarray(values[:k])) @ np.swapaxes(V, -1, -2)


def _square_cases(rng, draw=_well):
    return [([draw(rng, (3, 3))], {}), ([draw(rng, (2, 4, 4))], {})]


def _solve(rng):
    return [([_well(rng, (3, 3)), rng.standard_normal((3, 2))], {}),
            ([_well(rng, (2, 3, 3)), rng.standard_normal((2, 3, 1))], {})]


def _solve_triangular(rng):
    cases = []
    for upper in (True, False):
        for unit in (False, True):
            cases.append(([_well(rng, (3, 3)), rng.standard_normal((3, 2))],
                          {"upper": upper, "unit": unit}))
    cases.append(([_well(rng, (2, 3, 3)), rng.standard_normal((2, 3, 2))],
                  {"upper": False, "unit": False}))
    return cases


def _eigh(rng):
    def sym(rng, shape):
        n = shape[-1]
        Q = np.linalg.qr(rng.standard_normal(shape))[0]
        return (Q * np.arange(1.0, n + 1)) @ np.swapaxes(Q, -1, -2)
    return _square_cases(rng, sym)


def _svd(rng):
    return [([_spread(rng, s, [3.0, 2.0, 1.0, 0.5])], {})
            for s in [(4, 3), (3, 4), (3, 3), (2, 4, 3)]]


def _qr(rng):
    return [([_well(rng, (3, 3))], {}), ([_spread(rng, (4, 3), [3.0, 2.0, 1.0])], {}),
            ([_well(rng, (3, 3))[:, :] @ np.concatenate([np.eye(3), rng.standard_normal(
                (3, 1))], axis=1)], {}),
            ([_spread(rng, (2, 4, 3), [3.0, 2.0, 1.0])], {})]


def _pinv(rng):
    return [([_spread(rng, (4, 3), [3.0, 2.0, 1.0])], {"atol": None, "rtol": None}),
            ([_spread(rng, (3, 4), [2.0, 1.5, 1.0])], {"atol": None, "rtol": None}),
            ([_spread(rng, (2, 3, 3), [2.0, 1.5, 1.0])], {"atol": None, "rtol": 1e-6})]


def _matrix_exp(rng):
    return [([rng.uniform(-0.6, 0.6, (3, 3))], {}), ([rng.uniform(-0.6, 0.6, (2, 2, 2))], {})]


def _lu(rng):
    """Square, batched, wide and tall; entries spread apart so no pivot choice is close."""
    return [([rng.uniform(-2, 2, s)], {}) for s in [(3, 3), (2, 4, 4), (3, 5), (5, 3)]]


def _eig(rng):
    """General matrices (a complex pair among the eigenvalues of the first) with separated
    eigenvalues and a clear largest entry in each eigenvector."""
    rot = np.array([[0.6, -1.4, 0.0], [1.4, 0.6, 0.0], [0.0, 0.0, -1.5]])
    return [([rot + rng.uniform(-0.1, 0.1, (3, 3))], {}),
            ([np.diag([1.0, -2.0, 3.0, 0.5]) + rng.uniform(-0.3, 0.3, (2, 4, 4))], {})]


SAMPLES = {
    "inv": _square_cases, "det": _square_cases, "logabsdet": _square_cases,
    "slogdet_sign": lambda rng: [([-_well(rng, (3, 3))], {}), ([_well(rng, (2, 3, 3))], {})],
    "solve": _solve, "solve_triangular": _solve_triangular,
    "cholesky": lambda rng: _square_cases(rng, _spd), "eigh": _eigh, "svd": _svd, "qr": _qr,
    "pinv": _pinv, "matrix_exp": _matrix_exp, "lu": _lu, "eig": _eig,
}
