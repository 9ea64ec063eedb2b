"""Complex input for the Hermitian and singular-value decompositions (cholesky, eigh, svd,
pinv and what is built on them) against PyTorch: forward values, gradients of real losses
in PyTorch's convention, forward-mode tangents, finite differences, and the errors.

Eigenvectors and singular vectors are free up to a phase each, so they are compared
through quantities that do not see it (|V|, projectors, reconstructions, gauge-invariant
losses); a loss that does see it is refused, as in PyTorch."""

import numpy as np
import pytest
import torch

import retrograd as rg

RNG = np.random.default_rng(7)


def _c(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _hpd(*shape):
    """Hermitian positive-definite matrices of `shape` (the last two dimensions equal)."""
    X = _c(*shape)
    return X @ np.conj(np.swapaxes(X, -1, -2)) + shape[-1] * np.eye(shape[-1])


def _pair(a, requires_grad=True):
    return (rg.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _close(ours, theirs, tol=1e-10):
    theirs = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else theirs
    np.testing.assert_allclose(np.asarray(ours.detach().numpy() if hasattr(ours, "detach")
                                          else ours), theirs, rtol=tol, atol=tol)


# ---------------------------------------------------------------- forward values

@pytest.mark.parametrize("dtype,tol", [(np.complex128, 1e-10), (np.complex64, 2e-4)])
def test_cholesky_values_match_torch(dtype, tol):
    A = _hpd(2, 3, 4, 4).astype(dtype)
    ours, theirs = _pair(A, requires_grad=False)
    for upper in (False, True):
        L = rg.linalg.cholesky(ours, upper=upper)
        assert L.dtype == A.dtype
        _close(L, torch.linalg.cholesky(theirs, upper=upper), tol)
    _close(rg.cholesky(ours), torch.cholesky(theirs), tol)
    _close(rg.cholesky_inverse(rg.linalg.cholesky(ours)),
           torch.cholesky_inverse(torch.linalg.cholesky(theirs)), tol)
    B = _c(2, 3, 4, 2).astype(dtype)
    for upper in (False, True):
        _close(rg.linalg.cholesky_solve(rg.tensor(B), rg.linalg.cholesky(ours, upper=upper),
                                        upper=upper),
               torch.cholesky_solve(torch.tensor(B), torch.linalg.cholesky(theirs, upper=upper),
                                    upper=upper), tol)
    L, info = rg.linalg.cholesky_ex(ours)
    _close(L, torch.linalg.cholesky_ex(theirs).L, tol)
    assert not info.numpy().any()


def test_solve_triangular_values_and_gradients_match_torch():
    T = np.tril(_c(2, 3, 3)) + 3 * np.eye(3)
    B = _c(2, 3, 2)
    (t1, t2), (b1, b2) = _pair(T), _pair(B)
    W = _c(2, 3, 2)
    for upper, left in ((False, True), (True, False)):
        tt = np.swapaxes(T, -1, -2) if upper else T
        (t1, t2) = _pair(tt)
        (b1, b2) = _pair(B if left else np.swapaxes(B, -1, -2))
        w = W if left else np.swapaxes(W, -1, -2)
        X1 = rg.linalg.solve_triangular(t1, b1, upper=upper, left=left)
        X2 = torch.linalg.solve_triangular(t2, b2, upper=upper, left=left)
        _close(X1, X2)
        (X1 * rg.tensor(w)).real.sum().backward()
        (X2 * torch.tensor(w)).real.sum().backward()
        _close(t1.grad, t2.grad)
        _close(b1.grad, b2.grad)


@pytest.mark.parametrize("dtype,tol", [(np.complex128, 1e-10), (np.complex64, 2e-4)])
def test_eigh_values_and_gauge_free_vectors_match_torch(dtype, tol):
    A = _hpd(2, 4, 4).astype(dtype)
    ours, theirs = _pair(A, requires_grad=False)
    w, V = rg.linalg.eigh(ours)
    tw, tV = torch.linalg.eigh(theirs)
    assert w.dtype == np.finfo(dtype).dtype and V.dtype == dtype
    _close(w, tw, tol * 10)
    _close(rg.linalg.eigvalsh(ours), torch.linalg.eigvalsh(theirs), tol * 10)
    _close(V.abs(), tV.abs(), tol)
    v, tv = V.numpy(), tV.numpy()
    proj = np.einsum("...ik,...jk->...kij", v, v.conj())
    tproj = np.einsum("...ik,...jk->...kij", tv, tv.conj())
    _close(proj, tproj, tol)
    _close((v * w.numpy()[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2)), A, tol * 10)
    # the phase convention: each column's largest-magnitude entry real and positive
    big = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    assert np.all(big.real > 0) and np.all(big.imag == 0)


@pytest.mark.parametrize("shape", [(3, 3), (2, 5, 3), (4, 2)])
@pytest.mark.parametrize("dtype,tol", [(np.complex128, 1e-10), (np.complex64, 2e-4)])
def test_svd_values_and_gauge_free_vectors_match_torch(shape, dtype, tol):
    A = _c(*shape).astype(dtype)
    ours, theirs = _pair(A, requires_grad=False)
    for full in (False, True):
        U, S, Vh = rg.linalg.svd(ours, full_matrices=full)
        tU, tS, tVh = torch.linalg.svd(theirs, full_matrices=full)
        assert S.dtype == np.finfo(dtype).dtype and U.dtype == dtype and Vh.dtype == dtype
        assert U.shape == tuple(tU.shape) and Vh.shape == tuple(tVh.shape)
        _close(S, tS, tol)
        u, vh = U.numpy(), Vh.numpy()
        k = S.shape[-1]
        _close((u[..., :k] * S.numpy()[..., None, :]) @ vh[..., :k, :], A, tol * 10)
        for Q in (u, vh):  # unitary, completing columns included
            eye = np.eye(Q.shape[-1]) if Q is u else np.eye(Q.shape[-2])
            QhQ = np.conj(np.swapaxes(Q, -1, -2)) @ Q if Q is u else \
                Q @ np.conj(np.swapaxes(Q, -1, -2))
            _close(QhQ, np.broadcast_to(eye, QhQ.shape), tol * 10)
        _close(np.abs(u[..., :k]), tU.abs()[..., :k], tol * 10)
        _close(np.abs(vh[..., :k, :]), tVh.abs()[..., :k, :], tol * 10)
        # each singular triple's u_i v_i^H is free of the phase
        tu, tvh = tU.numpy(), tVh.numpy()
        outer = np.einsum("...ik,...kj->...kij", u[..., :k], vh[..., :k, :])
        touter = np.einsum("...ik,...kj->...kij", tu[..., :k], tvh[..., :k, :])
        _close(outer, touter, tol * 10)
    u = u[..., :k]  # the completing columns of full_matrices are LAPACK's
    big = np.take_along_axis(u, np.argmax(np.abs(u), axis=-2)[..., None, :], axis=-2)
    assert np.all(big.real > 0) and np.all(big.imag == 0)
    _close(rg.linalg.svdvals(ours), torch.linalg.svdvals(theirs), tol)
    U, S, V = rg.svd(ours)  # torch.svd: V, A = U diag(S) V^H
    _close((U.numpy() * S.numpy()[..., None, :]) @ np.conj(np.swapaxes(V.numpy(), -1, -2)),
           A, tol * 10)


def test_pinv_lstsq_rank_norms_cond_match_torch():
    A = _c(2, 5, 3)
    B = _c(2, 5, 2)
    ours, theirs = _pair(A, requires_grad=False)
    _close(rg.linalg.pinv(ours), torch.linalg.pinv(theirs))
    H = _hpd(3, 3)
    _close(rg.linalg.pinv(rg.tensor(H), hermitian=True),
           torch.linalg.pinv(torch.tensor(H), hermitian=True))
    _close(rg.pinverse(ours), torch.pinverse(theirs))
    for driver in (None, "gelsd"):
        r = rg.linalg.lstsq(ours, rg.tensor(B), driver=driver)
        t = torch.linalg.lstsq(theirs, torch.tensor(B), driver=driver)
        _close(r.solution, t.solution)
        assert r.residuals.dtype == t.residuals.numpy().dtype
        _close(r.residuals, t.residuals)
        _close(r.singular_values, t.singular_values)
    # a rank-2 complex matrix
    low = _c(4, 2) @ _c(2, 3)
    assert int(rg.linalg.matrix_rank(rg.tensor(low))) == int(
        torch.linalg.matrix_rank(torch.tensor(low))) == 2
    assert int(rg.linalg.matrix_rank(rg.tensor(H), hermitian=True)) == 3
    for ord in ("nuc", 2, -2, "fro", 1, np.inf):
        _close(rg.linalg.matrix_norm(ours, ord), torch.linalg.matrix_norm(theirs, ord))
    _close(rg.linalg.norm(ours[0], "nuc"), torch.linalg.norm(theirs[0], "nuc"))
    sq = _c(3, 3)
    for p in (None, 2, -2, "nuc", "fro", 1):
        _close(rg.linalg.cond(rg.tensor(sq), p), torch.linalg.cond(torch.tensor(sq), p), 1e-9)


# ---------------------------------------------------------------- gradients against torch

def _W(*shape):
    return _c(*shape)


W44 = _W(2, 4, 4)
W43 = _W(2, 4, 3)
W34 = _W(2, 3, 4)
WEIGHTS = np.array([0.3, -1.0, 2.0, 0.5])


def _lib(x):
    return rg if isinstance(x, rg.Tensor) else torch


def _t(x, arr):
    return rg.tensor(arr) if isinstance(x, rg.Tensor) else torch.tensor(arr)


def _mh(x):
    return x.mH


# (make the input, loss(lib-agnostic)); every loss is real and free of the vectors' phases
HERMITIAN_LOSSES = {
    "cholesky": lambda A: (_lib(A).linalg.cholesky(A) * _t(A, W44)).real.sum(),
    "cholesky_upper_abs": lambda A: _lib(A).linalg.cholesky(A, upper=True).abs().pow(3).sum(),
    "cholesky_solve": lambda A: (_lib(A).cholesky_solve(_t(A, W43),
                                                        _lib(A).linalg.cholesky(A))
                                 * _t(A, W43)).real.sum(),
    "eigvalsh": lambda A: (_lib(A).linalg.eigvalsh(A) * _t(A, WEIGHTS)).sum(),
    "eigh_abs": lambda A: _lib(A).linalg.eigh(A)[1].abs().pow(3).sum(),
    "eigh_function": lambda A: _eigh_function(A),
    "eigh_both": lambda A: (_lib(A).linalg.eigh(A)[0].sin().sum()
                            + _lib(A).linalg.eigh(A)[1].abs().pow(4).sum()),
    "pinv_hermitian": lambda A: (_lib(A).linalg.pinv(A, hermitian=True)
                                 * _t(A, W44)).real.sum(),
}


def _eigh_function(A):
    """V diag(exp(w / 4)) V^H contracted with a weight: a matrix function, phase-free."""
    w, V = _lib(A).linalg.eigh(A)
    F = (V * (w / 4).exp().unsqueeze(-2)) @ _mh(V)
    return (F * _t(A, W44)).real.sum()


def _svd_outer(A):
    U, S, Vh = _lib(A).linalg.svd(A, full_matrices=False)
    return ((U * S.sqrt().unsqueeze(-2)) @ Vh * _t(A, W34 if A.shape[-1] == 4 else W43)
            ).real.sum()


GENERAL_LOSSES = {
    "svdvals": lambda A: _lib(A).linalg.svdvals(A).pow(2).sum() + _lib(A).linalg.svdvals(A)
    .sum(),
    "svd_abs": lambda A: sum(x.abs().pow(3).sum() for x in _lib(A).linalg.svd(
        A, full_matrices=False)),
    "svd_outer": _svd_outer,
    "pinv": lambda A: (_lib(A).linalg.pinv(A).mT * _t(A, W34 if A.shape[-1] == 4 else W43)
                       ).real.sum(),
    "lstsq": lambda A: (_lib(A).linalg.lstsq(A, _t(A, W43 if A.shape[-2] == 4 else W34)
                                             ).solution.abs().pow(2).sum()),
    "nuclear": lambda A: _lib(A).linalg.matrix_norm(A, "nuc").sum(),
    "spectral": lambda A: _lib(A).linalg.matrix_norm(A, 2).sum(),
}


@pytest.mark.parametrize("name", sorted(HERMITIAN_LOSSES))
def test_gradients_of_hermitian_decompositions_match_torch(name):
    ours, theirs = _pair(_hpd(2, 4, 4))
    HERMITIAN_LOSSES[name](ours).backward()
    HERMITIAN_LOSSES[name](theirs).backward()
    _close(ours.grad, theirs.grad, 1e-9)


@pytest.mark.parametrize("shape", [(2, 4, 3), (2, 3, 4)])
@pytest.mark.parametrize("name", sorted(GENERAL_LOSSES))
def test_gradients_of_svd_family_match_torch(name, shape):
    ours, theirs = _pair(_c(*shape))
    GENERAL_LOSSES[name](ours).backward()
    GENERAL_LOSSES[name](theirs).backward()
    _close(ours.grad, theirs.grad, 1e-9)


def test_complex64_gradients_match_torch():
    A = _hpd(2, 4, 4).astype(np.complex64)
    for name in ("cholesky", "eigh_function"):
        ours, theirs = _pair(A)
        HERMITIAN_LOSSES[name](ours).backward()
        HERMITIAN_LOSSES[name](theirs).backward()
        assert ours.grad.dtype == np.complex64
        _close(ours.grad, theirs.grad, 2e-3)
    ours, theirs = _pair(_c(2, 4, 3).astype(np.complex64))
    _svd_outer(ours).backward()
    _svd_outer(theirs).backward()
    _close(ours.grad, theirs.grad, 2e-3)


def test_second_order_matches_torch():
    """The gradient's own gradient (create_graph: the rules run on tensors)."""
    for name in ("cholesky", "eigh_function"):
        ours, theirs = _pair(_hpd(4, 4))
        (g,) = rg.autograd.grad(HERMITIAN_LOSSES[name](ours), [ours], create_graph=True)
        (tg,) = torch.autograd.grad(HERMITIAN_LOSSES[name](theirs), [theirs],
                                    create_graph=True)
        (h,) = rg.autograd.grad((g * rg.tensor(W44[0])).real.sum(), [ours])
        (th,) = torch.autograd.grad((tg * torch.tensor(W44[0])).real.sum(), [theirs])
        _close(h, th, 1e-8)


# ---------------------------------------------------------------- finite differences

def _hermitian_of(x):
    """A Hermitian positive-definite matrix made of a real parameter (3, 3, 2)."""
    Z = _lib(x).view_as_complex(x)
    return Z @ Z.mH + _t(x, 3 * np.eye(3))


FD_LOSSES = {
    "cholesky": lambda x: (rg.linalg.cholesky(_hermitian_of(x))
                           * rg.tensor(W44[0, :3, :3])).real.sum(),
    "eigh": lambda x: (rg.linalg.eigh(_hermitian_of(x))[1].abs().pow(3).sum()
                       + rg.linalg.eigvalsh(_hermitian_of(x)).pow(2).sum()),
    "svd": lambda x: sum(t.abs().pow(3).sum() for t in rg.linalg.svd(
        rg.view_as_complex(x), full_matrices=False)),
    "pinv": lambda x: (rg.linalg.pinv(rg.view_as_complex(x))
                       * rg.tensor(W44[0, :3, :3])).real.sum(),
}


@pytest.mark.parametrize("name", sorted(FD_LOSSES))
def test_gradients_pass_finite_differences(name):
    x = rg.tensor(RNG.standard_normal((3, 3, 2)), requires_grad=True)
    assert rg.gradcheck(FD_LOSSES[name], [x])


def test_second_order_passes_finite_differences():
    x = rg.tensor(RNG.standard_normal((3, 3, 2)), requires_grad=True)
    assert rg.gradgradcheck(FD_LOSSES["eigh"], [x])


# ---------------------------------------------------------------- forward mode

def _fd_tangent(f, A, T, h=1e-6):
    return (f(rg.tensor(A + h * T)).numpy() - f(rg.tensor(A - h * T)).numpy()) / (2 * h)


def test_tangents_are_those_of_the_phase_fixed_forward():
    """jvp of every output, eigenvectors and singular vectors included, against central
    differences of the forward as computed (its phase choice included)."""
    H, dH = _hpd(2, 4, 4), _hpd(2, 4, 4) - 4 * np.eye(4)
    for f in (lambda A: rg.linalg.cholesky(A), lambda A: rg.linalg.eigh(A)[1],
              lambda A: rg.linalg.eigh(A)[0]):
        _, t = rg.func.jvp(f, (rg.tensor(H),), (rg.tensor(dH),))
        _close(t, _fd_tangent(f, H, dH), 1e-6)
    for shape in ((2, 4, 3), (2, 3, 4)):
        A, T = _c(*shape), _c(*shape)
        for i in range(3):
            def f(a, i=i):
                return rg.linalg.svd(a, full_matrices=False)[i]
            _, t = rg.func.jvp(f, (rg.tensor(A),), (rg.tensor(T),))
            _close(t, _fd_tangent(f, A, T), 1e-6)
        f = rg.linalg.pinv
        _, t = rg.func.jvp(f, (rg.tensor(A),), (rg.tensor(T),))
        _close(t, _fd_tangent(f, A, T), 1e-6)


def test_gauge_free_tangents_match_torch():
    H, dH = _hpd(4, 4), _hpd(4, 4) - 4 * np.eye(4)

    def f(lib):
        def g(A):
            w, V = lib.linalg.eigh(A)
            return (V * w.unsqueeze(-2).exp()) @ V.mH + lib.linalg.cholesky(A)
        return g
    _, ours = rg.func.jvp(f(rg), (rg.tensor(H),), (rg.tensor(dH),))
    _, theirs = torch.func.jvp(f(torch), (torch.tensor(H),), (torch.tensor(dH),))
    _close(ours, theirs, 1e-9)


# ---------------------------------------------------------------- errors

PHASE_LOSSES = {
    "eigh": lambda lib, x: (lib.linalg.eigh(_hermitian_of(x))[1]
                            * _t(x, W44[0, :3, :3])).real.sum(),
    "svd_U": lambda lib, x: (lib.linalg.svd(lib.view_as_complex(x))[0]
                             * _t(x, W44[0, :3, :3])).real.sum(),
    "svd_Vh": lambda lib, x: lib.linalg.svd(lib.view_as_complex(x))[2][..., 0].imag.sum(),
}


@pytest.mark.parametrize("name", sorted(PHASE_LOSSES))
def test_loss_that_depends_on_the_phase_gets_the_exact_gradient_of_the_phase_choice(name):
    """PyTorch refuses such a loss (RuntimeError); here its gradient is that of the forward
    as computed (each vector's largest entry real positive), checked by finite differences,
    also to second order (where the engine brings the rule its cotangent in parts)."""
    x = RNG.standard_normal((3, 3, 2))
    with pytest.raises(RuntimeError, match="e\\^\\{i phi\\}"):
        PHASE_LOSSES[name](torch, torch.tensor(x, requires_grad=True)).backward()
    ours = rg.tensor(x, requires_grad=True)
    assert rg.gradcheck(lambda a: PHASE_LOSSES[name](rg, a), [ours])
    if name == "eigh":
        assert rg.gradgradcheck(lambda a: PHASE_LOSSES[name](rg, a), [ours])


def test_not_positive_definite_complex_raises_as_in_torch():
    A = np.diag([1.0, -1.0, 2.0]).astype(complex)
    with pytest.raises(RuntimeError, match="order 2"):
        torch.linalg.cholesky(torch.tensor(A))
    with pytest.raises(rg.linalg.LinAlgError, match="order 2 is not positive-definite"):
        rg.linalg.cholesky(rg.tensor(A))
    L, info = rg.linalg.cholesky_ex(rg.tensor(np.stack([A, np.eye(3, dtype=complex)])))
    tinfo = torch.linalg.cholesky_ex(torch.tensor(np.stack([A, np.eye(3, dtype=complex)]))).info
    np.testing.assert_array_equal(info.numpy(), tinfo.numpy())
    assert np.isnan(L.numpy()[0]).all() and not np.isnan(L.numpy()[1]).any()


def test_formerly_refused_complex_is_taken():
    """qr, slogdet and lu_factor take complex input now (tests/test_linalg_complex_more.py
    checks them against torch)."""
    z = rg.tensor(np.eye(2) * (1 + 1j))
    assert rg.linalg.qr(z).Q.dtype == np.complex128
    assert rg.linalg.slogdet(z).logabsdet.dtype == np.float64
    assert rg.linalg.lu_factor(z).pivots.dtype == np.int32
