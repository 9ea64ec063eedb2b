"""The wider rg.distributions family against torch.distributions (float64): log_prob, cdf,
icdf, entropy and moments with their gradients in parameters and values, shapes, expand,
seeded sampling (support, dtype, Monte Carlo moments), rsample gradients against closed
forms, and validation errors of torch's type."""

import numpy as np
import pytest
import torch

import retrograd as rg

D = rg.distributions
TD = torch.distributions
RNG = np.random.default_rng(7)
TRIGAMMA = dict(rtol=1e-8, atol=1e-9)


def _pos(lo, hi, shape):
    return RNG.uniform(lo, hi, shape)


# name: (parameter arrays (batch (2, 3) by broadcasting), values (4, 2, 3), methods,
#        moments, whether log_prob is differentiable in the value)
CASES = {
    "Cauchy": ([RNG.normal(size=(2, 3)), _pos(0.5, 2, (3,))], RNG.normal(size=(4, 2, 3)),
               ["log_prob", "cdf", "icdf", "entropy"], ["mode"], True),
    "HalfCauchy": ([_pos(0.5, 2, (2, 3))], _pos(0.1, 3, (4, 2, 3)),
                   ["log_prob", "cdf", "icdf", "entropy"], ["mode"], True),
    "HalfNormal": ([_pos(0.5, 2, (2, 3))], _pos(0.1, 3, (4, 2, 3)),
                   ["log_prob", "cdf", "icdf", "entropy"],
                   ["mean", "mode", "variance", "stddev"], True),
    "LogNormal": ([RNG.normal(size=(2, 3)), _pos(0.5, 1.5, (2, 1))], _pos(0.1, 3, (4, 2, 3)),
                  ["log_prob", "cdf", "icdf", "entropy"],
                  ["mean", "mode", "variance", "stddev"], True),
    "Gumbel": ([RNG.normal(size=(2, 3)), _pos(0.5, 2, (3,))], RNG.normal(size=(4, 2, 3)),
               ["log_prob", "cdf", "icdf", "entropy"],
               ["mean", "mode", "variance", "stddev"], True),
    "Weibull": ([_pos(0.5, 2, (2, 3)), _pos(1.2, 3, (2, 3))], _pos(0.1, 3, (4, 2, 3)),
                ["log_prob", "cdf", "icdf", "entropy"],
                ["mean", "mode", "variance", "stddev"], True),
    "Pareto": ([_pos(0.5, 1, (2, 3)), _pos(2.5, 4, (2, 3))], _pos(1.0, 4, (4, 2, 3)),
               ["log_prob", "cdf", "icdf", "entropy"],
               ["mean", "mode", "variance", "stddev"], True),
    "InverseGamma": ([_pos(2.5, 4, (2, 3)), _pos(0.5, 2, (3,))], _pos(0.1, 3, (4, 2, 3)),
                     ["log_prob", "entropy"], ["mean", "mode", "variance"], True),
    "FisherSnedecor": ([_pos(3, 6, (2, 3)), _pos(5, 9, (2, 3))], _pos(0.1, 3, (4, 2, 3)),
                       ["log_prob"], ["mean", "mode", "variance"], True),
    "Kumaraswamy": ([_pos(0.5, 3, (2, 3)), _pos(0.5, 3, (2, 3))], _pos(0.05, 0.95, (4, 2, 3)),
                    ["log_prob", "entropy"], ["mean", "variance"], True),
    "Geometric": ([_pos(0.2, 0.8, (2, 3))], RNG.integers(0, 6, (4, 2, 3)).astype(float),
                  ["log_prob", "entropy"], ["mean", "mode", "variance"], False),
    "NegativeBinomial": ([_pos(1, 5, (2, 3)), _pos(0.2, 0.8, (2, 3))],
                         RNG.integers(0, 6, (4, 2, 3)).astype(float),
                         ["log_prob"], ["mean", "mode", "variance"], False),
    "Binomial": ([np.full((2, 3), 5.0), _pos(0.2, 0.8, (2, 3))],
                 RNG.integers(0, 6, (4, 2, 3)).astype(float),
                 ["log_prob", "entropy"], ["mean", "mode", "variance"], False),
}


def _pair(name, params, **kw):
    ours = [rg.tensor(p, requires_grad=True) for p in params]
    theirs = [torch.tensor(p, requires_grad=True) for p in params]
    return ours, theirs, getattr(D, name)(*ours, **kw), getattr(TD, name)(*theirs, **kw)


def _compare(out, ref, ours, theirs, rtol=1e-11, atol=1e-12):
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=rtol, atol=atol)
    assert out.shape == tuple(ref.shape) and out.dtype == np.float64
    if not ref.requires_grad:
        return
    w = RNG.standard_normal(out.shape)
    gs = rg.autograd.grad((out * rg.tensor(w)).sum(), ours, allow_unused=True)
    tgs = torch.autograd.grad((ref * torch.tensor(w)).sum(), theirs, allow_unused=True,
                              retain_graph=True)
    for g, tg in zip(gs, tgs):
        if tg is None:
            assert g is None or np.allclose(g.data, 0)
        else:
            assert g is not None
            np.testing.assert_allclose(g.data, tg.numpy(), rtol=rtol, atol=atol)


