"""rg.distributions against torch.distributions: log_prob, cdf, icdf, entropy and moments
with their gradients in parameters and values (float64), batch and event shapes,
reparameterised-sample gradients against closed forms, seeded sampling, validation."""

import numpy as np
import pytest
import torch

import retrograd as rg

D = rg.distributions
TD = torch.distributions
RNG = np.random.default_rng(0)

# name: (parameter arrays (batch (2, 3) by broadcasting), values of shape (4, 2, 3), methods)
U23 = RNG.uniform(size=(2, 3))
UNIVARIATE = {
    "Normal": ([RNG.normal(size=(2, 3)), RNG.uniform(0.5, 2, (3,))],
               RNG.normal(size=(4, 2, 3)), ["log_prob", "cdf", "icdf", "entropy"]),
    "Uniform": ([RNG.uniform(-1, 0, (2, 3)), RNG.uniform(1, 2, (2, 3))],
                RNG.uniform(0, 1, (4, 2, 3)), ["log_prob", "cdf", "icdf", "entropy"]),
    "Exponential": ([RNG.uniform(0.5, 2, (2, 3))], RNG.uniform(0.1, 3, (4, 2, 3)),
                    ["log_prob", "cdf", "icdf", "entropy"]),
    "Laplace": ([RNG.normal(size=(2, 3)), RNG.uniform(0.5, 2, (2, 1))],
                RNG.normal(size=(4, 2, 3)), ["log_prob", "cdf", "icdf", "entropy"]),
    "Gamma": ([RNG.uniform(0.5, 3, (2, 3)), RNG.uniform(0.5, 2, (3,))],
              RNG.uniform(0.1, 3, (4, 2, 3)), ["log_prob", "entropy"]),
    "Chi2": ([RNG.uniform(1, 5, (2, 3))], RNG.uniform(0.1, 4, (4, 2, 3)),
             ["log_prob", "entropy"]),
    "Beta": ([RNG.uniform(0.5, 3, (2, 3)), RNG.uniform(0.5, 3, (2, 3))],
             RNG.uniform(0.05, 0.95, (4, 2, 3)), ["log_prob", "entropy"]),
    "StudentT": ([RNG.uniform(1.5, 6, (2, 3)), RNG.normal(size=(3,)), RNG.uniform(0.5, 2, (2, 3))],
                 RNG.normal(size=(4, 2, 3)), ["log_prob", "entropy"]),
    "Poisson": ([RNG.uniform(0.5, 4, (2, 3))], RNG.integers(0, 6, (4, 2, 3)).astype(float),
                ["log_prob"]),
    "Bernoulli": ([U23 * 0.8 + 0.1], RNG.integers(0, 2, (4, 2, 3)).astype(float),
                  ["log_prob", "entropy"]),
}
MOMENTS = ["mean", "variance", "stddev"]
# Gradients through digamma use trigamma, which torch computes to about 1e-9 only
# (ours: SciPy's, to the last place; tests/test_special.py checks it against mpmath).
TRIGAMMA = dict(rtol=1e-8, atol=1e-9)


def _pair(name, params, **kw):
    ours = [rg.tensor(p, requires_grad=True) for p in params]
    theirs = [torch.tensor(p, requires_grad=True) for p in params]
    return ours, theirs, getattr(D, name)(*ours, **kw), getattr(TD, name)(*theirs, **kw)


def _compare(out, ref, ours, theirs, rtol=1e-12, atol=1e-13):
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=rtol, atol=atol)
    assert out.shape == tuple(ref.shape)
    w = RNG.standard_normal(out.shape)
    gs = rg.autograd.grad((out * rg.tensor(w)).sum(), ours, allow_unused=True)
    tgs = torch.autograd.grad((ref * torch.tensor(w)).sum(), theirs, allow_unused=True,
                              retain_graph=True)
    for g, tg in zip(gs, tgs):
        if tg is None:
            assert g is None or np.allclose(g.data, 0)
        else:
            np.testing.assert_allclose(g.data, tg.numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(UNIVARIATE))
