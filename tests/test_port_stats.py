"""Porting round on statistics, classical ML and probabilistic programs (GMM EM, k-means,
PCA, Kalman/RTS, HMM, Bayesian regression, variational inference): the cases where
retrograd differed from PyTorch, each computed under both libraries in the test, plus
compact whole-program comparisons that guard the ports end to end."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg


# ------------------------------------------------------- Wishart KL (exp-family Bregman)
@pytest.mark.parametrize("batch", [(), (3,)], ids=["scalar", "batched"])
def test_wishart_kl_divergence_matches_torch(batch):
    """kl_divergence(Wishart, Wishart) goes through the exponential-family Bregman form, as
    torch's: it needs Wishart's natural parameters and log-normaliser (it raised
    NotImplementedError), and sums the scalar natural parameter whole as torch does."""
    out = []
    for L in (torch, rg):
        D = L.distributions
        n = int(np.prod(batch))
        df = L.tensor(5.0 + np.arange(n).reshape(batch) if batch else 5.0, dtype=L.float64)
        cov = L.tensor(np.broadcast_to(np.array([[2.0, 0.5], [0.5, 1.0]]), batch + (2, 2)).copy(),
                       requires_grad=True)
        q_cov = L.tensor([[1.5, 0.2], [0.2, 0.8]], dtype=L.float64, requires_grad=True)
        p = D.Wishart(df, covariance_matrix=cov)
        q = D.Wishart(L.tensor(6.0, dtype=L.float64), covariance_matrix=q_cov)
        kl = D.kl_divergence(p, q)
        kl.sum().backward()
        out.append((kl, q_cov.grad, cov.grad))
    (a, ga, pa), (b, gb, pb) = out
    close(a, b, "kl")
    close(ga, gb, "grad q")
    assert pa is None and pb is None  # torch's Bregman form detaches p's parameters


def test_airy_ai_large_argument_underflows_to_zero():
    """Ai(x) for large finite x is 0 as in torch (SciPy's kernel returns NaN past ~1e8)."""
    x = np.array([-30.0, 0.0, 3.0, 150.0, 1e4, 1e8, 1e10, 1e30, np.inf, np.nan])
    for dt in ("float64", "float32"):
        a = rg.special.airy_ai(rg.tensor(x, dtype=getattr(rg, dt)))
        b = torch.special.airy_ai(torch.tensor(x, dtype=getattr(torch, dt)))
        close(a, b, dt, tol=1e-5)


# ---------------------------------------------- mixed float32/float64 operands are refused
@pytest.mark.parametrize("case", ["cholesky_solve", "lstsq", "polar", "complex"])
def test_mixed_precision_operands_refused_as_torch(case):
    """torch.cholesky_solve, linalg.lstsq, polar and complex refuse a float32 operand next
    to a float64 one (a Kalman filter with a float32 eye); they promoted (or complex raised
    TypeError where torch raises RuntimeError)."""
    def call(L):
        a32, b64 = L.eye(3, dtype=L.float32), L.ones(3, 3, dtype=L.float64)
        if case == "cholesky_solve":
            return L.cholesky_solve(b64, a32)
        if case == "lstsq":
            return L.linalg.lstsq(a32, b64)
        return getattr(L, case)(a32, b64)
    with pytest.raises(RuntimeError):
        call(torch)
    with pytest.raises(RuntimeError):
        call(rg)


def test_same_precision_cholesky_solve_lstsq_polar_still_match():
    out = []
    for L in (torch, rg):
        A = L.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=L.float64)
        b = L.tensor([[1.0], [2.0]], dtype=L.float64)
        Lc = L.linalg.cholesky(A)
        out.append((L.cholesky_solve(b, Lc), L.linalg.lstsq(A, b).solution,
                    L.polar(b, b + 1), L.polar(A.float(), A.float())))
    for a, b in zip(*reversed(out)):
        close(a, b, tol=1e-6)


# ------------------------------------- Gamma / HalfCauchy log_prob take the parameters' dtype
@pytest.mark.parametrize("name", ["Gamma", "Chi2", "HalfCauchy"])
def test_log_prob_value_cast_to_parameter_dtype(name):
    """torch's Gamma (so Chi2) and HalfCauchy.log_prob cast the value to the parameters'
    dtype (as_tensor(value, dtype=rate.dtype)): float32 parameters and a float64 value
    give a float32 log-density (it was float64), with the gradient reaching the value."""
    out = []
    for L in (torch, rg):
        D = L.distributions
        c = L.tensor([2.0, 3.0], dtype=L.float32)
        if name == "Gamma":
            d = D.Gamma(c, L.tensor(1.5, dtype=L.float32))
        else:
            d = getattr(D, name)(c)
        v = L.tensor([1.0, 2.5], dtype=L.float64, requires_grad=True)
        lp = d.log_prob(v)
        lp.sum().backward()
        out.append((lp, v.grad))
    (a, ga), (b, gb) = out
    close(a, b, "log_prob", tol=1e-6)
    close(ga, gb, "grad", tol=1e-6)