def _params(name, ours):
    # Binomial / NegativeBinomial: total_count is not a differentiable parameter in torch
    return ours[1:] if name == "Binomial" else ours


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    params, values, methods, moments, diff_value = CASES[name]
    ours, theirs, d, t = _pair(name, params)
    assert d.batch_shape == tuple(t.batch_shape) and d.event_shape == tuple(t.event_shape)
    assert d.has_rsample == t.has_rsample
    for m in methods:
        if m == "entropy":
            _compare(d.entropy(), t.entropy(), _params(name, ours), _params(name, theirs),
                     **TRIGAMMA)
            continue
        v = values if m != "icdf" else RNG.uniform(0.05, 0.95, values.shape)
        x, tx = rg.tensor(v, requires_grad=diff_value), torch.tensor(v,
                                                                    requires_grad=diff_value)
        extra = [x] if diff_value else []
        textra = [tx] if diff_value else []
        _compare(getattr(d, m)(x), getattr(t, m)(tx), _params(name, ours) + extra,
                 _params(name, theirs) + textra, **TRIGAMMA)
    for m in moments:
        _compare(getattr(d, m), getattr(t, m), _params(name, ours), _params(name, theirs))


def test_moments_that_do_not_exist_match_torch():
    for d, t in [(D.Cauchy(0.0, 1.0), TD.Cauchy(0.0, 1.0)),
                 (D.HalfCauchy(1.0), TD.HalfCauchy(1.0)),
                 (D.Pareto(1.0, 0.5), TD.Pareto(1.0, 0.5)),
                 (D.InverseGamma(0.5, 1.0), TD.InverseGamma(0.5, 1.0)),
                 (D.FisherSnedecor(1.0, 1.5), TD.FisherSnedecor(1.0, 1.5))]:
        for m in ("mean", "variance"):
            np.testing.assert_array_equal(getattr(d, m).data, getattr(t, m).numpy())


def test_kumaraswamy_mode_is_the_density_maximum():
    # torch 2.13's Kumaraswamy.mode formula gives nan for b > 1; ours is the true mode
    a, b = 2.0, 3.0
    d = D.Kumaraswamy(a, b)
    x = np.linspace(0.01, 0.99, 9801)
    lp = TD.Kumaraswamy(a, b).log_prob(torch.tensor(x)).numpy()
    assert abs(d.mode.item() - x[lp.argmax()]) < 1e-3


@pytest.mark.parametrize("kind", ["probs", "logits"])
def test_binary_count_distributions_from_probs_or_logits(kind):
    raw = _pos(0.2, 0.8, (3,)) if kind == "probs" else RNG.normal(size=(3,))
    v = RNG.integers(0, 4, (2, 3)).astype(float)
    for name, first in [("Geometric", []), ("Binomial", [np.full(3, 4.0)]),
                        ("NegativeBinomial", [np.full(3, 2.5)])]:
        p, tp = rg.tensor(raw, requires_grad=True), torch.tensor(raw, requires_grad=True)
        d = getattr(D, name)(*[rg.tensor(f) for f in first], **{kind: p})
        t = getattr(TD, name)(*[torch.tensor(f) for f in first], **{kind: tp})
        _compare(d.log_prob(rg.tensor(v)), t.log_prob(torch.tensor(v)), [p], [tp])
        _compare(d.probs, t.probs, [p], [tp])
        _compare(d.logits, t.logits, [p], [tp])
        _compare(d.mean, t.mean, [p], [tp])


def test_negative_binomial_log_prob_in_total_count():
    r, p = _pos(1, 4, (3,)), _pos(0.2, 0.8, (3,))
    v = RNG.integers(0, 5, (2, 3)).astype(float)
    ours = [rg.tensor(r, requires_grad=True), rg.tensor(p, requires_grad=True)]
    theirs = [torch.tensor(r, requires_grad=True), torch.tensor(p, requires_grad=True)]
    _compare(D.NegativeBinomial(*ours).log_prob(rg.tensor(v)),
             TD.NegativeBinomial(*theirs).log_prob(torch.tensor(v)), ours, theirs, **TRIGAMMA)


@pytest.mark.parametrize("kind", ["probs", "logits"])
def test_multinomial_and_one_hot_categorical_match_torch(kind):
    raw = _pos(0.1, 1, (2, 4)) if kind == "probs" else RNG.normal(size=(2, 4))
    p, tp = rg.tensor(raw, requires_grad=True), torch.tensor(raw, requires_grad=True)
    d, t = D.Multinomial(5, **{kind: p}), TD.Multinomial(5, **{kind: tp})
    assert d.batch_shape == (2,) and d.event_shape == (4,)
    v = np.stack([RNG.multinomial(5, np.full(4, 0.25), size=2) for _ in range(3)]).astype(float)
    _compare(d.log_prob(rg.tensor(v)), t.log_prob(torch.tensor(v)), [p], [tp])
    # torch takes lgamma(total_count + 1) in float32 (of an integer tensor): 6e-8 off
    _compare(d.entropy(), t.entropy(), [p], [tp], rtol=1e-7)
    _compare(d.mean, t.mean, [p], [tp])
    _compare(d.variance, t.variance, [p], [tp])
    rg.manual_seed(0)
    s = d.sample((3000,))
    assert s.shape == (3000, 2, 4) and s.dtype == np.float64
    assert np.all(s.data.sum(-1) == 5)
    np.testing.assert_allclose(s.data.mean(0), d.mean.data, atol=0.1)
    d, t = D.OneHotCategorical(**{kind: p}), TD.OneHotCategorical(**{kind: tp})
    assert d.batch_shape == (2,) and d.event_shape == (4,)
    v = np.eye(4)[RNG.integers(0, 4, (3, 2))]
    _compare(d.log_prob(rg.tensor(v)), t.log_prob(torch.tensor(v)), [p], [tp])
    _compare(d.entropy(), t.entropy(), [p], [tp])
    _compare(d.variance, t.variance, [p], [tp])
    np.testing.assert_array_equal(d.mode.data, t.mode.numpy())
    s = d.sample((3000,))
    assert s.shape == (3000, 2, 4) and np.all(s.data.sum(-1) == 1)
    np.testing.assert_allclose(s.data.mean(0), d.probs.data, atol=0.04)


