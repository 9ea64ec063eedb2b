"""The LAPACK paths of cholesky, its gradient and solve_triangular (orders >= 32, and every
memory layout) against PyTorch, and their errors."""

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd.ops import lapack_kernels
from retrograd.ops.linalg_decomp import _LAPACK_FROM

pytestmark = pytest.mark.skipif(not lapack_kernels.available(np.zeros(1)),
                                reason="SciPy is an optional dependency")


def _spd(rng, batch, n, dtype=np.float64):
    x = rng.standard_normal(batch + (n, n)) / np.sqrt(n)
    return (x @ np.swapaxes(x, -1, -2) + np.eye(n)).astype(dtype)


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
@pytest.mark.parametrize("n", [_LAPACK_FROM, 70, lapack_kernels._SYGST_FROM + 3])
def test_cholesky_value_and_gradient_match_torch(batch, n):
    """Orders on both sides of the two ways the gradient's solves are done."""
    rng = np.random.default_rng(n + len(batch))
    S = _spd(rng, batch, n)
    W = rng.standard_normal(batch + (n, n))
    a = rg.tensor(S, requires_grad=True)
    L = rg.linalg.cholesky(a)
    (L * rg.tensor(W)).sum().backward()
    t = torch.tensor(S, requires_grad=True)
    Lt = torch.linalg.cholesky(t)
    (Lt * torch.tensor(W)).sum().backward()
    np.testing.assert_allclose(L.numpy(), Lt.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_cholesky_float32_stays_float32_and_matches_torch():
    rng = np.random.default_rng(3)
    S = _spd(rng, (), 48, np.float32)
    a = rg.tensor(S, requires_grad=True)
    L = rg.linalg.cholesky(a)
    L.sum().backward()
    t = torch.tensor(S, requires_grad=True)
    torch.linalg.cholesky(t).sum().backward()
    assert L.dtype == rg.float32 and a.grad.dtype == rg.float32
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=2e-3, atol=2e-4)


def test_loglik_gradient_is_the_closed_form():
    """-1/2 y^T S^-1 y - sum log diag L has gradient (a a^T - S^-1) / 2, a = S^-1 y."""
    rng = np.random.default_rng(5)
    n = 80
    S, y = _spd(rng, (), n), rng.standard_normal(n)
    St = rg.tensor(S, requires_grad=True)
    L = rg.linalg.cholesky(St)
    z = rg.linalg.solve_triangular(L, rg.tensor(y).reshape(-1, 1), upper=False)
    (-0.5 * (z * z).sum() - rg.log(rg.diagonal(L, 0, -2, -1)).sum()).backward()
    a = np.linalg.solve(S, y)
    np.testing.assert_allclose(St.grad.numpy(), 0.5 * (np.outer(a, a) - np.linalg.inv(S)),
                               rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_every_layout_matches_torch(upper, layout, unit):
    rng = np.random.default_rng(7)
    n = 40
    A = np.tril(rng.standard_normal((n, n))) + 4 * np.eye(n)
    A = A.T.copy() if upper else A
    if layout == "F":
        A = np.asfortranarray(A)
    elif layout == "strided":
        A = np.repeat(np.repeat(A, 2, 0), 2, 1)[::2, ::2]
    B = rng.standard_normal((n, 5))
    a, b = rg.tensor(A, requires_grad=True), rg.tensor(B, requires_grad=True)
    x = rg.linalg.solve_triangular(a, b, upper=upper, unitriangular=unit)
    (x * x).sum().backward()
    ta, tb = torch.tensor(A, requires_grad=True), torch.tensor(B, requires_grad=True)
    tx = torch.linalg.solve_triangular(ta, tb, upper=upper, unitriangular=unit)
    (tx * tx).sum().backward()
    np.testing.assert_allclose(x.numpy(), tx.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_solve_triangular_batched_and_broadcast_matches_torch():
    rng = np.random.default_rng(9)
    A = np.tril(rng.standard_normal((3, 1, 36, 36))) + 5 * np.eye(36)
    B = rng.standard_normal((3, 2, 36, 4))
    x = rg.linalg.solve_triangular(rg.tensor(A), rg.tensor(B), upper=False)
    tx = torch.linalg.solve_triangular(torch.tensor(A), torch.tensor(B), upper=False)
    np.testing.assert_allclose(x.numpy(), tx.numpy(), rtol=1e-10, atol=1e-12)


def test_not_positive_definite_names_the_batch_element_and_minor():
    rng = np.random.default_rng(11)
    S = _spd(rng, (3,), 40)
    S[1, 20, 20] = -50.0
    with pytest.raises(RuntimeError, match=r"batch element \(1,\).*order 21"):
        rg.linalg.cholesky(rg.tensor(S))


def test_singular_triangular_matrix_names_the_zero_diagonal():
    A = np.tril(np.ones((2, 40, 40)))
    A[1, 12, 12] = 0.0
    with pytest.raises(RuntimeError, match=r"batch element \(1,\).*diagonal element 13"):
        rg.linalg.solve_triangular(rg.tensor(A), rg.tensor(np.ones((2, 40, 1))), upper=False)


def test_without_scipy_the_numpy_paths_give_the_same_gradients(monkeypatch):
    """SciPy is optional: with the kernels unavailable, cholesky and solve_triangular take
    NumPy's routines and still match PyTorch."""
    rng = np.random.default_rng(13)
    n = 48
    S, y = _spd(rng, (), n), rng.standard_normal((n, 2))
    monkeypatch.setattr(lapack_kernels, "available", lambda *a: False)
    St = rg.tensor(S, requires_grad=True)
    L = rg.linalg.cholesky(St)
    z = rg.linalg.solve_triangular(L, rg.tensor(y), upper=False)
    ((z * z).sum() + rg.log(rg.diagonal(L, 0, -2, -1)).sum()).backward()
    t = torch.tensor(S, requires_grad=True)
    Lt = torch.linalg.cholesky(t)
    zt = torch.linalg.solve_triangular(Lt, torch.tensor(y), upper=False)
    ((zt * zt).sum() + torch.log(torch.diagonal(Lt)).sum()).backward()
    np.testing.assert_allclose(St.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-10)
