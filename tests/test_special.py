"""rg.special against SciPy, mpmath and torch.special: values, gradients of every order,
limits at the points the generated tests avoid, and refusals."""

import math
import sys

import mpmath
import numpy as np
import pytest
import scipy.special as sc
import torch

import retrograd as rg
from retrograd import special as S
from retrograd.gradcheck import gradcheck, gradgradcheck


def _leaf(values, dtype=np.float64):
    return rg.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def test_gammaln_derivative_is_digamma_to_second_order():
    x = _leaf([0.3, 1.0, 2.5, 7.25, -1.5])
    (g,) = rg.autograd.grad(S.gammaln(x).sum(), [x], create_graph=True)
    np.testing.assert_allclose(g.data, sc.digamma(x.data), rtol=1e-14)
    (h,) = rg.autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(h.data, sc.polygamma(1, x.data), rtol=1e-14)
    hess = rg.func.hessian(lambda v: S.gammaln(v).sum())(x.detach())
    np.testing.assert_allclose(hess.data, np.diag(sc.polygamma(1, x.data)), rtol=1e-14)
    np.testing.assert_allclose(rg.func.jacfwd(S.digamma)(x.detach()).data,
                               np.diag(sc.polygamma(1, x.data)), rtol=1e-14)


def test_polygamma_orders_chain():
    x = _leaf([0.4, 1.7, 3.0])
    f = S.polygamma(2, x)
    np.testing.assert_allclose(f.data, sc.polygamma(2, x.data), rtol=1e-14)
    (g,) = rg.autograd.grad(f.sum(), [x], create_graph=True)
    (h,) = rg.autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(g.data, sc.polygamma(3, x.data), rtol=1e-13)
    np.testing.assert_allclose(h.data, sc.polygamma(4, x.data), rtol=1e-13)
    np.testing.assert_allclose(S.polygamma(0, x).data, sc.digamma(x.data), rtol=1e-15)


@pytest.mark.parametrize("name", ["gammaln", "digamma", "erfcx", "i0", "i0e", "i1", "i1e",
                                  "ndtr", "ndtri", "log_ndtr", "entr", "sinc", "expit"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_values_and_dtypes_match_torch(name, dtype):
    x = np.array([0.05, 0.3, 0.5, 0.9, 1.7])
    if name not in ("ndtri", "entr"):
        x = np.concatenate([x, -x])
    ours = getattr(S, name)(rg.tensor(x.astype(dtype)))
    ref = getattr(torch.special, name)(torch.tensor(x.astype(dtype)))
    assert ours.dtype == dtype
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(ours.data, ref.numpy(), rtol=tol, atol=tol)


def test_integer_input_gives_the_default_float_dtype():
    assert S.gammaln(rg.tensor([1, 2, 3])).dtype == rg.get_default_dtype()
    np.testing.assert_allclose(S.gammaln(rg.tensor([1, 2, 4])).data, [0, 0, math.log(6)],
                               atol=1e-6)


def _torch_grads(fn, x, order=2):
    t = torch.tensor(x, requires_grad=True)
    (g,) = torch.autograd.grad(fn(t).sum(), [t], create_graph=True)
    out = [g]
    if order > 1:
        out.append(torch.autograd.grad(g.sum(), [t], allow_unused=True)[0])
    return [o.detach().numpy() if o is not None else np.zeros_like(x) for o in out]


def _ours_grads(fn, x):
    t = _leaf(x)
    (g,) = rg.autograd.grad(fn(t).sum(), [t], create_graph=True)
    (h,) = rg.autograd.grad(g.sum(), [t], allow_unused=True)
    return [g.data, np.zeros_like(x) if h is None else h.data]


@pytest.mark.parametrize("name", ["i1", "i1e", "sinc"])
def test_limits_at_zero_match_torch(name):
    x = np.array([0.0, -0.0, 1e-300, 0.7])
    ours = _ours_grads(getattr(S, name), x)
    ref = _torch_grads(getattr(torch.special, name), x)
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-12, atol=1e-14)
    assert ours[0][0] == {"i1": 0.5, "i1e": 0.5, "sinc": 0.0}[name]


def test_entr_at_zero_and_below_matches_torch():
    x = np.array([0.0, -0.5, 0.3, np.nan])
    t = torch.tensor(x, requires_grad=True)
    ref = torch.special.entr(t)
    ref.sum().backward()
    ours = _leaf(x)
    out = S.entr(ours)
    out.sum().backward()
    np.testing.assert_array_equal(out.data, ref.detach().numpy())
    np.testing.assert_array_equal(ours.grad.data, t.grad.numpy())  # inf at 0, nan below


def test_log_ndtr_gradient_far_in_the_left_tail():
    """pdf/ndtr both underflow below -38; the ratio tends to -x and stays exact."""
    x = np.array([-5.0, -40.0, -1e3, -1e6, 3.0])
    g = rg.func.grad(lambda v: S.log_ndtr(v).sum())(rg.tensor(x))
    mpmath.mp.dps = 50
    ref = [float(mpmath.npdf(v) / mpmath.ncdf(v)) for v in x]
    np.testing.assert_allclose(g.data, ref, rtol=1e-13)
    np.testing.assert_allclose(S.log_ndtr(rg.tensor(x)).data, sc.log_ndtr(x), rtol=1e-15)


def test_ndtri_is_ndtr_inverse_with_reciprocal_derivative():
    p = _leaf([1e-10, 0.02, 0.5, 0.975])
    x = S.ndtri(p)
    np.testing.assert_allclose(S.ndtr(x).data, p.data, rtol=1e-13)
    (g,) = rg.autograd.grad(x.sum(), [p])
    np.testing.assert_allclose(g.data, 1 / (np.exp(-x.data ** 2 / 2) / math.sqrt(2 * math.pi)),
                               rtol=1e-12)


def test_xlog1py_and_xlogy_at_zero_match_torch():
    x = np.array([0.0, 0.0, 0.0, 1.5])
    y = np.array([-1.0, -2.0, np.nan, 0.5])
    for name in ("xlog1py", "xlogy"):
        tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
        ref = getattr(torch.special, name)(tx, ty)
        ref.sum().backward()
        ox, oy = _leaf(x), _leaf(y)
        out = getattr(S, name)(ox, oy)
        out.sum().backward()
        np.testing.assert_array_equal(out.data, ref.detach().numpy())
        np.testing.assert_array_equal(ox.grad.data, tx.grad.numpy())
        np.testing.assert_array_equal(oy.grad.data, ty.grad.numpy())


@pytest.mark.parametrize("eps", [None, 0.1])
def test_logit_matches_torch(eps):
    x = np.array([0.05, 0.3, 0.5, 0.95])
    ours = _ours_grads(lambda v: S.logit(v, eps), x)
    ref = _torch_grads(lambda v: torch.special.logit(v, eps), x)
    np.testing.assert_allclose(S.logit(rg.tensor(x), eps).data,
                               torch.special.logit(torch.tensor(x), eps).numpy(), rtol=1e-14)
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-13)
    np.testing.assert_allclose(ours[1], ref[1], rtol=1e-12)


