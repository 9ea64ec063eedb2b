"""Porting round on statistics, classical ML and probabilistic programs (GMM EM, k-means,
PCA, Kalman/RTS, HMM, Bayesian regression, variational inference): the cases where
retrograd differed from PyTorch, each computed under both libraries in the test, plus
compact whole-program comparisons that guard the ports end to end."""

from __future__ import annotations

import math

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


# ---------------------------------------------------------- whole-program comparisons
def _both(program):
    """The program run under torch and under retrograd, float64 inputs."""
    return program(rg), program(torch)


def _close_all(a, b, tol=1e-8):
    for i, (x, y) in enumerate(zip(a, b)):
        close(x, y, f"output {i}", tol=tol)


_RS = np.random.RandomState(0)
_GMM_X = np.concatenate([_RS.randn(40, 3) + [3, 0, 0], _RS.randn(30, 3) * 0.5 - 1,
                         _RS.randn(30, 3) * [1, 2, 0.3]])


def test_program_gmm_em_and_kmeans():
    """EM for a 3-component full-covariance GMM (MultivariateNormal(scale_tril=cholesky),
    logsumexp responsibilities, einsum M-step, symmetrised covariances, the final
    MixtureSameFamily) and k-means with cdist/argmin/scatter_add_/bincount(minlength=)."""
    def program(L):
        D = L.distributions
        x = L.tensor(_GMM_X)
        mu, K = x[[0, 45, 80]].clone(), 3
        cov = L.eye(3, dtype=L.float64).repeat(K, 1, 1)
        pi = L.full((K,), 1.0 / K, dtype=L.float64)
        lls = []
        for _ in range(4):
            comp = D.MultivariateNormal(mu, scale_tril=L.linalg.cholesky(cov))
            lp = comp.log_prob(x.unsqueeze(1)) + pi.log()
            ll = L.logsumexp(lp, dim=1, keepdim=True)
            lls.append(ll.sum())
            r = (lp - ll).exp()
            nk = r.sum(0)
            mu = L.einsum("nk,nd->kd", r, x) / nk[:, None]
            diff = x[:, None, :] - mu[None]
            cov = L.einsum("nk,nki,nkj->kij", r, diff, diff) / nk[:, None, None]
            cov = (cov + cov.mT) / 2 + 1e-6 * L.eye(3, dtype=L.float64)
            pi = nk / nk.sum()
        mix = D.MixtureSameFamily(D.Categorical(probs=pi),
                                  D.MultivariateNormal(mu, covariance_matrix=cov))
        c = x[[0, 45, 80]].clone()
        for _ in range(3):
            a = L.cdist(x, c).argmin(dim=1)
            s = L.zeros_like(c).scatter_add_(0, a[:, None].expand(-1, 3), x)
            n = L.bincount(a, minlength=K)
            c = s / n[:, None].clamp(min=1)
        return (L.stack(lls), mu, cov, pi, mix.log_prob(x), mix.variance, c, n,
                L.bincount(a, weights=x[:, 0], minlength=K))
    _close_all(*_both(program))


def test_program_kalman_rts_and_hmm():
    """A batched Kalman filter (solve, cholesky, cholesky_solve, (P + P.mT)/2, MVN
    likelihood) with an RTS smoother, differentiated in the transition matrix; and an HMM
    forward-backward in log space with Viterbi back-pointers, differentiated in the
    transition logits."""
    rs = np.random.RandomState(1)
    A0, H0, Y = np.eye(3) * 0.9 + 0.05 * rs.randn(3, 3), rs.randn(2, 3), rs.randn(4, 8, 2)
    obs = rs.randint(0, 4, (2, 10))
    logA0, logB0 = rs.randn(3, 3), rs.randn(3, 4)

    def program(L):
        f64 = dict(dtype=L.float64)
        A = L.tensor(A0, requires_grad=True)
        H, Q, R, y = L.tensor(H0), 0.1 * L.eye(3, **f64), 0.2 * L.eye(2, **f64), L.tensor(Y)
        x, P = L.zeros(4, 3, 1, **f64), L.eye(3, **f64).expand(4, 3, 3).clone()
        xs, Ps, xps, Pps, ll = [], [], [], [], 0
        for t in range(Y.shape[1]):
            xp, Pp = A @ x, A @ P @ A.mT + Q
            S = H @ Pp @ H.T + R
            Ls = L.linalg.cholesky(S)
            v = y[:, t, :, None] - H @ xp
            K = L.linalg.solve(S, H @ Pp).mT
            x = xp + K @ v
            P = (L.eye(3, **f64) - K @ H) @ Pp
            P = (P + P.mT) / 2
            ll = ll + L.distributions.MultivariateNormal(
                L.zeros(2, **f64), scale_tril=Ls).log_prob(v.squeeze(-1))
            ll = ll + L.cholesky_solve(v, Ls).sum((-2, -1)) * 0.01
            xs.append(x), Ps.append(P), xps.append(xp), Pps.append(Pp)
        xsm, outs = xs[-1], [xs[-1]]
        for t in range(Y.shape[1] - 2, -1, -1):
            G = L.linalg.solve(Pps[t + 1], A @ Ps[t]).mT
            xsm = xs[t] + G @ (xsm - xps[t + 1])
            outs.append(xsm)
        (ll.sum() + L.stack(outs).square().sum()).backward()
        la = L.tensor(logA0, requires_grad=True)
        lA, lB = L.log_softmax(la, -1), L.log_softmax(L.tensor(logB0), -1)
        o = L.tensor(obs)
        em = lB[:, o].permute(1, 2, 0)
        alpha = em[:, 0] - math.log(3)
        delta, bps = alpha, []
        for t in range(1, o.shape[1]):
            alpha = L.logsumexp(alpha.unsqueeze(-1) + lA, dim=-2) + em[:, t]
            delta, bp = (delta.unsqueeze(-1) + lA).max(dim=-2)
            delta = delta + em[:, t]
            bps.append(bp)
        best = delta.argmax(-1)
        path = [best]
        for bp in reversed(bps):
            best = bp.gather(1, best.unsqueeze(1)).squeeze(1)
            path.insert(0, best)
        logZ = L.logsumexp(alpha, -1)
        logZ.sum().backward()
        return ll, L.stack(outs), A.grad, logZ, L.stack(path, 1), la.grad
    _close_all(*_both(program))


