"""Complex input for QR, slogdet / logdet and the LU family (lu_factor, lu_factor_ex, lu,
lu_unpack, lu_solve) and what is built on them (triangular_solve, svd_lowrank), against
PyTorch: values, dtypes, shapes, gradients of real losses, forward-mode tangents, finite
differences and errors.

QR: both libraries take Q and R from LAPACK's Householder geqrf (R's diagonal real), so Q
and R themselves are compared, not only gauge-free quantities."""

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd.ops import linalg_decomp

RNG = np.random.default_rng(11)


def _c(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().resolve_conj().numpy()
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def _close(ours, theirs, tol=1e-10):
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=tol, atol=tol)


def _pair(a):
    return rg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _weights(outs):
    return [_c(*o.shape) if o.dtype.kind == "c" else RNG.standard_normal(o.shape)
            for o in outs]


def _loss(M, outs, ws):
    """A real loss that sees every output (real and imaginary parts); weights in the
    output's dtype."""
    total = 0.0
    for o, w in zip(outs, ws):
        w = w.astype(_np(o).dtype)
        total = total + (o * M.tensor(w)).real.sum() + (o.abs() ** 2).sum() * 0.1
    return total


def _grads_match(f_rg, f_torch, A, tol=1e-9):
    """Values and the gradient of a real loss of all outputs, against torch."""
    a, t = _pair(A)
    ours, theirs = f_rg(a), f_torch(t)
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for o, p in zip(ours, theirs):
        assert o.dtype == np.dtype(str(p.dtype).removeprefix("torch.")), (o.dtype, p.dtype)
        assert o.shape == tuple(p.shape)
        _close(o, p, tol)
    ws = _weights([o.detach() for o in ours])
    _loss(rg, ours, ws).backward()
    _loss(torch, theirs, ws).backward()
    _close(a.grad, t.grad, tol)


def _jvps_match(f_rg, f_torch, A, tol=1e-9):
    """Forward-mode tangents against torch's and against central differences."""
    T = _c(*A.shape).astype(A.dtype)
    _, ours = rg.func.jvp(f_rg, (rg.tensor(A),), (rg.tensor(T),))
    _, theirs = torch.func.jvp(f_torch, (torch.tensor(A),), (torch.tensor(T),))
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    h = 1e-6
    plus, minus = f_rg(rg.tensor(A + h * T)), f_rg(rg.tensor(A - h * T))
    plus = plus if isinstance(plus, tuple) else (plus,)
    minus = minus if isinstance(minus, tuple) else (minus,)
    for o, p, a, b in zip(ours, theirs, plus, minus):
        assert o.dtype == a.dtype
        _close(o, p, tol)
        _close(o, (a.numpy() - b.numpy()) / (2 * h), 1e-6)


def _qr(M):
    return lambda A: tuple(M.linalg.qr(A))


def _slogdet(M):
    return lambda A: tuple(M.linalg.slogdet(A))


def _lu(M):
    return lambda A: tuple(M.linalg.lu(A))[1:]


# ---------------------------------------------------------------- QR

@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("dtype,tol", [(np.complex128, 1e-12), (np.complex64, 1e-5)])
def test_qr_values_match_torch(shape, dtype, tol):
    A = _c(*shape).astype(dtype)
    for mode in ("reduced", "complete", "r"):
        Q, R = rg.linalg.qr(rg.tensor(A), mode=mode)
        Qt, Rt = torch.linalg.qr(torch.tensor(A), mode=mode)
        assert Q.dtype == R.dtype == dtype
        assert Q.shape == tuple(Qt.shape) and R.shape == tuple(Rt.shape)
        _close(Q, Qt, tol)
        _close(R, Rt, tol)
        d = np.diagonal(R.numpy(), 0, -2, -1)
        assert not d.imag.any()  # geqrf's R: real diagonal


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 3), (2, 2, 4)])
def test_qr_gradients_match_torch(shape):
    _grads_match(_qr(rg), _qr(torch), _c(*shape))


def test_qr_complex64_gradients_match_torch():
    _grads_match(_qr(rg), _qr(torch), _c(2, 4, 3).astype(np.complex64), 1e-4)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 3, 5)])
def test_qr_tangents_match_torch_and_differences(shape):
    _jvps_match(_qr(rg), _qr(torch), _c(*shape))