def test_gamma_log_prob_takes_a_number_or_list():
    """Gamma.log_prob accepts a Python number or list, as torch's as_tensor does."""
    for value in (1.0, [1.0, 2.0]):
        a = rg.distributions.Gamma(rg.tensor([2.0, 3.0]), rg.tensor(1.5)).log_prob(value)
        b = torch.distributions.Gamma(torch.tensor([2.0, 3.0]), torch.tensor(1.5)).log_prob(value)
        close(a, b, str(value), tol=1e-6)


@pytest.mark.parametrize("name", ["Normal", "Gamma", "Poisson", "Categorical", "MVN", "Wishart"])
def test_negative_sample_shape_raises_runtime_error(name):
    """A negative sample_shape raises torch's RuntimeError (it was NumPy's bare ValueError
    from deep inside the draw)."""
    def make(L):
        D, t = L.distributions, L.tensor
        return {"Normal": lambda: D.Normal(t(0.0), t(1.0)),
                "Gamma": lambda: D.Gamma(t(2.0), t(1.0)),
                "Poisson": lambda: D.Poisson(t(2.0)),
                "Categorical": lambda: D.Categorical(probs=t([0.5, 0.5])),
                "MVN": lambda: D.MultivariateNormal(L.zeros(2), L.eye(2)),
                "Wishart": lambda: D.Wishart(t(3.0), L.eye(2))}[name]()
    for L in (torch, rg):
        with pytest.raises(RuntimeError):
            make(L).sample((-1,))
    assert tuple(make(rg).sample((2, 3)).shape) == tuple(make(torch).sample((2, 3)).shape)


def test_private_distribution_helpers_ports_import():
    """GP and flow code imports torch's private helpers: multivariate_normal's
    _batch_mahalanobis/_batch_mv, kl's _batch_trace_XXT/_KL_REGISTRY and utils'
    _standard_normal (they were missing)."""
    from importlib import import_module

    out = []
    for L in (torch, rg):
        Mv = import_module(L.__name__ + ".distributions.multivariate_normal")
        K = import_module(L.__name__ + ".distributions.kl")
        U = import_module(L.__name__ + ".distributions.utils")
        chol = L.linalg.cholesky(L.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=L.float64))
        Lb = L.stack([chol, 2 * chol])
        x = L.tensor([[1.0, 2.0], [0.5, -1.0], [0.0, 3.0]], dtype=L.float64, requires_grad=True)
        m1 = Mv._batch_mahalanobis(chol, x)
        m2 = Mv._batch_mahalanobis(Lb, x[:, None, :].expand(3, 2, 2))
        (m1.sum() + m2.sum()).backward()
        z = U._standard_normal((2, 3), dtype=L.float32, device="cpu")
        assert tuple(z.shape) == (2, 3) and str(z.dtype).endswith("float32")
        assert isinstance(K._KL_REGISTRY, dict)
        out.append((m1, m2, x.grad, Mv._batch_mv(Lb, x[:2]), K._batch_trace_XXT(Lb)))
    for a, b in zip(*reversed(out)):
        close(a, b)


# ------------------------------------------------ statistics functions' refusals as torch's
@pytest.mark.parametrize("case", ["histogramdd_1d", "cov_bool", "corrcoef_bool",
                                  "logcumsumexp_int", "frac_int"])
def test_statistics_refusals_are_runtime_errors(case):
    """histogramdd of a 1-d input (torch wants (N, D) points; it was an IndexError), cov /
    corrcoef of a bool tensor (accepted), logcumsumexp and frac of integers (a plain
    TypeError): each a RuntimeError as torch's."""
    def call(L):
        if case == "histogramdd_1d":
            return L.histogramdd(L.tensor([1.0, 2.0, 3.0]), bins=[3])
        if case in ("cov_bool", "corrcoef_bool"):
            return getattr(L, case.split("_")[0])(L.tensor([[True, False, True]]))
        if case == "logcumsumexp_int":
            return L.logcumsumexp(L.tensor([1, 2]), 0)
        return L.frac(L.tensor([1, 2]))
    with pytest.raises(RuntimeError):
        call(torch)
    with pytest.raises(RuntimeError):
        call(rg)


def test_histogramdd_and_cov_of_valid_inputs_still_match():
    rng = np.random.default_rng(0)
    pts, w = rng.standard_normal((40, 2)), rng.random(40)
    ints = rng.integers(0, 5, (2, 7))
    out = []
    for L in (torch, rg):
        h = L.histogramdd(L.tensor(pts), bins=[3, 4], weight=L.tensor(w), density=True)
        out.append((h.hist, *h.bin_edges, L.cov(L.tensor(ints)), L.corrcoef(L.tensor(ints)),
                    L.logcumsumexp(L.tensor(pts), 0)))
    for a, b in zip(*reversed(out)):
        close(a, b, tol=1e-9 if b.dtype == torch.float64 else 1e-6)
