"""rsample of Gamma, Chi2, Beta, Dirichlet and StudentT: implicit reparameterisation.

The derivative of a gamma draw in its concentration (`ops/sampling.py`) against finite
differences of SciPy's inverse incomplete gamma at a fixed level, and against PyTorch's
`_standard_gamma_grad` (an approximation); the five distributions' rsample against
torch's (shapes, dtypes, has_rsample), Monte Carlo gradients of expectations against
closed forms, reproducibility under rg.manual_seed, finite log_prob of the draws,
validation, and the refusals (second derivatives, rg.jit).
"""

import numpy as np
import pytest
import scipy.special as sc
import torch

import retrograd as rg
from retrograd.engine import apply
from retrograd.jit import JitError
from retrograd.ops.sampling import gamma_dx_da, standard_gamma_reparam

D = rg.distributions
TD = torch.distributions


# ---------------------------------------------------------------- the derivative


def _fd_dx_da(a, level, upper=False):
    """d/da of the quantile x at a fixed level (P, or Q if `upper`): x times a fourth-order
    central difference of log x in a, x from SciPy's gammaincinv (gammainccinv). (log x
    is the smoother: for small a, x ~ (u Gamma(a + 1))^(1/a).)"""
    inv = sc.gammainccinv if upper else sc.gammaincinv
    h = 1e-3 * a
    f = [np.log(inv(a + k * h, level)) for k in (-2, -1, 1, 2)]
    return inv(a, level) * (8 * (f[2] - f[1]) - (f[3] - f[0])) / (12 * h)


def _rel(ours, ref):
    return np.max(np.abs(ours - ref) / np.abs(ref))


def test_dx_da_matches_finite_differences_of_scipys_inverse():
    """a in [0.05, 200], levels u in [0.001, 0.999]: the series below the tail switch and
    the Gauss-Laguerre tail integral above it. Measured: max relative difference 7e-12
    (6e-12 in the far tail), mostly the finite differences' own error."""
    a = np.geomspace(0.05, 200, 40)[:, None] * np.ones((1, 25))
    u = np.linspace(0.001, 0.999, 25)[None, :] * np.ones_like(a)
    x = sc.gammaincinv(a, u)
    assert _rel(gamma_dx_da(a, x), _fd_dx_da(a, u)) < 1e-6
    # the far upper tail, where the series alone would cancel catastrophically
    q = np.array([1e-4, 1e-7, 1e-10, 1e-13])[None, :] * np.ones((40, 1))
    a = a[:, :4]
    x = sc.gammainccinv(a, q)
    assert np.all(x > a + 2 * np.sqrt(a) + 2)
    assert _rel(gamma_dx_da(a, x), _fd_dx_da(a, q, upper=True)) < 1e-6


def test_dx_da_on_both_sides_of_the_tail_switch_and_for_large_concentrations():
    """Series and tail integral agree where they meet (x = a + 2 sqrt(a) + 2), and the
    series stays accurate for concentrations up to 1e4 (checked by finite differences)."""
    a = np.geomspace(0.02, 1e4, 30)
    edge = a + 2 * np.sqrt(a) + 2
    below, above = gamma_dx_da(a, edge * (1 - 1e-9)), gamma_dx_da(a, edge * (1 + 1e-9))
    np.testing.assert_allclose(below, above, rtol=1e-8)
    for x in (a - 3 * np.sqrt(a), a, edge):
        ok = x > 0
        u = sc.gammainc(a[ok], x[ok])
        np.testing.assert_allclose(gamma_dx_da(a[ok], x[ok]), _fd_dx_da(a[ok], u), rtol=1e-6)


def test_dx_da_edge_values():
    tiny = np.finfo(np.float64).tiny
    got = gamma_dx_da(np.array([1.0, 0.5, 0.0, -1.0, np.nan, 2.0, 3.0]),
                      np.array([0.0, tiny, 1.0, 1.0, 1.0, -1.0, np.nan]))
    assert got[0] == 0.0                   # x = 0 stays at 0
    assert 0 < got[1] < 1e-300             # an underflowed draw moves by almost nothing
    assert np.all(np.isnan(got[2:]))       # outside the domain