def test_qr_passes_finite_differences_first_and_second_order():
    def f(x):
        Q, R = rg.linalg.qr(rg.view_as_complex(x))
        return (Q.abs() ** 3).sum() + (R * R).real.sum() + Q[..., 0, :].imag.sum()
    for shape in ((4, 3, 2), (3, 4, 2)):
        x = rg.tensor(RNG.standard_normal(shape), requires_grad=True)
        assert rg.gradcheck(f, [x])
    assert rg.gradgradcheck(f, [rg.tensor(RNG.standard_normal((3, 3, 2)), requires_grad=True)])


def test_qr_complete_tall_is_not_differentiable_as_in_torch():
    A = _c(4, 2)
    Q, R = rg.linalg.qr(rg.tensor(A), mode="complete")
    _close(Q, torch.linalg.qr(torch.tensor(A), mode="complete").Q, 1e-12)
    x = rg.tensor(A, requires_grad=True)
    Qg, Rg = rg.linalg.qr(x, mode="complete")  # torch gives the values, and refuses ...
    _close(Qg.detach(), torch.linalg.qr(torch.tensor(A), mode="complete").Q, 1e-12)
    with pytest.raises(RuntimeError, match="not differentiable"):
        (Qg.abs().sum() + Rg.abs().sum()).backward()  # ... only when differentiated


# ---------------------------------------------------------------- slogdet, logdet

@pytest.mark.parametrize("dtype,tol", [(np.complex128, 1e-10), (np.complex64, 1e-4)])
def test_slogdet_values_dtypes_and_gradients_match_torch(dtype, tol):
    A = _c(2, 3, 3).astype(dtype)
    _grads_match(_slogdet(rg), _slogdet(torch), A, tol)
    s, la = rg.slogdet(rg.tensor(A))
    st, lat = torch.slogdet(torch.tensor(A))
    assert s.dtype == dtype and la.dtype == np.dtype(dtype).char.lower()
    _close(s, st, tol)
    _close(la, lat, tol)


def test_slogdet_sign_alone_and_logdet_gradients_match_torch():
    A = _c(2, 4, 4)
    _grads_match(lambda a: rg.linalg.slogdet(a).sign, lambda t: torch.linalg.slogdet(t).sign, A)
    _grads_match(rg.logdet, torch.logdet, A)
    _grads_match(lambda a: rg.linalg.slogdet(a).logabsdet,
                 lambda t: torch.linalg.slogdet(t).logabsdet, A)


def test_slogdet_tangents_and_finite_differences():
    _jvps_match(_slogdet(rg), _slogdet(torch), _c(2, 3, 3))

    def f(x):
        s, la = rg.linalg.slogdet(rg.view_as_complex(x))
        return (s * rg.tensor(np.array([1 + 2j, -0.5j]))).real.sum() + (la ** 2).sum()
    x = rg.tensor(RNG.standard_normal((2, 3, 3, 2)), requires_grad=True)
    assert rg.gradcheck(f, [x])
    assert rg.gradgradcheck(f, [x])


def test_slogdet_of_singular_complex_matches_torch():
    A = np.ones((3, 3), complex) * (1 + 1j)
    s, la = rg.linalg.slogdet(rg.tensor(A))
    st, lat = torch.linalg.slogdet(torch.tensor(A))
    _close(s, st)
    assert la.item() == lat.item() == -np.inf


# ---------------------------------------------------------------- LU

@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("dtype,tol", [(np.complex128, 1e-12), (np.complex64, 1e-5)])
def test_lu_family_values_match_torch(shape, dtype, tol):
    A = _c(*shape).astype(dtype)
    a, t = rg.tensor(A), torch.tensor(A)
    LU, piv = rg.linalg.lu_factor(a)
    LUt, pivt = torch.linalg.lu_factor(t)
    assert LU.dtype == dtype and piv.dtype == np.int32
    _close(LU, LUt, tol)
    np.testing.assert_array_equal(piv.numpy(), pivt.numpy())
    LU, piv, info = rg.linalg.lu_factor_ex(a)
    _close(LU, torch.linalg.lu_factor_ex(t).LU, tol)
    assert info.dtype == np.int32 and not info.numpy().any()
    for ours, theirs in zip(rg.linalg.lu(a), torch.linalg.lu(t)):
        assert ours.dtype == dtype
        _close(ours, theirs, tol)
    for ours, theirs in zip(rg.lu_unpack(LU, piv), torch.lu_unpack(LUt, pivt)):
        assert ours.dtype == dtype
        _close(ours, theirs, tol)
    ours, theirs = rg.lu(a, get_infos=True), torch.lu(t, get_infos=True)
    _close(ours[0], theirs[0], tol)
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())