def test_expand_matches_torch():
    for name, (params, values, _m, _, _) in sorted(CASES.items()):
        small = [p[..., :1, :] if p.ndim == 2 else p[..., :1] for p in params]
        small = [p[0] for p in small]  # batch (1,) or (3,) -> broadcast to (5, 3)
        d = getattr(D, name)(*[rg.tensor(p) for p in small]).expand((5, 3))
        t = getattr(TD, name)(*[torch.tensor(p) for p in small]).expand((5, 3))
        assert d.batch_shape == (5, 3) == tuple(t.batch_shape), name
        v = values[0, 0] if name != "Pareto" else values[0, 0] + 1
        np.testing.assert_allclose(d.log_prob(rg.tensor(v)).data,
                                   t.log_prob(torch.tensor(v)).numpy(), rtol=1e-11)
        assert d.sample((2,)).shape == (2, 5, 3)
    with pytest.raises(ValueError, match="batch_shape"):
        D.Cauchy(rg.zeros(3), 1.0).expand((4,))


# ---------------------------------------------------------------- sampling

SAMPLERS = {
    "Cauchy": (0.5, 2.0), "HalfNormal": (1.5,), "LogNormal": (0.2, 0.5), "Gumbel": (0.3, 1.4),
    "Weibull": (1.3, 2.2), "Pareto": (1.0, 5.0), "InverseGamma": (6.0, 2.0),
    "FisherSnedecor": (6.0, 12.0), "Kumaraswamy": (2.0, 3.0), "Geometric": (0.3,),
    "Binomial": (7.0, 0.3), "NegativeBinomial": (3.0, 0.4), "HalfCauchy": (1.0,),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_seeded_samples_repeat_lie_in_the_support_and_have_the_right_moments(name):
    d = getattr(D, name)(*[rg.tensor(np.full((2,), a)) for a in SAMPLERS[name]])
    t = getattr(TD, name)(*[torch.tensor(np.full((2,), a)) for a in SAMPLERS[name]])
    n = 40_000
    rg.manual_seed(3)
    s1 = d.sample((n,))
    rg.manual_seed(3)
    s2 = d.sample((n,))
    np.testing.assert_array_equal(s1.data, s2.data)
    assert s1.shape == (n, 2) and s1.dtype == np.float64 and not s1.requires_grad
    assert bool(t.support.check(torch.tensor(s1.data)).all())
    if d.has_rsample:
        rg.manual_seed(3)
        np.testing.assert_array_equal(d.rsample((n,)).data, s1.data)
    if name in ("Cauchy", "HalfCauchy"):  # no moments: the median instead
        med = t.icdf(torch.tensor(0.5)).numpy()
        np.testing.assert_allclose(np.median(s1.data, 0), med, atol=0.05)
        return
    m, v = d.mean.data, d.variance.data
    np.testing.assert_allclose(s1.data.mean(0), m, atol=4 * np.sqrt(v / n).max())
    np.testing.assert_allclose(s1.data.var(0), v, rtol=0.15)


def test_rsample_gradients_match_closed_forms():
    rg.manual_seed(0)
    n = 200_000
    loc, scale = rg.tensor(0.3, requires_grad=True), rg.tensor(0.4, requires_grad=True)
    # E exp(X) of LogNormal = exp(loc + scale^2 / 2)
    gl, gs = rg.autograd.grad(D.LogNormal(loc, scale).rsample((n,)).mean(), [loc, scale])
    m = np.exp(0.3 + 0.08)
    assert abs(gl.item() - m) < 0.02 and abs(gs.item() - 0.4 * m) < 0.02
    s = rg.tensor(1.3, requires_grad=True)
    (g,) = rg.autograd.grad(D.HalfNormal(s).rsample((n,)).mean(), [s])
    assert abs(g.item() - np.sqrt(2 / np.pi)) < 0.01
    loc, scale = rg.tensor(0.3, requires_grad=True), rg.tensor(0.7, requires_grad=True)
    gl, gs = rg.autograd.grad(D.Gumbel(loc, scale).rsample((n,)).mean(), [loc, scale])
    assert abs(gl.item() - 1) < 1e-5 and abs(gs.item() - 0.5772156649) < 0.01
    sc, k = rg.tensor(1.5, requires_grad=True), rg.tensor(2.0, requires_grad=True)
    gsc, gk = rg.autograd.grad(D.Weibull(sc, k).rsample((n,)).mean(), [sc, k])
    tsc, tk = torch.tensor(1.5, requires_grad=True), torch.tensor(2.0, requires_grad=True)
    rsc, rk = torch.autograd.grad(TD.Weibull(tsc, tk).mean, [tsc, tk])
    assert abs(gsc.item() - rsc.item()) < 0.01 and abs(gk.item() - rk.item()) < 0.02
    a, b = rg.tensor(6.0, requires_grad=True), rg.tensor(2.0, requires_grad=True)
    ga, gb = rg.autograd.grad(D.InverseGamma(a, b).rsample((n,)).mean(), [a, b])
    # mean b / (a - 1)
    assert abs(ga.item() + 2.0 / 25) < 0.01 and abs(gb.item() - 0.2) < 0.01
    sc, al = rg.tensor(1.0, requires_grad=True), rg.tensor(5.0, requires_grad=True)
    gsc, gal = rg.autograd.grad(D.Pareto(sc, al).rsample((n,)).mean(), [sc, al])
    assert abs(gsc.item() - 1.25) < 0.01 and abs(gal.item() + 1 / 16) < 0.01
    d1 = rg.tensor(6.0, requires_grad=True)
    d2 = rg.tensor(12.0, requires_grad=True)
    g1, g2 = rg.autograd.grad(D.FisherSnedecor(d1, d2).rsample((n,)).mean(), [d1, d2])
    # mean d2 / (d2 - 2): independent of d1
    assert abs(g1.item()) < 0.01 and abs(g2.item() + 2 / 100) < 0.01
    a, b = rg.tensor(2.0, requires_grad=True), rg.tensor(3.0, requires_grad=True)
    ga, gb = rg.autograd.grad(D.Kumaraswamy(a, b).rsample((n,)).mean(), [a, b])
    ta, tb = torch.tensor(2.0, requires_grad=True), torch.tensor(3.0, requires_grad=True)
    ra, rb = torch.autograd.grad(TD.Kumaraswamy(ta, tb).mean, [ta, tb])
    assert abs(ga.item() - ra.item()) < 0.01 and abs(gb.item() - rb.item()) < 0.01


def test_rsample_refused_for_counts():
    for d in (D.Geometric(0.5), D.Binomial(3, 0.5), D.NegativeBinomial(2.0, 0.5),
              D.Multinomial(3, rg.tensor([0.5, 0.5])),
              D.OneHotCategorical(rg.tensor([0.5, 0.5]))):
        assert not d.has_rsample
        with pytest.raises(NotImplementedError):
            d.rsample()


# ---------------------------------------------------------------- validation

BAD = [
    ("Cauchy", (0.0, -1.0), {}), ("HalfCauchy", (0.0,), {}), ("HalfNormal", (-1.0,), {}),
    ("LogNormal", (0.0, 0.0), {}), ("Gumbel", (0.0, -2.0), {}), ("Weibull", (1.0, -1.0), {}),
    ("Pareto", (-1.0, 1.0), {}), ("InverseGamma", (0.0, 1.0), {}),
    ("FisherSnedecor", (1.0, -1.0), {}), ("Kumaraswamy", (-1.0, 1.0), {}),
    ("Geometric", (), {"probs": 1.5}), ("Geometric", (), {"probs": 0.0}),
    ("Binomial", (2.5, 0.5), {}), ("Binomial", (2.0, 1.5), {}),
    ("NegativeBinomial", (2.0, 1.0), {}), ("NegativeBinomial", (-1.0, 0.5), {}),
    ("Geometric", (), {"probs": 0.5, "logits": 0.0}),
]


@pytest.mark.parametrize("name, args, kw", BAD)
def test_invalid_parameters_raise_as_torch(name, args, kw):
    with pytest.raises(Exception) as theirs:
        getattr(TD, name)(*[torch.tensor(a) for a in args],
                          **{k: torch.tensor(v) for k, v in kw.items()})
    with pytest.raises(theirs.type):
        getattr(D, name)(*[rg.tensor(a) for a in args],
                         **{k: rg.tensor(v) for k, v in kw.items()})


OUTSIDE = [
    ("HalfNormal", (1.0,), -0.5), ("LogNormal", (0.0, 1.0), -1.0), ("Weibull", (1.0, 1.0), 0.0),
    ("Pareto", (1.0, 1.0), 0.5), ("Kumaraswamy", (1.0, 1.0), 1.5),
    ("Geometric", (0.5,), 1.5), ("Binomial", (3.0, 0.5), 4.0),
    ("NegativeBinomial", (2.0, 0.5), -1.0),
]


@pytest.mark.parametrize("name, args, value", OUTSIDE)
def test_values_outside_the_support_raise_as_torch(name, args, value):
    with pytest.raises(Exception) as theirs:
        getattr(TD, name)(*[torch.tensor(a) for a in args]).log_prob(torch.tensor(value))
    with pytest.raises(theirs.type, match="support"):
        getattr(D, name)(*[rg.tensor(a) for a in args]).log_prob(rg.tensor(value))


def test_multinomial_and_one_hot_values_are_checked():
    with pytest.raises(ValueError, match="support"):
        D.Multinomial(3, rg.tensor([0.5, 0.5])).log_prob(rg.tensor([2.0, 2.0]))
    with pytest.raises(ValueError, match="support"):
        D.OneHotCategorical(rg.tensor([0.5, 0.5])).log_prob(rg.tensor([1.0, 1.0]))
    with pytest.raises(ValueError, match="parameter probs"):
        D.Multinomial(3, rg.tensor([0.5, -0.5]))


# ---------------------------------------------------------------- transforms

T = D.transforms
TT = TD.transforms


def _transform_pairs():
    s = RNG.uniform(0.5, 2, (3,))
    return [
        (T.ExpTransform(), TT.ExpTransform(), RNG.normal(size=(2, 3))),
        (T.AffineTransform(0.5, -2.0), TT.AffineTransform(0.5, -2.0), RNG.normal(size=(2, 3))),
        (T.AffineTransform(rg.tensor(s), rg.tensor(s)),
         TT.AffineTransform(torch.tensor(s), torch.tensor(s)), RNG.normal(size=(2, 3))),
        (T.AffineTransform(0.0, rg.tensor(s), event_dim=1),
         TT.AffineTransform(0.0, torch.tensor(s), event_dim=1), RNG.normal(size=(2, 3))),
        (T.SigmoidTransform(), TT.SigmoidTransform(), RNG.normal(size=(2, 3))),
        (T.TanhTransform(), TT.TanhTransform(), RNG.normal(size=(2, 3))),
        (T.SoftplusTransform(), TT.SoftplusTransform(), RNG.normal(size=(2, 3))),
        (T.PowerTransform(2.5), TT.PowerTransform(torch.tensor(2.5, dtype=torch.float64)),
         RNG.uniform(0.5, 2, (2, 3))),
        (T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 3.0)]),
         TT.ComposeTransform([TT.ExpTransform(), TT.AffineTransform(1.0, 3.0)]),
         RNG.normal(size=(2, 3))),
        (T.ExpTransform().inv, TT.ExpTransform().inv, RNG.uniform(0.5, 2, (2, 3))),
    ]