def test_dx_da_against_torchs_standard_gamma_grad():
    """PyTorch's is a fitted approximation. Measured on this grid: max relative
    difference 5.8e-4 (median 6e-6), float64 and float32 alike; 7.9e-4 on a denser grid
    (200 concentrations by 99 levels)."""
    a = np.geomspace(0.05, 200, 60)[:, None] * np.ones((1, 33))
    u = np.linspace(0.001, 0.999, 33)[None, :] * np.ones_like(a)
    x = sc.gammaincinv(a, u)
    ours = gamma_dx_da(a, x)
    theirs = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x)).numpy()
    rel = np.abs(ours - theirs) / np.abs(theirs)
    assert rel.max() < 1e-3 and np.median(rel) < 1e-4


def test_op_computes_in_float64_for_float32_inputs():
    a = np.array([0.3, 1.5, 7.0, 40.0], dtype=np.float32)
    x = np.array([0.01, 2.0, 9.0, 30.0], dtype=np.float32)
    alpha = rg.tensor(a, requires_grad=True)
    out = apply(standard_gamma_reparam, alpha, rg.tensor(x), alpha.detach())
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.data, x)
    (g,) = rg.autograd.grad(out.sum(), [alpha])
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.data, gamma_dx_da(a.astype(float), x.astype(float)),
                               rtol=1e-6)