def test_multigammaln_matches_torch():
    """Values and gradients as torch's; second derivatives as SciPy's trigamma (torch's
    trigamma is accurate to about 5e-10 only)."""
    x = np.array([[2.3, 3.5], [4.0, 10.25]])
    for p in (1, 2, 4):
        ours = _ours_grads(lambda v, p=p: S.multigammaln(v, p), x)
        ref = _torch_grads(lambda v, p=p: torch.special.multigammaln(v, p), x)
        np.testing.assert_allclose(S.multigammaln(rg.tensor(x), p).data,
                                   torch.special.multigammaln(torch.tensor(x), p).numpy(),
                                   rtol=1e-14)
        np.testing.assert_allclose(ours[0], ref[0], rtol=1e-12)
        np.testing.assert_allclose(ours[1], ref[1], rtol=1e-8)
        trigamma = sum(sc.polygamma(1, x - j / 2) for j in range(p))
        np.testing.assert_allclose(ours[1], trigamma, rtol=1e-13)
    low = np.array([1.2, 0.3, -0.7, 1.0, 0.0])  # torch 2.13 no longer refuses x <= (p - 1) / 2
    np.testing.assert_allclose(S.multigammaln(rg.tensor(low), 4).data,
                               torch.special.multigammaln(torch.tensor(low), 4).numpy(),
                               rtol=1e-13)
    with pytest.raises(ValueError, match="'p' must be >= 1"):
        S.multigammaln(rg.tensor([1.2]), 0)


def test_softmax_family_matches_torch():
    x = np.random.default_rng(0).standard_normal((3, 4))
    for name in ("softmax", "log_softmax"):
        ours = getattr(S, name)(rg.tensor(x), 1)
        ref = getattr(torch.special, name)(torch.tensor(x), 1)
        np.testing.assert_allclose(ours.data, ref.numpy(), rtol=1e-14)
    assert S.softmax(rg.tensor(x), 0, dtype=rg.float32).dtype == np.float32
    np.testing.assert_allclose(S.logsumexp(rg.tensor(x), 1).data,
                               torch.special.logsumexp(torch.tensor(x), 1).numpy(), rtol=1e-14)


# ---------------------------------------------------------------- Hurwitz zeta

def _mp_zeta(x, q, n=0):
    mpmath.mp.dps = 40
    return float(mpmath.zeta(x, q, n))


def test_zeta_values_and_gradient_in_q_match_torch():
    x = np.array([1.5, 2.0, 3.3, 6.0])
    q = np.array([0.5, 1.0, 2.5, 7.0])
    tx, tq = torch.tensor(x), torch.tensor(q, requires_grad=True)
    ref = torch.special.zeta(tx, tq)
    ref.sum().backward()
    oq = _leaf(q)
    out = S.zeta(rg.tensor(x), oq)
    out.sum().backward()
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(oq.grad.data, tq.grad.numpy(), rtol=1e-13)


