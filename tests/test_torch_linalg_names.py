"""PyTorch's matrix and linear-algebra names, against torch: the BLAS-style products (mm,
bmm, mv, addmm, ..., addcmul, addcdiv, vdot), the top-level spellings of factorisations
(det, logdet, svd with V, qr with `some`, lu, lu_unpack, lu_solve, triangular_solve, ...),
the torch.linalg names (lu_factor, lu_solve, the _ex forms, cond, vecdot, vander,
tensorinv, tensorsolve, householder_product, ...), matrix builders and statistics (cov,
corrcoef, dist, renorm, block_diag, cartesian_prod, combinations, tril_indices, vander,
diagflat, logspace), their Tensor methods and in-place forms.

Each case runs the same lambda with `M = torch` and `M = rg`: values, dtypes and shapes
agree, and so do float64 gradients of a random weighting of the floating outputs. Then
finite differences (rg.gradcheck, first and second order) for the compositions, forward
mode against torch.func.jvp, and bad input raising torch's exception type."""

import math
import warnings

import numpy as np
import pytest
import torch

import retrograd as rg

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

RNG = np.random.default_rng(7)


def _r(*shape):
    return RNG.standard_normal(shape)


def _well(*shape):
    return RNG.uniform(-0.5, 0.5, shape) + 2.0 * np.eye(*shape[-2:])


def _spd(*shape):
    x = RNG.uniform(-1, 1, shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def _lower(*shape):
    return np.tril(RNG.uniform(-1, 1, shape), -1) + np.eye(shape[-1]) * 2.0


def _ints(*shape, lo=-3, hi=4):
    return RNG.integers(lo, hi, shape)


def _svd_parts(M, out):
    """Sign-free parts of (U, S, V): S, U diag(S) V^T and the projections U U^T, V V^T."""
    U, S, V = out
    return S, (U * S.unsqueeze(-2)) @ V.mT, U @ U.mT, V @ V.mT


def _phase_free(M, out):
    """eig's (w, V) with each eigenvector's largest entry made real positive by a factor
    taken from the vector itself: what rg.linalg.eig returns, and a phase-invariant function
    of torch's, whose gradient torch defines."""
    w, V = out
    with (torch.no_grad() if M is torch else rg.no_grad()):
        big = V.abs().argmax(dim=-2, keepdim=True) if M is torch else \
            rg.tensor(np.argmax(np.abs(V.data), axis=-2)[..., None, :])
    p = M.gather(V, -2, big)
    return w, V * (p.conj() / p.abs())


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in _leaves(o)]
    return [out]


def _np(x):
    return x.detach().resolve_conj().numpy() if isinstance(x, torch.Tensor) else x.data


def _dtype_name(x):
    return str(x.dtype).replace("torch.", "") if isinstance(x, torch.Tensor) else str(x.dtype)


def _inputs(M, arrays, grad):
    out = []
    for a in arrays:
        if not isinstance(a, np.ndarray):
            out.append(a)
            continue
        g = grad and a.dtype.kind in "fc"
        out.append(torch.tensor(a, requires_grad=g) if M is torch
                   else rg.tensor(a, requires_grad=g))
    return out


def _same(mine, theirs, tol=1e-9):
    a, b = _leaves(mine), _leaves(theirs)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert tuple(x.shape) == tuple(y.shape), (x.shape, y.shape)
        assert _dtype_name(x) == _dtype_name(y), (x.dtype, y.dtype)
        np.testing.assert_allclose(_np(x), _np(y), rtol=tol, atol=tol, equal_nan=True)


def _bool(M):
    return torch.bool if M is torch else rg.bool_


def _check(fn, arrays, grad=True, tol=1e-9):
    """fn(rg, ...) against fn(torch, ...): values, and gradients of the float inputs."""
    ours = _inputs(rg, arrays, grad)
    theirs = _inputs(torch, arrays, grad)
    mine, ref = fn(rg, *ours), fn(torch, *theirs)
    _same(mine, ref, tol)
    if not grad:
        return
    pairs = [(m, t) for m, t in zip(_leaves(mine), _leaves(ref))
             if t.requires_grad and t.dtype.is_floating_point]
    if not pairs:
        return
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal(tuple(t.shape)) for _, t in pairs]
    sum(((m * rg.tensor(w)).sum() for (m, _), w in zip(pairs, ws)), rg.tensor(0.0)).backward()
    sum((t * torch.tensor(w)).sum() for (_, t), w in zip(pairs, ws)).backward()
    for x, t in zip(ours, theirs):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            assert (x.grad is None) == (t.grad is None)
            if t.grad is None:
                continue
            np.testing.assert_allclose(x.grad.data, t.grad.numpy(), rtol=max(tol * 10, 1e-8),
                                       atol=max(tol * 10, 1e-9))


A23, A34, A33 = _r(2, 3), _r(3, 4), _well(3, 3)
B234 = _r(2, 3, 4)
S = np.array([[1.0, 2.0], [2.0, 4.0]])  # singular