def test_transforms_match_torch():
    for ours, theirs, x0 in _transform_pairs():
        x, tx = rg.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
        y, ty = ours(x), theirs(tx)
        _compare(y, ty, [x], [tx])
        _compare(ours.log_abs_det_jacobian(x, y), theirs.log_abs_det_jacobian(tx, ty),
                 [x], [tx])
        back = ours.inv(y)
        np.testing.assert_allclose(back.data, x0, rtol=1e-10, atol=1e-12)
        _compare(back, theirs.inv(ty), [x], [tx], rtol=1e-10, atol=1e-12)
    x = rg.tensor([-1.5, 2.0])
    np.testing.assert_array_equal(T.AbsTransform()(x).data, [1.5, 2.0])
    assert not T.AbsTransform().bijective


def test_transformed_distribution_matches_torch():
    loc, scale = RNG.normal(size=(3,)), RNG.uniform(0.5, 2, (3,))
    ours = [rg.tensor(loc, requires_grad=True), rg.tensor(scale, requires_grad=True)]
    theirs = [torch.tensor(loc, requires_grad=True), torch.tensor(scale, requires_grad=True)]
    cases = [
        (D.TransformedDistribution(D.Normal(*ours), [T.ExpTransform()]),
         TD.TransformedDistribution(TD.Normal(*theirs), [TT.ExpTransform()]),
         RNG.uniform(0.2, 3, (4, 3))),
        (D.TransformedDistribution(D.Normal(*ours),
                                   [T.SigmoidTransform(), T.AffineTransform(1.0, -2.0)]),
         TD.TransformedDistribution(TD.Normal(*theirs),
                                    [TT.SigmoidTransform(), TT.AffineTransform(1.0, -2.0)]),
         RNG.uniform(-0.9, 0.9, (4, 3))),
        (D.TransformedDistribution(D.Normal(*ours), T.TanhTransform()),
         TD.TransformedDistribution(TD.Normal(*theirs), TT.TanhTransform()),
         RNG.uniform(-0.9, 0.9, (4, 3))),
        (D.TransformedDistribution(D.Normal(*ours),
                                   T.AffineTransform(0.0, rg.ones(3), event_dim=1)),
         TD.TransformedDistribution(TD.Normal(*theirs),
                                    TT.AffineTransform(0.0, torch.ones(3), event_dim=1)),
         RNG.normal(size=(4, 3))),
    ]
    for d, t, v in cases:
        assert d.batch_shape == tuple(t.batch_shape) and d.event_shape == tuple(t.event_shape)
        assert d.has_rsample
        x, tx = rg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
        _compare(d.log_prob(x), t.log_prob(tx), ours + [x], theirs + [tx])
        if not d.event_shape:
            _compare(d.cdf(x), t.cdf(tx), ours + [x], theirs + [tx])
            u = RNG.uniform(0.1, 0.9, (4, 3))
            _compare(d.icdf(rg.tensor(u)), t.icdf(torch.tensor(u)), ours, theirs)
        assert d.rsample((5,)).shape == (5, 3)
        assert d.expand((2, 3)).sample().shape == tuple(t.expand((2, 3)).sample().shape)
    assert isinstance(D.LogNormal(0.0, 1.0), D.TransformedDistribution)
    assert isinstance(D.LogNormal(0.0, 1.0).base_dist, D.Normal)
    with pytest.raises(ValueError, match="transforms"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), [lambda x: x])


