"""The 52 cross-family KL pairs torch registers among Bernoulli, Beta, Binomial,
ContinuousBernoulli, Exponential, Gamma, Gumbel, Laplace, Normal, Pareto, Poisson and
Uniform (retrograd.distributions.kl_more): values, shapes, dtypes and gradients against
torch.distributions.kl_divergence in float64, and the entries that are inf."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributions as TD
import torch.distributions.kl as tkl

import retrograd as rg
import retrograd.distributions as RD

NAMES = ["Bernoulli", "Beta", "Binomial", "ContinuousBernoulli", "Exponential", "Gamma",
         "Gumbel", "Laplace", "Normal", "Pareto", "Poisson", "Uniform"]

# torch's table of cross-family pairs that retrograd's kl.py / kl_breadth.py / the first
# part of kl_more.py did not have: 19 closed forms and 33 infinite by support
CLOSED = [
    ("Bernoulli", "Poisson"), ("Beta", "ContinuousBernoulli"), ("Beta", "Exponential"),
    ("Beta", "Gamma"), ("Beta", "Normal"), ("ContinuousBernoulli", "Exponential"),
    ("ContinuousBernoulli", "Normal"), ("ContinuousBernoulli", "Uniform"),
    ("Exponential", "Gumbel"), ("Exponential", "Normal"), ("Gamma", "Gumbel"),
    ("Gamma", "Normal"), ("Laplace", "Normal"), ("Pareto", "Exponential"),
    ("Pareto", "Gamma"), ("Pareto", "Normal"), ("Uniform", "ContinuousBernoulli"),
    ("Uniform", "Gumbel"), ("Uniform", "Pareto"),
]
_QS = {"Beta": ["Pareto"], "ContinuousBernoulli": ["Pareto"],
       "Exponential": ["Beta", "ContinuousBernoulli", "Pareto", "Uniform"],
       "Gamma": ["Beta", "ContinuousBernoulli", "Pareto", "Uniform"],
       "Pareto": ["Beta", "ContinuousBernoulli", "Uniform"],
       "Poisson": ["Bernoulli", "Binomial"]}
for _p in ("Gumbel", "Laplace", "Normal"):
    _QS[_p] = ["Beta", "ContinuousBernoulli", "Exponential", "Gamma", "Pareto", "Uniform"]
INFINITE = [(p, q) for p, qs in _QS.items() for q in qs]
PAIRS = CLOSED + INFINITE


def _u(rng, lo, hi, shape):
    return rng.uniform(lo, hi, size=shape)


def _params(name, rng, shape, role, other):
    """Keyword parameters of `name` (as p or q of the pair with `other`), valid and giving
    a finite KL for the closed forms."""
    if name in ("Bernoulli", "ContinuousBernoulli"):
        probs = _u(rng, 0.05, 0.95, shape)
        if name == "ContinuousBernoulli":  # one entry inside torch's Taylor window
            probs.reshape(-1)[0] = 0.5004
        return {"probs": probs}
    if name == "Beta":
        return {"concentration1": _u(rng, 0.5, 3, shape), "concentration0": _u(rng, 0.5, 3, shape)}
    if name == "Binomial":
        return {"total_count": np.full(shape, 5.0), "probs": _u(rng, 0.1, 0.9, shape)}
    if name in ("Exponential", "Poisson"):
        return {"rate": _u(rng, 0.5, 3, shape)}
    if name == "Gamma":
        return {"concentration": _u(rng, 0.5, 3, shape), "rate": _u(rng, 0.5, 3, shape)}
    if name in ("Gumbel", "Laplace", "Normal"):
        return {"loc": rng.normal(size=shape), "scale": _u(rng, 0.5, 2, shape)}
    if name == "Pareto":  # alpha > 2: the mean and variance the closed forms need
        return {"scale": _u(rng, 0.5, 1.0, shape), "alpha": _u(rng, 2.5, 5, shape)}
    assert name == "Uniform"
    if role == "q":  # covering [0, 1] strictly (ContinuousBernoulli as p)
        return {"low": _u(rng, -1, -0.1, shape), "high": _u(rng, 1.1, 2, shape)}
    if other == "ContinuousBernoulli":  # strictly inside (0, 1)
        return {"low": _u(rng, 0.05, 0.45, shape), "high": _u(rng, 0.55, 0.95, shape)}
    low = _u(rng, 1.1, 2, shape) if other == "Pareto" else rng.normal(size=shape)
    return {"low": low, "high": low + _u(rng, 0.5, 2, shape)}


def _build(name, params, dtype, expand=None):
    """(retrograd dist, its leaves, torch dist, its leaves); `expand` broadcasts torch's
    parameters (not retrograd's) to a batch shape."""
    rleaves, tleaves, rkw, tkw = [], [], {}, {}
    for k, v in params.items():
        grad = k != "total_count"
        r = rg.tensor(np.asarray(v, dtype=dtype), requires_grad=grad)
        t = torch.tensor(np.asarray(v, dtype=dtype), requires_grad=grad)
        if grad:
            rleaves.append(r)
            tleaves.append(t)
        rkw[k] = r
        tkw[k] = t if expand is None else torch.broadcast_to(t, expand)
    return (getattr(RD, name)(**rkw, validate_args=False), rleaves,
            getattr(TD, name)(**tkw, validate_args=False), tleaves)


def _np(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


# torch's trigamma (the derivative of digamma, in Beta's and Gamma's entropies) is off by
# up to ~1.5e-9 absolute (against mpmath; SciPy's, which retrograd uses, to ~1e-16), so
# the gradients of the pairs with p Beta or Gamma agree to that, the values to 1e-10
_TRIGAMMA_ATOL = 1e-8


def _check(pn, pp, qn, qp, dtype=np.float64, p_expand=None, rtol=1e-10, atol=1e-12):
    rp, rpl, tp, tpl = _build(pn, pp, dtype, p_expand)
    rq, rql, tq, tql = _build(qn, qp, dtype)
    kr, kt = RD.kl_divergence(rp, rq), TD.kl_divergence(tp, tq)
    assert tuple(kr.shape) == tuple(kt.shape)
    assert kr.numpy().dtype == np.dtype(dtype) and kt.dtype == getattr(torch, np.dtype(
        dtype).name)
    np.testing.assert_array_equal(np.isinf(_np(kr)), np.isinf(_np(kt)))
    np.testing.assert_allclose(_np(kr), _np(kt), rtol=rtol, atol=atol)
    assert kr.requires_grad == kt.requires_grad
    if kt.requires_grad:
        kr.sum().backward()
        kt.sum().backward()
        for r, t in zip(rpl + rql, tpl + tql):
            if t.grad is None:
                assert r.grad is None or not np.any(_np(r.grad))
            else:
                gatol = max(atol, _TRIGAMMA_ATOL if pn in ("Beta", "Gamma") else 0.0)
                np.testing.assert_allclose(_np(r.grad), _np(t.grad), rtol=rtol * 10,
                                           atol=gatol)
    return kr


def test_torch_trigamma_is_the_approximate_one():
    mpmath = pytest.importorskip("mpmath")
    x = np.array([0.55, 0.7, 1.3, 2.9])
    exact = np.array([float(mpmath.psi(1, v)) for v in x])
    rx, tx = rg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    rg.special.digamma(rx).sum().backward()
    torch.digamma(tx).sum().backward()
    np.testing.assert_allclose(_np(rx.grad), exact, rtol=1e-14)
    assert np.abs(_np(tx.grad) - exact).max() < _TRIGAMMA_ATOL


def test_the_52_pairs_are_exactly_torchs_missing_ones():
    import retrograd.distributions.kl as rk

    ours = {(a.__name__, b.__name__) for a, b in rk._KL}
    theirs = {(p.__name__, q.__name__) for p, q in tkl._KL_REGISTRY}
    assert len(set(PAIRS)) == len(PAIRS) == 52
    assert set(PAIRS) <= ours
    assert not theirs - ours
    assert {p for p, _ in PAIRS} | {q for _, q in PAIRS} <= set(NAMES)


@pytest.mark.parametrize("pn,qn", PAIRS, ids=[f"{p}-{q}" for p, q in PAIRS])
def test_kl_pair_matches_torch(pn, qn):
    """Batched random parameters, p batch (4, 3) against q batch (3,), float64."""
    rng = np.random.default_rng(PAIRS.index((pn, qn)))
    kr = _check(pn, _params(pn, rng, (4, 3), "p", qn), qn, _params(qn, rng, (3,), "q", pn))
    finite = np.isfinite(_np(kr))
    assert finite.all() if (pn, qn) in CLOSED else not finite.any()


@pytest.mark.parametrize("pn,qn", PAIRS, ids=[f"{p}-{q}" for p, q in PAIRS])
def test_kl_pair_broadcasts_a_larger_q_batch(pn, qn):
    """p batch (3,) against q batch (2, 3): the broadcast batch shape (2, 3), compared with
    torch on p expanded to it (for the infinite pairs torch itself returns p's shape,
    `full_like(p.param)`; its closed forms that mask with p's parameter raise)."""
    rng = np.random.default_rng(100 + PAIRS.index((pn, qn)))
    kr = _check(pn, _params(pn, rng, (3,), "p", qn), qn, _params(qn, rng, (2, 3), "q", pn),
                p_expand=(2, 3))
    assert tuple(kr.shape) == (2, 3)


@pytest.mark.parametrize("pn,qn", PAIRS, ids=[f"{p}-{q}" for p, q in PAIRS])
def test_kl_pair_float32_dtype(pn, qn):
    rng = np.random.default_rng(200 + PAIRS.index((pn, qn)))
    _check(pn, _params(pn, rng, (5,), "p", qn), qn, _params(qn, rng, (5,), "q", pn),
           dtype=np.float32, rtol=2e-4, atol=2e-5)


_A = np.array([0.8, 1.7, 3.0, 2.2, 0.6])
_MIXED = {
    # q = Uniform must cover [0, 1]; torch counts low == 0 or high == 1 as not covering
    ("ContinuousBernoulli", "Uniform"): (
        {"probs": np.array([0.2, 0.7, 0.4, 0.9, 0.5003])},
        {"low": np.array([-0.5, 0.2, 0.0, -0.3, -1.0]),
         "high": np.array([1.5, 1.4, 1.2, 1.0, 1.3])}),
    # p = Uniform inside (0, 1); torch counts touching 0 or 1 as outside
    ("Uniform", "ContinuousBernoulli"): (
        {"low": np.array([0.1, 0.0, -0.2, 0.3, 0.45]),
         "high": np.array([0.9, 0.5, 0.5, 1.0, 0.55])},
        {"probs": np.array([0.3, 0.6, 0.8, 0.1, 0.4995])}),
    # Pareto's mean needs alpha > 1
    ("Pareto", "Exponential"): (
        {"scale": np.array([0.7, 1.2, 0.9, 2.0, 0.5]), "alpha": _A},
        {"rate": np.array([1.3, 0.4, 2.0, 0.9, 1.1])}),
    ("Pareto", "Gamma"): (
        {"scale": np.array([0.7, 1.2, 0.9, 2.0, 0.5]), "alpha": _A},
        {"concentration": np.array([1.3, 0.4, 2.0, 0.9, 3.0]),
         "rate": np.array([0.6, 1.4, 2.0, 0.9, 1.1])}),
    # and its variance alpha > 2
    ("Pareto", "Normal"): (
        {"scale": np.array([0.7, 1.2, 0.9, 2.0, 0.5]), "alpha": _A},
        {"loc": np.array([0.3, -1.0, 2.0, 0.0, 1.0]),
         "scale": np.array([0.6, 1.4, 2.0, 0.9, 1.1])}),
    # p = Uniform must sit above q's scale (equality is finite)
    ("Uniform", "Pareto"): (
        {"low": np.array([0.5, 1.0, 1.5, 2.0, 1.2]),
         "high": np.array([1.5, 2.0, 3.5, 2.5, 1.3])},
        {"scale": np.array([1.0, 1.0, 1.0, 2.5, 0.3]),
         "alpha": np.array([1.5, 0.7, 3.0, 2.0, 1.1])}),
}


@pytest.mark.parametrize("pair", list(_MIXED), ids=[f"{p}-{q}" for p, q in _MIXED])
def test_kl_pair_mixing_finite_and_inf(pair):
    pp, qp = _MIXED[pair]
    kr = _check(pair[0], pp, pair[1], qp)
    inf = np.isinf(_np(kr))
    assert inf.any() and not inf.all()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_kl_pair_boundaries_at_alpha_one_and_two():
    """alpha exactly 1 (Exponential, Gamma) or 2 (Normal): inf, and the 0 * inf of the
    masked branch in the gradient gives NaN in both libraries."""
    for qn, qp in (("Exponential", {"rate": np.array([1.0, 2.0])}),
                   ("Gamma", {"concentration": np.array([1.5, 2.0]),
                              "rate": np.array([1.0, 0.5])}),
                   ("Normal", {"loc": np.array([0.0, 1.0]), "scale": np.array([1.0, 2.0])})):
        alpha = np.array([2.0, 3.0]) if qn == "Normal" else np.array([1.0, 3.0])
        rp, rpl, tp, tpl = _build("Pareto", {"scale": np.array([1.0, 1.5]), "alpha": alpha},
                                  np.float64)
        rq, _, tq, _ = _build(qn, qp, np.float64)
        kr, kt = RD.kl_divergence(rp, rq), TD.kl_divergence(tp, tq)
        np.testing.assert_allclose(_np(kr), _np(kt), rtol=1e-10)
        assert np.isinf(_np(kr)[0]) and np.isfinite(_np(kr)[1])
        kr.sum().backward()
        kt.sum().backward()
        for r, t in zip(rpl, tpl):
            np.testing.assert_allclose(_np(r.grad), _np(t.grad), rtol=1e-9, equal_nan=True)


def test_kl_subclass_dispatch_matches_torch():
    """Chi2 (a Gamma) against Normal and Gumbel takes the Gamma pairs, as in torch."""
    for qn, qp in (("Normal", {"loc": np.array([0.5, -1.0]), "scale": np.array([1.0, 2.0])}),
                   ("Gumbel", {"loc": np.array([0.5, -1.0]), "scale": np.array([1.0, 2.0])})):
        rq, _, tq, _ = _build(qn, qp, np.float64)
        df = np.array([1.5, 4.0])
        kr = RD.kl_divergence(RD.Chi2(rg.tensor(df)), rq)
        kt = TD.kl_divergence(TD.Chi2(torch.tensor(df)), tq)
        np.testing.assert_allclose(_np(kr), _np(kt), rtol=1e-10)
