"""linalg, special, fft and distribution cases found different from torch by a
differential sweep: eigh/eigvalsh read one triangle (UPLO), vector norms of negative order
at a zero, logit outside [0, 1], lgamma(-inf), fftfreq(0), matrix_power(A, 0) on the
graph, and Kumaraswamy's cdf and icdf. Each runs under torch and retrograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg

rng = np.random.default_rng(5)
NONSYM = rng.standard_normal((2, 4, 4))
NONSYM_C = NONSYM + 1j * rng.standard_normal((2, 4, 4))


def _grads(fn, *arrays):
    out = []
    for L in (torch, rg):
        ts = [L.tensor(a, requires_grad=True) for a in arrays]
        r = fn(L, *ts)
        rs = r if isinstance(r, tuple) else (r,)
        w = [np.asarray(np.random.default_rng(1).standard_normal(tuple(v.shape)))
             for v in rs]
        total = sum((v * L.tensor(wi)).sum() if not v.is_complex() else
                    (v.abs() * L.tensor(wi)).sum() for v, wi in zip(rs, w))
        total.backward()
        out.append([v.detach().numpy() for v in rs] + [t.grad.numpy() for t in ts])
    return out


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("data", [NONSYM, NONSYM_C], ids=["real", "complex"])
def test_eigvalsh_reads_one_triangle(uplo, data):
    t, r = _grads(lambda L, a: L.linalg.eigvalsh(a, UPLO=uplo), data)
    for a, b in zip(r, t):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_eigh_eigenvalues_read_one_triangle():
    for uplo in "LU":
        t = torch.linalg.eigh(torch.tensor(NONSYM), UPLO=uplo).eigenvalues.numpy()
        r = rg.linalg.eigh(rg.tensor(NONSYM), UPLO=uplo).eigenvalues.numpy()
        np.testing.assert_allclose(r, t, rtol=1e-10)


@pytest.mark.parametrize("order", [-1.0, -2.0, -0.5])
def test_negative_order_norm_at_a_zero_has_a_zero_gradient(order):
    x = np.array([[1.0, 0.0, 2.0], [1.0, 3.0, 2.0]])
    t, r = _grads(lambda L, v: L.linalg.vector_norm(v, order, dim=1), x)
    for a, b in zip(r, t):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_logit_outside_the_unit_interval_has_a_nan_gradient():
    x = np.array([1.2, 0.5, 0.0, -0.1, 0.9])
    t, r = _grads(lambda L, v: L.special.logit(v), x)
    for a, b in zip(r, t):
        np.testing.assert_allclose(a, b, rtol=1e-12, equal_nan=True)


def test_small_edges():
    for L in (torch, rg):
        assert L.lgamma(L.tensor([-np.inf])).item() == np.inf
        assert L.fft.fftfreq(0).shape == (0,)
        assert np.isnan(L.fft.rfftfreq(0).numpy()).all() and L.fft.rfftfreq(0).shape == (1,)
    for L in (torch, rg):
        A = L.tensor(rng.standard_normal((2, 3, 3)), requires_grad=True)
        P = L.linalg.matrix_power(A, 0)
        assert P.requires_grad
        P.sum().backward()
        np.testing.assert_array_equal(A.grad.numpy(), np.zeros((2, 3, 3)))
        np.testing.assert_array_equal(P.detach().numpy(), np.broadcast_to(np.eye(3), (2, 3, 3)))


def test_kumaraswamy_cdf_and_icdf_match_torch():
    a, b = np.array([2.0, 0.7]), np.array([3.0, 1.5])
    x, q = np.array([0.3, 0.8]), np.array([0.3, 0.9])

    def fn(L, ta, tb):
        d = L.distributions.Kumaraswamy(ta, tb)
        return d.cdf(L.tensor(x)), d.icdf(L.tensor(q))

    t, r = _grads(fn, a, b)
    for u, v in zip(r, t):
        np.testing.assert_allclose(u, v, rtol=1e-12)


def test_multinomial_with_a_negative_count_is_refused_as_torch():
    for L in (torch, rg):
        with pytest.raises(ValueError, match="total_count"):
            L.distributions.Multinomial(-1, probs=L.tensor([0.5, 0.5]))
