"""`linalg.pinv(hermitian=True)` and `linalg.matrix_rank(hermitian=True)` as PyTorch
computes them: from `eigh` of the matrix the lower triangle describes (so a non-symmetric
input reads as that one), with pinv's own gradient."""

import numpy as np
import pytest

import retrograd as rg

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("kw", [{}, {"atol": 0.5}, {"rtol": 0.3}, {"rcond": 0.2}])
def test_pinv_hermitian_values_and_gradients(dtype, symmetric, kw):
    rng = np.random.default_rng(7)
    B = rng.normal(size=(3, 4, 4))
    G = rng.normal(size=(3, 4, 4))
    if dtype == "complex128":
        B = B + 1j * rng.normal(size=(3, 4, 4))
        G = G + 1j * rng.normal(size=(3, 4, 4))
    A = (B + np.conj(np.swapaxes(B, -1, -2))) / 2 if symmetric else B
    ta = torch.tensor(A, requires_grad=True)
    want = torch.linalg.pinv(ta, hermitian=True, **kw)
    (want * torch.tensor(G)).real.sum().backward()
    ra = rg.tensor(A, requires_grad=True)
    got = rg.linalg.pinv(ra, hermitian=True, **kw)
    (got * rg.tensor(G)).real.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-9,
                               atol=1e-11)
    np.testing.assert_allclose(ra.grad.numpy(), ta.grad.numpy(), rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("kw", [{}, {"atol": 0.9}, {"rtol": 0.4}, {"tol": 0.9}])
def test_matrix_rank_hermitian_reads_the_lower_triangle(kw):
    rng = np.random.default_rng(3)
    q = np.linalg.qr(rng.normal(size=(5, 5)))[0]
    A = q @ np.diag([3.0, -2.0, 1.0, 0.5, 1e-12]) @ q.T
    A = np.tril(A) + np.triu(rng.normal(size=(5, 5)), 1)  # the upper part is not read
    want = torch.linalg.matrix_rank(torch.tensor(A), hermitian=True, **kw)
    got = rg.linalg.matrix_rank(rg.tensor(A), hermitian=True, **kw)
    assert int(got) == int(want)