def test_second_derivative_is_refused_as_in_torch():
    a = rg.tensor([1.5, 3.0], dtype=rg.float64, requires_grad=True)
    rg.manual_seed(0)
    (g,) = rg.autograd.grad(D.Gamma(a, 1.0).rsample((4,)).sum(), [a], create_graph=True)
    with pytest.raises(RuntimeError, match="standard_gamma_grad"):
        rg.autograd.grad(g.sum(), [a])
    ta = torch.tensor([1.5, 3.0], dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad(TD.Gamma(ta, 1.0).rsample((4,)).sum(), [ta], create_graph=True)
    with pytest.raises(RuntimeError):
        torch.autograd.grad(tg.sum(), [ta])


def test_first_order_forward_mode_through_a_draw():
    a = rg.tensor([0.7, 4.0], dtype=rg.float64)

    def draw(alpha):
        rg.manual_seed(3)
        return D.Gamma(alpha, 2.0).rsample((2,))

    out, tangent = rg.func.jvp(draw, (a,), (rg.tensor([1.0, 1.0], dtype=rg.float64),))
    expected = gamma_dx_da(np.broadcast_to(a.data, out.shape), out.data * 2.0) / 2.0
    np.testing.assert_allclose(tangent.data, expected, rtol=1e-12)


# ---------------------------------------------------------------- shapes and dtypes

def _both(name, params, dtype):
    tdtype = getattr(torch, dtype)
    ours = getattr(D, name)(*[rg.tensor(np.asarray(p, dtype=dtype)) for p in params])
    theirs = getattr(TD, name)(*[torch.tensor(np.asarray(p), dtype=tdtype) for p in params])
    return ours, theirs


CASES = {
    "Gamma": [[1.5, 2.0], [np.full((2, 3), 0.7), np.full((3,), 2.0)]],
    "Chi2": [[3.0], [np.full((2, 3), 4.0)]],
    "Beta": [[0.5, 2.0], [np.full((3,), 2.0), np.full((2, 1), 0.3)]],
    "StudentT": [[4.0], [np.full((2, 3), 3.0), np.zeros((3,)), np.ones((2, 1))]],
    "Dirichlet": [[np.array([1.0, 2.0, 0.5])], [np.full((2, 4), 0.8)]],
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_rsample_shapes_dtypes_and_flags_match_torch(name, dtype):
    for params in CASES[name]:
        ours, theirs = _both(name, params, dtype)
        assert ours.has_rsample and theirs.has_rsample
        for shape in [(), (5,), (2, 3)]:
            x, tx = ours.rsample(shape), theirs.rsample(shape)
            assert x.shape == tuple(tx.shape) and x.dtype == np.dtype(dtype)
            s = ours.sample(shape)
            assert s.shape == x.shape and s.dtype == x.dtype and not s.requires_grad


def test_rsample_carries_gradients_to_every_parameter():
    for name, params in [(n, c[1]) for n, c in CASES.items()]:
        ts = [rg.tensor(np.asarray(p, dtype=np.float64), requires_grad=True) for p in params]
        x = getattr(D, name)(*ts).rsample((3,))
        assert x.requires_grad
        gs = rg.autograd.grad((x * x).sum(), ts)
        assert all(g.shape == t.shape and np.all(np.isfinite(g.data)) and np.any(g.data)
                   for g, t in zip(gs, ts))


# ---------------------------------------------------------------- Monte Carlo gradients

N = 100_000


def _per_draw(param: float, k: int = 1):
    """A parameter repeated once per draw (N of them, each requiring grad), so that the
    gradient of a sum over draws holds each draw's own gradient."""
    return rg.tensor(np.full((N,) if k == 1 else (N, k), param), dtype=rg.float64,
                     requires_grad=True)


def _agrees(grads: np.ndarray, expected: float, z: float = 4.0):
    """The mean of per-draw gradients within z standard errors of the closed form."""
    mean, se = grads.mean(), grads.std() / np.sqrt(grads.size)
    assert abs(mean - expected) < z * se, (mean, expected, se)
    assert se < 0.05 * abs(expected) + 1e-3  # a test that can fail: the error bar is small


def _grads(f, params, seed=0):
    rg.manual_seed(seed)
    return [g.data for g in rg.autograd.grad(f(*params), params)]


@pytest.mark.parametrize("alpha", [0.2, 1.0, 4.5])
def test_gamma_gradients_of_expectations(alpha):
    a, b = _per_draw(alpha), _per_draw(2.0)
    # E[X] = a / b
    ga, gb = _grads(lambda a, b: D.Gamma(a, b).rsample().sum(), [a, b])
    _agrees(ga, 1 / 2.0)
    _agrees(gb, -alpha / 4.0)
    # E[log X] = digamma(a) - log b
    (ga,) = _grads(lambda a: D.Gamma(a, 1.0).rsample().log().sum(), [a], seed=1)
    _agrees(ga, sc.polygamma(1, alpha))


def test_chi2_gradients_of_expectations():
    df = _per_draw(3.0)
    (g,) = _grads(lambda d: D.Chi2(d).rsample().sum(), [df])  # E[X] = df
    _agrees(g, 1.0)
    (g,) = _grads(lambda d: D.Chi2(d).rsample().log().sum(), [df], seed=1)
    _agrees(g, 0.5 * sc.polygamma(1, 1.5))  # E[log X] = digamma(df / 2) + log 2


def test_beta_gradients_of_expectations():
    a, b = _per_draw(0.8), _per_draw(2.5)
    ga, gb = _grads(lambda a, b: D.Beta(a, b).rsample().sum(), [a, b])
    _agrees(ga, 2.5 / 3.3 ** 2)        # E[X] = a / (a + b)
    _agrees(gb, -0.8 / 3.3 ** 2)
    ga, gb = _grads(lambda a, b: D.Beta(a, b).rsample().log().sum(), [a, b], seed=1)
    _agrees(ga, sc.polygamma(1, 0.8) - sc.polygamma(1, 3.3))   # digamma(a) - digamma(a + b)
    _agrees(gb, -sc.polygamma(1, 3.3))


def test_dirichlet_gradients_of_expectations():
    c = np.array([0.6, 1.5, 3.0])
    w = np.array([1.0, -2.0, 0.5])
    conc = rg.tensor(np.tile(c, (N, 1)), dtype=rg.float64, requires_grad=True)
    (g,) = _grads(lambda t: (D.Dirichlet(t).rsample() * rg.tensor(w)).sum(), [conc])
    c0 = c.sum()
    # d/dc_j of sum_i w_i c_i / c0 = (w_j c0 - w.c) / c0^2
    expected = (w * c0 - w @ c) / c0 ** 2
    for j in range(3):
        _agrees(g[:, j], expected[j])


def test_studentt_gradients_of_expectations():
    df, loc, scale = _per_draw(7.0), _per_draw(0.5), _per_draw(1.5)
    # E[X^2] = loc^2 + scale^2 df / (df - 2)
    gd, gl, gs = _grads(lambda d, m, s: (D.StudentT(d, m, s).rsample() ** 2).sum(),
                        [df, loc, scale])
    _agrees(gl, 2 * 0.5)
    _agrees(gs, 2 * 1.5 * 7 / 5)
    _agrees(gd, -1.5 ** 2 * 2 / 5 ** 2)
    # E|X - loc| = scale E|T|, E|T| = 2 sqrt(df) G((df+1)/2) / (sqrt(pi) (df-1) G(df/2))
    def mean_abs(d):
        return 2 * np.sqrt(d) * np.exp(sc.gammaln((d + 1) / 2) - sc.gammaln(d / 2)) / (
            np.sqrt(np.pi) * (d - 1))

    gd, gs = _grads(lambda d, s: (D.StudentT(d, 0.5, s).rsample() - 0.5).abs().sum(),
                    [df, scale], seed=1)
    _agrees(gs, mean_abs(7.0))
    dlog = 0.5 / 7 + 0.5 * sc.digamma(4.0) - 0.5 * sc.digamma(3.5) - 1 / 6
    _agrees(gd, 1.5 * mean_abs(7.0) * dlog)


# ---------------------------------------------------------------- draws

def test_rsample_is_reproducible_with_manual_seed():
    for name, params in [(n, c[1]) for n, c in CASES.items()]:
        def draw(seed, name=name, params=params):
            ts = [rg.tensor(np.asarray(p, dtype=np.float64), requires_grad=True)
                  for p in params]
            rg.manual_seed(seed)
            x = getattr(D, name)(*ts).rsample((4,))
            return x.data, [g.data for g in rg.autograd.grad(x.sum(), ts)]

        (x1, g1), (x2, g2), (x3, _) = draw(5), draw(5), draw(6)
        np.testing.assert_array_equal(x1, x2)
        for a, b in zip(g1, g2):
            np.testing.assert_array_equal(a, b)
        assert not np.array_equal(x1, x3)
        rg.manual_seed(5)
        s = getattr(D, name)(*[rg.tensor(np.asarray(p, dtype=np.float64))
                               for p in params]).sample((4,))
        np.testing.assert_array_equal(s.data, x1)  # sample() is rsample() without a graph


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_log_prob_of_draws_is_finite_even_for_small_concentrations(dtype):
    rg.manual_seed(0)
    small = [0.01, 0.05]
    for name, params in [("Gamma", [small, [1.0, 3.0]]), ("Chi2", [small]),
                         ("Beta", [small, small[::-1]]), ("StudentT", [[0.3, 1.0], [0.0, 1.0]]),
                         ("Dirichlet", [[small + [0.02]]]),
                         ("Gamma", [[200.0, 0.5], [1e3, 1e-3]]), ("Beta", [[50.0], [0.01]])]:
        d = getattr(D, name)(*[rg.tensor(np.asarray(p, dtype=dtype)) for p in params])
        x = d.rsample((2000,))
        assert np.all(np.isfinite(x.data)), name
        assert np.all(np.isfinite(d.log_prob(x).data)), name


def test_draws_follow_the_distribution():
    """First two moments of 1e5 draws against the closed forms (within 5 standard
    errors), float64."""
    rg.manual_seed(1)
    for d, mean, var in [
            (D.Gamma(rg.tensor(0.3, dtype=rg.float64), 2.0), 0.15, 0.075),
            (D.Beta(rg.tensor(2.0, dtype=rg.float64), 0.5), 0.8, 0.8 * 0.2 / 3.5),
            (D.StudentT(rg.tensor(9.0, dtype=rg.float64), 1.0, 2.0), 1.0, 4 * 9 / 7)]:
        x = d.rsample((N,)).data
        assert abs(x.mean() - mean) < 5 * np.sqrt(var / N)
        assert abs(x.var() / var - 1) < 0.05


# ---------------------------------------------------------------- refusals and validation

@pytest.mark.parametrize("name, params", [
    ("Gamma", [-1.0, 1.0]), ("Gamma", [1.0, 0.0]), ("Chi2", [0.0]), ("Beta", [0.0, 1.0]),
    ("Beta", [1.0, -2.0]), ("StudentT", [-1.0]), ("StudentT", [2.0, 0.0, -1.0]),
    ("Dirichlet", [[1.0, -1.0]])])
def test_bad_parameters_raise_as_torch(name, params):
    with pytest.raises(ValueError):
        getattr(TD, name)(*[torch.tensor(p) for p in params], validate_args=True)
    with pytest.raises(ValueError, match="Expected parameter"):
        getattr(D, name)(*[rg.tensor(p) for p in params], validate_args=True)


def test_rsample_refuses_inside_jit():
    f = rg.jit(lambda a: D.Gamma(a, 1.0).rsample((3,)))
    with pytest.raises(JitError, match="random numbers"):
        f(rg.tensor([1.0, 2.0]))