def test_independent_matches_torch():
    loc, scale = RNG.normal(size=(2, 3)), RNG.uniform(0.5, 2, (2, 3))
    ours = [rg.tensor(loc, requires_grad=True), rg.tensor(scale, requires_grad=True)]
    theirs = [torch.tensor(loc, requires_grad=True), torch.tensor(scale, requires_grad=True)]
    d, t = D.Independent(D.Normal(*ours), 1), TD.Independent(TD.Normal(*theirs), 1)
    assert d.batch_shape == (2,) and d.event_shape == (3,) and d.has_rsample
    v = RNG.normal(size=(4, 2, 3))
    x, tx = rg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    _compare(d.log_prob(x), t.log_prob(tx), ours + [x], theirs + [tx])
    _compare(d.entropy(), t.entropy(), ours, theirs)
    _compare(d.mean, t.mean, ours, theirs)
    _compare(d.variance, t.variance, ours, theirs)
    e = d.expand((5, 2))
    assert e.batch_shape == (5, 2) and e.event_shape == (3,)
    assert e.rsample((4,)).shape == (4, 5, 2, 3)
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        D.Independent(D.Normal(*ours), 3)


def test_mixture_same_family_matches_torch():
    w = RNG.uniform(0.2, 1, (2, 3))
    loc, scale = RNG.normal(size=(2, 3)), RNG.uniform(0.5, 2, (2, 3))
    ours = [rg.tensor(a, requires_grad=True) for a in (w, loc, scale)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (w, loc, scale)]
    d = D.MixtureSameFamily(D.Categorical(ours[0]), D.Normal(ours[1], ours[2]))
    t = TD.MixtureSameFamily(TD.Categorical(theirs[0]), TD.Normal(theirs[1], theirs[2]))
    assert d.batch_shape == (2,) and d.event_shape == () and not d.has_rsample
    v = RNG.normal(size=(4, 2))
    x, tx = rg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    _compare(d.log_prob(x), t.log_prob(tx), ours + [x], theirs + [tx])
    _compare(d.cdf(x), t.cdf(tx), ours + [x], theirs + [tx])
    _compare(d.mean, t.mean, ours, theirs)
    _compare(d.variance, t.variance, ours, theirs)
    rg.manual_seed(2)
    s = d.sample((40_000,))
    assert s.shape == (40_000, 2) and not s.requires_grad
    sd = np.sqrt(d.variance.data / 40_000)
    np.testing.assert_allclose(s.data.mean(0), d.mean.data, atol=4 * sd.max())
    np.testing.assert_allclose(s.data.var(0), d.variance.data, rtol=0.1)
    # multivariate components
    cov = np.eye(2) * RNG.uniform(0.5, 2, (3, 1, 1))
    mv = D.MixtureSameFamily(D.Categorical(rg.tensor(w[0])),
                             D.MultivariateNormal(rg.tensor(RNG.normal(size=(3, 2))),
                                                  rg.tensor(cov)))
    tmv = TD.MixtureSameFamily(TD.Categorical(torch.tensor(w[0])),
                               TD.MultivariateNormal(
                                   torch.tensor(mv.component_distribution.loc.data),
                                   torch.tensor(cov)))
    v = RNG.normal(size=(5, 2))
    np.testing.assert_allclose(mv.log_prob(rg.tensor(v)).data,
                               tmv.log_prob(torch.tensor(v)).numpy(), rtol=1e-11)
    assert mv.sample((7,)).shape == (7, 2)
    assert d.expand((4, 2)).log_prob(x[0]).shape == (4, 2)
    with pytest.raises(ValueError, match="categories"):
        D.MixtureSameFamily(D.Categorical(rg.ones(4)), D.Normal(rg.zeros(3), 1.0))