PRODUCTS = {
    "mm": (lambda M, a, b: M.mm(a, b), [A23, A34]),
    "mm_method": (lambda M, a, b: a.mm(b), [A23, A34]),
    "mm_int": (lambda M, a, b: M.mm(a, b), [_ints(2, 3), _ints(3, 4)]),
    "bmm": (lambda M, a, b: M.bmm(a, b), [_r(2, 2, 3), B234]),
    "mv": (lambda M, a, v: a.mv(v), [A23, _r(3)]),
    "vdot": (lambda M, a, b: M.vdot(a, b), [_r(4), _r(4)]),
    "vdot_complex": (lambda M, a, b: a.vdot(b), [_r(3) + 1j * _r(3), _r(3) - 2j * _r(3)]),
    "addmm": (lambda M, i, a, b: M.addmm(i, a, b, beta=0.5, alpha=-2.0), [_r(4), A23, A34]),
    "addmm_method": (lambda M, i, a, b: i.addmm(a, b), [_r(2, 4), A23, A34]),
    "addmm_beta0_nan": (lambda M, i, a, b: M.addmm(i, a, b, beta=0),
                        [np.full((2, 4), np.nan), A23, A34]),
    "addmv": (lambda M, i, a, v: M.addmv(i, a, v, beta=2.0, alpha=0.5), [_r(1), A23, _r(3)]),
    "addr": (lambda M, i, a, b: M.addr(i, a, b, beta=0.5, alpha=3.0), [_r(2, 3), _r(2), _r(3)]),
    "addr_promotes": (lambda M, i, a, b: i.addr(a, b), [_ints(2, 3), _r(2), _r(3)]),
    "addr_bool": (lambda M, i, a, b: M.addr(i, a, b),
                  [_ints(2, 3, lo=0, hi=2).astype(bool), np.array([True, False]),
                   np.array([True, False, True])]),
    "baddbmm": (lambda M, i, a, b: M.baddbmm(i, a, b, alpha=2.0), [_r(2, 4), _r(2, 2, 3), B234]),
    "addbmm": (lambda M, i, a, b: M.addbmm(i, a, b, beta=-1.0), [_r(2, 4), _r(2, 2, 3), B234]),
    "addcmul": (lambda M, x, a, b: M.addcmul(x, a, b, value=0.5), [_r(3, 1), _r(4), _r(3, 4)]),
    "addcmul_int": (lambda M, x, a, b: x.addcmul(a, b, value=2), [_ints(3), _ints(3), _ints(3)]),
    "addcdiv": (lambda M, x, a, b: M.addcdiv(x, a, b, value=-2.0),
                [_r(3, 4), _r(4), RNG.uniform(0.5, 2, (3, 1))]),
    "addcdiv_int_input": (lambda M, x, a, b: x.addcdiv(a, b), [_ints(3), _r(3), _ints(3, lo=1)],
                          False),  # torch's backward fails here (a float into its int input)
    "chain_matmul": (lambda M, a, b, c: M.chain_matmul(a, b, c), [A23, A34, _r(4, 2)]),
    "chain_matmul_one": (lambda M, a: M.chain_matmul(a), [A23]),
    "ger": (lambda M, a, b: M.ger(a, b), [_r(2), _r(3)]),
    "cross_default_dim": (lambda M, a, b: M.cross(a, b), [_r(3, 4), _r(3, 4)]),
    "cross_broadcast": (lambda M, a, b: a.cross(b), [_r(3, 1), _r(3, 4)]),
    "cross_dim": (lambda M, a, b: M.cross(a, b, dim=1), [_r(2, 3), _r(2, 3)]),
    "cross_int": (lambda M, a, b: M.cross(a, b, dim=0), [_ints(3), _ints(3)]),
    "linalg_cross_int": (lambda M, a, b: M.linalg.cross(a, b), [_ints(2, 3), _ints(2, 3)]),
    "dot_inner_outer_kron": (lambda M, a, b: (a.dot(b), a.inner(b), a.outer(b), a.kron(b)),
                             [_r(3), _r(3)]),
    "trace": (lambda M, a: a.trace(), [A34]),
    "adjoint": (lambda M, a: (M.adjoint(a), a.mH, a[0].H, a[0].adjoint()),
                [_r(2, 3, 4) + 1j * _r(2, 3, 4)]),
    "adjoint_real": (lambda M, a: (M.adjoint(a), a.mH, a.H), [_r(3, 4)]),
}