def test_univariate_matches_torch(name):
    params, values, methods = UNIVARIATE[name]
    ours, theirs, d, t = _pair(name, params)
    assert d.batch_shape == tuple(t.batch_shape) and d.event_shape == tuple(t.event_shape)
    for m in methods:
        if m == "entropy":
            _compare(d.entropy(), t.entropy(), ours, theirs, **TRIGAMMA)
            continue
        v = values if m != "icdf" else RNG.uniform(0.05, 0.95, values.shape)
        x, tx = rg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
        diff_value = name not in ("Poisson", "Bernoulli")
        _compare(getattr(d, m)(x), getattr(t, m)(tx), ours + ([x] if diff_value else []),
                 theirs + ([tx] if diff_value else []))
    for m in MOMENTS:
        _compare(getattr(d, m), getattr(t, m), ours, theirs)


def test_gamma_cdf_matches_torch_in_the_rate_and_value():
    a = RNG.uniform(0.5, 3, (2, 3))
    b, v = rg.tensor(RNG.uniform(0.5, 2, (3,)), requires_grad=True), RNG.uniform(0.1, 3, (2, 3))
    tb = torch.tensor(b.data, requires_grad=True)
    x, tx = rg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    _compare(D.Gamma(rg.tensor(a), b).cdf(x), TD.Gamma(torch.tensor(a), tb).cdf(tx), [b, x],
             [tb, tx])


@pytest.mark.parametrize("kind", ["probs", "logits"])
def test_categorical_matches_torch(kind):
    raw = RNG.uniform(0.1, 1, (2, 3, 5)) if kind == "probs" else RNG.normal(size=(2, 3, 5))
    p, tp = rg.tensor(raw, requires_grad=True), torch.tensor(raw, requires_grad=True)
    d, t = D.Categorical(**{kind: p}), TD.Categorical(**{kind: tp})
    assert d.batch_shape == (2, 3) and d.event_shape == ()
    v = RNG.integers(0, 5, (4, 2, 3))
    _compare(d.log_prob(rg.tensor(v)), t.log_prob(torch.tensor(v)), [p], [tp])
    _compare(d.log_prob(rg.tensor(v[0, 0, 0])), t.log_prob(torch.tensor(v[0, 0, 0])), [p], [tp])
    _compare(d.entropy(), t.entropy(), [p], [tp])
    _compare(d.probs, t.probs, [p], [tp])
    _compare(d.logits, t.logits, [p], [tp])
    assert d.sample((7,)).shape == (7, 2, 3)


@pytest.mark.parametrize("kind", ["probs", "logits"])
def test_bernoulli_from_logits_or_probs(kind):
    raw = RNG.uniform(0.1, 0.9, (3,)) if kind == "probs" else RNG.normal(size=(3,))
    p, tp = rg.tensor(raw, requires_grad=True), torch.tensor(raw, requires_grad=True)
    d, t = D.Bernoulli(**{kind: p}), TD.Bernoulli(**{kind: tp})
    v = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    _compare(d.log_prob(rg.tensor(v)), t.log_prob(torch.tensor(v)), [p], [tp])
    _compare(d.entropy(), t.entropy(), [p], [tp])
    _compare(d.mean, t.mean, [p], [tp])


def _spd(n, batch=()):
    a = RNG.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_multivariate_normal_matches_torch(kind):
    loc = RNG.normal(size=(2, 3))
    m = _spd(3, (2,))
    if kind == "scale_tril":
        m = np.linalg.cholesky(m)
    ours = [rg.tensor(loc, requires_grad=True), rg.tensor(m, requires_grad=True)]
    theirs = [torch.tensor(loc, requires_grad=True), torch.tensor(m, requires_grad=True)]
    d = D.MultivariateNormal(ours[0], **{kind: ours[1]})
    t = TD.MultivariateNormal(theirs[0], **{kind: theirs[1]})
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    v = RNG.normal(size=(4, 2, 3))
    x, tx = rg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    _compare(d.log_prob(x), t.log_prob(tx), ours + [x], theirs + [tx], rtol=1e-10)
    _compare(d.entropy(), t.entropy(), ours, theirs, rtol=1e-10)
    for attr in ("mean", "variance", "covariance_matrix", "precision_matrix", "scale_tril"):
        np.testing.assert_allclose(getattr(d, attr).data, getattr(t, attr).detach().numpy(),
                                   rtol=1e-10, atol=1e-12)
    assert d.rsample((5,)).shape == (5, 2, 3)


