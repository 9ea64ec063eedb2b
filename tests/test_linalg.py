"""rg.linalg against torch.linalg (values and gradients, batched, float32 and float64), finite
differences (first and second order), forward mode, worked examples with closed forms, and
bad input."""

import math

import numpy as np
import pytest
import torch

import retrograd as rg

RNG = np.random.default_rng(0)


def _well(*shape):
    return RNG.uniform(-0.5, 0.5, shape) + 2.0 * np.eye(*shape[-2:])


def _spd(*shape):
    x = RNG.uniform(-1, 1, shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def _sym_spread(*shape):
    q = np.linalg.qr(RNG.standard_normal(shape))[0]
    return (q * np.arange(1.0, shape[-1] + 1)) @ np.swapaxes(q, -1, -2)


def _proj(V):
    """V diag(1..k) V^T: invariant to the sign of each column."""
    return (V * np.arange(1.0, V.shape[-1] + 1)) @ np.swapaxes(V, -1, -2) if isinstance(
        V, np.ndarray) else (V * torch.arange(1.0, V.shape[-1] + 1, dtype=V.dtype)) @ V.mT


def _sym(A):
    """eigh reads one triangle and hands A a symmetric gradient, as torch's (not the
    derivative of reading one triangle): gradchecks go through a symmetric matrix."""
    return (A + A.mT) / 2


def _eigh(M, A):
    w, V = M.linalg.eigh(_sym(A))
    return w, _sq(M, V)


def _sq(M, V):
    k = V.shape[-1]
    scale = (M.arange(1, k + 1) * 1.0).to(V.dtype) if M is torch else \
        rg.tensor(np.arange(1.0, k + 1)).to(V.dtype)
    return (V * scale) @ V.mT


def _svd(M, A):
    U, S, Vh = M.linalg.svd(A, full_matrices=False)
    return _sq(M, U), S, _sq(M, Vh.mT), U @ Vh


CASES = {
    "det": (lambda M, A: M.linalg.det(A), [_well(3, 3)]),
    "det_batched": (lambda M, A: M.linalg.det(A), [_well(2, 3, 4, 4)]),
    "slogdet": (lambda M, A: M.linalg.slogdet(A).logabsdet, [-_well(2, 3, 3)]),
    "inv": (lambda M, A: M.linalg.inv(A), [_well(2, 3, 3)]),
    "solve": (lambda M, A, B: M.linalg.solve(A, B), [_well(3, 3), RNG.standard_normal((3, 2))]),
    "solve_vector": (lambda M, A, B: M.linalg.solve(A, B), [_well(2, 3, 3),
                                                            RNG.standard_normal((2, 3))]),
    "solve_broadcast": (lambda M, A, B: M.linalg.solve(A, B), [_well(3, 3),
                                                               RNG.standard_normal((4, 3, 2))]),
    "solve_right": (lambda M, A, B: M.linalg.solve(A, B, left=False),
                    [_well(3, 3), RNG.standard_normal((2, 3))]),
    "solve_triangular_upper": (lambda M, A, B: M.linalg.solve_triangular(A, B, upper=True),
                               [_well(3, 3), RNG.standard_normal((3, 2))]),
    "solve_triangular_right_unit": (
        lambda M, A, B: M.linalg.solve_triangular(A, B, upper=False, left=False,
                                                  unitriangular=True),
        [_well(2, 3, 3), RNG.standard_normal((2, 4, 3))]),
    "cholesky": (lambda M, A: M.linalg.cholesky(A), [_spd(2, 4, 4)]),
    "cholesky_upper": (lambda M, A: M.linalg.cholesky(A, upper=True), [_spd(3, 3)]),
    "cholesky_solve": (lambda M, B, L: M.cholesky_solve(B, L),
                       [RNG.standard_normal((3, 2)), np.linalg.cholesky(_spd(3, 3))]),
    "qr": (lambda M, A: M.linalg.qr(A), [_well(2, 4, 3)]),
    "qr_wide": (lambda M, A: M.linalg.qr(A), [np.concatenate([_well(3, 3),
                                                              RNG.standard_normal((3, 2))], 1)]),
    "eigh": (_eigh, [_sym_spread(2, 4, 4)]),
    "eigvalsh": (lambda M, A: M.linalg.eigvalsh(_sym(A)), [_sym_spread(3, 3)]),
    "svd_tall": (_svd, [_well(5, 3)[:, :3] + RNG.standard_normal((5, 3))]),
    "svd_wide": (_svd, [RNG.standard_normal((2, 3, 5))]),
    "svdvals": (lambda M, A: M.linalg.svdvals(A), [RNG.standard_normal((4, 3))]),
    "pinv": (lambda M, A: M.linalg.pinv(A), [RNG.standard_normal((2, 4, 3))]),
    "lstsq": (lambda M, A, B: M.linalg.lstsq(A, B).solution,
              [RNG.standard_normal((5, 3)), RNG.standard_normal((5, 2))]),
    "matrix_exp": (lambda M, A: M.linalg.matrix_exp(A), [RNG.uniform(-1, 1, (2, 3, 3))]),
    "matrix_power_3": (lambda M, A: M.linalg.matrix_power(A, 3), [_well(3, 3)]),
    "matrix_power_-2": (lambda M, A: M.linalg.matrix_power(A, -2), [_well(2, 3, 3)]),
    "cross": (lambda M, a, b: M.linalg.cross(a, b, dim=0), [RNG.standard_normal((3, 4)),
                                                             RNG.standard_normal((3, 1))]),
    "multi_dot": (lambda M, a, b, c: M.linalg.multi_dot([a, b, c]),
                  [RNG.standard_normal(4), RNG.standard_normal((4, 5)),
                   RNG.standard_normal((5, 2))]),
    "trace": (lambda M, A: M.trace(A), [RNG.standard_normal((3, 3))]),
    "outer": (lambda M, a, b: M.outer(a, b), [RNG.standard_normal(3), RNG.standard_normal(4)]),
    "inner": (lambda M, a, b: M.inner(a, b), [RNG.standard_normal((2, 3)),
                                              RNG.standard_normal((4, 3))]),
    "dot": (lambda M, a, b: M.dot(a, b), [RNG.standard_normal(3), RNG.standard_normal(3)]),
    "tensordot": (lambda M, a, b: M.tensordot(a, b, dims=([1, 0], [0, 2])),
                  [RNG.standard_normal((3, 4, 2)), RNG.standard_normal((4, 5, 3))]),
    "kron": (lambda M, a, b: M.kron(a, b), [RNG.standard_normal((2, 3)),
                                            RNG.standard_normal((3, 2))]),
}
for _ord in ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf]:
    CASES[f"matrix_norm_{_ord}"] = (lambda M, A, o=_ord: M.linalg.matrix_norm(A, ord=o),
                                    [RNG.standard_normal((2, 3, 4))])