def test_lu_pivots_compare_re_plus_im_as_lapack_with_and_without_scipy(monkeypatch):
    """izamax picks the largest |Re| + |Im|, not the largest modulus: here row 1 (3.5 > 3)
    though row 0 has the larger modulus (3 > 2.5)."""
    A = np.array([[3.0, 1.0], [2.0 + 1.5j, 1j]])
    pivt = torch.linalg.lu_factor(torch.tensor(A)).pivots
    assert pivt.tolist() == [2, 2]
    np.testing.assert_array_equal(rg.linalg.lu_factor(rg.tensor(A)).pivots.numpy(), pivt)
    B = _c(2, 5, 5)
    monkeypatch.setattr(linalg_decomp, "_scipy_linalg", lambda: None)  # the NumPy elimination
    np.testing.assert_array_equal(rg.linalg.lu_factor(rg.tensor(A)).pivots.numpy(), pivt)
    LU, piv = rg.linalg.lu_factor(rg.tensor(B))
    LUt, pivt = torch.linalg.lu_factor(torch.tensor(B))
    np.testing.assert_array_equal(piv.numpy(), pivt.numpy())
    _close(LU, LUt)


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 5), (2, 4, 4)])
def test_lu_gradients_match_torch(shape):
    _grads_match(_lu(rg), _lu(torch), _c(*shape))
    _grads_match(lambda a: rg.linalg.lu_factor_ex(a).LU,
                 lambda t: torch.linalg.lu_factor_ex(t).LU, _c(*shape))


def test_lu_complex64_gradients_match_torch():
    _grads_match(_lu(rg), _lu(torch), _c(2, 3, 3).astype(np.complex64), 1e-4)


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (2, 3, 5)])
def test_lu_tangents_match_torch_and_differences(shape):
    _jvps_match(_lu(rg), _lu(torch), _c(*shape))


def test_lu_passes_finite_differences_first_and_second_order():
    def f(x):
        _, L, U = rg.linalg.lu(rg.view_as_complex(x))
        return (L.abs() ** 3).sum() + (U * U).imag.sum()
    for shape in ((3, 3, 2), (4, 3, 2), (3, 4, 2)):
        x = rg.tensor(RNG.standard_normal(shape) + np.eye(shape[0], shape[1])[..., None] * 3,
                      requires_grad=True)
        assert rg.gradcheck(f, [x])
    assert rg.gradgradcheck(f, [x])


@pytest.mark.parametrize("left,adjoint", [(True, False), (True, True), (False, False),
                                          (False, True)])
def test_lu_solve_values_and_gradients_match_torch(left, adjoint):
    A = _c(2, 3, 3) + 2 * np.eye(3)
    B = _c(2, 3, 2) if left else _c(2, 2, 3)
    (a, t), (b, bt) = _pair(A), _pair(B)
    X = rg.linalg.lu_solve(*rg.linalg.lu_factor(a), b, left=left, adjoint=adjoint)
    Xt = torch.linalg.lu_solve(*torch.linalg.lu_factor(t), bt, left=left, adjoint=adjoint)
    _close(X, Xt)
    W = _c(*X.shape)
    (X * rg.tensor(W)).real.sum().backward()
    (Xt * torch.tensor(W)).real.sum().backward()
    _close(a.grad, t.grad)
    _close(b.grad, bt.grad)


def test_lu_solve_complex64_and_torch_lu_solve():
    A = (_c(3, 3) + 2 * np.eye(3)).astype(np.complex64)
    B = _c(3, 2).astype(np.complex64)
    LU, piv = rg.linalg.lu_factor(rg.tensor(A))
    LUt, pivt = torch.linalg.lu_factor(torch.tensor(A))
    X = rg.lu_solve(rg.tensor(B), LU, piv)
    assert X.dtype == np.complex64
    _close(X, torch.lu_solve(torch.tensor(B), LUt, pivt), 1e-5)


def test_lu_errors():
    S = np.array([[1 + 1j, 2 + 2j], [1.0, 2.0]])  # second row a multiple: singular
    S[1] = S[0] * (0.5 - 1j)
    with pytest.raises(RuntimeError):
        torch.linalg.lu_factor(torch.tensor(S))
    with pytest.raises(rg.linalg.LinAlgError, match="U\\[2,2\\]"):
        rg.linalg.lu_factor(rg.tensor(S))
    info = rg.linalg.lu_factor_ex(rg.tensor(S)).info
    np.testing.assert_array_equal(info.numpy(), torch.linalg.lu_factor_ex(torch.tensor(S)).info)
    LU, piv = rg.linalg.lu_factor(rg.tensor(_c(3, 3)))
    with pytest.raises(TypeError, match="same dtype"):
        rg.linalg.lu_solve(LU, piv, rg.tensor(RNG.standard_normal((3, 1))))