# ---------------------------------------------------------------- VonMises, low rank

def test_von_mises_matches_torch_and_samples_its_law():
    loc, k = RNG.uniform(-3, 3, (3,)), np.array([0.5, 2.0, 8.0])
    ours = [rg.tensor(loc, requires_grad=True), rg.tensor(k, requires_grad=True)]
    theirs = [torch.tensor(loc, requires_grad=True), torch.tensor(k, requires_grad=True)]
    d, t = D.VonMises(*ours), TD.VonMises(*theirs)
    assert not d.has_rsample and d.batch_shape == (3,)
    v = RNG.uniform(-np.pi, np.pi, (4, 3))
    x, tx = rg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    # torch's log I0 is a polynomial fit good to about 1e-7 relative; ours is SciPy's i0e
    _compare(d.log_prob(x), t.log_prob(tx), ours + [x], theirs + [tx], rtol=1e-6, atol=1e-7)
    _compare(d.variance, t.variance, ours, theirs, rtol=1e-6, atol=1e-7)
    rg.manual_seed(5)
    s = d.sample((40_000,))
    rg.manual_seed(5)
    np.testing.assert_array_equal(d.sample((40_000,)).data, s.data)
    assert s.shape == (40_000, 3) and s.dtype == np.float64
    assert np.all((s.data >= -np.pi) & (s.data < np.pi))
    # circular moments: E cos(x - loc) = I1(k) / I0(k) = 1 - variance
    c = np.cos(s.data - loc).mean(0)
    np.testing.assert_allclose(c, 1 - d.variance.data, atol=0.01)
    np.testing.assert_allclose(np.sin(s.data - loc).mean(0), 0, atol=0.015)
    assert d.expand((2, 3)).sample().shape == (2, 3)