def test_zeta_derivatives_in_x_against_mpmath():
    x = np.array([1.1, 1.5, 2.0, 3.3, 7.0, 12.0])
    q = np.array([0.01, 0.5, 1.0, 2.5, 10.0, 3.0])
    ox = _leaf(x)
    (g,) = rg.autograd.grad(S.zeta(ox, rg.tensor(q)).sum(), [ox], create_graph=True)
    (h,) = rg.autograd.grad(g.sum(), [ox])
    np.testing.assert_allclose(g.data, [_mp_zeta(a, b, 1) for a, b in zip(x, q)], rtol=1e-12)
    np.testing.assert_allclose(h.data, [_mp_zeta(a, b, 2) for a, b in zip(x, q)], rtol=1e-12)
    # forward mode agrees
    t = rg.func.jvp(lambda v: S.zeta(v, rg.tensor(q)), (rg.tensor(x),),
                    (rg.tensor(np.ones_like(x)),))[1]
    np.testing.assert_allclose(t.data, g.data, rtol=1e-14)


def test_zeta_gradcheck_in_both_inputs_to_second_order():
    x = _leaf([1.7, 2.5, 4.0])
    q = _leaf([0.6, 1.9, 3.1])
    assert gradcheck(S.zeta, [x, q])
    assert gradgradcheck(S.zeta, [x, q])


def test_zeta_outside_the_domain_is_nan_in_every_derivative():
    x = _leaf([0.5, 1.0])
    out = S.zeta(x, rg.tensor([1.0, 1.0]))
    assert np.isnan(out.data[0]) and out.data[1] == np.inf
    (g,) = rg.autograd.grad(out.sum(), [x])
    assert np.isnan(g.data).all()


# ---------------------------------------------------------------- incomplete gamma

def test_gammainc_gradient_in_x_and_refusal_in_a():
    a, x = _leaf([0.5, 2.0, 3.5]), _leaf([0.3, 1.5, 4.0])
    np.testing.assert_allclose(S.gammainc(a, x).data, sc.gammainc(a.data, x.data), rtol=1e-14)
    np.testing.assert_allclose((S.gammainc(a, x) + S.gammaincc(a, x)).data, 1.0, rtol=1e-14)
    (g,) = rg.autograd.grad(S.gammainc(a.detach(), x).sum(), [x])
    np.testing.assert_allclose(
        g.data, x.data ** (a.data - 1) * np.exp(-x.data) / sc.gamma(a.data), rtol=1e-13)
    with pytest.raises(NotImplementedError, match="'input'"):
        rg.autograd.grad(S.gammainc(a, x).sum(), [a])


# ---------------------------------------------------------------- refusals

def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="'n' must be >= 0"):
        S.polygamma(-1, rg.tensor([1.0]))
    with pytest.raises(TypeError, match="'n' must be an int"):
        S.polygamma(1.5, rg.tensor([1.0]))
    with pytest.raises(TypeError, match="complex"):
        S.gammaln(rg.tensor([1 + 1j]))
    with pytest.raises(TypeError, match="complex"):
        S.zeta(rg.tensor([2 + 1j]), 1.0)


def test_missing_scipy_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    monkeypatch.setitem(sys.modules, "scipy", None)
    with pytest.raises(ImportError, match=r"retrograd\[special\]"):
        S.gammaln(rg.tensor([1.5]))
    # the functions NumPy can compute need no SciPy
    np.testing.assert_allclose(S.ndtr(rg.tensor([0.0])).data, [0.5])
    np.testing.assert_allclose(S.sinc(rg.tensor([0.5])).data, [2 / math.pi], rtol=1e-6)


def test_top_level_names_and_methods_match_torch():
    a = np.array([0.3, 1.5, 2.5])
    x, t = rg.tensor(a), torch.tensor(a)
    for name in ("lgamma", "digamma", "i0", "sinc", "logit"):
        np.testing.assert_allclose(getattr(rg, name)(x).data, getattr(torch, name)(t).numpy(),
                                   rtol=1e-13)
        np.testing.assert_allclose(getattr(x, name)().data, getattr(t, name)().numpy(),
                                   rtol=1e-13)
    np.testing.assert_allclose(x.polygamma(2).data, t.polygamma(2).numpy(), rtol=1e-13)
    np.testing.assert_allclose(rg.mvlgamma(x + 1, 2).data, torch.mvlgamma(t + 1, 2).numpy(),
                               rtol=1e-13)
    np.testing.assert_allclose(rg.igamma(x, x).data, torch.igamma(t, t).numpy(), rtol=1e-13)
    np.testing.assert_allclose(x.igammac(x).data, t.igammac(t).numpy(), rtol=1e-13)