# ---------------------------------------------------------------- built on them

@pytest.mark.parametrize("upper,transpose", [(True, False), (False, True)])
def test_triangular_solve_matches_torch(upper, transpose):
    """transpose is A^T, not A^H, for complex A too (as torch)."""
    T = np.triu(_c(2, 3, 3)) + 3 * np.eye(3)
    T = T if upper else np.swapaxes(T, -1, -2)
    B = _c(2, 3, 2)
    (a, t), (b, bt) = _pair(T), _pair(B)
    X = rg.triangular_solve(b, a, upper=upper, transpose=transpose).solution
    with warnings.catch_warnings():  # torch: deprecated in favour of solve_triangular
        warnings.simplefilter("ignore")
        Xt = torch.triangular_solve(bt, t, upper=upper, transpose=transpose).solution
    _close(X, Xt)
    W = _c(*X.shape)
    (X * rg.tensor(W)).real.sum().backward()
    (Xt * torch.tensor(W)).real.sum().backward()
    _close(a.grad, t.grad)
    _close(b.grad, bt.grad)


def test_svd_lowrank_and_pca_lowrank_take_complex():
    """Exact for rank <= q: the singular values and the reconstruction match torch."""
    A = _c(5, 2) @ _c(2, 4)
    U, S, V = rg.svd_lowrank(rg.tensor(A), q=3)
    St = torch.svd_lowrank(torch.tensor(A), q=3)[1]
    assert U.dtype == V.dtype == np.complex128 and S.dtype == np.float64
    _close(S[:2], St[:2], 1e-10)
    np.testing.assert_allclose((U.numpy() * S.numpy()) @ V.numpy().conj().T, A, atol=1e-10)
    _close(rg.pca_lowrank(rg.tensor(A), q=2)[1], torch.pca_lowrank(torch.tensor(A), q=2)[1],
           1e-10)


def test_det_inv_solve_on_complex_match_torch():
    A, B = _c(2, 3, 3) + 2 * np.eye(3), _c(2, 3, 2)
    _grads_match(rg.linalg.det, torch.linalg.det, A)
    _grads_match(rg.linalg.inv, torch.linalg.inv, A)
    _grads_match(lambda a: rg.linalg.solve(a, rg.tensor(B)),
                 lambda t: torch.linalg.solve(t, torch.tensor(B)), A)


def test_complex_qr_and_lu_under_vmap_and_jit():
    A = _c(3, 4, 3)
    Q, R = rg.vmap(lambda a: tuple(rg.linalg.qr(a)))(rg.tensor(A))
    Qt, Rt = torch.linalg.qr(torch.tensor(A))
    _close(Q, Qt)
    _close(R, Rt)
    f = rg.jit(lambda a: rg.linalg.lu(a).U + rg.linalg.slogdet(a[..., :3, :]).sign[..., None, None])
    for X in (A, _c(3, 4, 3)):
        Ut = torch.linalg.lu(torch.tensor(X)).U
        st = torch.linalg.slogdet(torch.tensor(X[..., :3, :])).sign
        _close(f(rg.tensor(X)), Ut + st[..., None, None])


@pytest.mark.parametrize("shape", [(0, 0), (3, 0), (0, 3), (2, 0, 0), (0, 2, 2)])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_lu_of_empty_matrices_matches_torch(shape, dtype):
    """Was: the NumPy elimination and the pivot replay failed to reshape an empty array."""
    x = np.zeros(shape, dtype)
    for name in ("lu_factor", "lu_factor_ex", "lu"):
        ours = getattr(rg.linalg, name)(rg.tensor(x))
        theirs = getattr(torch.linalg, name)(torch.tensor(x))
        for o, t in zip(ours, theirs):
            assert o.shape == tuple(t.shape) and str(o.dtype) == str(t.dtype)[6:]
            np.testing.assert_array_equal(o.numpy(), t.numpy())
    if shape[-1] == shape[-2]:
        B = np.zeros(shape[:-1] + (1,), dtype)
        X = rg.linalg.lu_solve(*rg.linalg.lu_factor(rg.tensor(x)), rg.tensor(B))
        assert X.shape == tuple(torch.linalg.lu_solve(*torch.linalg.lu_factor(torch.tensor(x)),
                                                      torch.tensor(B)).shape)