def test_multivariate_normal_broadcasts_loc_against_a_batch_of_matrices():
    loc, cov = RNG.normal(size=3), _spd(3, (4,))
    d = D.MultivariateNormal(rg.tensor(loc), rg.tensor(cov))
    t = TD.MultivariateNormal(torch.tensor(loc), torch.tensor(cov))
    assert d.batch_shape == (4,)
    v = RNG.normal(size=(3,))
    np.testing.assert_allclose(d.log_prob(rg.tensor(v)).data, t.log_prob(torch.tensor(v)),
                               rtol=1e-12)


def test_dirichlet_matches_torch():
    c = RNG.uniform(0.5, 3, (2, 4))
    ours, theirs = [rg.tensor(c, requires_grad=True)], [torch.tensor(c, requires_grad=True)]
    d, t = D.Dirichlet(*ours), TD.Dirichlet(*theirs)
    assert d.batch_shape == (2,) and d.event_shape == (4,)
    v = RNG.dirichlet(np.ones(4), (3, 2))
    x, tx = rg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    _compare(d.log_prob(x), t.log_prob(tx), ours + [x], theirs + [tx])
    _compare(d.entropy(), t.entropy(), ours, theirs, **TRIGAMMA)
    for m in ("mean", "variance"):
        _compare(getattr(d, m), getattr(t, m), ours, theirs)
    s = d.sample((5,))
    assert s.shape == (5, 2, 4)
    np.testing.assert_allclose(s.data.sum(-1), 1, rtol=1e-12)


# ---------------------------------------------------------------- KL

def test_kl_divergence_matches_torch():
    pairs = [
        ("Normal", [RNG.normal(size=3), RNG.uniform(0.5, 2, 3)],
         [RNG.normal(size=3), RNG.uniform(0.5, 2, 3)]),
        ("Categorical", [RNG.uniform(0.1, 1, (2, 4))], [RNG.uniform(0.1, 1, (2, 4))]),
        ("Bernoulli", [RNG.uniform(0.1, 0.9, 3)], [RNG.uniform(0.1, 0.9, 3)]),
        ("Exponential", [RNG.uniform(0.5, 2, 3)], [RNG.uniform(0.5, 2, 3)]),
        ("Gamma", [RNG.uniform(0.5, 3, 3), RNG.uniform(0.5, 2, 3)],
         [RNG.uniform(0.5, 3, 3), RNG.uniform(0.5, 2, 3)]),
    ]
    for name, pp, qp in pairs:
        op, tp, dp, tdp = _pair(name, pp)
        oq, tq, dq, tdq = _pair(name, qp)
        _compare(D.kl_divergence(dp, dq), TD.kl_divergence(tdp, tdq), op + oq, tp + tq,
                 **TRIGAMMA)
    loc_p, loc_q, cp, cq = RNG.normal(size=3), RNG.normal(size=3), _spd(3), _spd(3)
    ours = [rg.tensor(a, requires_grad=True) for a in (loc_p, cp, loc_q, cq)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (loc_p, cp, loc_q, cq)]
    kl = D.kl_divergence(D.MultivariateNormal(ours[0], ours[1]),
                         D.MultivariateNormal(ours[2], ours[3]))
    tkl = TD.kl_divergence(TD.MultivariateNormal(theirs[0], theirs[1]),
                           TD.MultivariateNormal(theirs[2], theirs[3]))
    _compare(kl, tkl, ours, theirs, rtol=1e-10)
    with pytest.raises(NotImplementedError, match="Normal and Poisson"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Poisson(1.0))