CASES["vector_norm"] = (lambda M, x: M.linalg.vector_norm(x, ord=3, dim=1, keepdim=True),
                        [RNG.standard_normal((2, 4))])
CASES["norm"] = (lambda M, x: M.linalg.norm(x), [RNG.standard_normal((2, 4))])
CASES["norm_dims"] = (lambda M, x: M.linalg.norm(x, ord="nuc", dim=(0, 2)),
                      [RNG.standard_normal((3, 2, 4))])


def _outs(r):
    return [r] if not isinstance(r, (tuple, list)) else list(r)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name, dtype):
    fn, arrays = CASES[name]
    ours = [rg.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    a, b = _outs(fn(rg, *ours)), _outs(fn(torch, *theirs))
    tol = dict(rtol=2e-4, atol=2e-4) if dtype == "float32" else dict(rtol=1e-9, atol=1e-10)
    ws = [RNG.standard_normal(t.shape) for t in b]
    for x, y in zip(a, b):
        assert x.shape == tuple(y.shape) and x.dtype == np.dtype(dtype)
        np.testing.assert_allclose(x.data, y.detach().numpy(), **tol)
    sum(float(0) + (x * rg.tensor(w.astype(dtype))).sum() for x, w in zip(a, ws)).backward()
    sum((y * torch.tensor(w.astype(dtype))).sum() for y, w in zip(b, ws)).backward()
    for k, (x, y) in enumerate(zip(ours, theirs)):
        assert x.grad.dtype == np.dtype(dtype)
        ref = y.grad.numpy()
        if name == "cholesky_solve" and k == 1:
            # only L's lower triangle is read; torch also returns a gradient for the upper
            # one (as if the whole of L entered L L^T), which finite differences give as 0
            ref = np.tril(ref)
        np.testing.assert_allclose(x.grad.data, ref, **tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_first_and_second_order(name):
    fn, arrays = CASES[name]
    xs = [rg.tensor(a, requires_grad=True) for a in arrays]

    def f(*xs):
        return _outs(fn(rg, *xs))
    assert rg.gradcheck(f, xs)
    if "norm_" not in name or name.endswith(("fro", "nuc")):  # max/min norms have kinks
        assert rg.gradgradcheck(f, xs, fast=True)


@pytest.mark.parametrize("name", ["det", "inv", "solve", "cholesky", "eigh", "svd_tall", "qr",
                                  "pinv", "matrix_exp", "solve_triangular_upper", "slogdet"])
def test_jvp_matches_torch_func(name):
    fn, arrays = CASES[name]
    ts = [RNG.standard_normal(a.shape) for a in arrays]
    _, ours = rg.func.jvp(lambda *xs: tuple(_outs(fn(rg, *xs))),
                          tuple(rg.tensor(a) for a in arrays), tuple(rg.tensor(t) for t in ts))
    _, theirs = torch.func.jvp(lambda *xs: tuple(_outs(fn(torch, *xs))),
                               tuple(torch.tensor(a) for a in arrays),
                               tuple(torch.tensor(t) for t in ts))
    if name in ("cholesky", "eigh"):
        # defined for symmetric matrices: torch's jvp reads the tangent as given, ours its
        # symmetric part (the direction that stays in their domain), so compare on that
        sym = (ts[0] + np.swapaxes(ts[0], -1, -2)) / 2
        theirs = torch.func.jvp(lambda A: tuple(_outs(fn(torch, A))),
                                (torch.tensor(arrays[0]),), (torch.tensor(sym),))[1]
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x.data, y.numpy(), rtol=1e-8, atol=1e-10)


def test_hessian_of_logdet_matches_torch():
    A = _spd(3, 3)
    h = rg.func.hessian(lambda A: rg.linalg.slogdet(A).logabsdet)(rg.tensor(A))
    th = torch.func.hessian(lambda A: torch.linalg.slogdet(A).logabsdet)(torch.tensor(A))
    np.testing.assert_allclose(h.data, th.numpy(), rtol=1e-9, atol=1e-12)


def test_complex_inputs_for_inv_det_solve_match_torch():
    A0 = _well(3, 3) + 1j * RNG.uniform(-0.3, 0.3, (3, 3))
    B0 = RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))

    def loss(M, A, B):
        return M.abs(M.linalg.det(A)) + M.real(M.linalg.inv(A) @ M.linalg.solve(A, B)).sum()
    ours = [rg.tensor(A0, requires_grad=True), rg.tensor(B0, requires_grad=True)]
    theirs = [torch.tensor(A0, requires_grad=True), torch.tensor(B0, requires_grad=True)]
    loss(rg, *ours).backward()
    loss(torch, *theirs).backward()
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x.grad.data, y.grad.numpy(), rtol=1e-10)