def test_program_variational_regression_with_adam():
    """Mean-field and low-rank Gaussian VI for Bayesian linear regression with fixed
    reparameterisation noise: Normal likelihood, closed-form KLs (Normal, LowRankMVN to
    MVN), LogNormal log-density, five Adam steps, and the Gamma/Wishart KLs of the
    hyper-priors."""
    rs = np.random.RandomState(4)
    X0 = rs.randn(40, 3)
    y0 = X0 @ np.array([1.0, -1.0, 0.5]) + 0.1 * rs.randn(40)
    eps = rs.randn(8, 3)

    def program(L):
        D, F = L.distributions, L.nn.functional
        f64 = dict(dtype=L.float64)
        mu = L.zeros(3, **f64, requires_grad=True)
        rho = L.full((3,), -1.0, **f64, requires_grad=True)
        W = L.nn.Parameter(L.tensor(np.full((3, 2), 0.1)))
        ls = L.zeros((), **f64, requires_grad=True)
        opt = L.optim.Adam([mu, rho, W, ls], lr=0.05)
        X, y, E = L.tensor(X0), L.tensor(y0), L.tensor(eps)
        losses = []
        for _ in range(5):
            opt.zero_grad()
            q = D.Normal(mu, F.softplus(rho))
            w = mu + F.softplus(rho) * E
            lik = D.Normal(X @ w.T, ls.exp()).log_prob(y[:, None]).sum(0).mean()
            kl = D.kl_divergence(q, D.Normal(L.zeros(3, **f64), L.ones(3, **f64))).sum()
            q2 = D.LowRankMultivariateNormal(mu, W, F.softplus(rho))
            kl2 = D.kl_divergence(q2, D.MultivariateNormal(L.zeros(3, **f64), L.eye(3, **f64)))
            ln = D.LogNormal(mu, rho.exp()).log_prob(w.abs() + 0.1).sum(-1).mean()
            hyper = D.kl_divergence(D.Gamma(ls.exp() + 1, L.tensor(2.0, **f64)),
                                    D.Gamma(L.tensor(1.5, **f64), L.tensor(1.0, **f64)))
            loss = -(lik - kl) + 0.1 * kl2 - 0.01 * ln + hyper
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        wk = D.kl_divergence(D.Wishart(L.tensor(4.0, **f64), scale_tril=L.tril(W @ W.T
                                                                              + L.eye(3, **f64))),
                             D.Wishart(L.tensor(5.0, **f64), L.eye(3, **f64)))
        return L.stack(losses), mu, rho, W, ls, q2.covariance_matrix, wk
    _close_all(*_both(program), tol=1e-7)


def test_unbroadcasted_factor_attributes():
    """MultivariateNormal._unbroadcasted_scale_tril and LowRankMultivariateNormal's
    _unbroadcasted_cov_factor/_unbroadcasted_cov_diag (torch's attributes, read by GP and
    Kalman code) exist and hold the parameters before batch broadcasting."""
    out = []
    for L in (torch, rg):
        D = L.distributions
        cov = L.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=L.float64)
        m = D.MultivariateNormal(L.zeros(3, 2, dtype=L.float64), covariance_matrix=cov)
        lr = D.LowRankMultivariateNormal(L.zeros(4, 2, dtype=L.float64),
                                         L.ones(2, 1, dtype=L.float64),
                                         L.ones(2, dtype=L.float64))
        out.append((m._unbroadcasted_scale_tril, lr._unbroadcasted_cov_factor,
                    lr._unbroadcasted_cov_diag))
    for a, b in zip(*reversed(out)):
        close(a, b)