def test_low_rank_multivariate_normal_matches_torch():
    loc, W, diag = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3, 2)), RNG.uniform(0.5, 2, 3)
    ours = [rg.tensor(a, requires_grad=True) for a in (loc, W, diag)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (loc, W, diag)]
    d, t = D.LowRankMultivariateNormal(*ours), TD.LowRankMultivariateNormal(*theirs)
    assert d.batch_shape == (2,) and d.event_shape == (3,) and d.has_rsample
    v = RNG.normal(size=(4, 2, 3))
    x, tx = rg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    _compare(d.log_prob(x), t.log_prob(tx), ours + [x], theirs + [tx], rtol=1e-10)
    _compare(d.entropy(), t.entropy(), ours, theirs, rtol=1e-10)
    for m in ("mean", "variance", "covariance_matrix", "precision_matrix", "scale_tril"):
        _compare(getattr(d, m), getattr(t, m), ours, theirs, rtol=1e-10)
    rg.manual_seed(0)
    s = d.rsample((100_000,))
    assert s.shape == (100_000, 2, 3)
    np.testing.assert_allclose(np.cov(s.data[:, 0].T), d.covariance_matrix.data[0],
                               atol=0.06)
    # d E|x|^2 / d cov_diag = 1, / d W = 2 W
    gW, gD = rg.autograd.grad((s ** 2).sum(-1).mean(0).sum(), [ours[1], ours[2]])
    np.testing.assert_allclose(gD.data, 2.0, atol=0.03)
    np.testing.assert_allclose(gW.data, 2 * W, atol=0.05)
    with pytest.raises(ValueError, match="cov_diag"):
        D.LowRankMultivariateNormal(rg.zeros(3), rg.tensor(W[0]), -rg.ones(3))


# ---------------------------------------------------------------- KL

def test_kl_divergences_match_torch():
    pairs = [
        ("Cauchy", [RNG.normal(size=3), _pos(0.5, 2, 3)], [RNG.normal(size=3), _pos(0.5, 2, 3)]),
        ("Gumbel", [RNG.normal(size=3), _pos(0.5, 2, 3)], [RNG.normal(size=3), _pos(0.5, 2, 3)]),
        ("HalfNormal", [_pos(0.5, 2, 3)], [_pos(0.5, 2, 3)]),
        ("LogNormal", [RNG.normal(size=3), _pos(0.5, 2, 3)],
         [RNG.normal(size=3), _pos(0.5, 2, 3)]),
        ("Geometric", [_pos(0.2, 0.8, 3)], [_pos(0.2, 0.8, 3)]),
        ("Pareto", [_pos(1, 2, 3), _pos(1, 3, 3)], [_pos(0.5, 1, 3), _pos(1, 3, 3)]),
        ("Pareto", [_pos(0.5, 1, 3), _pos(1, 3, 3)], [_pos(1, 2, 3), _pos(1, 3, 3)]),
        ("OneHotCategorical", [_pos(0.1, 1, (2, 4))], [_pos(0.1, 1, (2, 4))]),
        ("ContinuousBernoulli", [np.array([0.2, 0.4995, 0.8])], [_pos(0.1, 0.9, 3)]),
    ]
    for name, pp, qp in pairs:
        op, tp, dp, tdp = _pair(name, pp)
        oq, tq, dq, tdq = _pair(name, qp)
        kl, tkl = D.kl_divergence(dp, dq), TD.kl_divergence(tdp, tdq)
        np.testing.assert_allclose(kl.data, tkl.detach().numpy(), rtol=1e-11)
        if np.all(np.isfinite(tkl.detach().numpy())):
            _compare(kl, tkl, op + oq, tp + tq, **TRIGAMMA)
    n, p, q = np.full(3, 5.0), _pos(0.2, 0.8, 3), _pos(0.2, 0.8, 3)
    op, oq = rg.tensor(p, requires_grad=True), rg.tensor(q, requires_grad=True)
    tp, tq = torch.tensor(p, requires_grad=True), torch.tensor(q, requires_grad=True)
    _compare(D.kl_divergence(D.Binomial(rg.tensor(n), op), D.Binomial(rg.tensor(n), oq)),
             TD.kl_divergence(TD.Binomial(torch.tensor(n), tp),
                              TD.Binomial(torch.tensor(n), tq)), [op, oq], [tp, tq])
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Binomial(rg.tensor(n), op), D.Binomial(rg.tensor(n + 1), oq))
    a, b = [RNG.normal(size=(2, 3)), _pos(0.5, 2, (2, 3))], [RNG.normal(size=(2, 3)),
                                                            _pos(0.5, 2, (2, 3))]
    ours = [rg.tensor(x, requires_grad=True) for x in a + b]
    theirs = [torch.tensor(x, requires_grad=True) for x in a + b]
    _compare(D.kl_divergence(D.Independent(D.Normal(*ours[:2]), 1),
                             D.Independent(D.Normal(*ours[2:]), 1)),
             TD.kl_divergence(TD.Independent(TD.Normal(*theirs[:2]), 1),
                              TD.Independent(TD.Normal(*theirs[2:]), 1)), ours, theirs)
    W1, W2 = RNG.normal(size=(3, 2)), RNG.normal(size=(3, 1))
    args = [RNG.normal(size=3), W1, _pos(0.5, 2, 3), RNG.normal(size=3), W2, _pos(0.5, 2, 3)]
    ours = [rg.tensor(x, requires_grad=True) for x in args]
    theirs = [torch.tensor(x, requires_grad=True) for x in args]
    _compare(D.kl_divergence(D.LowRankMultivariateNormal(*ours[:3]),
                             D.LowRankMultivariateNormal(*ours[3:])),
             TD.kl_divergence(TD.LowRankMultivariateNormal(*theirs[:3]),
                              TD.LowRankMultivariateNormal(*theirs[3:])), ours, theirs,
             rtol=1e-10)
    g, n = [RNG.normal(size=3), _pos(0.5, 2, 3)], [RNG.normal(size=3), _pos(0.5, 2, 3)]
    ours = [rg.tensor(x, requires_grad=True) for x in g + n]
    theirs = [torch.tensor(x, requires_grad=True) for x in g + n]
    _compare(D.kl_divergence(D.Gumbel(*ours[:2]), D.Normal(*ours[2:])),
             TD.kl_divergence(TD.Gumbel(*theirs[:2]), TD.Normal(*theirs[2:])), ours, theirs)
    _compare(D.kl_divergence(D.Normal(*ours[2:]), D.Gumbel(*ours[:2])),
             TD.kl_divergence(TD.Normal(*theirs[2:]), TD.Gumbel(*theirs[:2])), ours, theirs)
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.TransformedDistribution(D.Normal(0.0, 1.0), T.ExpTransform()),
                        D.TransformedDistribution(D.Normal(0.0, 1.0), T.TanhTransform()))