# ---------------------------------------------------------------- worked examples

def test_gaussian_log_likelihood_gradient_equals_its_closed_form():
    """-1/2 y^T S^-1 y - 1/2 log|S| through cholesky + solve_triangular: the gradient in S
    is 1/2 (S^-1 y y^T S^-1 - S^-1)."""
    n = 6
    S0, y0 = _spd(n, n), RNG.standard_normal(n)
    S = rg.tensor(S0, requires_grad=True)
    L = rg.linalg.cholesky(S)
    z = rg.linalg.solve_triangular(L, rg.tensor(y0).reshape(n, 1), upper=False)
    ll = -0.5 * (z * z).sum() - rg.log(rg.diagonal(L, 0, -2, -1)).sum()
    ll.backward()
    Si = np.linalg.inv(S0)
    a = Si @ y0
    np.testing.assert_allclose(S.grad.data, 0.5 * (np.outer(a, a) - Si), rtol=1e-10, atol=1e-12)


def test_slogdet_gradient_is_the_inverse_transpose():
    A0 = -_well(2, 4, 4)
    A = rg.tensor(A0, requires_grad=True)
    rg.linalg.slogdet(A).logabsdet.sum().backward()
    np.testing.assert_allclose(A.grad.data, np.swapaxes(np.linalg.inv(A0), -1, -2), rtol=1e-12)
    sign = rg.linalg.slogdet(A).sign
    np.testing.assert_array_equal(sign.data, np.sign(np.linalg.det(A0)))


def test_eigenvalue_gradient_is_v_v_transpose():
    A0 = _sym_spread(4, 4)
    A = rg.tensor(A0, requires_grad=True)
    rg.linalg.eigvalsh(A)[2].backward()
    v = np.linalg.eigh(A0)[1][:, 2]
    np.testing.assert_allclose(A.grad.data, np.outer(v, v), rtol=1e-10, atol=1e-12)