# ---------------------------------------------------------------- sampling

def test_rsample_gradients_match_closed_forms():
    """d E[x^2] / d mu = 2 mu and d E[x^2] / d sigma = 2 sigma for N(mu, sigma^2), from
    the mean over draws; standard errors are about 0.01."""
    rg.manual_seed(0)
    mu, sigma = rg.tensor(0.7, requires_grad=True), rg.tensor(1.3, requires_grad=True)
    x = D.Normal(mu, sigma).rsample((200_000,))
    gmu, gsigma = rg.autograd.grad((x ** 2).mean(), [mu, sigma])
    assert abs(gmu.item() - 2 * 0.7) < 0.03 and abs(gsigma.item() - 2 * 1.3) < 0.03
    rate = rg.tensor(1.6, requires_grad=True)
    (g,) = rg.autograd.grad(D.Exponential(rate).rsample((200_000,)).mean(), [rate])
    assert abs(g.item() + 1 / 1.6 ** 2) < 0.01  # d(1/rate)/d rate
    low, high = rg.tensor(-1.0, requires_grad=True), rg.tensor(2.0, requires_grad=True)
    gl, gh = rg.autograd.grad(D.Uniform(low, high).rsample((200_000,)).mean(), [low, high])
    assert abs(gl.item() - 0.5) < 0.01 and abs(gh.item() - 0.5) < 0.01
    loc, scale = rg.tensor(0.3, requires_grad=True), rg.tensor(0.8, requires_grad=True)
    x = D.Laplace(loc, scale).rsample((200_000,))
    gl, gs = rg.autograd.grad((x ** 2).mean(), [loc, scale])  # E x^2 = loc^2 + 2 scale^2
    assert abs(gl.item() - 0.6) < 0.03 and abs(gs.item() - 4 * 0.8) < 0.05
    L = rg.tensor(np.array([[1.0, 0.0], [0.5, 2.0]]), requires_grad=True)
    m = rg.tensor(np.array([0.2, -0.4]), requires_grad=True)
    x = D.MultivariateNormal(m, scale_tril=L).rsample((200_000,))
    gm, gL = rg.autograd.grad((x ** 2).sum(-1).mean(), [m, L])  # E|x|^2 = |m|^2 + |L|_F^2
    np.testing.assert_allclose(gm.data, 2 * m.data, atol=0.03)
    np.testing.assert_allclose(gL.data, np.tril(2 * L.data), atol=0.05)