DECOMPOSITIONS = {
    "det": (lambda M, a: (M.det(a), a.det()), [_r(2, 3, 3)]),
    "logdet": (lambda M, a: M.logdet(a), [np.stack([_spd(3, 3), -_well(3, 3), _well(3, 3)])]),
    "logdet_zero": (lambda M, a: a.logdet(), [np.zeros((2, 2))], False),
    "logdet_complex": (lambda M, a: M.logdet(a), [_well(3, 3) + 0.5j * _r(3, 3)]),
    "slogdet": (lambda M, a: tuple(M.slogdet(a)), [-_well(2, 3, 3)]),
    "inverse": (lambda M, a: a.inverse(), [_well(2, 3, 3)]),
    "pinverse": (lambda M, a: M.pinverse(a), [_r(4, 3)]),
    "pinverse_rcond": (lambda M, a: a.pinverse(rcond=1e-3), [_r(3, 4)]),
    "matrix_power": (lambda M, a: (M.matrix_power(a, 3), a.matrix_power(-2)), [_well(3, 3)]),
    "matrix_power_int": (lambda M, a: (M.matrix_power(a, 3), M.matrix_power(a, 0)),
                         [_ints(3, 3)]),
    "matrix_exp": (lambda M, a: a.matrix_exp(), [RNG.uniform(-0.5, 0.5, (2, 3, 3))]),
    "cholesky": (lambda M, a: (M.cholesky(a), a.cholesky(True)), [_spd(2, 3, 3)]),
    # through tril: torch's gradient has entries outside the triangle that its forward
    # ignores (finite differences, test_finite_differences_..., give zero there, as ours)
    "cholesky_inverse": (lambda M, l: (M.cholesky_inverse(M.tril(l)),
                                       M.tril(l).mT.cholesky_inverse(upper=True)),
                         [_lower(2, 3, 3)]),
    "cholesky_solve": (lambda M, b, l: b.cholesky_solve(M.tril(l)), [_r(3, 2), _lower(3, 3)]),
    "qr": (lambda M, a: tuple(M.qr(a)), [_r(2, 4, 3)]),
    "qr_wide": (lambda M, a: tuple(a.qr()), [_r(3, 4)]),
    "svd": (lambda M, a: _svd_parts(M, M.svd(a)), [_r(2, 4, 3)]),
    "svd_wide_method": (lambda M, a: _svd_parts(M, a.svd()), [_r(3, 5)]),
    "svd_compute_uv_false": (lambda M, a: tuple(M.svd(a, compute_uv=False)), [_r(4, 3)]),
    "lu": (lambda M, a: M.lu(a), [_r(2, 3, 3)]),
    # singular: values only (torch's gradient is inf/nan there, ours raises LinAlgError)
    "lu_infos": (lambda M, a: tuple(a.lu(get_infos=True)), [np.stack([S, np.eye(2)])], False),
    "lu_unpack": (lambda M, a: tuple(M.lu_unpack(*M.linalg.lu_factor(a))), [_r(2, 3, 5)]),
    "lu_unpack_tall": (lambda M, a: tuple(M.lu_unpack(*M.linalg.lu_factor(a))), [_r(5, 3)]),
    "lu_unpack_parts": (lambda M, a: (M.lu_unpack(*M.linalg.lu_factor(a), unpack_data=False).P,
                                      M.lu_unpack(*M.linalg.lu_factor(a),
                                                  unpack_pivots=False).L), [_r(3, 3)]),
    "lu_solve": (lambda M, b, a: M.lu_solve(b, *M.linalg.lu_factor(a)), [_r(4, 3, 2), _r(3, 3)]),
    "lu_solve_method": (lambda M, b, a: b.lu_solve(*M.linalg.lu_factor(a)),
                        [_r(3, 2), _r(2, 3, 3)]),
    "triangular_solve": (lambda M, b, a: tuple(M.triangular_solve(b, a)), [_r(2, 3, 2), _r(3, 3)]),
    "triangular_solve_options": (
        lambda M, b, a: tuple(b.triangular_solve(a, upper=False, transpose=True,
                                                 unitriangular=True)), [_r(3, 2), _r(3, 3)]),
    "nuclear_norm": (lambda M, a: (M.nuclear_norm(a), M.nuclear_norm(a, keepdim=True),
                                   M.nuclear_norm(a, (0, 2))), [_r(2, 3, 4)]),
    "frobenius_norm": (lambda M, a: (M.frobenius_norm(a, (0, 1)), M.frobenius_norm(a, 1, True),
                                     M.frobenius_norm(a, ())), [_r(2, 3)]),
    "orgqr": (lambda M, a, t: a.orgqr(t), [_r(2, 5, 3), _r(2, 3)]),
    "ormqr": (lambda M, a, t, c: (M.ormqr(a, t, c), M.ormqr(a, t, c, transpose=True)),
              [_r(4, 3), _r(3), _r(4, 2)]),
    "ormqr_right": (lambda M, a, t, c: (a.ormqr(t, c, left=False),
                                        M.ormqr(a, t, c, left=False, transpose=True)),
                    [_r(2, 4, 3), _r(2, 3), _r(2, 2, 4)]),
    "ormqr_of_geqrf": (lambda M, a, c: M.ormqr(*M.geqrf(a), c), [_r(4, 3), _r(4, 2)], False),
}

LINALG = {
    "lu_factor": (lambda M, a: tuple(M.linalg.lu_factor(a)), [_r(2, 4, 4)]),
    "lu_factor_wide": (lambda M, a: tuple(M.linalg.lu_factor(a)), [_r(3, 5)]),
    "lu_factor_ex": (lambda M, a: tuple(M.linalg.lu_factor_ex(a)), [_r(2, 3, 3)]),
    "lu_factor_ex_singular": (lambda M, a: tuple(M.linalg.lu_factor_ex(a)),
                              [np.stack([S, _r(2, 2)])], False),
    "lu": (lambda M, a: tuple(M.linalg.lu(a)), [_r(2, 3, 3)]),
    "lu_tall": (lambda M, a: tuple(M.linalg.lu(a)), [_r(5, 2)]),
    "lu_wide": (lambda M, a: tuple(M.linalg.lu(a)), [_r(2, 4)]),
    "lu_solve": (lambda M, a, b: M.linalg.lu_solve(*M.linalg.lu_factor(a), b),
                 [_r(3, 3), _r(2, 3, 2)]),
    "lu_solve_adjoint": (lambda M, a, b: M.linalg.lu_solve(*M.linalg.lu_factor(a), b,
                                                           adjoint=True), [_r(2, 3, 3), _r(3, 2)]),
    "lu_solve_right": (lambda M, a, b: M.linalg.lu_solve(*M.linalg.lu_factor(a), b, left=False),
                       [_r(3, 3), _r(4, 3)]),
    "lu_solve_right_adjoint": (lambda M, a, b: M.linalg.lu_solve(
        *M.linalg.lu_factor(a), b, left=False, adjoint=True), [_r(3, 3), _r(4, 3)]),
    "inv_ex": (lambda M, a: tuple(M.linalg.inv_ex(a)), [_well(2, 3, 3)]),
    "cholesky_ex": (lambda M, a: tuple(M.linalg.cholesky_ex(a, upper=True)), [_spd(3, 3)]),
    "solve_ex": (lambda M, a, b: tuple(M.linalg.solve_ex(a, b)), [_well(2, 3, 3), _r(3)]),
    "cond": (lambda M, a: tuple(M.linalg.cond(a, p) for p in (None, 2, -2)), [_well(2, 3, 3)]),
    # torch's own backward of these fails (an in-place write into inv_ex's output): values
    # here, gradients by finite differences below
    "cond_norms": (lambda M, a: tuple(M.linalg.cond(a, p) for p in
                                      ("fro", "nuc", math.inf, -math.inf, 1, -1)),
                   [_well(2, 3, 3)], False),
    "cond_rectangular": (lambda M, a: M.linalg.cond(a), [_r(3, 5)]),
    "cond_singular": (lambda M, a: M.linalg.cond(a, "fro"), [S], False),
    "diagonal": (lambda M, a: M.linalg.diagonal(a, offset=-1, dim1=0, dim2=2), [B234]),
    "matmul": (lambda M, a, b: M.linalg.matmul(a, b), [B234, _r(4)]),
    "vecdot": (lambda M, a, b: M.linalg.vecdot(a, b, dim=0), [_r(3, 4), _r(3, 1)]),
    "vecdot_complex": (lambda M, a, b: M.linalg.vecdot(a, b), [_r(2, 3) + 1j * _r(2, 3),
                                                              _r(2, 3) - 1j * _r(2, 3)]),
    "vander": (lambda M, x: (M.linalg.vander(x), M.linalg.vander(x, N=5)),
               [np.array([[0.0, 1.5, -2.0], [0.5, 0.0, 1.0]])]),
    "vander_int": (lambda M, x: M.linalg.vander(x), [_ints(4)]),
    "tensorinv": (lambda M, a: M.linalg.tensorinv(a, ind=1),
                  [(_well(6, 6)).reshape(6, 2, 3)]),
    "tensorsolve": (lambda M, a, b: M.linalg.tensorsolve(a, b),
                    [_well(6, 6).reshape(2, 3, 6), _r(2, 3)]),
    "tensorsolve_dims": (lambda M, a, b: M.linalg.tensorsolve(a, b, dims=(1,)),
                         [_well(6, 6).reshape(6, 2, 3).transpose(0, 2, 1), _r(6)]),
    "householder_product": (lambda M, a, t: M.linalg.householder_product(a, t),
                            [_r(2, 5, 3), _r(2, 2)]),
    "eig": (lambda M, a: _phase_free(M, M.linalg.eig(a)), [_r(2, 3, 3)]),
    "eig_complex": (lambda M, a: _phase_free(M, M.linalg.eig(a)), [_r(3, 3) + 1j * _r(3, 3)]),
    "eig_phase_invariant_loss": (lambda M, a: (M.linalg.eig(a)[1].abs() ** 2,
                                               M.linalg.eig(a)[0].real), [_r(4, 4)]),
    "eigvals": (lambda M, a: M.linalg.eigvals(a), [_r(2, 4, 4)]),
    "householder_product_complex": (lambda M, a, t: M.linalg.householder_product(a, t),
                                    [_r(4, 3) + 1j * _r(4, 3), _r(3) + 1j * _r(3)]),
}