def test_repeated_eigenvalues_give_non_finite_vector_gradients_like_torch():
    A0 = np.diag([1.0, 1.0, 2.0])
    A = rg.tensor(A0, requires_grad=True)
    tA = torch.tensor(A0, requires_grad=True)
    W = RNG.standard_normal((3, 3))
    with np.errstate(all="ignore"):
        (rg.linalg.eigh(A).eigenvectors * rg.tensor(W)).sum().backward()
    (torch.linalg.eigh(tA).eigenvectors * torch.tensor(W)).sum().backward()
    assert not np.all(np.isfinite(A.grad.data))
    assert not torch.all(torch.isfinite(tA.grad))
    B = rg.tensor(A0, requires_grad=True)
    rg.linalg.eigvalsh(B).sum().backward()  # the eigenvalues alone stay finite
    np.testing.assert_allclose(B.grad.data, np.eye(3), atol=1e-12)


def test_full_matrices_svd_reconstructs_and_differentiates_like_torch():
    A0 = RNG.standard_normal((5, 3))
    U, S, Vh = rg.linalg.svd(rg.tensor(A0))
    assert U.shape == (5, 5) and Vh.shape == (3, 3)
    np.testing.assert_allclose(U.data.T @ U.data, np.eye(5), atol=1e-12)
    np.testing.assert_allclose((U.data[:, :3] * S.data) @ Vh.data, A0, atol=1e-12)


def test_lstsq_result_like_torch():
    A0, B0 = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 2))
    for driver in (None, "gelsd"):
        r = rg.linalg.lstsq(rg.tensor(A0), rg.tensor(B0), driver=driver)
        t = torch.linalg.lstsq(torch.tensor(A0), torch.tensor(B0), driver=driver)
        for a, b in zip(r, t):
            assert a.shape == tuple(b.shape)
            np.testing.assert_allclose(a.data, b.numpy(), rtol=1e-9, atol=1e-12)
    assert r._fields == ("solution", "residuals", "rank", "singular_values")


def test_matrix_power_zero_is_identity():
    np.testing.assert_array_equal(rg.linalg.matrix_power(rg.tensor(_well(2, 3, 3)), 0).data,
                                  np.broadcast_to(np.eye(3), (2, 3, 3)))


# ---------------------------------------------------------------- bad input

def test_singular_matrices_raise_naming_the_op():
    with pytest.raises(RuntimeError, match="linalg.inv.*singular"):
        rg.linalg.inv(rg.zeros(2, 2))
    with pytest.raises(RuntimeError, match="linalg.solve.*singular"):
        rg.linalg.solve(rg.tensor([[1.0, 2.0], [2.0, 4.0]]), rg.ones(2))
    with pytest.raises(RuntimeError, match=r"batch element \(1,\)"):
        rg.linalg.inv(rg.tensor(np.stack([np.eye(2), np.zeros((2, 2))])))


def test_cholesky_names_the_failing_leading_minor():
    with pytest.raises(RuntimeError, match="leading minor of order 2 is not positive-definite"):
        rg.linalg.cholesky(rg.tensor([[1.0, 2.0], [2.0, 1.0]]))
    A = np.stack([np.eye(3), np.diag([1.0, 1.0, -1.0])])
    with pytest.raises(rg.linalg.LinAlgError, match=r"batch element \(1,\).*order 3"):
        rg.linalg.cholesky(rg.tensor(A))


def test_integer_input_is_refused_as_in_torch():
    # complex input is taken everywhere (tests/test_linalg_complex_decomp.py and
    # tests/test_linalg_complex_more.py); integer input is refused, as in PyTorch
    z = rg.tensor(np.eye(2, dtype=np.int64))
    for f, tf in ((rg.linalg.qr, torch.linalg.qr), (rg.linalg.slogdet, torch.linalg.slogdet),
                  (rg.linalg.lu_factor, torch.linalg.lu_factor)):
        with pytest.raises(RuntimeError):
            tf(torch.tensor(np.eye(2, dtype=np.int64)))
        with pytest.raises(TypeError, match="expected a floating point tensor"):
            f(z)


def test_shape_mismatches_name_the_shapes():
    with pytest.raises(ValueError, match="2 by 3"):
        rg.linalg.inv(rg.zeros(2, 3))
    with pytest.raises(RuntimeError, match=r"3x3 and 2x1"):
        rg.linalg.solve(rg.eye(3), rg.zeros(2))
    with pytest.raises(ValueError, match=r"\(4, 5\) and \(3, 2\)"):
        rg.linalg.multi_dot([rg.zeros(4, 5), rg.zeros(3, 2)])
    with pytest.raises(ValueError, match="3"):
        rg.linalg.cross(rg.zeros(4), rg.zeros(4))
    with pytest.raises(ValueError, match="Order 3"):
        rg.linalg.matrix_norm(rg.zeros(2, 2), ord=3)
    with pytest.raises(TypeError, match="floating"):
        rg.linalg.det(rg.tensor([[1, 2], [3, 4]]))
