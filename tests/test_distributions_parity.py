"""rg.distributions against torch.distributions 2.13: constraints, transforms, the
constraint registry, module paths and the distributions added for parity (float64)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch
import torch.distributions as TD

import retrograd as rg
import retrograd.distributions as RD


def T(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def R(a, requires_grad=False):
    return rg.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def close(r, t, atol=1e-9, rtol=1e-7):
    r = r.detach().numpy() if hasattr(r, "detach") else np.asarray(r)
    t = t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)
    np.testing.assert_allclose(r, t, atol=atol, rtol=rtol)


# ---------------------------------------------------------------- constraints

_rng = np.random.default_rng(0)
_A = _rng.normal(size=(3, 3))
_VALUES = [
    np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0]),
    np.array([[0.2, 0.8], [0.5, 0.6], [1.0, 0.0]]),
    np.array([[[1.0, 0.0], [0.5, 2.0]], [[1.0, 0.3], [0.3, 2.0]], [[0.0, 0.0], [1.0, -1.0]]]),
    np.stack([_A @ _A.T + np.eye(3), _A + _A.T, np.tril(_A)]),
    np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.6, 0.8]])[None],
]


def _constraint_pairs():
    C, TC = RD.constraints, TD.constraints
    names = ["real", "real_vector", "positive", "nonnegative", "unit_interval", "simplex",
             "boolean", "nonnegative_integer", "positive_integer", "lower_cholesky",
             "lower_triangular", "corr_cholesky", "positive_definite",
             "positive_semidefinite", "square", "symmetric", "one_hot"]
    pairs = [(n, getattr(C, n), getattr(TC, n)) for n in names]
    pairs += [("greater_than", C.greater_than(0.5), TC.greater_than(0.5)),
              ("greater_than_eq", C.greater_than_eq(0.5), TC.greater_than_eq(0.5)),
              ("less_than", C.less_than(1.0), TC.less_than(1.0)),
              ("interval", C.interval(0.0, 2.0), TC.interval(0.0, 2.0)),
              ("half_open", C.half_open_interval(0.0, 2.0), TC.half_open_interval(0.0, 2.0)),
              ("integer_interval", C.integer_interval(0, 2), TC.integer_interval(0, 2)),
              ("multinomial", C.multinomial(1), TC.multinomial(1)),
              ("independent", C.independent(C.positive, 1), TC.independent(TC.positive, 1))]
    return pairs


@pytest.mark.parametrize("name,rc,tc", _constraint_pairs(), ids=lambda x: x
                         if isinstance(x, str) else "")
def test_constraint_check_matches_torch(name, rc, tc):
    assert rc.is_discrete == tc.is_discrete
    assert rc.event_dim == tc.event_dim
    for v in _VALUES:
        if v.ndim < tc.event_dim or (tc.event_dim == 2 and v.shape[-1] != v.shape[-2]
                                     and name not in ("square", "lower_triangular")):
            continue
        want = tc.check(T(v))
        got = rc.check(R(v))
        assert got.dtype == rg.bool
        assert tuple(got.shape) == tuple(want.shape), (name, v.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)


def test_constraint_cat_stack_dependent():
    C, TC = RD.constraints, TD.constraints
    v = np.array([[-1.0, 0.5, 2.0], [1.0, -0.5, 0.2]])
    rc = C.cat([C.real, C.positive, C.unit_interval], dim=1)
    tc = TC.cat([TC.real, TC.positive, TC.unit_interval], dim=1)
    np.testing.assert_array_equal(rc.check(R(v)).numpy(), tc.check(T(v)).numpy())
    rs = C.stack([C.real, C.positive, C.unit_interval], dim=1)
    ts = TC.stack([TC.real, TC.positive, TC.unit_interval], dim=1)
    np.testing.assert_array_equal(rs.check(R(v)).numpy(), ts.check(T(v)).numpy())
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(ValueError):
        C.dependent.check(R(v))
    with pytest.raises(ValueError):
        C.independent(C.real, 3).check(R(v))


def test_supports_are_torch_constraints():
    C = RD.constraints
    cases = [(RD.Uniform(0.0, 2.0), TD.Uniform(0.0, 2.0), [-0.1, 0.0, 1.0, 2.0, 2.5]),
             (RD.Binomial(3, R(0.3)), TD.Binomial(3, T(0.3)), [-1.0, 0.0, 1.5, 3.0, 4.0]),
             (RD.Categorical(R([0.2, 0.8])), TD.Categorical(T([0.2, 0.8])), [0, 1, 2]),
             (RD.Pareto(1.0, 2.0), TD.Pareto(1.0, 2.0), [0.5, 1.0, 3.0]),
             (RD.Normal(0.0, 1.0), TD.Normal(0.0, 1.0), [0.0, np.nan]),
             (RD.Exponential(1.0), TD.Exponential(1.0), [-1.0, 0.0, 1.0])]
    for rd, td, v in cases:
        assert isinstance(rd.support, C.Constraint)
        assert type(rd.support).__name__ == type(td.support).__name__
        np.testing.assert_array_equal(rd.support.check(R(v)).numpy(),
                                      td.support.check(T(v)).numpy())
    assert C.is_dependent(RD.Uniform.support)
    assert RD.Normal.arg_constraints["scale"] is C.positive
    assert RD.Dirichlet.support is C.simplex


# ---------------------------------------------------------------- transforms

def _transform_pairs():
    RT, TT = RD.transforms, TD.transforms
    x1 = _rng.normal(size=(2, 3))
    x2 = _rng.normal(size=(2, 3, 3))
    return [
        ("exp", RT.ExpTransform(), TT.ExpTransform(), x1),
        ("affine", RD.AffineTransform(0.5, -2.0), TD.AffineTransform(0.5, -2.0), x1),
        ("affine_ev", RD.AffineTransform(R([0.1, 0.2, 0.3]), R([1.0, -2.0, 3.0]), 1),
         TD.AffineTransform(T([0.1, 0.2, 0.3]), T([1.0, -2.0, 3.0]), 1), x1),
        ("sigmoid", RD.SigmoidTransform(), TD.SigmoidTransform(), x1),
        ("tanh", RD.TanhTransform(), TD.TanhTransform(), x1),
        ("softplus", RD.SoftplusTransform(), TD.SoftplusTransform(), x1),
        ("power", RD.PowerTransform(1.5), TD.PowerTransform(1.5), np.abs(x1) + 0.1),
        ("stick", RD.StickBreakingTransform(), TD.StickBreakingTransform(), x1),
        ("corr", RD.CorrCholeskyTransform(), TD.CorrCholeskyTransform(), x1),
        ("reshape", RD.ReshapeTransform((3,), (3, 1)), TD.ReshapeTransform((3,), (3, 1)), x1),
        ("independent", RD.IndependentTransform(RD.ExpTransform(), 1),
         TD.IndependentTransform(TD.ExpTransform(), 1), x1),
        ("compose", RD.ComposeTransform([RD.AffineTransform(0.3, 2.0), RD.TanhTransform()]),
         TD.ComposeTransform([TD.AffineTransform(0.3, 2.0), TD.TanhTransform()]), x1),
        ("compose_ev", RD.ComposeTransform([RD.ExpTransform(), RD.StickBreakingTransform()]),
         TD.ComposeTransform([TD.ExpTransform(), TD.StickBreakingTransform()]), x1),
        ("cat", RD.CatTransform([RD.ExpTransform(), RD.TanhTransform()], 1, [1, 2]),
         TD.CatTransform([TD.ExpTransform(), TD.TanhTransform()], 1, [1, 2]), x1),
        ("stack", RD.StackTransform([RD.ExpTransform(), RD.SigmoidTransform()], 0),
         TD.StackTransform([TD.ExpTransform(), TD.SigmoidTransform()], 0), x1),
        ("cdf", RD.CumulativeDistributionTransform(RD.Normal(R(0.2), R(1.5))),
         TD.CumulativeDistributionTransform(TD.Normal(T(0.2), T(1.5))), x1),
        ("softmax", RD.SoftmaxTransform(), TD.SoftmaxTransform(), x1),
        ("lower_chol", RD.LowerCholeskyTransform(), TD.LowerCholeskyTransform(), x2),
        ("pos_def", RD.PositiveDefiniteTransform(), TD.PositiveDefiniteTransform(), x2),
    ]


@pytest.mark.parametrize("name,rt,tt,x", _transform_pairs(),
                         ids=[p[0] for p in _transform_pairs()])
def test_transform_matches_torch(name, rt, tt, x):
    xr, xt = R(x, requires_grad=True), T(x).requires_grad_()
    yr, yt = rt(xr), tt(xt)
    close(yr, yt)
    assert rt.bijective == tt.bijective
    assert rt.domain.event_dim == tt.domain.event_dim
    assert rt.codomain.event_dim == tt.codomain.event_dim
    assert type(rt.codomain).__name__ == type(tt.codomain).__name__
    assert tuple(rt.forward_shape(x.shape)) == tuple(tt.forward_shape(x.shape))
    assert tuple(rt.inverse_shape(yt.shape)) == tuple(tt.inverse_shape(yt.shape))
    np.testing.assert_array_equal(rt.codomain.check(yr.detach()).numpy(),
                                  tt.codomain.check(yt.detach()).numpy())
    close(rt.inv(R(yt.detach().numpy())), tt.inv(yt.detach()), atol=1e-7)
    assert rt.inv.inv is rt
    if name in ("softmax", "lower_chol", "pos_def"):
        with pytest.raises(NotImplementedError):
            rt.log_abs_det_jacobian(xr, yr)
        return
    lr, lt = rt.log_abs_det_jacobian(xr, yr), tt.log_abs_det_jacobian(xt, yt)
    close(lr, lt)
    close(rt.inv.log_abs_det_jacobian(yr, xr), tt.inv.log_abs_det_jacobian(yt, xt))
    if lt.requires_grad:   # constant for affine and reshape maps
        lr.sum().backward()
        lt.sum().backward()
        close(xr.grad, xt.grad, atol=1e-8)


def test_transform_cache_equality_and_exports():
    t = RD.TanhTransform(cache_size=1)
    x = R([30.0, -25.0])   # tanh rounds to +-1: only the cache gives x back
    y = t(x)
    assert t.inv(y) is x
    assert RD.TanhTransform().with_cache(1)._cache_size == 1
    with pytest.raises(ValueError):
        RD.ExpTransform(cache_size=2)
    assert RD.ExpTransform() == RD.ExpTransform() and RD.ExpTransform() != RD.TanhTransform()
    assert RD.AffineTransform(1.0, 2.0) == RD.AffineTransform(1.0, 2.0)
    assert RD.AffineTransform(1.0, 2.0) != RD.AffineTransform(1.0, 3.0)
    assert RD.ExpTransform().inv == RD.ExpTransform().inv
    assert RD.ComposeTransform([RD.ExpTransform()]) == RD.ComposeTransform([RD.ExpTransform()])
    names = {n for n in dir(TD) if n.endswith("Transform") or n == "identity_transform"}
    assert names <= set(dir(RD))
    assert names - {"identity_transform"} <= set(RD.transforms.__all__)


def test_sac_tanh_normal_matches_torch():
    """SAC's squashed Gaussian: TransformedDistribution(Normal, TanhTransform(cache_size=1))
    evaluated at its own draw (same base noise) and differentiated in loc and scale."""
    rng = np.random.default_rng(3)
    loc, log_std, eps = rng.normal(size=(4, 2)), rng.normal(size=(4, 2)) * 0.3, \
        rng.normal(size=(4, 2))
    out = []
    for M, mk in ((RD, lambda a: R(a, True)), (TD, lambda a: T(a).requires_grad_())):
        mu, ls = mk(loc), mk(log_std)
        base = M.Normal(mu, ls.exp())
        d = M.TransformedDistribution(base, [M.TanhTransform(cache_size=1)])
        e = R(eps) if M is RD else T(eps)
        u = mu + ls.exp() * e
        a = d.transforms[0](u)
        lp = d.log_prob(a).sum(-1)
        (lp.sum() + a.sum()).backward()
        out.append((a, lp, mu.grad, ls.grad))
    for r, t in zip(*out):
        close(r, t, atol=1e-8)


# ---------------------------------------------------------------- constraint registry

def _registry_cases():
    C, TC = RD.constraints, TD.constraints
    return [
        (C.real, TC.real), (C.real_vector, TC.real_vector), (C.positive, TC.positive),
        (C.nonnegative, TC.nonnegative), (C.greater_than(1.5), TC.greater_than(1.5)),
        (C.greater_than_eq(-1.0), TC.greater_than_eq(-1.0)),
        (C.less_than(2.0), TC.less_than(2.0)), (C.unit_interval, TC.unit_interval),
        (C.interval(-1.0, 3.0), TC.interval(-1.0, 3.0)),
        (C.half_open_interval(0.0, 2.0), TC.half_open_interval(0.0, 2.0)),
        (C.simplex, TC.simplex), (C.corr_cholesky, TC.corr_cholesky),
        (C.independent(C.positive, 1), TC.independent(TC.positive, 1)),
        (C.cat([C.real, C.positive], -1, [1, 2]), TC.cat([TC.real, TC.positive], -1, [1, 2])),
        (C.stack([C.real, C.positive, C.unit_interval], -1),
         TC.stack([TC.real, TC.positive, TC.unit_interval], -1)),
    ]


@pytest.mark.parametrize("rc,tc", _registry_cases())
@pytest.mark.parametrize("which", ["biject_to", "transform_to"])
def test_registry_matches_torch(rc, tc, which):
    x = _rng.normal(size=(2, 3)) * 2
    rt, tt = getattr(RD, which)(rc), getattr(TD, which)(tc)
    assert type(rt).__name__ == type(tt).__name__
    y, yt = rt(R(x)), tt(T(x))
    close(y, yt)
    assert bool(rc.check(y).all().item())
    if rt.bijective:
        close(rt.log_abs_det_jacobian(R(x), y), tt.log_abs_det_jacobian(T(x), yt))
        close(rt.inv(y), tt.inv(yt), atol=1e-7)


def test_transform_to_matrix_constraints():
    x = _rng.normal(size=(2, 3, 3))
    for rc, tc in ((RD.constraints.lower_cholesky, TD.constraints.lower_cholesky),
                   (RD.constraints.positive_definite, TD.constraints.positive_definite)):
        y = RD.transform_to(rc)(R(x))
        close(y, TD.transform_to(tc)(T(x)))
        assert bool(rc.check(y).all().item())
        with pytest.raises(NotImplementedError):
            RD.biject_to(rc)


# ---------------------------------------------------------------- module paths

def test_torch_submodule_paths_import():
    import pkgutil

    for m in pkgutil.iter_modules(TD.__path__):
        if m.name == "wishart":
            continue
        tm = importlib.import_module(f"torch.distributions.{m.name}")
        rm = importlib.import_module(f"retrograd.distributions.{m.name}")
        names = [n for n in getattr(tm, "__all__", []) if n != "MixtureSameFamilyConstraint"]
        assert all(hasattr(rm, n) for n in names), (m.name, names)
    from retrograd.distributions.normal import Normal
    from retrograd.distributions.transformed_distribution import TransformedDistribution

    from retrograd.distributions.utils import broadcast_all, clamp_probs, lazy_property

    assert Normal is RD.Normal and TransformedDistribution is RD.TransformedDistribution
    assert callable(broadcast_all) and callable(clamp_probs) and lazy_property


def test_utils_match_torch():
    from torch.distributions import utils as TU

    from retrograd.distributions import utils as RU

    p = np.array([[0.1, 0.6, 0.3], [0.0, 1.0, 0.0]])
    close(RU.probs_to_logits(R(p)), TU.probs_to_logits(T(p)))
    close(RU.probs_to_logits(R(p), True), TU.probs_to_logits(T(p), True))
    close(RU.logits_to_probs(R(p)), TU.logits_to_probs(T(p)))
    close(RU.logits_to_probs(R(p), True), TU.logits_to_probs(T(p), True))
    close(RU.clamp_probs(R(p)), TU.clamp_probs(T(p)))
    v = _rng.normal(size=(2, 6))
    close(RU.vec_to_tril_matrix(R(v)), TU.vec_to_tril_matrix(T(v)))
    close(RU.vec_to_tril_matrix(R(v[:, :3]), -1), TU.vec_to_tril_matrix(T(v[:, :3]), -1))
    m = _rng.normal(size=(2, 3, 3))
    close(RU.tril_matrix_to_vec(R(m)), TU.tril_matrix_to_vec(T(m)))
    assert RU.euler_constant == TU.euler_constant

    class A:
        calls = 0

        @RU.lazy_property
        def x(self):
            A.calls += 1
            return 3

    a = A()
    assert a.x == 3 and a.x == 3 and A.calls == 1


# ---------------------------------------------------------------- new distributions

def test_generalized_pareto_matches_torch():
    """torch 2.13's GeneralizedPareto.log_prob/cdf fail on float64 (an isclose against a
    float32 zero), so the reference runs in float32 and the comparison is to its
    precision."""
    def T(a):
        return torch.tensor(np.asarray(a, dtype=np.float32))

    def close(r, t):
        np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=2e-5,
                                   atol=2e-6)

    for conc in ([0.3, -0.4, 0.0], [0.6, 0.2, -0.2]):
        args = (np.array([0.1, -0.5, 0.0]), np.array([2.0, 1.0, 0.5]), np.array(conc))
        rd = RD.GeneralizedPareto(*(R(a, True) for a in args))
        ts = [T(a).requires_grad_() for a in args]
        td = TD.GeneralizedPareto(*ts)
        v = np.array([0.4, 0.1, 0.3])
        close(rd.log_prob(R(v)), td.log_prob(T(v)))
        close(rd.cdf(R(v)), td.cdf(T(v)))
        u = np.array([0.2, 0.5, 0.9])
        close(rd.icdf(R(u)), td.icdf(T(u)))
        close(rd.entropy(), td.entropy())
        close(rd.mean, td.mean)
        close(rd.variance, td.variance)
        close(rd.mode, td.mode)
        np.testing.assert_array_equal(rd.support.check(R(v)).numpy(),
                                      td.support.check(T(v)).numpy())
        # gradients of the reparameterised draw at the same uniforms
        rl = [R(a, True) for a in args]
        RD.GeneralizedPareto(*rl).icdf(R(u)).sum().backward()
        tl = [T(a).requires_grad_() for a in args]
        TD.GeneralizedPareto(*tl).icdf(T(u)).sum().backward()
        for a, b in zip(rl, tl):
            close(a.grad, b.grad)
    assert RD.GeneralizedPareto(0.0, 1.0, 0.5).rsample((5,)).shape == (5,)


def test_logistic_normal_matches_torch():
    loc, scale = np.array([[0.1, -0.3], [0.5, 0.2]]), np.array([[1.0, 0.5], [0.7, 1.2]])
    rl, rs = R(loc, True), R(scale, True)
    tl, ts = T(loc).requires_grad_(), T(scale).requires_grad_()
    rd, td = RD.LogisticNormal(rl, rs), TD.LogisticNormal(tl, ts)
    assert rd.batch_shape == tuple(td.batch_shape) and rd.event_shape == tuple(td.event_shape)
    v = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    lr, lt = rd.log_prob(R(v)), td.log_prob(T(v))
    close(lr, lt)
    lr.sum().backward()
    lt.sum().backward()
    close(rl.grad, tl.grad)
    close(rs.grad, ts.grad)
    s = rd.rsample((3,))
    assert tuple(s.shape) == (3, 2, 3)
    assert bool(RD.constraints.simplex.check(s.detach()).all().item())
    r1 = RD.LogisticNormal(R([0.1, 0.2]), R([1.0, 2.0]))
    t1 = TD.LogisticNormal(T([0.1, 0.2]), T([1.0, 2.0]))
    assert r1.batch_shape == tuple(t1.batch_shape) and r1.event_shape == tuple(t1.event_shape)


def test_one_hot_straight_through():
    p = np.array([0.2, 0.5, 0.3])
    rp = R(p, True)
    d = RD.OneHotCategoricalStraightThrough(probs=rp)
    assert d.has_rsample and TD.OneHotCategoricalStraightThrough.has_rsample
    s = d.rsample((4,))
    assert tuple(s.shape) == (4, 3)
    np.testing.assert_array_equal(s.detach().numpy().sum(-1), np.ones(4))
    (s * R([1.0, 2.0, 3.0])).sum().backward()
    tp = T(p).requires_grad_()
    st = TD.OneHotCategoricalStraightThrough(probs=tp).rsample((4,))
    (st * T([1.0, 2.0, 3.0])).sum().backward()
    close(rp.grad, tp.grad)   # the draw itself carries no gradient


def test_lkj_cholesky_matches_torch():
    for dim, conc in ((2, [0.5, 2.0]), (4, [1.0, 3.0])):
        rd, td = RD.LKJCholesky(dim, R(conc)), TD.LKJCholesky(dim, T(conc))
        x = td.sample((3,))
        close(rd.log_prob(R(x.numpy())), td.log_prob(x))
        s = rd.sample((5,))
        assert tuple(s.shape) == (5, 2, dim, dim)
        assert bool(RD.constraints.corr_cholesky.check(s).all().item())
        assert rd.support is RD.constraints.corr_cholesky


def test_exponential_family_entropy_and_bases():
    assert issubclass(RD.Normal, RD.ExponentialFamily)
    for name in ("Bernoulli", "Beta", "Chi2", "ContinuousBernoulli", "Dirichlet",
                 "Exponential", "Gamma", "Normal", "Poisson"):
        assert issubclass(getattr(RD, name), RD.ExponentialFamily) == issubclass(
            getattr(TD, name), TD.ExponentialFamily)
    loc, scale = np.array([0.3, -1.0]), np.array([0.5, 2.0])
    rs = R(scale, True)
    ts = T(scale).requires_grad_()
    h = RD.ExponentialFamily.entropy(RD.Normal(R(loc), rs))
    ht = TD.ExponentialFamily.entropy(TD.Normal(T(loc), ts))
    close(h, ht)
    close(h, RD.Normal(R(loc), R(scale)).entropy())


@pytest.mark.parametrize("kw", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_matches_torch(kw):
    rng = np.random.default_rng(5)
    a = rng.normal(size=(2, 3, 3))
    cov = a @ np.swapaxes(a, -1, -2) + np.eye(3)
    m = np.linalg.cholesky(cov) if kw == "scale_tril" else cov
    df = np.array([4.5, 6.0])
    rdf, rm = R(df, True), R(m, True)
    tdf, tm = T(df).requires_grad_(), T(m).requires_grad_()
    rd, td = RD.Wishart(rdf, **{kw: rm}), TD.Wishart(tdf, **{kw: tm})
    assert rd.batch_shape == tuple(td.batch_shape) and rd.event_shape == tuple(td.event_shape)
    x = TD.Wishart(T(df), covariance_matrix=T(cov)).sample((3,))
    lr, lt = rd.log_prob(R(x.numpy())), td.log_prob(x)
    close(lr, lt, atol=1e-10)
    (lr.sum() + rd.entropy().sum()).backward()
    (lt.sum() + td.entropy().sum()).backward()
    close(rdf.grad, tdf.grad, atol=1e-9)
    if kw == "scale_tril":   # torch's cholesky_solve also sends gradient to the unread
        close(np.tril(rm.grad.numpy()), np.tril(tm.grad.numpy()), atol=1e-9)  # upper part
    else:
        close(rm.grad, tm.grad, atol=1e-9)
    for name in ("mean", "variance", "mode", "covariance_matrix", "precision_matrix",
                 "scale_tril"):
        close(getattr(rd, name), getattr(td, name), atol=1e-10)
    s = rd.rsample((4,))
    assert tuple(s.shape) == (4, 2, 3, 3)
    assert bool(RD.constraints.positive_definite.check(s.detach()).all().item())
    s.sum().backward()
    assert np.all(np.isfinite(rm.grad.numpy()))
    with pytest.raises(ValueError):
        RD.Wishart(R(1.5), covariance_matrix=R(cov[0]))


def test_enumerate_support_matches_torch():
    p = np.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]])
    cases = [(RD.Bernoulli(R(p[:, 0])), TD.Bernoulli(T(p[:, 0]))),
             (RD.Categorical(R(p)), TD.Categorical(T(p))),
             (RD.OneHotCategorical(R(p)), TD.OneHotCategorical(T(p))),
             (RD.Binomial(3, R(p[:, 0])), TD.Binomial(3, T(p[:, 0])))]
    for rd, td in cases:
        assert rd.has_enumerate_support and td.has_enumerate_support
        for expand in (True, False):
            r, t = rd.enumerate_support(expand), td.enumerate_support(expand)
            assert tuple(r.shape) == tuple(t.shape)
            assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
            np.testing.assert_array_equal(r.numpy(), t.numpy())
        close(rd.log_prob(rd.enumerate_support()), td.log_prob(td.enumerate_support()))
    assert not RD.Normal.has_enumerate_support
    with pytest.raises(NotImplementedError):
        RD.Normal(0.0, 1.0).enumerate_support()
    for name in ("Bernoulli", "Binomial", "NegativeBinomial", "ContinuousBernoulli"):
        rd = getattr(RD, name)(*((2,) if name in ("Binomial", "NegativeBinomial") else ()),
                               probs=R([0.3, 0.4]))
        td = getattr(TD, name)(*((2,) if name in ("Binomial", "NegativeBinomial") else ()),
                               probs=T([0.3, 0.4]))
        assert tuple(rd.param_shape) == tuple(td.param_shape)


def _kl_pairs():
    a, b = np.array([0.7, 2.0, 1.3]), np.array([1.5, 0.4, 3.0])
    lo, hi = np.array([0.1, 0.2, -0.5]), np.array([0.6, 0.9, 0.3])
    return [
        ("Beta", (a, b), "Beta", (b, a)),
        ("Dirichlet", (a,), "Dirichlet", (b,)),
        ("Uniform", (lo, hi), "Uniform", (lo - 0.1, hi + np.array([0.2, -0.1, 0.3]))),
        ("Laplace", (a, b), "Laplace", (b, a)),
        ("Poisson", (a,), "Poisson", (b,)),
        ("Uniform", (lo, hi), "Normal", (a, b)),
        ("Exponential", (a,), "Gamma", (a, b)),
        ("Gamma", (a, b), "Exponential", (b,)),
        ("Normal", (a, b), "Laplace", (b, a)),
        ("Beta", (a, b), "Uniform", (lo - 0.6, hi + 0.2)),
        ("Uniform", (lo, hi), "Beta", (a, b)),
        ("Uniform", (lo, hi), "Exponential", (a,)),
        ("Uniform", (lo, hi), "Gamma", (a, b)),
    ]


@pytest.mark.parametrize("pn,pa,qn,qa", _kl_pairs(), ids=lambda x: x if isinstance(x, str)
                         else "")
def test_more_kl_pairs_match_torch(pn, pa, qn, qa):
    rp = [R(x, True) for x in pa]
    tp = [T(x).requires_grad_() for x in pa]
    rq, tq = [R(x) for x in qa], [T(x) for x in qa]
    kr = RD.kl_divergence(getattr(RD, pn)(*rp, validate_args=False),
                          getattr(RD, qn)(*rq, validate_args=False))
    kt = TD.kl_divergence(getattr(TD, pn)(*tp, validate_args=False),
                          getattr(TD, qn)(*tq, validate_args=False))
    close(kr, kt)
    finite = np.isfinite(kt.detach().numpy())
    if finite.all():
        kr.sum().backward()
        kt.sum().backward()
        for r, t in zip(rp, tp):
            close(r.grad, t.grad, atol=1e-8)


def test_independent_and_mixture_supports_match_torch():
    lo, hi = np.array([[0.0, 1.0], [0.5, 0.2]]), np.array([[1.0, 2.0], [1.5, 0.9]])
    ri = RD.Independent(RD.Uniform(R(lo), R(hi)), 1)
    ti = TD.Independent(TD.Uniform(T(lo), T(hi)), 1)
    v = np.array([[0.5, 1.5], [0.6, 0.95]])
    assert type(ri.support).__name__ == type(ti.support).__name__
    assert ri.support.event_dim == ti.support.event_dim == 1
    np.testing.assert_array_equal(ri.support.check(R(v)).numpy(),
                                  ti.support.check(T(v)).numpy())
    rm = RD.MixtureSameFamily(RD.Categorical(R([0.3, 0.7])), RD.Uniform(R(lo[0]), R(hi[0])))
    tm = TD.MixtureSameFamily(TD.Categorical(T([0.3, 0.7])), TD.Uniform(T(lo[0]), T(hi[0])))
    w = np.array([0.5, 1.0, 1.5, -0.1])
    assert type(rm.support).__name__ == type(tm.support).__name__
    np.testing.assert_array_equal(rm.support.check(R(w)).numpy(),
                                  tm.support.check(T(w)).numpy())
    rg_ = RD.MixtureSameFamily(RD.Categorical(R([0.3, 0.7])),
                               RD.Normal(R([0.0, 1.0]), R([1.0, 2.0])))
    tg = TD.MixtureSameFamily(TD.Categorical(T([0.3, 0.7])),
                              TD.Normal(T([0.0, 1.0]), T([1.0, 2.0])))
    close(rg_.log_prob(R(w)), tg.log_prob(T(w)))


def _squashed_normal(pyd, F):
    """pytorch_sac's SquashedNormal (a user subclass of Transform and of
    TransformedDistribution), re-typed to check the subclassing interface."""
    import math

    class TanhTransform(pyd.transforms.Transform):
        domain = pyd.constraints.real
        codomain = pyd.constraints.interval(-1.0, 1.0)
        bijective = True
        sign = +1

        def __init__(self, cache_size=1):
            super().__init__(cache_size=cache_size)

        @staticmethod
        def atanh(x):
            return 0.5 * (x.log1p() - (-x).log1p())

        def __eq__(self, other):
            return isinstance(other, TanhTransform)

        def _call(self, x):
            return x.tanh()

        def _inverse(self, y):
            return self.atanh(y)

        def log_abs_det_jacobian(self, x, y):
            return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))

    class SquashedNormal(pyd.transformed_distribution.TransformedDistribution):
        def __init__(self, loc, scale):
            self.loc = loc
            self.scale = scale
            self.base_dist = pyd.Normal(loc, scale)
            super().__init__(self.base_dist, [TanhTransform()])

        @property
        def mean(self):
            mu = self.loc
            for tr in self.transforms:
                mu = tr(mu)
            return mu

    return SquashedNormal


def test_user_subclassed_squashed_normal_matches_torch():
    import torch.nn.functional as TF

    import retrograd.distributions as pyd_rg
    import retrograd.nn.functional as RF

    RS, TS = _squashed_normal(pyd_rg, RF), _squashed_normal(TD, TF)
    rng = np.random.default_rng(7)
    mu, ls = rng.normal(size=(3, 2)), rng.normal(size=(3, 2)) * 0.5
    rmu, rls = R(mu, True), R(ls, True)
    tmu, tls = T(mu).requires_grad_(), T(ls).requires_grad_()
    rd, td = RS(rmu, rls.exp()), TS(tmu, tls.exp())
    a = np.tanh(rng.normal(size=(3, 2)))
    lr = rd.log_prob(R(a)).sum(-1, keepdim=True)
    lt = td.log_prob(T(a)).sum(-1, keepdim=True)
    close(lr, lt)
    close(rd.mean, td.mean)
    (lr.sum() + rd.mean.sum()).backward()
    (lt.sum() + td.mean.sum()).backward()
    close(rmu.grad, tmu.grad)
    close(rls.grad, tls.grad)
    s = rd.rsample((5,))
    assert tuple(s.shape) == (5, 3, 2) and bool((s.abs() <= 1).all().item())
    assert rd.support.check(s.detach()).all().item()


@pytest.mark.parametrize("name,pa,qa", [
    ("Normal", ([0.3, -1.0], [0.5, 2.0]), ([1.0, 0.0], [1.5, 0.7])),
    ("Exponential", ([0.5, 2.0],), ([1.5, 0.7],)),
    ("Gamma", ([0.5, 2.0], [1.5, 0.7]), ([1.2, 3.0], [0.4, 2.0])),
    ("Beta", ([0.5, 2.0], [1.5, 0.7]), ([1.2, 3.0], [0.4, 2.0])),
    ("Poisson", ([0.5, 2.0],), ([1.5, 0.7],)),
    ("Bernoulli", ([0.2, 0.9],), ([0.6, 0.3],)),
    ("Dirichlet", ([[0.5, 2.0, 1.0]],), ([[1.5, 0.7, 2.0]],)),
])
def test_exponential_family_bregman_kl_and_entropy(name, pa, qa):
    """torch's generic exponential-family KL (Bregman) and entropy, on the natural
    parameters; against torch's same functions and its closed forms."""
    from torch.distributions.kl import _kl_expfamily_expfamily as t_kl

    from retrograd.distributions.kl_more import _kl_expfamily_expfamily

    rp = [R(x, True) for x in pa]
    tp = [T(x).requires_grad_() for x in pa]
    p, tpd = getattr(RD, name)(*rp), getattr(TD, name)(*tp)
    q, tq = getattr(RD, name)(*(R(x) for x in qa)), getattr(TD, name)(*(T(x) for x in qa))
    k, kt = _kl_expfamily_expfamily(p, q), t_kl(tpd, tq)
    close(k, kt, atol=1e-9)
    close(k, TD.kl_divergence(tpd, tq), atol=1e-9)
    k.sum().backward()
    kt.sum().backward()
    for r, t in zip(rp, tp):   # torch detaches p's natural parameters: no gradient to p
        assert (r.grad is None) == (t.grad is None)
        if t.grad is not None:
            close(r.grad, t.grad, atol=1e-8)
    if name in ("Normal", "Exponential", "Bernoulli"):   # zero carrier measure
        close(RD.ExponentialFamily.entropy(p), TD.ExponentialFamily.entropy(tpd))
    with pytest.raises(NotImplementedError):
        _kl_expfamily_expfamily(RD.Normal(0.0, 1.0), RD.Exponential(1.0))


def test_repr_shows_one_element_parameters_by_value_as_torch():
    for args in [(0.0, 1.0), (0.5, 2.0)]:
        want = repr(torch.distributions.Normal(torch.tensor(args[0]), torch.tensor(args[1])))
        got = repr(rg.distributions.Normal(rg.tensor(args[0]), rg.tensor(args[1])))
        assert got == want
    got = repr(rg.distributions.Normal(rg.zeros(3), 1.0))
    assert got == "Normal(loc: (3,), scale: (3,))"  # shapes print as tuples here (SPEC)