SAMPLERS = {
    "Normal": (0.5, 2.0), "Uniform": (-1.0, 3.0), "Exponential": (1.5,), "Laplace": (0.2, 1.1),
    "Gamma": (2.5, 1.5), "Chi2": (3.0,), "Beta": (2.0, 5.0), "StudentT": (5.0, 0.3, 1.2),
    "Poisson": (3.5,),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_seeded_samples_repeat_and_have_the_right_moments(name):
    d = getattr(D, name)(*[rg.tensor(np.full((2,), a)) for a in SAMPLERS[name]])
    rg.manual_seed(3)
    s1 = d.sample((50_000,))
    rg.manual_seed(3)
    s2 = d.sample((50_000,))
    np.testing.assert_array_equal(s1.data, s2.data)
    assert s1.shape == (50_000, 2) and s1.dtype == np.float64 and not s1.requires_grad
    m, v = d.mean.data, d.variance.data
    np.testing.assert_allclose(s1.data.mean(0), m, atol=4 * np.sqrt(v / 50_000).max())
    np.testing.assert_allclose(s1.data.var(0), v, rtol=0.1)


def test_categorical_and_dirichlet_sample_frequencies():
    rg.manual_seed(1)
    p = np.array([0.1, 0.2, 0.7])
    s = D.Categorical(rg.tensor(p)).sample((40_000,))
    assert s.dtype == np.int64
    np.testing.assert_allclose(np.bincount(s.data, minlength=3) / 40_000, p, atol=0.01)
    s = D.Dirichlet(rg.tensor([1.0, 2.0, 3.0])).sample((40_000,))
    np.testing.assert_allclose(s.data.mean(0), [1 / 6, 2 / 6, 3 / 6], atol=0.01)
    s = D.Bernoulli(rg.tensor([0.25])).sample((40_000,))
    assert abs(s.data.mean() - 0.25) < 0.01


def test_rsample_refused_where_not_reparameterised():
    for d in (D.Poisson(1.0), D.Categorical(rg.tensor([0.5, 0.5])), D.Bernoulli(0.5)):
        assert not d.has_rsample
        with pytest.raises(NotImplementedError, match="rsample"):
            d.rsample()
    for d in (D.Normal(0.0, 1.0), D.Uniform(0.0, 1.0), D.Exponential(1.0), D.Laplace(0.0, 1.0),
              D.Gamma(2.0, 1.0), D.Chi2(3.0), D.Beta(2.0, 2.0), D.StudentT(3.0),
              D.Dirichlet(rg.tensor([1.0, 1.0]))):
        assert d.has_rsample  # Gamma and the four built on it: tests/test_distributions_rsample.py


def test_python_number_parameters_take_the_default_dtype():
    d = D.Normal(0.0, 1.0)
    assert d.loc.dtype == rg.get_default_dtype() and d.batch_shape == ()
    assert D.Normal(rg.tensor([0.0, 1.0], dtype=rg.float64), 2).scale.dtype == np.float64


# ---------------------------------------------------------------- validation

def test_invalid_parameters_raise_naming_them():
    with pytest.raises(ValueError, match="parameter scale"):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError, match="parameter rate"):
        D.Exponential(rg.tensor([1.0, 0.0]))
    with pytest.raises(ValueError, match="parameter concentration1"):
        D.Beta(-1.0, 1.0)
    with pytest.raises(ValueError, match="parameter df"):
        D.StudentT(0.0)
    with pytest.raises(ValueError, match="parameter probs"):
        D.Bernoulli(probs=1.5)
    with pytest.raises(ValueError, match="parameter probs"):
        D.Categorical(probs=rg.tensor([0.5, -0.2, 0.7]))
    with pytest.raises(ValueError, match="low"):
        D.Uniform(1.0, 1.0)
    with pytest.raises(ValueError, match="covariance_matrix"):
        D.MultivariateNormal(rg.zeros(2), rg.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="scale_tril"):
        D.MultivariateNormal(rg.zeros(2), scale_tril=rg.tensor([[1.0, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="exactly one"):
        D.MultivariateNormal(rg.zeros(2))
    with pytest.raises(ValueError, match="not both"):
        D.Bernoulli(probs=0.5, logits=0.0)
    D.Normal(0.0, -1.0, validate_args=False)  # no check when asked


def test_values_outside_the_support_raise():
    with pytest.raises(ValueError, match="support"):
        D.Exponential(1.0).log_prob(rg.tensor(-1.0))
    with pytest.raises(ValueError, match="support"):
        D.Poisson(1.0).log_prob(rg.tensor(1.5))
    with pytest.raises(ValueError, match="support"):
        D.Categorical(rg.tensor([0.5, 0.5])).log_prob(rg.tensor(2))
    with pytest.raises(ValueError, match="support"):
        D.Uniform(0.0, 1.0).log_prob(rg.tensor(1.5))
    # torch's Uniform support is the closed interval: high itself validates, density 0
    assert D.Uniform(0.0, 1.0).log_prob(rg.tensor(1.0)).item() == -np.inf
    with pytest.raises(ValueError, match="event shape"):
        D.Dirichlet(rg.tensor([1.0, 1.0])).log_prob(rg.tensor([0.2, 0.3, 0.5]))
    lp = D.Uniform(0.0, 1.0, validate_args=False).log_prob(rg.tensor(1.5))
    assert lp.item() == -np.inf