MATRICES = {
    "block_diag": (lambda M, a, b, c, d: M.block_diag(a, b, c, d),
                   [_r(2, 2), np.array(3.0), _r(3), _r(1, 0)]),
    "block_diag_promotes": (lambda M, a, b: M.block_diag(a, b), [_ints(2, 2), _r(1, 3)]),
    "cartesian_prod": (lambda M, a, b, c: M.cartesian_prod(a, b, c), [_r(2), _r(3), _r(2)]),
    "cartesian_prod_one": (lambda M, a: M.cartesian_prod(a), [_r(3)]),
    "combinations": (lambda M, a: (M.combinations(a), M.combinations(a, 3),
                                   M.combinations(a, r=2, with_replacement=True),
                                   M.combinations(a, 0), M.combinations(a, 5)), [_r(4)]),
    # torch.vander's own backward fails (an in-place write): values here, gradients below
    "vander": (lambda M, x: (M.vander(x), M.vander(x, 4, True), M.vander(x, N=0)),
               [np.array([0.0, 1.5, -2.0])], False),
    "vander_int": (lambda M, x: M.vander(x), [_ints(3).astype(np.int32)]),
    "diagflat": (lambda M, x: (M.diagflat(x), x.diagflat(-1)), [_r(2, 2)]),
    "cov": (lambda M, x: (M.cov(x), x.cov(correction=0), M.cov(x, correction=2)), [_r(3, 5)]),
    "cov_vector": (lambda M, x: M.cov(x), [_r(5)]),
    "cov_int": (lambda M, x: M.cov(x), [_ints(2, 4)]),
    "cov_weights": (lambda M, x, f, a: (M.cov(x, fweights=f), M.cov(x, aweights=a),
                                        M.cov(x, fweights=f, aweights=a, correction=3)),
                    [_r(3, 5), _ints(5, lo=0, hi=3), RNG.uniform(0.1, 2, 5)]),
    "cov_too_few": (lambda M, x: M.cov(x), [_r(2, 1)]),
    "corrcoef": (lambda M, x: (M.corrcoef(x), x.corrcoef()), [_r(3, 5)]),
    "corrcoef_vector": (lambda M, x: M.corrcoef(x), [_r(4)]),
    "dist": (lambda M, a, b: tuple(M.dist(a, b, p) for p in (2, 3, 1.5, math.inf)),
             [_r(3, 4), _r(4)]),
    # torch's backward fails for these two orders: values here, gradients by rg.gradcheck
    "dist_0_and_-inf": (lambda M, a, b: (M.dist(a, b, 0), M.dist(a, b, -math.inf)),
                        [_r(3, 4), _r(4)], False),
    "dist_method_promotes": (lambda M, a, b: a.dist(b), [_r(3).astype(np.float32), _ints(3)]),
    "renorm": (lambda M, x: (M.renorm(x, 2, 0, 1.0), x.renorm(1, 1, 0.5),
                             M.renorm(x, math.inf, -1, 0.8)), [_r(3, 4)]),
}

ALL = {**{f"products.{k}": v for k, v in PRODUCTS.items()},
       **{f"decompositions.{k}": v for k, v in DECOMPOSITIONS.items()},
       **{f"linalg.{k}": v for k, v in LINALG.items()},
       **{f"matrices.{k}": v for k, v in MATRICES.items()}}