# ---------------------------------------------------------------- relaxations

@pytest.mark.parametrize("kind", ["probs", "logits"])
def test_continuous_bernoulli_matches_torch(kind):
    raw = np.array([0.1, 0.3, 0.4995, 0.7, 0.9]) if kind == "probs" else \
        np.array([-2.0, -0.5, 0.001, 0.8, 2.5])
    p, tp = rg.tensor(raw, requires_grad=True), torch.tensor(raw, requires_grad=True)
    d, t = D.ContinuousBernoulli(**{kind: p}), TD.ContinuousBernoulli(**{kind: tp})
    assert d.has_rsample and d.batch_shape == (5,)
    v = RNG.uniform(0.05, 0.95, (3, 5))
    x, tx = rg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    for m in ("log_prob", "cdf", "icdf"):
        _compare(getattr(d, m)(x), getattr(t, m)(tx), [p, x], [tp, tx], rtol=1e-10)
    _compare(d.entropy(), t.entropy(), [p], [tp], rtol=1e-10)
    for m in ("mean", "variance", "stddev"):
        _compare(getattr(d, m), getattr(t, m), [p], [tp], rtol=1e-10)
    rg.manual_seed(4)
    s = d.rsample((40_000,))
    assert np.all((s.data >= 0) & (s.data <= 1))
    sd = np.sqrt(d.variance.data / 40_000)
    np.testing.assert_allclose(s.data.mean(0), d.mean.data, atol=4 * sd.max())
    # rsample gradient of E[x] against the closed-form mean's gradient
    (g,) = rg.autograd.grad(s.mean(0).sum(), [p])
    (tg,) = torch.autograd.grad(t.mean.sum(), [tp])
    # (inside torch's unstable region around 1/2, icdf is the identity: no gradient)
    outside = np.abs(d.probs.data - 0.5) > 0.001
    np.testing.assert_allclose(g.data[outside], tg.numpy()[outside], atol=0.02)
    assert np.all(g.data[~outside] == 0)
    with pytest.raises(ValueError):
        D.ContinuousBernoulli(probs=rg.tensor(1.5))


def test_relaxed_bernoulli_and_one_hot_match_torch():
    temp, pr = np.array(0.7), RNG.uniform(0.2, 0.8, (3,))
    ours = [rg.tensor(temp, requires_grad=True), rg.tensor(pr, requires_grad=True)]
    theirs = [torch.tensor(temp, requires_grad=True), torch.tensor(pr, requires_grad=True)]
    d, t = D.RelaxedBernoulli(ours[0], probs=ours[1]), TD.RelaxedBernoulli(theirs[0],
                                                                           probs=theirs[1])
    assert d.has_rsample and d.batch_shape == (3,) and d.event_shape == ()
    v = RNG.uniform(0.05, 0.95, (4, 3))
    x, tx = rg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    _compare(d.log_prob(x), t.log_prob(tx), ours + [x], theirs + [tx], rtol=1e-10)
    rg.manual_seed(1)
    s = d.rsample((20_000,))
    assert s.shape == (20_000, 3) and np.all((s.data > 0) & (s.data < 1))
    # at a low temperature the draws approach Bernoulli(probs)
    cold = D.RelaxedBernoulli(rg.tensor(0.05), probs=rg.tensor(pr)).sample((20_000,))
    np.testing.assert_allclose((cold.data > 0.5).mean(0), pr, atol=0.02)
    (g,) = rg.autograd.grad(s.sum(), [ours[1]])
    assert np.all(g.data > 0)  # larger probs push draws up
    lg = RNG.normal(size=(2, 4))
    ours = [rg.tensor(temp, requires_grad=True), rg.tensor(lg, requires_grad=True)]
    theirs = [torch.tensor(temp, requires_grad=True), torch.tensor(lg, requires_grad=True)]
    d = D.RelaxedOneHotCategorical(ours[0], logits=ours[1])
    t = TD.RelaxedOneHotCategorical(theirs[0], logits=theirs[1])
    assert d.batch_shape == (2,) and d.event_shape == (4,) and d.has_rsample
    v = RNG.dirichlet(np.ones(4), (3, 2))
    x, tx = rg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    _compare(d.log_prob(x), t.log_prob(tx), ours + [x], theirs + [tx], rtol=1e-10)
    s = d.rsample((20_000,))
    np.testing.assert_allclose(s.data.sum(-1), 1, rtol=1e-12)
    cold = D.RelaxedOneHotCategorical(rg.tensor(0.05), logits=rg.tensor(lg)).sample((20_000,))
    np.testing.assert_allclose(np.eye(4)[cold.data.argmax(-1)].mean(0),
                               torch.softmax(torch.tensor(lg), -1).numpy(), atol=0.02)
    with pytest.raises(ValueError, match="support"):
        d.log_prob(rg.tensor([[0.5, 0.6, 0.1, 0.1]] * 2))