@pytest.mark.parametrize("name", sorted(ALL))
def test_values_dtypes_and_gradients_match_torch(name):
    fn, arrays, *grad = ALL[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(fn, arrays, grad=not grad)


def test_float32_results_stay_float32():
    a, b = _r(2, 3).astype(np.float32), _r(3, 4).astype(np.float32)
    for fn in (lambda M, a, b: M.mm(a, b), lambda M, a, b: M.addmm(M.ones(2, 4), a, b),
               lambda M, a, b: tuple(M.linalg.lu_factor(b[:, :3])),
               lambda M, a, b: M.cov(a), lambda M, a, b: M.svd(a).S,
               lambda M, a, b: _phase_free(M, M.linalg.eig(b[:, :3]))):
        _check(fn, [a, b], tol=1e-5)


def test_integer_pivots_and_lu_are_torchs():
    LU, piv = rg.linalg.lu_factor(_r(3, 3))
    assert piv.dtype == np.int32 and not piv.requires_grad
    assert rg.lu(_r(2, 2))[1].dtype == np.int32


# ---------------------------------------------------------------- constants

def test_index_builders_and_logspace_match_torch():
    for row, col, off in [(3, 4, 1), (4, 3, -2), (3, 4, -5), (0, 3, 0), (3, 3, 10)]:
        _same(rg.tril_indices(row, col, off), torch.tril_indices(row, col, off))
        _same(rg.triu_indices(row, col, offset=off), torch.triu_indices(row, col, offset=off))
    _same(rg.tril_indices(3, 3, dtype=rg.int32), torch.tril_indices(3, 3, dtype=torch.int32))
    _same(rg.logspace(0, 2, 5), torch.logspace(0, 2, 5), tol=1e-6)
    _same(rg.logspace(-1, 3, 4, base=2, dtype=rg.float64),
          torch.logspace(-1, 3, 4, base=2, dtype=torch.float64))
    _same(rg.logspace(0, 1, 3, dtype=rg.int64), torch.logspace(0, 1, 3, dtype=torch.int64))
    _same(rg.logspace(rg.tensor(1.0), 2, 1), torch.logspace(torch.tensor(1.0), 2, 1))
    _same(rg.logspace(1, 2, 0), torch.logspace(1, 2, 0))
    assert rg.logspace(0, 1, 3, requires_grad=True).requires_grad


def test_geqrf_matches_torch_and_is_not_differentiable():
    A = _r(2, 5, 3)
    _same(tuple(rg.geqrf(A)), tuple(torch.geqrf(torch.tensor(A))))
    _same(tuple(rg.tensor(A).geqrf()), tuple(torch.tensor(A).geqrf()))
    with pytest.raises(NotImplementedError, match="geqrf"):
        rg.geqrf(rg.tensor(A, requires_grad=True))


# ---------------------------------------------------------------- in-place forms

@pytest.mark.parametrize("name, call", [
    ("addmm_", lambda x, a, b: x.addmm_(a, b, beta=0.5)),
    ("addmv_", lambda x, a, b: x[:, 0].clone().addmv_(a, b[:, 0], alpha=2.0)),
    ("addr_", lambda x, a, b: x.addr_(a[:, 0], b[1])),
    ("addcmul_", lambda x, a, b: x.addcmul_(a @ b, (a @ b).sin(), value=0.5)),
    ("addcdiv_", lambda x, a, b: x.addcdiv_(a @ b, (a @ b) ** 2 + 1.0)),
    ("renorm_", lambda x, a, b: x.renorm_(2, 0, 0.5)),
    ("baddbmm_", lambda x, a, b: x.unsqueeze(0).clone().baddbmm_(a.unsqueeze(0),
                                                                 b.unsqueeze(0))),
    ("addbmm_", lambda x, a, b: x.addbmm_(a.unsqueeze(0), b.unsqueeze(0))),
])
def test_in_place_forms_write_into_the_tensor_with_torchs_gradients(name, call):
    arrays = [_r(2, 3), _r(2, 4), _r(4, 3)]
    ours = [rg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    x, tx = ours[0] * 1.0, theirs[0] * 1.0  # non-leaves: in-place is allowed on them
    out, tout = call(x, *ours[1:]), call(tx, *theirs[1:])
    if name in ("addmm_", "addr_", "addcmul_", "addcdiv_", "renorm_", "addbmm_"):
        assert out is x
    _same(out, tout)
    w = np.random.default_rng(1).standard_normal(tuple(tout.shape))
    (out * rg.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for a, t in zip(ours, theirs):
        assert (a.grad is None) == (t.grad is None)
        if t.grad is not None:
            np.testing.assert_allclose(a.grad.data, t.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_addmv_in_place_function():
    x, tx = rg.tensor(_r(2)), torch.tensor(_r(2))
    tx.copy_(torch.tensor(x.data))
    a, v = _r(2, 3), _r(3)
    assert rg.addmv_(x, a, v, beta=0.5) is x
    torch.addmv_(tx, torch.tensor(a), torch.tensor(v), beta=0.5)
    _same(x, tx)


def test_randomized_low_rank_svd_and_pca_are_exact_at_low_rank():
    """At rank <= q the randomized SVD is the SVD, whatever the draws: torch's values."""
    A = _r(2, 7, 2) @ _r(2, 2, 5)
    for fn in (lambda M, a: M.svd_lowrank(a, q=3), lambda M, a: M.svd_lowrank(a.mT, q=4),
               lambda M, a: M.pca_lowrank(a, q=3), lambda M, a: M.pca_lowrank(a, center=False)):
        U, S_, V = fn(rg, rg.tensor(A))
        tU, tS, tV = fn(torch, torch.tensor(A))
        assert U.shape == tuple(tU.shape) and V.shape == tuple(tV.shape)
        np.testing.assert_allclose(S_.data, tS.numpy(), atol=1e-10)
        np.testing.assert_allclose(((U * S_.unsqueeze(-2)) @ V.mT).data,
                                   ((tU * tS.unsqueeze(-2)) @ tV.mT).numpy(), atol=1e-10)

    def seeded(a):  # the same draws each call: a smooth function of A for gradcheck
        rg.manual_seed(0)
        U, S_, V = rg.svd_lowrank(a, q=2, niter=1)
        return (U * S_.unsqueeze(-2)) @ V.mT
    assert rg.gradcheck(seeded, [rg.tensor(_r(4, 3), requires_grad=True)])
    with pytest.raises(rg.JitError, match="random numbers"):
        rg.jit(lambda a: rg.svd_lowrank(a, q=2)[1])(rg.tensor(_r(4, 3)))


def test_in_place_form_with_itself_as_an_operand_gives_the_gradient():
    """x.addcmul_(y, x): torch refuses the backward (x was saved, then written); the
    product reads a copy of x here, so the gradient is the out-of-place one."""
    a = rg.tensor(_r(3), requires_grad=True)
    y = rg.tensor(_r(3))
    x = a * 1.0
    x.addcmul_(y, x, value=2.0).sum().backward()
    np.testing.assert_allclose(a.grad.data, 1.0 + 2.0 * y.data)


def test_in_place_forms_refuse_a_new_shape_or_a_wider_dtype():
    with pytest.raises(RuntimeError, match="shape"):
        rg.ones(2).addmm_(rg.ones(2, 3), rg.ones(3, 2))
    with pytest.raises(RuntimeError, match="cast"):
        rg.tensor([1, 2]).addcmul_(rg.ones(2), rg.ones(2))
    with pytest.raises(RuntimeError):
        torch.tensor([1, 2]).addcmul_(torch.ones(2), torch.ones(2))


# ---------------------------------------------------------------- finite differences

FD = {
    "addmm": (lambda i, a, b: rg.addmm(i, a, b, beta=0.3, alpha=1.7), [_r(3), A23, _r(3, 3)]),
    "baddbmm": (lambda i, a, b: rg.baddbmm(i, a, b, beta=2.0), [_r(1, 2), _r(2, 2, 3),
                                                                _r(2, 3, 2)]),
    "addcdiv": (lambda x, a, b: rg.addcdiv(x, a, b, value=0.5), [_r(3), _r(3),
                                                                 RNG.uniform(1, 2, 3)]),
    "logdet": (rg.logdet, [_spd(3, 3)]),
    "cholesky_inverse": (rg.cholesky_inverse, [_lower(3, 3)]),
    "triangular_solve": (lambda b, a: rg.triangular_solve(b, a, transpose=True).solution,
                         [_r(3, 2), _well(3, 3)]),
    "lu_unpack": (lambda a: rg.lu_unpack(*rg.linalg.lu_factor(a))[1:], [_r(3, 4)]),
    "lu_solve": (lambda a, b: rg.linalg.lu_solve(*rg.linalg.lu_factor(a), b, adjoint=True),
                 [_well(3, 3), _r(3, 2)]),
    "lu_tall": (lambda a: rg.linalg.lu(a)[1:], [_r(4, 2)]),
    "svd_V": (lambda a: _svd_parts(rg, rg.svd(a))[1], [_r(3, 2)]),
    "householder_product": (rg.linalg.householder_product, [_r(4, 3), _r(3)]),
    "eig": (lambda a: tuple(rg.view_as_real(o) for o in rg.linalg.eig(a)), [_r(3, 3)]),
    "ormqr": (lambda a, t, c: rg.ormqr(a, t, c, left=False), [_r(3, 2), _r(2), _r(2, 3)]),
    "tensorsolve": (rg.linalg.tensorsolve, [_well(4, 4).reshape(2, 2, 4), _r(2, 2)]),
    "cond": (lambda a: rg.linalg.cond(a, 1), [_well(3, 3)]),
    "vander": (lambda x: rg.vander(x, 4), [np.array([0.0, 0.5, -1.5])]),
    "dist_0_and_-inf": (lambda a, b: rg.dist(a, b, 0) + rg.dist(a, b, -math.inf),
                        [_r(2, 3), _r(3)]),
    "cov": (lambda x, a: rg.cov(x, aweights=a), [_r(2, 4), RNG.uniform(0.5, 2, 4)]),
    "corrcoef": (rg.corrcoef, [_r(3, 4)]),
    "renorm": (lambda x: rg.renorm(x, 3, 1, 0.7), [_r(3, 2)]),
    "dist": (lambda a, b: rg.dist(a, b, 3), [_r(2, 3), _r(3)]),
    "block_diag": (rg.block_diag, [_r(2), _r(2, 2)]),
    "cartesian_prod": (rg.cartesian_prod, [_r(2), _r(3)]),
}


@pytest.mark.parametrize("name", sorted(FD))
def test_finite_differences_first_and_second_order(name):
    fn, arrays = FD[name]
    xs = [rg.tensor(a, requires_grad=True) for a in arrays]
    assert rg.gradcheck(fn, xs)
    assert rg.gradgradcheck(fn, xs)


def test_forward_mode_matches_torch_func_jvp():
    A, B, T, U = _r(3, 3), _r(3, 2), _r(3, 3), _r(3, 2)

    def f(M):
        return lambda a, b: M.linalg.lu_solve(*M.linalg.lu_factor(a), b) + M.addmm(b, a, b)
    _, ours = rg.func.jvp(f(rg), (rg.tensor(A), rg.tensor(B)), (rg.tensor(T), rg.tensor(U)))
    _, theirs = torch.func.jvp(f(torch), (torch.tensor(A), torch.tensor(B)),
                               (torch.tensor(T), torch.tensor(U)))
    np.testing.assert_allclose(ours.data, theirs.numpy(), rtol=1e-9, atol=1e-10)
    H, tau, dH, dtau = _r(4, 3), _r(2), _r(4, 3), _r(2)
    _, ours = rg.func.jvp(rg.linalg.householder_product, (rg.tensor(H), rg.tensor(tau)),
                          (rg.tensor(dH), rg.tensor(dtau)))
    _, theirs = torch.func.jvp(torch.linalg.householder_product,
                               (torch.tensor(H), torch.tensor(tau)),
                               (torch.tensor(dH), torch.tensor(dtau)))
    np.testing.assert_allclose(ours.data, theirs.numpy(), rtol=1e-9, atol=1e-10)


def test_lu_solve_by_ops_equals_eager_under_jit_and_vmap():
    """The pivots' permutation is computed by ops when they are traced or batched."""
    As, Bs = _r(3, 3, 3), _r(3, 3, 2)
    eager = np.stack([rg.linalg.lu_solve(*rg.linalg.lu_factor(a), b).data
                      for a, b in zip(As, Bs)])

    def f(lu, piv, b):
        return rg.linalg.lu_solve(lu, piv, b)
    LU, piv = rg.linalg.lu_factor(As)
    got = rg.func.vmap(f)(LU, piv, rg.tensor(Bs))
    np.testing.assert_allclose(got.data, eager, rtol=1e-12)
    j = rg.jit(f)
    for k in range(3):
        np.testing.assert_allclose(j(LU[k], piv[k], rg.tensor(Bs[k])).data, eager[k],
                                   rtol=1e-12)
    with pytest.raises(ValueError, match="pivots must be between 1 and 3"):
        j(LU[0], rg.tensor(np.array([1, 0, 3], np.int32)), rg.tensor(Bs[0]))


# ---------------------------------------------------------------- bad input, torch's errors

BAD = {
    "mm_3d": lambda M: M.mm(M.ones(2, 2, 3), M.ones(3, 2)),
    "mm_vector": lambda M: M.mm(M.ones(2, 3), M.ones(3)),
    "mm_inner": lambda M: M.mm(M.ones(2, 3), M.ones(2, 3)),
    "mm_dtypes": lambda M: M.mm(M.ones(2, 3), M.ones(3, 2, dtype=M.float64)),
    "mm_bool": lambda M: M.mm(M.ones(2, 3, dtype=_bool(M)), M.ones(3, 2, dtype=_bool(M))),
    "bmm_2d": lambda M: M.bmm(M.ones(2, 3), M.ones(3, 2)),
    "bmm_batch": lambda M: M.bmm(M.ones(2, 2, 3), M.ones(3, 3, 2)),
    "bmm_inner": lambda M: M.bmm(M.ones(2, 2, 3), M.ones(2, 2, 2)),
    "mv_matrix": lambda M: M.mv(M.ones(2, 3), M.ones(3, 1)),
    "mv_size": lambda M: M.mv(M.ones(2, 3), M.ones(2)),
    "adjoint_vector": lambda M: M.adjoint(M.ones(3)),
    "H_batch": lambda M: M.ones(2, 3, 4).H,
    "vdot_2d": lambda M: M.vdot(M.ones(3, 1), M.ones(3, 1)),
    "vdot_len": lambda M: M.vdot(M.ones(3), M.ones(2)),
    "addmm_input": lambda M: M.addmm(M.ones(3), M.ones(2, 3), M.ones(3, 2)),
    "addmm_input_3d": lambda M: M.addmm(M.ones(1, 2, 2), M.ones(2, 3), M.ones(3, 2)),
    "addmm_dtype": lambda M: M.addmm(M.ones(2, 2, dtype=M.float64), M.ones(2, 3),
                                     M.ones(3, 2)),
    "addr_int_alpha": lambda M: M.addr(M.ones(2, 3, dtype=M.int64), M.ones(2, dtype=M.int64),
                                       M.ones(3, dtype=M.int64), alpha=0.5),
    "addbmm_batches": lambda M: M.addbmm(M.ones(2, 2), M.ones(3, 2, 4), M.ones(2, 4, 2)),
    "addcdiv_ints": lambda M: M.addcdiv(M.ones(3), M.ones(3, dtype=M.int64),
                                        M.ones(3, dtype=M.int64)),
    "chain_matmul_vector": lambda M: M.chain_matmul(M.ones(3), M.ones(3, 2)),
    "cross_no_3": lambda M: M.cross(M.ones(2, 4), M.ones(2, 4)),
    "cross_dim": lambda M: M.cross(M.ones(3, 2), M.ones(3, 2), dim=1),
    "cross_dtypes": lambda M: M.cross(M.ones(3, dtype=M.int64), M.ones(3)),
    "dot_dtypes": lambda M: M.dot(M.ones(3), M.ones(3, dtype=M.float64)),
    "det_int": lambda M: M.det(M.ones(2, 2, dtype=M.int64)),
    "inverse_rect": lambda M: M.inverse(M.ones(2, 3)),
    "lu_factor_singular": lambda M: M.linalg.lu_factor(M.tensor([[1.0, 2.0], [2.0, 4.0]])),
    "lu_factor_1d": lambda M: M.linalg.lu_factor(M.ones(2)),
    "lu_factor_no_pivot": lambda M: M.linalg.lu_factor(M.eye(2), pivot=False),
    "lu_solve_rect": lambda M: M.linalg.lu_solve(*M.linalg.lu_factor(M.eye(2, 3) + 1),
                                                 M.ones(2, 1)),
    "lu_solve_vector": lambda M: M.linalg.lu_solve(*M.linalg.lu_factor(M.eye(2)), M.ones(2)),
    "lu_solve_shapes": lambda M: M.linalg.lu_solve(*M.linalg.lu_factor(M.eye(2)), M.ones(3, 1)),
    "lu_solve_dtypes": lambda M: M.linalg.lu_solve(*M.linalg.lu_factor(M.eye(2)),
                                                   M.ones(2, 1, dtype=M.float64)),
    "lu_unpack_pivots": lambda M: M.lu_unpack(M.eye(2), M.tensor([3, 2], dtype=M.int32)),
    "inv_ex_check": lambda M: M.linalg.inv_ex(M.tensor([[1.0, 2.0], [2.0, 4.0]]),
                                              check_errors=True),
    "cond_rect": lambda M: M.linalg.cond(M.ones(2, 3), 1),
    "cond_p": lambda M: M.linalg.cond(M.eye(2), 3),
    "vecdot_dtypes": lambda M: M.linalg.vecdot(M.ones(3), M.ones(3, dtype=M.float64)),
    "vander_N": lambda M: M.linalg.vander(M.ones(3), N=1),
    "tensorinv": lambda M: M.linalg.tensorinv(M.ones(4, 6, 8, 2), ind=2),
    "tensorsolve": lambda M: M.linalg.tensorsolve(M.ones(2, 3, 5), M.ones(2, 3)),
    "householder_wide": lambda M: M.linalg.householder_product(M.ones(3, 4), M.ones(2)),
    "householder_tau": lambda M: M.linalg.householder_product(M.ones(4, 3), M.ones(4)),
    "cov_3d": lambda M: M.cov(M.ones(2, 2, 2)),
    "cov_fweights_float": lambda M: M.cov(M.ones(2, 3), fweights=M.ones(3)),
    "cov_fweights_negative": lambda M: M.cov(M.ones(2, 3), fweights=M.tensor([1, -2, 1])),
    "cov_aweights_len": lambda M: M.cov(M.ones(2, 3), aweights=M.ones(2)),
    "cov_correction": lambda M: M.cov(M.ones(2, 3), correction=0.5),
    "dist_ints": lambda M: M.dist(M.ones(3, dtype=M.int64), M.ones(3, dtype=M.int64)),
    "renorm_1d": lambda M: M.renorm(M.ones(3), 2, 0, 1.0),
    "renorm_p": lambda M: M.renorm(M.ones(2, 3), 0, 0, 1.0),
    "renorm_maxnorm": lambda M: M.renorm(M.ones(2, 3), 2, 0, -1.0),
    "block_diag_3d": lambda M: M.block_diag(M.ones(2, 2, 2)),
    "cartesian_prod_2d": lambda M: M.cartesian_prod(M.ones(2, 2)),
    "cartesian_prod_dtypes": lambda M: M.cartesian_prod(M.ones(2), M.ones(2, dtype=M.int64)),
    "combinations_r": lambda M: M.combinations(M.ones(3), r=-1),
    "tril_indices_row": lambda M: M.tril_indices(-1, 3),
    "tril_indices_float": lambda M: M.tril_indices(2, 2, dtype=M.float32),
    "vander_2d": lambda M: M.vander(M.ones(2, 2)),
    "logspace_steps": lambda M: M.logspace(0, 1, -1),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_raises_torchs_exception_type(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as theirs:
            BAD[name](torch)
        expected = next(c for c in type(theirs.value).__mro__  # torch's own classes: their
                        if c.__module__ == "builtins")     # Python base (RuntimeError)
        with pytest.raises(expected) as ours:
            BAD[name](rg)
    assert str(ours.value)


def test_shape_errors_name_both_shapes():
    with pytest.raises(RuntimeError, match=r"\(2, 3\) and \(2, 3\)"):
        rg.mm(rg.ones(2, 3), rg.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"\(2, 2, 3\) and \(3, 3, 2\)"):
        rg.bmm(rg.ones(2, 2, 3), rg.ones(3, 3, 2))
    with pytest.raises(RuntimeError, match=r"\(2, 3\) and \(2,\)"):
        rg.mv(rg.ones(2, 3), rg.ones(2))
    with pytest.raises(RuntimeError, match=r"mat2 must be a matrix .* shape \(3,\)"):
        rg.mm(rg.ones(2, 3), rg.ones(3))
    with pytest.raises(RuntimeError, match=r"input of shape \(3,\) .* \(2, 2\)"):
        rg.addmm(rg.ones(3), rg.ones(2, 3), rg.ones(3, 2))


def test_floating_coefficients_with_integer_tensors_are_refused():
    """PyTorch truncates them silently for addmm and addcmul (addmm(int, beta=0.5) gives
    beta 1); we refuse, as PyTorch does for addr."""
    i = rg.ones(2, 2, dtype=rg.int64)
    with pytest.raises(RuntimeError, match="beta"):
        rg.addmm(i, i, i, beta=0.5)
    with pytest.raises(RuntimeError, match="value"):
        rg.addcmul(rg.tensor([1]), rg.tensor([1]), rg.tensor([1]), value=1.5)
    assert rg.addmm(i, i, i, beta=2, alpha=3).tolist() == torch.addmm(
        *(torch.ones(2, 2, dtype=torch.long),) * 3, beta=2, alpha=3).tolist()


def test_ex_forms_report_failing_batch_elements():
    """info as LAPACK's (torch's); the failing element's result is nan, the others right and
    differentiable."""
    good, bad = _spd(3, 3), np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    A = np.stack([good, np.diag([1.0, 0.0, 1.0]), bad])
    for name in ("inv_ex", "cholesky_ex"):
        x = rg.tensor(A, requires_grad=True)
        out, info = getattr(rg.linalg, name)(x)
        tout, tinfo = getattr(torch.linalg, name)(torch.tensor(A))
        np.testing.assert_array_equal(info.data, tinfo.numpy())
        ok = tinfo.numpy() == 0
        np.testing.assert_allclose(out.data[ok], tout.numpy()[ok], rtol=1e-10)
        assert np.isnan(out.data[~ok]).all()
        rg.nan_to_num(out).sum().backward()
        assert np.isfinite(x.grad.data).all() and np.any(x.grad.data[0] != 0)
    out, info = rg.linalg.solve_ex(A, np.ones((3, 3)))
    np.testing.assert_array_equal(info.data, torch.linalg.solve_ex(
        torch.tensor(A), torch.ones(3, 3, dtype=torch.float64)).info.numpy())
    with pytest.raises(RuntimeError, match="not positive-definite"):
        rg.linalg.cholesky_ex(A, check_errors=True)


def test_svd_returns_V_not_Vh_and_completes_with_some_false():
    A = _r(4, 2)
    U, S_, V = rg.svd(A, some=False)
    assert U.shape == (4, 4) and V.shape == (2, 2)
    np.testing.assert_allclose((U[:, :2] * S_) @ V.T.data, A, atol=1e-12)
    np.testing.assert_allclose((U.T @ U).data, np.eye(4), atol=1e-12)
    Q, R = rg.qr(A, some=False)
    assert Q.shape == (4, 4) and R.shape == (4, 2)
    np.testing.assert_allclose((Q @ R).data, A, atol=1e-12)
